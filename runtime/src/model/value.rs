//! Values as they travel between GraphQL arguments, SQL parameters and result rows, plus the two
//! custom scalars (`DateTime`, `Json`) and node ids.

use std::fmt::Write as _;

use async_graphql::{InputValueError, InputValueResult, Scalar, ScalarType, Value as GqlValue};
use chrono::{NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc};

use super::error::InputError;
use super::tables::{Kind, Lit};

/// A field value in the runtime's own terms, independent of the database.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    /// No value: a NULL, or an explicit `null` argument.
    Null,
    /// A `String` or `ID` value.
    String(String),
    /// An `Int` value.
    Int(i32),
    /// A `Float` value.
    Float(f64),
    /// A `Boolean` value.
    Bool(bool),
    /// A `DateTime` value, in UTC.
    DateTime(chrono::DateTime<Utc>),
    /// A `Json` value.
    Json(serde_json::Value),
    /// A value of a project enum, by name.
    Enum(String),
    /// The items of a scalar list field.
    List(Vec<Val>),
}

impl Val {
    /// Whether this is [`Val::Null`].
    pub fn is_null(&self) -> bool {
        matches!(self, Val::Null)
    }

    /// The value as JSON, the way it is stored inside list columns and shown in messages.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match self {
            Val::Null => J::Null,
            Val::String(s) | Val::Enum(s) => J::String(s.clone()),
            Val::Int(i) => J::from(*i),
            Val::Float(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
            Val::Bool(b) => J::Bool(*b),
            Val::DateTime(d) => J::String(format_datetime(d)),
            Val::Json(j) => j.clone(),
            Val::List(items) => J::Array(items.iter().map(Val::to_json).collect()),
        }
    }

    /// An item of a list column (stored as a JSON array) as a value of `kind`.
    pub fn from_stored_json(value: serde_json::Value, kind: Kind) -> Val {
        use serde_json::Value as J;
        match (value, kind) {
            (J::Null, _) => Val::Null,
            (J::String(s), Kind::DateTime) => {
                parse_datetime(&s).map_or(Val::String(s), Val::DateTime)
            }
            (J::String(s), Kind::Enum) => Val::Enum(s),
            (J::String(s), Kind::Json) => Val::Json(J::String(s)),
            (J::String(s), _) => Val::String(s),
            (J::Number(n), Kind::Int) => match n.as_i64().and_then(|i| i32::try_from(i).ok()) {
                Some(i) => Val::Int(i),
                None => Val::Float(n.as_f64().unwrap_or_default()),
            },
            (J::Number(n), Kind::Float) => Val::Float(n.as_f64().unwrap_or_default()),
            (J::Bool(b), Kind::Boolean) => Val::Bool(b),
            (other, _) => Val::Json(other),
        }
    }

    /// The value from a validated default literal.
    pub fn from_lit(lit: &Lit) -> Val {
        match *lit {
            Lit::String(s) => Val::String(s.to_owned()),
            Lit::Int(i) => Val::Int(i),
            Lit::Float(f) => Val::Float(f),
            Lit::Boolean(b) => Val::Bool(b),
            Lit::DateTime(s) => parse_datetime(s).map_or(Val::Null, Val::DateTime),
            Lit::Enum(s) => Val::Enum(s.to_owned()),
            Lit::Json(s) => serde_json::from_str(s).map_or(Val::Null, Val::Json),
            Lit::List(items) => Val::List(items.iter().map(Val::from_lit).collect()),
        }
    }

    /// Converts a GraphQL input value (already checked against the field's type by GraphQL
    /// validation) into a `Val` of the given kind.
    pub fn from_graphql(value: &GqlValue, kind: Kind) -> Result<Val, InputError> {
        Ok(match (value, kind) {
            (GqlValue::Null, _) => Val::Null,
            (GqlValue::List(items), _) => Val::List(
                items
                    .iter()
                    .map(|it| Val::from_graphql(it, kind))
                    .collect::<Result<_, _>>()?,
            ),
            (GqlValue::String(s), Kind::DateTime) => {
                Val::DateTime(parse_datetime(s).ok_or(InputError::DateExpected)?)
            }
            (GqlValue::String(s), Kind::Enum) => Val::Enum(s.clone()),
            (GqlValue::Enum(n), _) => Val::Enum(n.to_string()),
            (GqlValue::String(s), Kind::Json) => Val::Json(parse_json_text(s)?),
            (GqlValue::String(s), _) => Val::String(s.clone()),
            (GqlValue::Number(n), Kind::Int) => Val::Int(
                n.as_i64()
                    .and_then(|i| i32::try_from(i).ok())
                    .ok_or_else(|| InputError::IntOutOfRange(n.to_string()))?,
            ),
            (GqlValue::Number(n), Kind::Float) => Val::Float(
                n.as_f64()
                    .ok_or_else(|| InputError::InvalidFloat(n.to_string()))?,
            ),
            (GqlValue::Boolean(b), _) => Val::Bool(*b),
            (other, Kind::Json) => Val::Json(
                other
                    .clone()
                    .into_json()
                    .map_err(|e| InputError::InvalidJson(e.to_string()))?,
            ),
            (other, _) => return Err(InputError::Unexpected(other.to_string())),
        })
    }
}

