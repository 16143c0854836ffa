//! `@defaultValue` and `@migrationValue` (reference §1.8): the literal is interpreted per field
//! type and stored already converted, so emitters never parse user text.
//!
//! Like the original, the literal's kind does not matter (`42` and `"42"` are the same default);
//! what matters is whether its text is a valid value of the field's type. Invalid values get the
//! reference's 2011 text.

use apollo_compiler::ast::Value;

use crate::diagnostics::{Diagnostic, Diagnostics};
use crate::model::lower::{Ast, Shape, Target, argument, node_span, value_as_string};
use crate::model::{DefaultValue, EnumId, FieldKind, ScalarType};

/// Strings, JSON and lists are stored in columns of this many characters (reference §1.3).
const MAX_TEXT: usize = 262_144;

/// Why a literal is not a value of the field's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalid {
    /// 2011: `'{text}' is not a valid value for type '{type_identifier}'`.
    Value {
        /// The literal's text as the message shows it.
        text: String,
        /// The reference's name of the field's type (`GraphQLID`, `Int`, `Enum`, …).
        type_identifier: String,
    },
    /// 3007.
    TooLong,
}

/// Reports every `@defaultValue` and `@migrationValue` of a scalar or enum field that is not a
/// value of the field's type (2011) or is too long (3007).
pub fn check(ast: &Ast, diags: &mut Diagnostics) {
    for (_, o, f) in ast.fields() {
        let shape = Shape::of(&f.ty);
        let kind = match ast.target(shape.name) {
            Target::Scalar(s) => FieldKind::Scalar(s),
            Target::Enum(i) => FieldKind::Enum(EnumId(i as u32)),
            // Relations and unknown types are reported by `fields`.
            Target::Object(_) | Target::Unknown => continue,
        };
        for directive in ["defaultValue", "migrationValue"] {
            let Some(value) = f
                .directives
                .get(directive)
                .and_then(|d| argument(d, "value"))
            else {
                continue;
            };
            match convert(ast, value, kind, shape.list) {
                Ok(_) => {}
                Err(Invalid::Value {
                    text,
                    type_identifier,
                }) => diags.push(
                    Diagnostic::new(
                        node_span(o.file, value),
                        format!("'{text}' is not a valid value for type '{type_identifier}'"),
                    )
                    .with_code(2011)
                    .with_help(expected(ast, kind, shape.list)),
                ),
                Err(Invalid::TooLong) => diags.push(
                    Diagnostic::new(
                        node_span(o.file, value),
                        "Value for field DefaultValue is too long.",
                    )
                    .with_code(3007)
                    .with_help("values are limited to 262144 characters"),
                ),
            }
        }
    }
}

/// What a valid value of a type looks like, for the help line.
fn expected(ast: &Ast, kind: FieldKind, list: bool) -> String {
    let one = match kind {
        FieldKind::Scalar(ScalarType::Int) => {
            "a whole number between -2147483648 and 2147483647".to_owned()
        }
        FieldKind::Scalar(ScalarType::Float) => "a number like `1.5`".to_owned(),
        FieldKind::Scalar(ScalarType::Boolean) => "`true` or `false`".to_owned(),
        FieldKind::Scalar(ScalarType::DateTime) => {
            "an ISO-8601 date or time like \"2016-07-31\" or \"2016-07-31T23:59:01Z\"".to_owned()
        }
        FieldKind::Scalar(ScalarType::Json) => {
            "a JSON object or array like \"{\\\"a\\\": 1}\"".to_owned()
        }
        FieldKind::Enum(id) => match ast.enums.get(id.0 as usize) {
            Some(e) => format!(
                "one of {}",
                super::ticked(e.def.values.iter().map(|v| v.value.as_str()))
            ),
            None => "a value of the enum".to_owned(),
        },
        _ => "a string".to_owned(),
    };
    if list {
        format!("use a list literal like `[…]` whose items are {one}")
    } else {
        format!("use {one}")
    }
}

/// The reference's `TypeIdentifier` names, which its 2011 text shows.
fn type_identifier(kind: FieldKind) -> &'static str {
    match kind {
        FieldKind::Scalar(ScalarType::Id) => "GraphQLID",
        FieldKind::Scalar(s) => s.name(),
        FieldKind::Enum(_) => "Enum",
        FieldKind::Relation { .. } => "Relation",
    }
}

/// One literal to convert: text (from any scalar literal) or structured JSON (from a GraphQL
/// object or list literal, or from a list given as JSON text).
enum Lit {
    Text(String),
    Json(serde_json::Value),
}

