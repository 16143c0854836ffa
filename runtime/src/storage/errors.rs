//! What a failed statement means: a unique constraint broken (3010), a conflict PostgreSQL broke
//! by rolling the transaction back (a deadlock, run it again), or something the client cannot
//! fix; and how a database error becomes an [`ApiError`].

use sea_orm::DbErr;

use super::sqlite::writer;
use crate::model::ApiError;

impl From<DbErr> for ApiError {
    fn from(err: DbErr) -> Self {
        match sqlstate(&err).as_deref() {
            Some("40P01" | "40001") => ApiError::Conflict(format!("database: {err}")),
            // A string (22021) or Json value (22P05) holding U+0000, which PostgreSQL's text
            // and jsonb cannot hold: the client's value, not the server, is at fault.
            Some("22021" | "22P05") => ApiError::NulCharacter,
            _ => ApiError::Internal(format!("database: {err}")),
        }
    }
}

/// The SQLSTATE of a statement that PostgreSQL refused.
fn sqlstate(err: &DbErr) -> Option<String> {
    let (DbErr::Exec(sea_orm::RuntimeErr::SqlxError(e))
    | DbErr::Query(sea_orm::RuntimeErr::SqlxError(e))) = err
    else {
        return None;
    };
    e.as_database_error()
        .and_then(|d| d.code())
        .map(|code| code.into_owned())
}

/// Whether PostgreSQL rolled the statement's transaction back for a deadlock (40P01) or a
/// serialization failure (40001), so that running the transaction again can succeed.
pub fn is_conflict(err: &DbErr) -> bool {
    matches!(sqlstate(err).as_deref(), Some("40P01" | "40001"))
}

/// The constraint a failed statement broke, whichever driver ran it.
pub fn sql_err(err: &DbErr) -> Option<sea_orm::SqlErr> {
    err.sql_err().or_else(|| writer::sql_err(err))
}

/// The field named by a unique-constraint violation, if `err` is one. `Some(None)` means it is a
/// violation whose field could not be determined.
pub fn unique_violation(err: &DbErr, table: &str) -> Option<Option<String>> {
    let sea_orm::SqlErr::UniqueConstraintViolation(message) = sql_err(err)? else {
        return None;
    };
    // SQLite: `UNIQUE constraint failed: Post.slug`; PostgreSQL: `… constraint "Post_slug_key"`.
    let sqlite_prefix = format!("{table}.");
    if let Some(rest) = message.split("UNIQUE constraint failed: ").nth(1) {
        let field = rest
            .split(',')
            .next()
            .and_then(|f| f.trim().strip_prefix(&sqlite_prefix));
        return Some(field.map(str::to_owned));
    }
    let pg_prefix = format!("{table}_");
    let field = message
        .split('"')
        .nth(1)
        .and_then(|c| c.strip_prefix(&pg_prefix))
        .and_then(|c| c.strip_suffix("_key"));
    Some(field.map(str::to_owned))
}