/// Formats a date-time the way the API always outputs it: `yyyy-MM-ddTHH:mm:ss.SSSZ`, UTC.
pub fn format_datetime(d: &chrono::DateTime<Utc>) -> String {
    DateText::of(d).as_str().to_owned()
}

/// [`format_datetime`]'s text for years 0 to 9999 without a leap second (every other date goes
/// through chrono): written by hand, since chrono's `format` re-reads the pattern on every call,
/// which was a tenth of the server's time for a list of 100 nodes.
fn datetime_text(d: &chrono::DateTime<Utc>) -> Option<[u8; 24]> {
    use chrono::{Datelike, Timelike};
    let year = d.year();
    let nanos = d.nanosecond();
    if !(0..=9999).contains(&year) || nanos >= 1_000_000_000 {
        return None;
    }
    let digits = |out: &mut [u8], mut n: u32| {
        for b in out.iter_mut().rev() {
            *b = b'0' + (n % 10) as u8;
            n /= 10;
        }
    };
    let mut buf = *b"0000-00-00T00:00:00.000Z";
    digits(&mut buf[0..4], year.unsigned_abs());
    digits(&mut buf[5..7], d.month());
    digits(&mut buf[8..10], d.day());
    digits(&mut buf[11..13], d.hour());
    digits(&mut buf[14..16], d.minute());
    digits(&mut buf[17..19], d.second());
    digits(&mut buf[20..23], nanos / 1_000_000);
    Some(buf)
}

/// A date-time's text as [`format_datetime`] writes it, as a row hands it over
/// ([`super::Cells::datetime_text`]): the stored text itself where it has that form already,
/// or the text made from the date.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DateText<'a> {
    /// The row's own text, which has the output form already.
    Stored(&'a str),
    /// The text written from the date, as 24 ASCII bytes (years 0 to 9999, no leap second).
    Made([u8; 24]),
    /// The text chrono writes, for every other date.
    Other(String),
}

impl DateText<'_> {
    /// The text of `d`.
    pub fn of(d: &chrono::DateTime<Utc>) -> DateText<'static> {
        match datetime_text(d) {
            Some(text) => DateText::Made(text),
            None => DateText::Other(chrono_format(d)),
        }
    }

    /// The text, as [`format_datetime`] writes it.
    pub fn as_str(&self) -> &str {
        match self {
            DateText::Stored(text) => text,
            // Made of ASCII digits and separators only.
            DateText::Made(text) => std::str::from_utf8(text).unwrap_or_default(),
            DateText::Other(text) => text,
        }
    }
}

/// Whether `text` is what [`format_datetime`] writes for the date it names
/// (`yyyy-MM-ddTHH:mm:ss.SSSZ`, a real day, no leap second), so reading it as a date and
/// writing it again would give it back unchanged.
pub fn is_formatted_datetime(text: &str) -> bool {
    let b = text.as_bytes();
    if b.len() != 24 {
        return false;
    }
    let shape = b"0000-00-00T00:00:00.000Z";
    if !b.iter().zip(shape).all(|(c, s)| {
        if *s == b'0' {
            c.is_ascii_digit()
        } else {
            c == s
        }
    }) {
        return false;
    }
    let number = |from: usize, to: usize| {
        b[from..to]
            .iter()
            .fold(0u32, |n, d| n * 10 + u32::from(d - b'0'))
    };
    let (year, month, day) = (number(0, 4), number(5, 7), number(8, 10));
    let year = i32::try_from(year).unwrap_or(0);
    number(11, 13) < 24
        && number(14, 16) < 60
        && number(17, 19) < 60
        && NaiveDate::from_ymd_opt(year, month, day).is_some()
}

