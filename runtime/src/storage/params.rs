//! Values as SQL parameters: a field's value in the type its column has on each database, and a
//! list of ids as the one parameter a batch of any size travels in.

use sea_orm::Value;

use super::db::Backend;
use crate::model::{FieldMeta, Kind, Val, format_datetime};

/// Converts a value into the SQL parameter for a column of `field`'s type. Nulls are typed, as
/// PostgreSQL requires.
pub fn to_db(val: &Val, field: &FieldMeta, backend: Backend) -> Value {
    if field.list {
        return match val {
            Val::Null => Value::String(None),
            v => Value::String(Some(v.to_json().to_string())),
        };
    }
    match (val, field.kind) {
        (Val::Null, Kind::Int) => Value::Int(None),
        (Val::Null, Kind::Float) => Value::Double(None),
        (Val::Null, Kind::Boolean) => Value::Bool(None),
        (Val::Null, Kind::DateTime) if backend == Backend::Postgres => {
            Value::ChronoDateTimeUtc(None)
        }
        (Val::Null, _) => Value::String(None),
        (Val::Int(i), Kind::Float) => Value::Double(Some(f64::from(*i))),
        (Val::Int(i), _) => Value::Int(Some(*i)),
        (Val::Float(f), _) => Value::Double(Some(*f)),
        (Val::Bool(b), _) => Value::Bool(Some(*b)),
        (Val::DateTime(d), _) => match backend {
            Backend::Postgres => Value::ChronoDateTimeUtc(Some(*d)),
            Backend::Sqlite => Value::String(Some(format_datetime(d))),
        },
        (Val::Json(j), _) => Value::String(Some(j.to_string())),
        (Val::String(s) | Val::Enum(s), _) => Value::String(Some(s.clone())),
        (v @ Val::List(_), _) => Value::String(Some(v.to_json().to_string())),
    }
}

/// A value as SQLite binds it for a column of a field's type, borrowed where it can be: a bulk
/// write binds its rows' values without copying each into a [`Value`] first. The same values
/// as [`to_db`] gives on SQLite (a test binds both, and [`LiteParam::into_value`], and compares
/// what SQLite stores).
#[derive(Debug, Clone, PartialEq)]
pub enum LiteParam<'a> {
    Null,
    Int(i64),
    Real(f64),
    Text(std::borrow::Cow<'a, str>),
}

impl LiteParam<'_> {
    /// The parameter as sqlx binds it (a statement sent through sqlx's connection).
    pub fn into_value(self) -> Value {
        match self {
            LiteParam::Null => Value::String(None),
            LiteParam::Int(v) => Value::BigInt(Some(v)),
            LiteParam::Real(v) => Value::Double(Some(v)),
            LiteParam::Text(v) => Value::String(Some(v.into_owned())),
        }
    }
}

impl<'a> From<&'a str> for LiteParam<'a> {
    fn from(text: &'a str) -> Self {
        LiteParam::Text(std::borrow::Cow::Borrowed(text))
    }
}

/// [`to_db`] on SQLite, borrowed.
pub fn lite_param<'a>(val: &'a Val, field: &FieldMeta) -> LiteParam<'a> {
    use std::borrow::Cow;
    if field.list {
        return match val {
            Val::Null => LiteParam::Null,
            v => LiteParam::Text(Cow::Owned(v.to_json().to_string())),
        };
    }
    match (val, field.kind) {
        (Val::Null, _) => LiteParam::Null,
        (Val::Int(i), Kind::Float) => LiteParam::Real(f64::from(*i)),
        (Val::Int(i), _) => LiteParam::Int(i64::from(*i)),
        (Val::Float(f), _) => LiteParam::Real(*f),
        (Val::Bool(b), _) => LiteParam::Int(i64::from(*b)),
        (Val::DateTime(d), _) => LiteParam::Text(Cow::Owned(format_datetime(d))),
        (Val::Json(j), _) => LiteParam::Text(Cow::Owned(j.to_string())),
        (Val::String(s) | Val::Enum(s), _) => LiteParam::Text(Cow::Borrowed(s)),
        (v @ Val::List(_), _) => LiteParam::Text(Cow::Owned(v.to_json().to_string())),
    }
}

/// Values compared with a column of `field`'s type, as the text of a JSON array whose
/// elements each database turns back into what [`to_db`] binds: numbers, `0`/`1` for SQLite's
/// booleans, timestamps as text (how a long `_in` list travels as one parameter).
pub fn value_array(vals: &[Val], field: &FieldMeta, backend: Backend) -> String {
    use serde_json::Value as J;
    let json = |val: &Val| match to_db(val, field, backend) {
        Value::Int(Some(i)) => J::from(i),
        Value::BigInt(Some(i)) => J::from(i),
        Value::Double(Some(f)) => serde_json::Number::from_f64(f).map_or(J::Null, J::Number),
        Value::Bool(Some(b)) if backend == Backend::Sqlite => J::from(i64::from(b)),
        Value::Bool(Some(b)) => J::from(b),
        Value::String(Some(s)) => J::String(s),
        Value::ChronoDateTimeUtc(Some(d)) => J::String(format_datetime(&d)),
        _ => J::Null,
    };
    J::Array(vals.iter().map(json).collect()).to_string()
}

/// Ids as the text of a JSON array (how a batch of ids travels as one parameter).
pub fn id_array<'a>(ids: impl IntoIterator<Item = &'a str>) -> String {
    serde_json::Value::Array(
        ids.into_iter()
            .map(|id| serde_json::Value::String(id.to_owned()))
            .collect(),
    )
    .to_string()
}
