//! SQLite mutations, run on the calling thread.
//!
//! SQLite lets one connection write at a time, so a mutation's transaction holds the database's
//! write lock from its `BEGIN` to its `COMMIT`, and every other mutation waits for it. Through
//! sqlx, each statement of the transaction (`BEGIN`, the inserts, `COMMIT`) is a hand-off to the
//! connection's thread and back to the request's task, which then has to be scheduled again
//! before it sends the next one: the lock is held for all those hand-offs, and creates queued
//! behind it (about 1 100–1 900 creates/s, with less than one of two cores busy). Here the
//! transaction runs on the request's own thread, on a read-write connection of its own (rusqlite
//! over the same bundled libsqlite3), with no hand-off between its statements: the lock is held
//! for the time SQLite works.
//!
//! Every write transaction of the process takes one [`Turn`] first, whether it runs here or
//! through sqlx's writer connection (migrations, the `deleteMany`/`updateMany` extensions whose
//! work has no bound, and a transaction begun while another process held the database), so the
//! two connections never wait for each other inside SQLite. A transaction here begins with
//! `BEGIN IMMEDIATE`, which takes SQLite's write lock at once or, when another process holds it,
//! fails without waiting ([`Begun::Busy`]): the caller then runs the transaction through sqlx,
//! whose thread does the waiting. Errors keep SQLite's extended result code ([`sql_err`]), so
//! constraint violations are told apart as they are for sqlx's errors.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags};
use sea_orm::{DbErr, RuntimeErr, SqlErr, Value};
use tokio::sync::{Mutex, OwnedMutexGuard};

use super::readers::{LiteRow, Refused, bind, read_rows};
use crate::storage::params::LiteParam;

/// Prepared statements cached on the writer connection.
const CACHED_STATEMENTS: usize = 128;
/// The writer connection's page cache, in KiB.
const WRITER_CACHE_KIB: u32 = 64 * 1024;
/// How an error of this module's starts: `sqlite <extended code>: <message>`.
const PREFIX: &str = "sqlite ";

/// The write connection of one SQLite file, and the turn every write transaction takes.
pub struct Writer {
    path: PathBuf,
    /// The connection, opened by the first transaction that runs here.
    conn: Arc<Mutex<Option<Connection>>>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer").field("path", &self.path).finish()
    }
}

/// The process's write turn, held by a transaction that runs through sqlx.
#[derive(Debug)]
pub struct Turn(
    // In a `Mutex` as `WriteTx::conn` is.
    #[allow(dead_code, reason = "held, not read")]
    std::sync::Mutex<OwnedMutexGuard<Option<Connection>>>,
);

/// What [`Writer::begin`] gives.
pub enum Begun {
    /// A transaction on this module's connection.
    Here(WriteTx),
    /// Another process holds the database's write lock: the turn, for a transaction through
    /// sqlx, which waits for it.
    Busy(Turn),
}

impl Writer {
    /// The writer of the database file at `path` (opened when first needed).
    pub fn new(path: &Path) -> Writer {
        Writer {
            path: path.to_owned(),
            conn: Arc::new(Mutex::new(None)),
        }
    }

    /// Waits for the write turn, for a transaction through sqlx.
    pub async fn turn(&self) -> Turn {
        Turn(std::sync::Mutex::new(self.conn.clone().lock_owned().await))
    }

    /// Waits for the write turn and begins a transaction on this module's connection.
    pub async fn begin(&self) -> Result<Begun, DbErr> {
        let mut guard = self.conn.clone().lock_owned().await;
        // `WriteTx::drop` leaves no connection inside a transaction.
        if guard.is_none() {
            *guard = Some(open(&self.path).map_err(db_err)?);
        }
        let Some(conn) = guard.as_ref() else {
            unreachable!("opened above");
        };
        match conn.execute_batch("BEGIN IMMEDIATE") {
            Ok(()) => Ok(Begun::Here(WriteTx {
                conn: std::sync::Mutex::new(guard),
                open: true,
            })),
            Err(e) if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy) => {
                Ok(Begun::Busy(Turn(std::sync::Mutex::new(guard))))
            }
            Err(e) => Err(db_err(e)),
        }
    }
}

fn open(path: &Path) -> Result<Connection, rusqlite::Error> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    // As sqlx's connections are set up (`Db::connect`); the file is in WAL mode already.
    conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;")?;
    // Every write of the process goes through this connection: a page cache of its own large
    // enough for the indexes a bulk write walks (SQLite's default is 2 MiB, which a table of a
    // million rows outgrows, and each page missed is a `read` of the file again).
    conn.execute_batch(&format!("PRAGMA cache_size = -{WRITER_CACHE_KIB};"))?;
    // `BEGIN IMMEDIATE` must not wait on the request's thread (see the module's doc).
    conn.busy_timeout(Duration::ZERO)?;
    conn.set_prepared_statement_cache_capacity(CACHED_STATEMENTS);
    Ok(conn)
}

