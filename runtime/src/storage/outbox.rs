//! The outbox of server-side subscription functions: the events they are to be invoked for,
//! written in the transaction of the mutation that caused them (so an event exists exactly when
//! its mutation committed) and removed once delivered.
//!
//! A row is taken for delivery by setting its lease (a time until which no other deliverer, in
//! this process or another instance on the same database, takes it); a delivery that fails sets
//! the row's next attempt (`due`) and keeps the last error; one that will not be attempted again
//! is marked `failed` and kept for inspection.

use sea_orm::DbErr;

use super::bookkeeping::OUTBOX_TABLE;
use super::layout::quote;
use super::{Backend, Db, Row, Sql, Statements, WriteUnit};
use crate::model::Cells;

/// The statements that create the outbox; each is idempotent.
pub fn create_statements(backend: Backend) -> Vec<String> {
    let id = match backend {
        Backend::Sqlite => "INTEGER PRIMARY KEY AUTOINCREMENT",
        Backend::Postgres => "BIGSERIAL PRIMARY KEY",
    };
    let table = quote(OUTBOX_TABLE);
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {table} (\"id\" {id}, \"function\" TEXT NOT NULL, \
             \"event\" TEXT NOT NULL, \"request\" TEXT NOT NULL, \"payload\" TEXT, \
             \"attempts\" INTEGER NOT NULL DEFAULT 0, \"due\" BIGINT NOT NULL, \
             \"lease\" BIGINT NOT NULL DEFAULT 0, \"error\" TEXT, \
             \"failed\" BOOLEAN NOT NULL DEFAULT FALSE)"
        ),
        format!(
            "CREATE INDEX IF NOT EXISTS {} ON {table} (\"failed\", \"due\")",
            quote(&format!("{OUTBOX_TABLE}_due"))
        ),
    ]
}

/// An event for a function, to be written to the outbox.
#[derive(Debug, Clone)]
pub struct OutboxEntry {
    /// The function's name.
    pub function: &'static str,
    /// The event, encoded.
    pub event: String,
}

/// Writes `entries`, due at once (`now`, milliseconds since the epoch), with the id of the
/// request that caused them, in one statement on `conn` (the mutation's transaction).
pub async fn insert(
    conn: &impl Statements,
    entries: &[OutboxEntry],
    request: &str,
    now: i64,
) -> Result<(), DbErr> {
    if entries.is_empty() {
        return Ok(());
    }
    let mut sql = Sql::new(conn.backend());
    sql.push("INSERT INTO ")
        .ident(OUTBOX_TABLE)
        .push(" (\"function\", \"event\", \"request\", \"due\") VALUES ");
    for (i, entry) in entries.iter().enumerate() {
        if i > 0 {
            sql.push(", ");
        }
        sql.push("(")
            .bind(entry.function.into())
            .push(", ")
            .bind(entry.event.clone().into())
            .push(", ")
            .bind(request.into())
            .push(", ")
            .bind(now.into())
            .push(")");
    }
    conn.execute(sql).await.map(|_| ())
}

/// A row taken for delivery.
#[derive(Debug, Clone)]
pub struct Taken {
    /// The row's id, in the order the rows were written; what [`take`] removes once delivered.
    pub id: i64,
    /// The name of the function to invoke.
    pub function: String,
    /// The event, encoded as [`OutboxEntry::event`] was.
    pub event: String,
    /// The id of the request whose mutation caused the event.
    pub request: String,
    /// The query's result, once worked out by an earlier attempt.
    pub payload: Option<String>,
    /// Attempts so far, this one included.
    pub attempts: i32,
}

