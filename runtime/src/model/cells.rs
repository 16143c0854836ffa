//! The columns of a stored row, as records read them. The storage layer implements [`Cells`] for
//! the rows of each driver; records (and everything else that reads rows) see only this trait.

use sea_orm::DbErr;

/// Reading the columns of a row, whichever driver read it. Each implementation knows how its
/// database stores every kind of value (a date-time is text on SQLite and a `timestamptz` on
/// PostgreSQL), so callers never say which database a row came from.
pub trait Cells {
    /// Text, borrowed from the row.
    fn text(&self, idx: usize) -> Result<Option<&str>, DbErr>;
    fn string(&self, idx: usize) -> Result<Option<String>, DbErr> {
        Ok(self.text(idx)?.map(str::to_owned))
    }
    fn int(&self, idx: usize) -> Result<Option<i32>, DbErr>;
    fn int64(&self, idx: usize) -> Result<Option<i64>, DbErr>;
    fn float(&self, idx: usize) -> Result<Option<f64>, DbErr>;
    fn boolean(&self, idx: usize) -> Result<Option<bool>, DbErr>;
    fn datetime(&self, idx: usize) -> Result<Option<chrono::DateTime<chrono::Utc>>, DbErr>;
}