/// A transaction on the writer connection: rolled back when dropped uncommitted.
pub struct WriteTx {
    /// A `Mutex` only so that `&WriteTx` may cross an `.await` of a task that can move between
    /// threads; it is never contended.
    conn: std::sync::Mutex<OwnedMutexGuard<Option<Connection>>>,
    open: bool,
}

impl std::fmt::Debug for WriteTx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteTx").field("open", &self.open).finish()
    }
}

impl WriteTx {
    fn with<T>(&self, f: impl FnOnce(&Connection) -> Result<T, DbErr>) -> Result<T, DbErr> {
        let guard = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        match guard.as_ref() {
            Some(conn) => f(conn),
            None => Err(DbErr::Custom("the writer connection is closed".into())),
        }
    }

    /// Every row of `sql` (a `SELECT`, or a write with `RETURNING`), run to its end.
    pub fn query(&self, sql: &str, values: &[Value]) -> Result<Vec<LiteRow>, DbErr> {
        self.with(|conn| {
            let mut stmt = conn.prepare_cached(sql).map_err(db_err)?;
            bind(&mut stmt, values).map_err(db_err)?.map_err(refused)?;
            read_rows(&mut stmt).map_err(db_err)?.map_err(refused)
        })
    }

    /// Runs the write `sql`; returns how many rows it changed.
    pub fn execute(&self, sql: &str, values: &[Value]) -> Result<u64, DbErr> {
        self.with(|conn| {
            let mut stmt = conn.prepare_cached(sql).map_err(db_err)?;
            bind(&mut stmt, values).map_err(db_err)?.map_err(refused)?;
            let changed = stmt.raw_execute().map_err(db_err)?;
            Ok(changed as u64)
        })
    }

    /// Prepares `sql` once and hands it to `work`, which runs it once per parameter list (the
    /// rows of a bulk write): no statement text is built, hashed or looked up per row.
    pub fn repeat<T>(
        &self,
        sql: &str,
        work: impl FnOnce(&mut Repeated<'_>) -> Result<T, DbErr>,
    ) -> Result<T, DbErr> {
        self.with(|conn| {
            let stmt = conn.prepare_cached(sql).map_err(db_err)?;
            work(&mut Repeated { stmt })
        })
    }

    pub fn commit(mut self) -> Result<(), DbErr> {
        self.with(|conn| conn.execute_batch("COMMIT").map_err(db_err))?;
        self.open = false;
        Ok(())
    }
}

impl Drop for WriteTx {
    fn drop(&mut self) {
        if !self.open {
            return;
        }
        let mut guard = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let Some(conn) = guard.as_ref() else {
            return;
        };
        // SQLite may have rolled the transaction back itself (after some I/O errors); a
        // connection left inside a transaction is closed, and the next turn opens another.
        let _ = conn.execute_batch("ROLLBACK");
        if !conn.is_autocommit() {
            **guard = None;
        }
    }
}

/// A statement prepared on the writer connection ([`WriteTx::repeat`]). A run that fails (a
/// constraint it breaks) leaves the transaction as it was, as any failed statement does.
pub struct Repeated<'c> {
    stmt: rusqlite::CachedStatement<'c>,
}