/// Removes the rows `delivered` (their events were delivered, or need none), then takes up to
/// `limit` rows that are due at `now` and not leased, in the order they were written, leasing
/// them until `until`; each counts one more attempt. One transaction.
pub async fn take(
    db: &Db,
    delivered: &[i64],
    now: i64,
    until: i64,
    limit: usize,
) -> Result<Vec<Taken>, DbErr> {
    if delivered.is_empty() && limit == 0 {
        return Ok(Vec::new());
    }
    let tx = db.begin_write(WriteUnit::Bounded).await?;
    if !delivered.is_empty() {
        let mut sql = db.sql();
        sql.push("DELETE FROM ")
            .ident(OUTBOX_TABLE)
            .push(" WHERE \"id\" IN (");
        for (i, id) in delivered.iter().enumerate() {
            if i > 0 {
                sql.push(", ");
            }
            sql.bind((*id).into());
        }
        sql.push(")");
        tx.execute(sql).await?;
    }
    let rows = if limit == 0 {
        Vec::new()
    } else {
        let mut sql = db.sql();
        sql.push("UPDATE ")
            .ident(OUTBOX_TABLE)
            .push(" SET \"lease\" = ")
            .bind(until.into())
            .push(", \"attempts\" = \"attempts\" + 1 WHERE \"lease\" <= ")
            .bind(now.into())
            .push(" AND \"id\" IN (SELECT \"id\" FROM ")
            .ident(OUTBOX_TABLE);
        push_due(&mut sql, now);
        sql.push(&format!(" ORDER BY \"id\" LIMIT {limit}"));
        if db.backend() == Backend::Postgres {
            // Instances on one database skip each other's rows rather than wait for them.
            sql.push(" FOR UPDATE SKIP LOCKED");
        }
        sql.push(
            ") RETURNING \"id\", \"function\", \"event\", \"request\", \"payload\", \"attempts\"",
        );
        tx.all(sql).await?
    };
    tx.commit().await?;
    let mut taken = rows
        .iter()
        .map(|row| {
            Ok(Taken {
                id: row.int64(0)?.unwrap_or_default(),
                function: row.string(1)?.unwrap_or_default(),
                event: row.string(2)?.unwrap_or_default(),
                request: row.string(3)?.unwrap_or_default(),
                payload: row.string(4)?,
                attempts: row.int(5)?.unwrap_or_default(),
            })
        })
        .collect::<Result<Vec<_>, DbErr>>()?;
    taken.sort_by_key(|t| t.id);
    Ok(taken)
}

/// Whether some row is due at `now` and not leased (a read, before taking rows).
pub async fn any_due(db: &Db, now: i64) -> Result<bool, DbErr> {
    let mut sql = db.sql();
    sql.push("SELECT 1 FROM ").ident(OUTBOX_TABLE);
    push_due(&mut sql, now);
    sql.push(" LIMIT 1");
    Ok(db.reader().one(sql).await?.is_some())
}

/// ` WHERE` the row is due at `now`, not leased and not failed.
fn push_due(sql: &mut Sql, now: i64) {
    sql.push(" WHERE NOT \"failed\" AND \"due\" <= ")
        .bind(now.into())
        .push(" AND \"lease\" <= ")
        .bind(now.into());
}

/// Records a failed attempt of row `id`: attempted again at `due`, or never (`None`: the row
/// is marked failed); `payload`, the query's result, is kept for the next attempts.
pub async fn failed(
    db: &Db,
    id: i64,
    error: &str,
    due: Option<i64>,
    payload: Option<&str>,
) -> Result<(), DbErr> {
    let mut sql = db.sql();
    sql.push("UPDATE ")
        .ident(OUTBOX_TABLE)
        .push(" SET \"lease\" = 0, \"error\" = ")
        .bind(error.into());
    match due {
        Some(due) => sql.push(", \"due\" = ").bind(due.into()),
        None => sql.push(", \"failed\" = TRUE"),
    };
    if let Some(payload) = payload {
        sql.push(", \"payload\" = ").bind(payload.into());
    }
    sql.push(" WHERE \"id\" = ").bind(id.into());
    write(db, sql).await.map(|_| ())
}

/// Runs one write statement in a transaction of its own (the write turn, on SQLite).
async fn write(db: &Db, sql: Sql) -> Result<Vec<Row>, DbErr> {
    let tx = db.begin_write(WriteUnit::Statement).await?;
    let rows = tx.all(sql).await?;
    tx.commit().await?;
    Ok(rows)
}
