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

/// Opens `sqlite:…` (the file is created if missing), with page caches of `cache_kib` KiB on
/// the connections that read and twice that on the writer's.
pub(super) async fn connect(url: &str, cache_kib: u32) -> Result<Db, DbErr> {
    let options = SqliteConnectOptions::from_str(url)
        .map_err(conn_err)?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(30))
        .foreign_keys(true)
        .pragma("cache_size", format!("-{cache_kib}"))
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
            .map(|path| Arc::new(readers::Readers::new(path).with_cache_kib(cache_kib))),
        writer: file.as_deref().map(|path| {
            Arc::new(writer::Writer::new(path).with_cache_kib(cache_kib.saturating_mul(2)))
        }),
        pipeline: None,
        listen_url: None,
    })
}

#[cfg(test)]
mod tests {
    use sea_orm::{ConnectionTrait, DbBackend, Statement};

    use super::writer::Begun;
    use crate::model::Cells;
    use crate::storage::{ConnectOptions, Db};

    /// `PRAGMA cache_size` through sqlx's readers, the plans' readers and the writer.
    async fn caches(db: &Db) -> (i64, i64, i64) {
        let pragma = "PRAGMA cache_size";
        let sqlx = db
            .reader()
            .query_one_raw(Statement::from_string(DbBackend::Sqlite, pragma))
            .await
            .expect("pragma")
            .expect("a row")
            .try_get_by_index::<i64>(0)
            .expect("an integer");
        let readers = db
            .readers
            .as_ref()
            .expect("a file's readers")
            .query(pragma, &[]);
        let readers = readers.expect("pragma")[0].int64(0).unwrap().unwrap();
        let Begun::Here(tx) = db.writer.as_ref().expect("a writer").begin().await.unwrap() else {
            panic!("the write turn is free");
        };
        let writer = tx.query(pragma, &[]).expect("pragma")[0]
            .int64(0)
            .unwrap()
            .unwrap();
        tx.commit().unwrap();
        (sqlx, readers, writer)
    }

    /// Every connection's page cache is what the options say (negative: in KiB), the writer's
    /// twice a reader's; the default is 32 MiB.
    #[tokio::test]
    async fn the_page_caches_follow_the_options() {
        let dir = std::env::temp_dir().join(format!("svc-sqlite-caches-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let url = format!("sqlite://{}", dir.join("data.db").display());
        let db = Db::connect(&url).await.expect("connect");
        assert_eq!(caches(&db).await, (-32 * 1024, -32 * 1024, -64 * 1024));
        drop(db);
        let options = ConnectOptions {
            sqlite_cache_kib: 1536,
        };
        let db = Db::connect_with(&url, options).await.expect("connect");
        assert_eq!(caches(&db).await, (-1536, -1536, -3072));
        drop(db);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