impl Repeated<'_> {
    /// Binds `params` (borrowed values, bound as they are) to the statement's placeholders.
    fn bind_params(&mut self, params: &[LiteParam<'_>]) -> Result<(), DbErr> {
        for (i, param) in params.iter().enumerate() {
            let at = i + 1;
            match param {
                LiteParam::Null => self.stmt.raw_bind_parameter(at, rusqlite::types::Null),
                LiteParam::Int(v) => self.stmt.raw_bind_parameter(at, v),
                LiteParam::Real(v) => self.stmt.raw_bind_parameter(at, v),
                LiteParam::Text(v) => self.stmt.raw_bind_parameter(at, v.as_ref()),
            }
            .map_err(db_err)?;
        }
        Ok(())
    }

    /// Runs the write with `params`; returns how many rows it changed.
    pub fn execute(&mut self, params: &[LiteParam<'_>]) -> Result<u64, DbErr> {
        self.bind_params(params)?;
        let changed = self.stmt.raw_execute().map_err(db_err)?;
        Ok(changed as u64)
    }

    /// Runs the statement with `params` and reads every row it yields.
    pub fn query(&mut self, params: &[LiteParam<'_>]) -> Result<Vec<LiteRow>, DbErr> {
        self.bind_params(params)?;
        read_rows(&mut self.stmt).map_err(db_err)?.map_err(refused)
    }
}

fn refused(refused: Refused) -> DbErr {
    match refused {
        Refused::Failed(message) => DbErr::Custom(message),
        Refused::TooLong => DbErr::Custom("a statement ran too long".into()),
    }
}

/// An error of this module, keeping SQLite's extended result code for [`sql_err`].
fn db_err(e: rusqlite::Error) -> DbErr {
    let message = match &e {
        rusqlite::Error::SqliteFailure(failure, message) => format!(
            "{PREFIX}{}: {}",
            failure.extended_code,
            message.as_deref().unwrap_or("an error")
        ),
        other => other.to_string(),
    };
    DbErr::Query(RuntimeErr::Internal(message))
}

/// The constraint an error of this module broke, as sea-orm reports it for sqlx's errors.
pub fn sql_err(err: &DbErr) -> Option<SqlErr> {
    let DbErr::Query(RuntimeErr::Internal(message)) = err else {
        return None;
    };
    let (code, text) = message.strip_prefix(PREFIX)?.split_once(": ")?;
    // SQLITE_CONSTRAINT_PRIMARYKEY, _UNIQUE and _FOREIGNKEY.
    match code.parse::<i32>().ok()? {
        1555 | 2067 => Some(SqlErr::UniqueConstraintViolation(text.to_owned())),
        787 => Some(SqlErr::ForeignKeyConstraintViolation(text.to_owned())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{FieldMeta, Kind, Val, parse_datetime};
    use crate::storage::params::lite_param;
    use crate::storage::{Backend, to_db};

    #[test]
    fn borrowed_params_store_what_values_store() {
        let cases = [
            (Val::Null, FieldMeta::new("a", Kind::Int)),
            (Val::Null, FieldMeta::new("a", Kind::String)),
            (Val::Int(7), FieldMeta::new("a", Kind::Int)),
            (Val::Int(7), FieldMeta::new("a", Kind::Float)),
            (Val::Float(2.5), FieldMeta::new("a", Kind::Float)),
            (Val::Bool(true), FieldMeta::new("a", Kind::Boolean)),
            (Val::Bool(false), FieldMeta::new("a", Kind::Boolean)),
            (Val::String("Zoë".into()), FieldMeta::new("a", Kind::String)),
            (Val::String("c1".into()), FieldMeta::new("a", Kind::Id)),
            (Val::Enum("DRAFT".into()), FieldMeta::new("a", Kind::Enum)),
            (
                Val::DateTime(parse_datetime("2017-11-29T14:35:13.120Z").unwrap()),
                FieldMeta::new("a", Kind::DateTime),
            ),
            (
                Val::Json(serde_json::json!({"a": [1]})),
                FieldMeta::new("a", Kind::Json),
            ),
            (
                Val::List(vec![Val::String("x".into()), Val::String("y\"".into())]),
                FieldMeta::new("a", Kind::String).list(),
            ),
            (Val::Null, FieldMeta::new("a", Kind::String).list()),
        ];
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (n INTEGER, way TEXT, v)")
            .unwrap();
        for (n, (val, field)) in cases.iter().enumerate() {
            let sql = format!("INSERT INTO t VALUES ({n}, 'values', ?)");
            let mut stmt = conn.prepare(&sql).unwrap();
            bind(&mut stmt, &[to_db(val, field, Backend::Sqlite)])
                .unwrap()
                .unwrap();
            stmt.raw_execute().unwrap();
            let sql = format!("INSERT INTO t VALUES ({n}, 'params', ?)");
            let mut repeated = Repeated {
                stmt: conn.prepare_cached(&sql).unwrap(),
            };
            repeated.execute(&[lite_param(val, field)]).unwrap();
            // Through sqlx, a parameter becomes a value first.
            let sql = format!("INSERT INTO t VALUES ({n}, 'sent', ?)");
            let mut stmt = conn.prepare(&sql).unwrap();
            bind(&mut stmt, &[lite_param(val, field).into_value()])
                .unwrap()
                .unwrap();
            stmt.raw_execute().unwrap();
        }
        let stored = |way: &str| -> Vec<String> {
            let sql = format!(
                "SELECT typeof(v) || ' ' || quote(v) FROM t WHERE way = '{way}' ORDER BY n"
            );
            let mut stmt = conn.prepare(&sql).unwrap();
            stmt.query_map([], |r| r.get(0))
                .unwrap()
                .map(Result::unwrap)
                .collect()
        };
        assert_eq!(stored("params"), stored("values"));
        assert_eq!(stored("sent"), stored("values"));
        assert_eq!(stored("values").len(), cases.len());
        assert!(stored("values").contains(&"integer 1".to_owned()));
    }

    #[test]
    fn constraint_errors_keep_their_kind() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "PRAGMA foreign_keys = ON; CREATE TABLE a (id TEXT PRIMARY KEY, u TEXT UNIQUE);
             CREATE TABLE b (a TEXT REFERENCES a (id)); INSERT INTO a VALUES ('1', 'x');",
        )
        .unwrap();
        let failure = |sql: &str| sql_err(&db_err(conn.execute_batch(sql).unwrap_err()));
        assert!(matches!(
            failure("INSERT INTO a VALUES ('2', 'x')"),
            Some(SqlErr::UniqueConstraintViolation(m)) if m == "UNIQUE constraint failed: a.u"
        ));
        assert!(matches!(
            failure("INSERT INTO a VALUES ('1', 'y')"),
            Some(SqlErr::UniqueConstraintViolation(_))
        ));
        assert!(matches!(
            failure("INSERT INTO b VALUES ('9')"),
            Some(SqlErr::ForeignKeyConstraintViolation(_))
        ));
        assert!(failure("INSERT INTO c VALUES (1)").is_none());
    }
}