/// [`format_datetime`] through chrono's formatter.
fn chrono_format(d: &chrono::DateTime<Utc>) -> String {
    let mut out = String::with_capacity(24);
    // Writing into a String cannot fail.
    let _ = write!(out, "{}", d.format("%Y-%m-%dT%H:%M:%S%.3fZ"));
    out
}

/// Parses the ISO-8601 forms clients send (`2016`, `2016-07`, `2016-07-31`,
/// `2016-07-31T23:59`, `…:01`, `…:01.123`, with an optional `Z` or `±HH:MM` / `±HHMM` offset;
/// no offset means UTC). Returns `None` for anything else.
pub fn parse_datetime(text: &str) -> Option<chrono::DateTime<Utc>> {
    let text = text.trim();
    let (date_part, time_part) = match text.find(['T', 't', ' ']) {
        Some(i) => (&text[..i], Some(&text[i + 1..])),
        None => (text, None),
    };
    let mut parts = date_part.split('-');
    let year: i32 = parse_digits(parts.next()?, 4)?;
    let month: u32 = parts.next().map_or(Some(1), |p| parse_digits(p, 2))?;
    let day: u32 = parts.next().map_or(Some(1), |p| parse_digits(p, 2))?;
    if parts.next().is_some() {
        return None;
    }
    let date = NaiveDate::from_ymd_opt(year, month, day)?;
    let Some(time_part) = time_part else {
        return Some(Utc.from_utc_datetime(&date.and_time(NaiveTime::MIN)));
    };
    // Split off the offset: `Z`, or the last `+`/`-`.
    let (clock, offset_secs) = if let Some(c) = time_part.strip_suffix(['Z', 'z']) {
        (c, 0)
    } else if let Some(i) = time_part.rfind(['+', '-']) {
        let (c, off) = time_part.split_at(i);
        let sign = if off.starts_with('-') { -1 } else { 1 };
        let digits: String = off[1..].chars().filter(|c| *c != ':').collect();
        if digits.len() != 4 && digits.len() != 2 {
            return None;
        }
        let hours: i32 = parse_digits(&digits[..2], 2)?;
        let minutes: i32 = if digits.len() == 4 {
            parse_digits(&digits[2..], 2)?
        } else {
            0
        };
        (c, sign * (hours * 3600 + minutes * 60))
    } else {
        (time_part, 0)
    };
    let (hms, frac) = match clock.split_once(['.', ',']) {
        Some((hms, frac)) => (hms, Some(frac)),
        None => (clock, None),
    };
    let mut hms_parts = hms.split(':');
    let hour: u32 = parse_digits(hms_parts.next()?, 2)?;
    let minute: u32 = hms_parts.next().map_or(Some(0), |p| parse_digits(p, 2))?;
    let second: u32 = hms_parts.next().map_or(Some(0), |p| parse_digits(p, 2))?;
    if hms_parts.next().is_some() {
        return None;
    }
    let nanos = match frac {
        Some(f) if !f.is_empty() && f.len() <= 9 && f.bytes().all(|b| b.is_ascii_digit()) => {
            let padded = format!("{f:0<9}");
            padded.parse::<u32>().ok()?
        }
        Some(_) => return None,
        None => 0,
    };
    let time = NaiveTime::from_hms_nano_opt(hour, minute, second, nanos)?;
    let local = NaiveDateTime::new(date, time);
    let utc = local - chrono::Duration::seconds(i64::from(offset_secs));
    // The API stores millisecond precision.
    let millis = utc.and_utc().timestamp_millis();
    Utc.timestamp_millis_opt(millis).single()
}

fn parse_digits<T: std::str::FromStr>(s: &str, len: usize) -> Option<T> {
    if s.len() == len && s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse().ok()
    } else {
        None
    }
}

fn parse_json_text(s: &str) -> Result<serde_json::Value, InputError> {
    serde_json::from_str(s).map_err(|e| InputError::InvalidJson(e.to_string()))
}

/// The `DateTime` scalar: ISO-8601 in, `yyyy-MM-ddTHH:mm:ss.SSSZ` out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DateTime(pub chrono::DateTime<Utc>);

