//! PostgreSQL's binary values, read directly: the types the runtime reads (`text`, `int4`,
//! `int8`, `float8`, `bool`, `timestamptz`), from sqlx's rows and from the pipeline's.

use sea_orm::{DbErr, QueryResult};

use crate::model::Cells;

/// PostgreSQL type oids of the values [`pg_binary`] reads itself.
pub(crate) mod oid {
    pub const BOOL: u32 = 16;
    pub const INT8: u32 = 20;
    pub const INT4: u32 = 23;
    pub const FLOAT8: u32 = 701;
    pub const TIMESTAMPTZ: u32 = 1184;
    /// `text`, `varchar`, `bpchar` and `name`: what sqlx decodes as a string, but `citext`
    /// and `unknown`, which it also takes and which go through its decoder.
    pub const TEXT: [u32; 4] = [25, 1043, 1042, 19];
}

/// The binary value of column `idx` of a PostgreSQL row when its type is one of `oids` (the
/// types whose decoding sqlx would accept for the Rust type asked for): `Some(None)` for null,
/// `None` when it is not such a row or value, and sqlx's decoders read it. Reading the value
/// here skips what sqlx's `try_get` does per cell (its type check builds and compares a list of
/// types, one of them by name) and sea-orm's wrapping, about a tenth of the server's CPU on a
/// read of 100 rows.
pub(crate) fn pg_binary<'r>(
    row: &'r QueryResult,
    idx: usize,
    oids: &[u32],
) -> Option<Option<&'r [u8]>> {
    use sea_orm::sqlx::postgres::PgValueFormat;
    use sea_orm::sqlx::{Row as _, ValueRef as _};
    let value = row.try_as_pg_row()?.try_get_raw(idx).ok()?;
    if value.is_null() {
        return Some(None);
    }
    let oid = value.type_info().oid()?.0;
    if value.format() != PgValueFormat::Binary || !oids.contains(&oid) {
        return None;
    }
    value.as_bytes().ok().map(Some)
}

/// A text value's bytes as text.
pub(crate) fn utf8(bytes: &[u8]) -> Result<&str, DbErr> {
    std::str::from_utf8(bytes).map_err(|e| DbErr::Type(e.to_string()))
}

/// A fixed-size binary value as the array its decoder takes.
fn fixed<const N: usize>(bytes: &[u8]) -> Result<[u8; N], DbErr> {
    bytes.try_into().map_err(|_| {
        DbErr::Type(format!(
            "a value of {} bytes where {N} were expected",
            bytes.len()
        ))
    })
}

/// PostgreSQL's epoch for timestamps: 2000-01-01 00:00 UTC.
pub(super) fn pg_epoch() -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp(946_684_800, 0).expect("2000-01-01 is a valid timestamp")
}

/// A binary `int4`.
pub(crate) fn int4(bytes: &[u8]) -> Result<i32, DbErr> {
    Ok(i32::from_be_bytes(fixed(bytes)?))
}

/// A binary `int8`.
pub(crate) fn int8(bytes: &[u8]) -> Result<i64, DbErr> {
    Ok(i64::from_be_bytes(fixed(bytes)?))
}

/// A binary `float8`.
pub(crate) fn float8(bytes: &[u8]) -> Result<f64, DbErr> {
    Ok(f64::from_be_bytes(fixed(bytes)?))
}

/// A binary `bool`.
pub(crate) fn bool1(bytes: &[u8]) -> Result<bool, DbErr> {
    Ok(u8::from_be_bytes(fixed(bytes)?) != 0)
}

/// A binary `timestamptz`: microseconds since [`pg_epoch`].
pub(crate) fn timestamptz(bytes: &[u8]) -> Result<chrono::DateTime<chrono::Utc>, DbErr> {
    let micros = i64::from_be_bytes(fixed(bytes)?);
    pg_epoch()
        .checked_add_signed(chrono::TimeDelta::microseconds(micros))
        .ok_or_else(|| DbErr::Type(format!("a timestamp out of range: {micros}")))
}

/// The binary value of column `idx` of a row read by the pipeline when its type is one of
/// `oids`, `Ok(None)` for null.
fn pipe_cell<'r>(
    row: &'r tokio_postgres::Row,
    idx: usize,
    oids: &[u32],
) -> Result<Option<&'r [u8]>, DbErr> {
    let (oid, value) = super::pipeline::raw(row, idx)?;
    match value {
        Some(_) if !oids.contains(&oid) => Err(DbErr::Type(format!(
            "column {idx} has the type with oid {oid}, not one of {oids:?}"
        ))),
        value => Ok(value),
    }
}

impl Cells for tokio_postgres::Row {
    fn text(&self, idx: usize) -> Result<Option<&str>, DbErr> {
        pipe_cell(self, idx, &oid::TEXT)?.map(utf8).transpose()
    }
    fn int(&self, idx: usize) -> Result<Option<i32>, DbErr> {
        pipe_cell(self, idx, &[oid::INT4])?.map(int4).transpose()
    }
    fn int64(&self, idx: usize) -> Result<Option<i64>, DbErr> {
        pipe_cell(self, idx, &[oid::INT8])?.map(int8).transpose()
    }
    fn float(&self, idx: usize) -> Result<Option<f64>, DbErr> {
        pipe_cell(self, idx, &[oid::FLOAT8])?
            .map(float8)
            .transpose()
    }
    fn boolean(&self, idx: usize) -> Result<Option<bool>, DbErr> {
        pipe_cell(self, idx, &[oid::BOOL])?.map(bool1).transpose()
    }
    fn datetime(&self, idx: usize) -> Result<Option<chrono::DateTime<chrono::Utc>>, DbErr> {
        pipe_cell(self, idx, &[oid::TIMESTAMPTZ])?
            .map(timestamptz)
            .transpose()
    }
}