/// Converts a directive literal to a value of the field's type.
pub fn convert(
    ast: &Ast,
    value: &Value,
    kind: FieldKind,
    list: bool,
) -> Result<DefaultValue, Invalid> {
    let shown = value_as_string(value).unwrap_or_else(|| value.to_string());
    let invalid = || Invalid::Value {
        text: shown.clone(),
        type_identifier: type_identifier(kind).to_owned(),
    };
    if shown.chars().count() > MAX_TEXT {
        return Err(Invalid::TooLong);
    }
    if list {
        let items: Vec<Lit> = match value {
            Value::List(items) => items
                .iter()
                .map(|v| lit(v))
                .collect::<Option<_>>()
                .ok_or_else(invalid)?,
            Value::String(s) => list_text(s).ok_or_else(invalid)?,
            _ => return Err(invalid()),
        };
        let converted: Option<Vec<DefaultValue>> = items
            .into_iter()
            .map(|item| scalar(ast, item, kind))
            .collect();
        return converted.map(DefaultValue::List).ok_or_else(invalid);
    }
    let item = lit(value).ok_or_else(invalid)?;
    scalar(ast, item, kind).ok_or_else(invalid)
}

fn lit(value: &Value) -> Option<Lit> {
    match value {
        Value::List(_) | Value::Object(_) => graphql_to_json(value).map(Lit::Json),
        _ => value_as_string(value).map(Lit::Text),
    }
}

/// A GraphQL literal as JSON (enum values become strings); `None` for variables.
fn graphql_to_json(value: &Value) -> Option<serde_json::Value> {
    use serde_json::Value as J;
    Some(match value {
        Value::Null => J::Null,
        Value::Enum(n) => J::String(n.to_string()),
        Value::Variable(_) => return None,
        Value::String(s) => J::String(s.clone()),
        Value::Float(f) => serde_json::Number::from_f64(f.try_to_f64().ok()?).map(J::Number)?,
        Value::Int(i) => J::Number(i.as_str().parse::<serde_json::Number>().ok()?),
        Value::Boolean(b) => J::Bool(*b),
        Value::List(items) => J::Array(
            items
                .iter()
                .map(|v| graphql_to_json(v))
                .collect::<Option<_>>()?,
        ),
        Value::Object(fields) => J::Object(
            fields
                .iter()
                .map(|(k, v)| Some((k.to_string(), graphql_to_json(v)?)))
                .collect::<Option<_>>()?,
        ),
    })
}

/// A list given as text: JSON (`["a", 1]`) or GraphQL style without quotes (`[A, B]`).
fn list_text(text: &str) -> Option<Vec<Lit>> {
    if let Ok(serde_json::Value::Array(items)) = serde_json::from_str(text) {
        return Some(
            items
                .into_iter()
                .map(|v| match v {
                    serde_json::Value::String(s) => Lit::Text(s),
                    serde_json::Value::Number(n) => Lit::Text(n.to_string()),
                    serde_json::Value::Bool(b) => Lit::Text(b.to_string()),
                    other => Lit::Json(other),
                })
                .collect(),
        );
    }
    let inner = text.trim().strip_prefix('[')?.strip_suffix(']')?.trim();
    if inner.is_empty() {
        return Some(Vec::new());
    }
    Some(
        inner
            .split(',')
            .map(|item| Lit::Text(item.trim().trim_matches('"').to_owned()))
            .collect(),
    )
}

fn scalar(ast: &Ast, item: Lit, kind: FieldKind) -> Option<DefaultValue> {
    let text = match item {
        Lit::Text(text) => text,
        // Structured values only make sense for Json fields.
        Lit::Json(json) => {
            return (kind == FieldKind::Scalar(ScalarType::Json)
                && (json.is_object() || json.is_array()))
            .then(|| DefaultValue::Json(json.to_string()));
        }
    };
    Some(match kind {
        FieldKind::Scalar(ScalarType::String | ScalarType::Id) => DefaultValue::String(text),
        FieldKind::Scalar(ScalarType::Int) => DefaultValue::Int(parse_int(&text)?),
        FieldKind::Scalar(ScalarType::Float) => DefaultValue::Float(parse_float(&text)?),
        FieldKind::Scalar(ScalarType::Boolean) => {
            if text.eq_ignore_ascii_case("true") {
                DefaultValue::Boolean(true)
            } else if text.eq_ignore_ascii_case("false") {
                DefaultValue::Boolean(false)
            } else {
                return None;
            }
        }
        FieldKind::Scalar(ScalarType::DateTime) => DefaultValue::DateTime(parse_datetime(&text)?),
        FieldKind::Scalar(ScalarType::Json) => {
            let json: serde_json::Value = serde_json::from_str(&text).ok()?;
            if !(json.is_object() || json.is_array()) {
                return None;
            }
            DefaultValue::Json(json.to_string())
        }
        FieldKind::Enum(id) => {
            let e = ast.enums.get(id.0 as usize)?;
            e.def
                .values
                .iter()
                .any(|v| v.value == text.as_str())
                .then_some(())?;
            DefaultValue::Enum(text)
        }
        FieldKind::Relation { .. } => return None,
    })
}