#[Scalar(name = "DateTime")]
impl ScalarType for DateTime {
    fn parse(value: GqlValue) -> InputValueResult<Self> {
        match &value {
            GqlValue::String(s) => parse_datetime(s)
                .map(DateTime)
                .ok_or_else(|| InputValueError::custom(InputError::DateExpected)),
            _ => Err(InputValueError::custom(InputError::DateExpected)),
        }
    }

    fn is_valid(value: &GqlValue) -> bool {
        matches!(value, GqlValue::String(s) if parse_datetime(s).is_some())
    }

    fn to_value(&self) -> GqlValue {
        GqlValue::String(format_datetime(&self.0))
    }
}

/// The `Json` scalar. A string is read as JSON text (that is how literals carry JSON); any other
/// value sent through variables is taken as it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Json(pub serde_json::Value);

#[Scalar(name = "Json")]
impl ScalarType for Json {
    fn parse(value: GqlValue) -> InputValueResult<Self> {
        match value {
            GqlValue::String(s) => parse_json_text(&s)
                .map(Json)
                .map_err(InputValueError::custom),
            other => other
                .into_json()
                .map(Json)
                .map_err(|e| InputValueError::custom(InputError::InvalidJson(e.to_string()))),
        }
    }

    fn is_valid(value: &GqlValue) -> bool {
        match value {
            GqlValue::String(s) => serde_json::from_str::<serde_json::Value>(s).is_ok(),
            _ => true,
        }
    }

    fn to_value(&self) -> GqlValue {
        GqlValue::from_json(self.0.clone()).unwrap_or(GqlValue::Null)
    }
}

/// Whether a client-supplied id could be a node id: at most 25 characters of `[a-zA-Z0-9-_]`.
pub fn is_valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 25
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A new collision-resistant id in the cuid format: 25 characters, `c` then base-36 timestamp,
/// counter, host fingerprint and randomness, so ids sort roughly by creation time.
pub fn cuid() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    /// The process's fingerprint, read once: `getpid` is a system call, and every request
    /// makes a cuid for its id (about one in five of the server's system calls per read).
    static FINGERPRINT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    const BLOCK: u64 = 36u64.pow(4);

    let millis = u64::try_from(Utc::now().timestamp_millis()).unwrap_or(0);
    let count = u64::from(COUNTER.fetch_add(1, Ordering::Relaxed)) % BLOCK;
    let fingerprint = *FINGERPRINT.get_or_init(|| u64::from(std::process::id()) % BLOCK);
    let mut out = String::with_capacity(25);
    out.push('c');
    push_base36(&mut out, millis, 8);
    push_base36(&mut out, count, 4);
    push_base36(&mut out, fingerprint, 4);
    push_base36(&mut out, rand::random::<u64>() % (BLOCK * BLOCK), 8);
    out
}

