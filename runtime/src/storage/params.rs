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

/// Ids as the text of a JSON array (how a batch of ids travels as one parameter).
pub fn id_array<'a>(ids: impl IntoIterator<Item = &'a str>) -> String {
    serde_json::Value::Array(
        ids.into_iter()
            .map(|id| serde_json::Value::String(id.to_owned()))
            .collect(),
    )
    .to_string()
}
