//! SQLite, the embedded default: WAL mode, a pool of reader connections and one write turn, so
//! writes queue in the process instead of failing with `SQLITE_BUSY`. Compiled plans read through
//! read-only connections of their own on the calling thread ([`readers`]); bounded mutations
//! write through a connection of their own, also on the calling thread ([`writer`]), whose WAL a
//! thread of its own checkpoints ([`checkpoint`]).

pub mod checkpoint;
pub mod readers;
pub mod writer;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sea_orm::sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous,
};
use sea_orm::{DbErr, SqlxSqliteConnector};

use super::db::{Backend, Db, Pool};

/// Rows a SQLite connection's worker thread may send ahead of the task reading them. With
/// sqlx's default (50), a 100-row page made the worker wait for the reader midway, one more
/// pair of thread wake-ups per request.
const SQLITE_ROW_BUFFER: usize = 1024;

fn conn_err(e: impl std::fmt::Display) -> DbErr {
    DbErr::Conn(sea_orm::RuntimeErr::Internal(e.to_string()))
}

/// Opens `sqlite:…` (the file is created if missing).
pub(super) async fn connect(url: &str) -> Result<Db, DbErr> {
    let options = SqliteConnectOptions::from_str(url)
        .map_err(conn_err)?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(30))
        .foreign_keys(true)
        .pragma("cache_size", format!("-{}", readers::READER_CACHE_KIB))
        .row_buffer_size(SQLITE_ROW_BUFFER);
    let connect = |max: u32| {
        SqlitePoolOptions::new()
            .max_connections(max)
            .min_connections(1)
            .connect_with(options.clone())
    };
    let writer = connect(1).await.map_err(conn_err)?;
    let reader = connect(4).await.map_err(conn_err)?;
    let orm_writer = SqlxSqliteConnector::from_sqlx_sqlite_pool(writer);
    // The pools have created the file (and, in WAL mode, its `-shm` index, which read-only
    // connections need). An in-memory database has no file to open again.
    let file = std::fs::canonicalize(options.get_filename())
        .ok()
        .filter(|path| path.is_file());
    Ok(Db {
        backend: Backend::Sqlite,
        read: Pool::Orm(SqlxSqliteConnector::from_sqlx_sqlite_pool(reader)),
        write: Pool::Orm(orm_writer.clone()),
        tx: orm_writer,
        readers: file
            .as_deref()
            .map(|path| Arc::new(readers::Readers::new(path))),
        writer: file
            .as_deref()
            .map(|path| Arc::new(writer::Writer::new(path))),
        pipeline: None,
        listen_url: None,
    })
}