/// An optionally signed run of digits that fits 32 bits.
fn parse_int(text: &str) -> Option<i32> {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// A finite decimal number (Rust also parses `inf` and `NaN`, which no column can hold).
fn parse_float(text: &str) -> Option<f64> {
    let ok_chars = text
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'));
    let has_digit = text.bytes().any(|b| b.is_ascii_digit());
    let value: f64 = text.parse().ok()?;
    (ok_chars && has_digit && value.is_finite()).then_some(value)
}

/// Parses the ISO-8601 forms the original accepted (`2016`, `2016-07`, `2016-07-31`,
/// `2016-07-31T23:59`, `…:01`, `….123`, then `Z`, `+02:00`, `+0200` or `+02`; no zone means UTC)
/// and normalises to `YYYY-MM-DDTHH:MM:SS.sssZ` in UTC. Fractions beyond milliseconds are
/// truncated, as a `datetime(3)` column would.
pub fn parse_datetime(text: &str) -> Option<String> {
    let mut p = Cursor {
        s: text.as_bytes(),
        i: 0,
    };
    let year = p.digits(4)?;
    let (mut month, mut day) = (1, 1);
    let (mut hour, mut minute, mut second, mut millis) = (0, 0, 0, 0);
    let mut offset_minutes: i64 = 0;
    if p.eat(b'-') {
        month = p.digits(2)?;
        if p.eat(b'-') {
            day = p.digits(2)?;
            if p.eat(b'T') {
                hour = p.digits(2)?;
                if p.eat(b':') {
                    minute = p.digits(2)?;
                    if p.eat(b':') {
                        second = p.digits(2)?;
                        if p.eat(b'.') || p.eat(b',') {
                            let start = p.i;
                            while p.peek().is_some_and(|b| b.is_ascii_digit()) {
                                p.i += 1;
                            }
                            let frac = text.get(start..p.i)?;
                            if frac.is_empty() || frac.len() > 9 {
                                return None;
                            }
                            millis = format!("{frac:0<3}").get(..3)?.parse().ok()?;
                        }
                    }
                }
                offset_minutes = p.zone()?;
            }
        }
    }
    if p.i != p.s.len() {
        return None;
    }
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let local = days_from_civil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second;
    let utc = local - offset_minutes * 60;
    let (y, m, d) = civil_from_days(utc.div_euclid(86_400));
    let secs = utc.rem_euclid(86_400);
    if !(0..=9999).contains(&y) {
        return None;
    }
    Some(format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        secs / 3_600,
        secs % 3_600 / 60,
        secs % 60
    ))
}

struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        if hit {
            self.i += 1;
        }
        hit
    }

    /// Exactly `n` ASCII digits.
    fn digits(&mut self, n: usize) -> Option<i64> {
        let part = self.s.get(self.i..self.i + n)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        self.i += n;
        Some(part.iter().fold(0, |acc, b| acc * 10 + i64::from(b - b'0')))
    }

    /// `Z`, `±HH:MM`, `±HHMM`, `±HH`, or nothing (UTC); returns the offset in minutes.
    fn zone(&mut self) -> Option<i64> {
        if self.eat(b'Z') {
            return Some(0);
        }
        let sign = if self.eat(b'+') {
            1
        } else if self.eat(b'-') {
            -1
        } else {
            return Some(0);
        };
        let hours = self.digits(2)?;
        let minutes = if self.eat(b':') {
            self.digits(2)?
        } else {
            self.digits(2).unwrap_or(0)
        };
        (hours <= 23 && minutes <= 59).then_some(sign * (hours * 60 + minutes))
    }
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The inverse of [`days_from_civil`].
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datetimes() {
        for (input, out) in [
            ("2016", "2016-01-01T00:00:00.000Z"),
            ("2016-07", "2016-07-01T00:00:00.000Z"),
            ("2016-07-31", "2016-07-31T00:00:00.000Z"),
            ("2016-07-31T23:59", "2016-07-31T23:59:00.000Z"),
            ("2016-07-31T23:59:01Z", "2016-07-31T23:59:01.000Z"),
            ("2016-07-31T23:59:01.5Z", "2016-07-31T23:59:01.500Z"),
            ("2016-07-31T23:59:01.123456Z", "2016-07-31T23:59:01.123Z"),
            ("2016-07-31T01:00:00+02:00", "2016-07-30T23:00:00.000Z"),
            ("2016-12-31T23:00:00-0130", "2017-01-01T00:30:00.000Z"),
            ("2016-02-29T00:00:00Z", "2016-02-29T00:00:00.000Z"),
            ("1969-12-31T23:59:59Z", "1969-12-31T23:59:59.000Z"),
        ] {
            assert_eq!(parse_datetime(input).as_deref(), Some(out), "{input}");
        }
        for bad in [
            "",
            "16",
            "2016-13-01",
            "2015-02-29",
            "2016-07-31T24:00",
            "2016-07-31 23:59",
            "2016-07-31T23:59:01+25:00",
            "yesterday",
            "2016-07-31T23:59:01.Z",
            "0000-01-01T00:00:00+01:00",
        ] {
            assert_eq!(parse_datetime(bad), None, "{bad}");
        }
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_int("2147483647"), Some(i32::MAX));
        assert_eq!(parse_int("2147483648"), None);
        assert_eq!(parse_int("-1"), Some(-1));
        assert_eq!(parse_int("1.0"), None);
        assert_eq!(parse_float("1.5e3"), Some(1500.0));
        assert_eq!(parse_float("inf"), None);
        assert_eq!(parse_float("NaN"), None);
        assert_eq!(parse_float("1e999"), None);
    }
}
