//! The columns of a stored row, as records read them. The storage layer implements [`Cells`] for
//! the rows of each driver; records (and everything else that reads rows) see only this trait.

use sea_orm::DbErr;

/// Reading the columns of a row, whichever driver read it. Each implementation knows how its
/// database stores every kind of value (a date-time is text on SQLite and a `timestamptz` on
/// PostgreSQL), so callers never say which database a row came from.
pub trait Cells {
    /// Text, borrowed from the row. Like every method here: `None` for a NULL, an error when
    /// column `idx` does not exist or holds a value it cannot read as that type.
    fn text(&self, idx: usize) -> Result<Option<&str>, DbErr>;
    /// Text, copied out of the row (the default copies [`Cells::text`]).
    fn string(&self, idx: usize) -> Result<Option<String>, DbErr> {
        Ok(self.text(idx)?.map(str::to_owned))
    }
    /// A 32-bit integer (`Int` columns).
    fn int(&self, idx: usize) -> Result<Option<i32>, DbErr>;
    /// A 64-bit integer (the counts of `COUNT(*)`).
    fn int64(&self, idx: usize) -> Result<Option<i64>, DbErr>;
    /// A 64-bit float (`Float` columns).
    fn float(&self, idx: usize) -> Result<Option<f64>, DbErr>;
    /// A boolean (`Boolean` columns; SQLite stores them as integers).
    fn boolean(&self, idx: usize) -> Result<Option<bool>, DbErr>;
    /// A date-time (`DateTime` columns), in UTC.
    fn datetime(&self, idx: usize) -> Result<Option<chrono::DateTime<chrono::Utc>>, DbErr>;
    /// The date-time as [`super::format_datetime`] writes it. A row that holds the text (SQLite
    /// keeps date-times as text) hands it over as it is when it has that form already, instead
    /// of reading a date from it and writing the same text again.
    fn datetime_text(&self, idx: usize) -> Result<Option<super::DateText<'_>>, DbErr> {
        Ok(self.datetime(idx)?.map(|d| super::DateText::of(&d)))
    }
}

/// A row made of values, one per field of a model, in the model's field order: a node as a
/// function changed it (reference §7.3, `operationAfter`), read like a stored row.
#[derive(Debug, Clone)]
pub struct ValRow {
    values: Vec<super::Val>,
    /// Each value as its stored text (lists and Json as JSON text).
    texts: Vec<Option<String>>,
}

impl ValRow {
    /// The row of `values`, one per field of the model, in the model's field order.
    pub fn new(values: Vec<super::Val>) -> ValRow {
        use super::Val;
        let texts = values
            .iter()
            .map(|v| match v {
                Val::Null => None,
                Val::String(s) | Val::Enum(s) => Some(s.clone()),
                Val::Json(j) => Some(j.to_string()),
                Val::DateTime(d) => Some(super::format_datetime(d)),
                other => Some(other.to_json().to_string()),
            })
            .collect();
        ValRow { values, texts }
    }

    fn value(&self, idx: usize) -> Result<&super::Val, DbErr> {
        self.values
            .get(idx)
            .ok_or_else(|| DbErr::Type(format!("no column {idx}")))
    }
}

impl Cells for ValRow {
    fn text(&self, idx: usize) -> Result<Option<&str>, DbErr> {
        self.value(idx)?;
        Ok(self.texts[idx].as_deref())
    }
    fn int(&self, idx: usize) -> Result<Option<i32>, DbErr> {
        match self.value(idx)? {
            super::Val::Null => Ok(None),
            super::Val::Int(i) => Ok(Some(*i)),
            other => Err(DbErr::Type(format!("not an Int: {other:?}"))),
        }
    }
    fn int64(&self, idx: usize) -> Result<Option<i64>, DbErr> {
        Ok(self.int(idx)?.map(i64::from))
    }
    fn float(&self, idx: usize) -> Result<Option<f64>, DbErr> {
        match self.value(idx)? {
            super::Val::Null => Ok(None),
            super::Val::Float(f) => Ok(Some(*f)),
            super::Val::Int(i) => Ok(Some(f64::from(*i))),
            other => Err(DbErr::Type(format!("not a Float: {other:?}"))),
        }
    }
    fn boolean(&self, idx: usize) -> Result<Option<bool>, DbErr> {
        match self.value(idx)? {
            super::Val::Null => Ok(None),
            super::Val::Bool(b) => Ok(Some(*b)),
            other => Err(DbErr::Type(format!("not a Boolean: {other:?}"))),
        }
    }
    fn datetime(&self, idx: usize) -> Result<Option<chrono::DateTime<chrono::Utc>>, DbErr> {
        match self.value(idx)? {
            super::Val::Null => Ok(None),
            super::Val::DateTime(d) => Ok(Some(*d)),
            other => Err(DbErr::Type(format!("not a DateTime: {other:?}"))),
        }
    }
}
