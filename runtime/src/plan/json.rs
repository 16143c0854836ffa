//! Writing a plan's values into the response text, as the executor would output them.

use super::{CountField, Keyed};
use crate::model::{Cells, Column, DateTime, FieldMeta, Json, Kind, format_datetime};
use crate::storage::Row;

/// `{"count":…}` as `fields` select it.
pub(super) fn write_count(out: &mut Vec<u8>, fields: &[Keyed<CountField>], count: i32) {
    out.push(b'{');
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(f.key.as_bytes());
        match f.what {
            CountField::Count => write_json(out, &count),
            CountField::Typename => write_str(out, "_QueryMeta"),
        }
    }
    out.push(b'}');
}

pub(super) fn write_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    // Writing into a Vec cannot fail, and these values always serialise.
    let _ = serde_json::to_writer(out, value);
}

pub(super) fn write_str(out: &mut Vec<u8>, s: &str) {
    write_json(out, s);
}

/// Writes the value of `field` at `at` in `row` as the field's GraphQL output: what the record
/// type's column decoders read, then the output of its Rust type. `None` when the value does
/// not decode or a required field is null (the executor reports it).
pub(super) fn write_value(
    out: &mut Vec<u8>,
    row: &Row,
    at: usize,
    field: &FieldMeta,
) -> Option<()> {
    /// Reads the column as `T` and writes it with `write`: `Some(false)` for null, `None` when
    /// it does not decode or `valid` refuses it.
    fn put<T: Column>(
        out: &mut Vec<u8>,
        (row, at): (&Row, usize),
        valid: impl Fn(&T) -> bool,
        write: impl Fn(&mut Vec<u8>, &T),
    ) -> Option<bool> {
        match T::get(row, at).ok()? {
            Some(v) if valid(&v) => {
                write(out, &v);
                Some(true)
            }
            Some(_) => None,
            None => Some(false),
        }
    }
    fn any<T>(_: &T) -> bool {
        true
    }
    /// [`put`] for text, written straight from the row.
    fn put_text(
        out: &mut Vec<u8>,
        row: &Row,
        at: usize,
        valid: impl Fn(&str) -> bool,
    ) -> Option<bool> {
        match row.text(at).ok()? {
            Some(s) if valid(s) => {
                write_str(out, s);
                Some(true)
            }
            Some(_) => None,
            None => Some(false),
        }
    }
    let cell = (row, at);
    let is_enum = |s: &str| field.enum_values.contains(&s);
    let written = match (field.kind, field.list) {
        (Kind::Id | Kind::String, false) => put_text(out, row, at, |_| true)?,
        (Kind::Enum, false) => put_text(out, row, at, is_enum)?,
        (Kind::Int, false) => put::<i32>(out, cell, any, write_json)?,
        (Kind::Float, false) => put::<f64>(out, cell, |v| v.is_finite(), write_json)?,
        (Kind::Boolean, false) => put::<bool>(out, cell, any, write_json)?,
        (Kind::DateTime, false) => match row.datetime_text(at).ok()? {
            Some(text) => {
                write_str(out, text.as_str());
                true
            }
            None => false,
        },
        (Kind::Json, false) => put::<Json>(out, cell, any, |o, j| write_json(o, &j.0))?,
        (Kind::Id | Kind::String, true) => put::<Vec<String>>(out, cell, any, write_json)?,
        (Kind::Enum, true) => {
            put::<Vec<String>>(out, cell, |v| v.iter().all(|s| is_enum(s)), write_json)?
        }
        (Kind::Int, true) => put::<Vec<i32>>(out, cell, any, write_json)?,
        (Kind::Float, true) => {
            put::<Vec<f64>>(out, cell, |v| v.iter().all(|x| x.is_finite()), write_json)?
        }
        (Kind::Boolean, true) => put::<Vec<bool>>(out, cell, any, write_json)?,
        (Kind::DateTime, true) => put::<Vec<DateTime>>(out, cell, any, |o, v| {
            let texts: Vec<String> = v.iter().map(|d| format_datetime(&d.0)).collect();
            write_json(o, &texts);
        })?,
        (Kind::Json, true) => put::<Vec<Json>>(out, cell, any, |o, v| {
            let values: Vec<&serde_json::Value> = v.iter().map(|j| &j.0).collect();
            write_json(o, &values);
        })?,
        (Kind::Relation, _) => return None,
    };
    if !written {
        if field.required && !field.list {
            return None;
        }
        out.extend_from_slice(b"null");
    }
    Some(())
}