fn push_base36(out: &mut String, mut n: u64, width: usize) {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut buf = [b'0'; 16];
    for slot in buf.iter_mut().rev().take(width) {
        *slot = DIGITS[(n % 36) as usize];
        n /= 36;
    }
    out.extend(buf[16 - width..].iter().map(|&b| b as char));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_datetime_matches_chrono() {
        let dates = [
            "0000-01-01T00:00:00.000Z",
            "0999-12-31T23:59:59.999Z",
            "1970-01-01T00:00:00.000Z",
            "2016-02-29T07:08:09.012Z",
            "2024-11-21T18:03:31.5Z",
            "9999-12-31T23:59:59.999Z",
        ];
        for text in dates {
            let d = parse_datetime(text).expect("a date");
            assert_eq!(format_datetime(&d), chrono_format(&d), "{text}");
        }
        let d = parse_datetime("2024-11-21T18:03:31.123Z").expect("a date");
        assert_eq!(format_datetime(&d), "2024-11-21T18:03:31.123Z");
        // Sub-millisecond digits are cut, not rounded, as chrono's `%.3f` does.
        let d = Utc.timestamp_opt(1_700_000_000, 999_999_999).unwrap();
        assert_eq!(format_datetime(&d), chrono_format(&d));
        assert_eq!(format_datetime(&d), "2023-11-14T22:13:20.999Z");
        // Years beyond four digits and before year 0 take chrono's path.
        for year in [-1, 10_000] {
            let d = Utc.with_ymd_and_hms(year, 1, 2, 3, 4, 5).unwrap();
            assert_eq!(format_datetime(&d), chrono_format(&d));
        }
    }

    #[test]
    fn datetime_forms() {
        let cases = [
            ("2016", "2016-01-01T00:00:00.000Z"),
            ("2016-07", "2016-07-01T00:00:00.000Z"),
            ("2016-07-31", "2016-07-31T00:00:00.000Z"),
            ("2016-07-31T23:59", "2016-07-31T23:59:00.000Z"),
            ("2016-07-31T23:59:01", "2016-07-31T23:59:01.000Z"),
            ("2016-07-31T23:59:01.123456Z", "2016-07-31T23:59:01.123Z"),
            ("2016-07-31T23:59:01+02:00", "2016-07-31T21:59:01.000Z"),
            ("2016-07-31T01:00:00-0130", "2016-07-31T02:30:00.000Z"),
        ];
        for (input, expected) in cases {
            let parsed = parse_datetime(input).unwrap_or_else(|| panic!("{input} did not parse"));
            assert_eq!(format_datetime(&parsed), expected, "{input}");
        }
        for bad in [
            "",
            "16",
            "2016-13-01",
            "2016-02-30",
            "yesterday",
            "2016-07-31T25:00",
        ] {
            assert!(parse_datetime(bad).is_none(), "{bad} parsed");
        }
    }

    /// A text taken as formatted already is exactly what reading and writing it gives; every
    /// other text (another form of the date, or no date) is not taken.
    #[test]
    fn a_formatted_datetime_is_what_format_datetime_writes() {
        let formatted = [
            "0000-01-01T00:00:00.000Z",
            "1970-01-01T00:00:00.000Z",
            "2016-02-29T23:59:59.999Z",
            "2024-12-31T07:08:09.010Z",
            "9999-12-31T23:59:59.999Z",
        ];
        for text in formatted {
            assert!(is_formatted_datetime(text), "{text}");
            let d = parse_datetime(text).expect("a date");
            assert_eq!(format_datetime(&d), text);
            assert_eq!(DateText::of(&d).as_str(), text);
        }
        for d in [
            Utc.with_ymd_and_hms(2001, 2, 3, 4, 5, 6).unwrap(),
            Utc.timestamp_opt(1_700_000_000, 999_000_000).unwrap(),
        ] {
            assert!(is_formatted_datetime(&format_datetime(&d)));
        }
        let others = [
            "",
            "2016-07-31",
            "2016-07-31T23:59:01Z",
            "2016-07-31T23:59:01.123+00:00",
            "2016-07-31 23:59:01.123Z",
            "2016-07-31T23:59:01.123z",
            "2016-07-31T23:59:01.1234Z",
            "2015-02-29T00:00:00.000Z",
            "2016-02-30T00:00:00.000Z",
            "2016-13-01T00:00:00.000Z",
            "2016-00-01T00:00:00.000Z",
            "2016-01-00T00:00:00.000Z",
            "2016-07-31T24:00:00.000Z",
            "2016-07-31T23:60:00.000Z",
            "2016-07-31T23:59:60.000Z",
            "2016-07-31T23:59:0a.000Z",
            "+016-07-31T23:59:01.000Z",
            "２016-07-31T23:59:01.00Z",
        ];
        for text in others {
            assert!(!is_formatted_datetime(text), "{text}");
        }
        // Those that are dates still read and write to the formatted text.
        let d = parse_datetime("2016-07-31 23:59:01.123Z").expect("a date");
        assert_eq!(DateText::of(&d).as_str(), "2016-07-31T23:59:01.123Z");
    }

    #[test]
    fn cuids_look_right() {
        let a = cuid();
        let b = cuid();
        assert_eq!(a.len(), 25);
        assert!(a.starts_with('c'));
        assert!(is_valid_id(&a));
        assert_ne!(a, b);
        // `c`, 8 characters of time, 4 of counter, then the process's fingerprint.
        let mut fingerprint = String::new();
        push_base36(
            &mut fingerprint,
            u64::from(std::process::id()) % 36u64.pow(4),
            4,
        );
        assert_eq!(&a[13..17], fingerprint);
        assert_eq!(&b[13..17], fingerprint);
    }

    #[test]
    fn id_validity() {
        assert!(is_valid_id("abc-DEF_123"));
        assert!(!is_valid_id("has space"));
        assert!(!is_valid_id(&"x".repeat(26)));
        assert!(!is_valid_id(""));
    }
}
