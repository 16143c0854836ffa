//! [`Row`], a result row of any driver, and how sqlx's rows are read as `Cells`.

use sea_orm::{DbErr, QueryResult};

use super::postgres::binary::{self, oid, pg_binary};
use super::sqlite::readers::LiteRow;
use crate::model::{Cells, DateText, ValRow, parse_datetime};

/// A row of a statement: read by sqlx, on SQLite by `sqlite/readers.rs` (compiled plans) or
/// `sqlite/writer.rs` (mutations), or on PostgreSQL by `postgres/pipeline.rs` (compiled plans).
#[derive(Debug)]
pub enum Row {
    /// A row read through sea-orm and sqlx (either database).
    Orm(QueryResult),
    /// A row read on SQLite's own connections (`sqlite/readers.rs`, `sqlite/writer.rs`).
    Lite(LiteRow),
    /// A row read on PostgreSQL's pipelined connections (`postgres/pipeline.rs`).
    Pipe(tokio_postgres::Row),
    /// Values, not read from a database (a node as a function changed it).
    Values(ValRow),
}

impl Row {
    fn cells(&self) -> &dyn Cells {
        match self {
            Row::Orm(r) => r,
            Row::Lite(r) => r,
            Row::Pipe(r) => r,
            Row::Values(r) => r,
        }
    }

    /// A row of `values`, one per field of a model in its field order.
    pub fn values(values: Vec<crate::model::Val>) -> Row {
        Row::Values(ValRow::new(values))
    }
}

impl Cells for Row {
    fn text(&self, idx: usize) -> Result<Option<&str>, DbErr> {
        self.cells().text(idx)
    }
    fn string(&self, idx: usize) -> Result<Option<String>, DbErr> {
        self.cells().string(idx)
    }
    fn int(&self, idx: usize) -> Result<Option<i32>, DbErr> {
        self.cells().int(idx)
    }
    fn int64(&self, idx: usize) -> Result<Option<i64>, DbErr> {
        self.cells().int64(idx)
    }
    fn float(&self, idx: usize) -> Result<Option<f64>, DbErr> {
        self.cells().float(idx)
    }
    fn boolean(&self, idx: usize) -> Result<Option<bool>, DbErr> {
        self.cells().boolean(idx)
    }
    fn datetime(&self, idx: usize) -> Result<Option<chrono::DateTime<chrono::Utc>>, DbErr> {
        self.cells().datetime(idx)
    }
    fn datetime_text(&self, idx: usize) -> Result<Option<DateText<'_>>, DbErr> {
        self.cells().datetime_text(idx)
    }
}

/// sqlx's rows: PostgreSQL's binary values of the common types are read directly
/// (`postgres/binary.rs`), everything else through sqlx's decoders.
impl Cells for QueryResult {
    fn text(&self, idx: usize) -> Result<Option<&str>, DbErr> {
        match pg_binary(self, idx, &oid::TEXT) {
            Some(bytes) => bytes.map(binary::utf8).transpose(),
            None => borrowed_text(self, idx),
        }
    }
    fn string(&self, idx: usize) -> Result<Option<String>, DbErr> {
        match pg_binary(self, idx, &oid::TEXT) {
            Some(bytes) => bytes
                .map(|b| binary::utf8(b).map(str::to_owned))
                .transpose(),
            None => self.try_get_by_index(idx),
        }
    }
    fn int(&self, idx: usize) -> Result<Option<i32>, DbErr> {
        match pg_binary(self, idx, &[oid::INT4]) {
            Some(bytes) => bytes.map(binary::int4).transpose(),
            None => self.try_get_by_index(idx),
        }
    }
    fn int64(&self, idx: usize) -> Result<Option<i64>, DbErr> {
        match pg_binary(self, idx, &[oid::INT8]) {
            Some(bytes) => bytes.map(binary::int8).transpose(),
            None => self.try_get_by_index(idx),
        }
    }
    fn float(&self, idx: usize) -> Result<Option<f64>, DbErr> {
        match pg_binary(self, idx, &[oid::FLOAT8]) {
            Some(bytes) => bytes.map(binary::float8).transpose(),
            None => self.try_get_by_index(idx),
        }
    }
    fn boolean(&self, idx: usize) -> Result<Option<bool>, DbErr> {
        match pg_binary(self, idx, &[oid::BOOL]) {
            Some(bytes) => bytes.map(binary::bool1).transpose(),
            None => self.try_get_by_index(idx),
        }
    }
    /// A `timestamptz` on PostgreSQL; on SQLite, text in the API's format.
    fn datetime(&self, idx: usize) -> Result<Option<chrono::DateTime<chrono::Utc>>, DbErr> {
        if let Some(bytes) = pg_binary(self, idx, &[oid::TIMESTAMPTZ]) {
            return bytes.map(binary::timestamptz).transpose();
        }
        if self.try_as_pg_row().is_some() {
            return self.try_get_by_index(idx);
        }
        let text: Option<String> = self.try_get_by_index(idx)?;
        text.as_deref().map(parse_stored_datetime).transpose()
    }
}

/// The text at `idx` in `row`, borrowed from the row rather than copied out of it.
fn borrowed_text(row: &QueryResult, idx: usize) -> Result<Option<&str>, DbErr> {
    use sea_orm::sqlx::Row;
    let decoded = if let Some(row) = row.try_as_pg_row() {
        row.try_get(idx)
    } else if let Some(row) = row.try_as_sqlite_row() {
        row.try_get(idx)
    } else {
        return Err(DbErr::Type(
            "a row from neither PostgreSQL nor SQLite".into(),
        ));
    };
    decoded.map_err(|e| DbErr::Type(e.to_string()))
}

/// A date as SQLite stores it (text).
pub(super) fn parse_stored_datetime(text: &str) -> Result<chrono::DateTime<chrono::Utc>, DbErr> {
    parse_datetime(text).ok_or_else(|| DbErr::Type(format!("bad stored date `{text}`")))
}
