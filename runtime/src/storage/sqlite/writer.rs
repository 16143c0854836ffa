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
//!
//! **Group commit.** A mutation whose work is done while others wait for the turn does not
//! commit: it releases its savepoint into the open transaction, passes the turn on and waits for
//! the batch's `COMMIT` ([`WriteTx::commit_grouped`]). The next mutation joins that transaction
//! under a `SAVEPOINT` of its own, so a failing one rolls back to it and leaves the others' work
//! alone. The mutation that finds nobody waiting commits the batch, or a committer task queued
//! for the turn when the batch opened does: the batch is committed by the first of them, before
//! anyone queued after it runs. Each member's answer waits for that `COMMIT`, so an
//! acknowledged mutation is committed, and what it ran after the commit (its observers) runs in
//! commit order. One `COMMIT` then writes each page the batch changed to the WAL once (the same
//! index pages, for creates into the same table), instead of once per mutation.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags};
use sea_orm::{DbErr, RuntimeErr, SqlErr, Value};
use tokio::sync::{Mutex, OwnedMutexGuard, watch};

use super::checkpoint::{self, Checkpointer};
use super::readers::{LiteRow, Refused, bind, read_rows};
use crate::storage::params::LiteParam;

/// Prepared statements cached on the writer connection.
const CACHED_STATEMENTS: usize = 128;
/// The writer connection's page cache by default, in KiB: twice a reading connection's
/// ([`Writer::with_cache_kib`]).
const WRITER_CACHE_KIB: u32 = 2 * super::readers::READER_CACHE_KIB;
/// How an error of this module starts: `sqlite <extended code>: <message>`.
const PREFIX: &str = "sqlite ";
/// The most mutations one `COMMIT` takes: a bound on how long the first of them waits.
const MAX_BATCH: usize = 64;

/// What a batch's members hear when SQLite rolled its transaction back before the `COMMIT`.
const ROLLED_BACK: &str = "the transaction was rolled back by SQLite before its commit";

/// What a mutation runs once its work is committed (it tells its observers).
pub type After = Box<dyn FnOnce() + Send>;

/// The writer connection, and the batch of mutations released into its open transaction.
struct Slot {
    conn: Option<Connection>,
    /// The thread that checkpoints the WAL (started with the first connection; `None` when it
    /// could not be, and then the commit that finds the WAL long checkpoints it).
    checkpointer: Option<Checkpointer>,
    /// The WAL's length, in pages, when a commit last asked for a checkpoint (0 once the WAL
    /// started again): the next asks 1 000 pages later, not at every commit while the WAL is
    /// still long.
    asked_at: i32,
    batch: Option<Batch>,
    /// The batches begun so far (naming each).
    batches: u64,
}

/// Mutations whose work is done and released into the open transaction, waiting for its commit.
struct Batch {
    id: u64,
    /// What each member runs after the commit, in the order they were released.
    after: Vec<After>,
    /// The commit's outcome, sent once.
    done: watch::Sender<Option<Result<(), String>>>,
}

/// The write connection of one SQLite file, and the turn every write transaction takes.
pub struct Writer {
    path: PathBuf,
    slot: Arc<Mutex<Slot>>,
    /// How many transactions wait for the turn: a mutation done while any does leaves its work
    /// to a batch.
    waiting: Arc<AtomicUsize>,
    /// `COMMIT`s run on the connection.
    commits: Arc<AtomicU64>,
    /// The connection's page cache, in KiB.
    cache_kib: u32,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer").field("path", &self.path).finish()
    }
}

/// The process's write turn, held by a transaction that runs through sqlx.
pub struct Turn(
    // In a `Mutex` as `WriteTx::slot` is.
    #[allow(dead_code, reason = "held, not read")] std::sync::Mutex<OwnedMutexGuard<Slot>>,
);

impl std::fmt::Debug for Turn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Turn")
    }
}

/// What [`Writer::begin`] gives.
pub enum Begun {
    /// A transaction on this module's connection.
    Here(WriteTx),
    /// Another process holds the database's write lock: the turn, for a transaction through
    /// sqlx, which waits for it.
    Busy(Turn),
}

/// Counts a task among those waiting for the turn while it waits, also when it stops waiting
/// because it was dropped.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Writer {
    /// The writer of the database file at `path` (opened when first needed).
    pub fn new(path: &Path) -> Writer {
        Writer {
            path: path.to_owned(),
            slot: Arc::new(Mutex::new(Slot {
                conn: None,
                checkpointer: None,
                asked_at: 0,
                batch: None,
                batches: 0,
            })),
            waiting: Arc::new(AtomicUsize::new(0)),
            commits: Arc::new(AtomicU64::new(0)),
            cache_kib: WRITER_CACHE_KIB,
        }
    }

    /// The same writer with a page cache of `kib` KiB on its connection (opened later).
    pub fn with_cache_kib(mut self, kib: u32) -> Writer {
        self.cache_kib = kib;
        self
    }

    /// How many `COMMIT`s the connection has run (each commits one transaction or one batch).
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    async fn acquire(&self) -> OwnedMutexGuard<Slot> {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let _waiting = Waiting(&self.waiting);
        self.slot.clone().lock_owned().await
    }

    /// Waits for the write turn, for a transaction through sqlx: an open batch is committed
    /// first.
    pub async fn turn(&self) -> Turn {
        let mut guard = self.acquire().await;
        finish_batch(&mut guard, &self.commits);
        Turn(std::sync::Mutex::new(guard))
    }

    /// Waits for the write turn and begins a transaction on this module's connection: a
    /// savepoint in the open batch's transaction when there is one.
    pub async fn begin(&self) -> Result<Begun, DbErr> {
        let mut guard = self.acquire().await;
        if guard.batch.is_some() {
            let joined = guard
                .conn
                .as_ref()
                .is_some_and(|c| !c.is_autocommit() && c.execute_batch("SAVEPOINT member").is_ok());
            if joined {
                return Ok(Begun::Here(self.tx(guard, true)));
            }
            // The transaction is gone (SQLite rolled it back) or takes no savepoint: the batch
            // ends here, failed or committed.
            finish_batch(&mut guard, &self.commits);
        }
        // `WriteTx::drop` leaves no connection inside a transaction it does not know of.
        if guard.conn.is_none() {
            guard.conn = Some(open(&self.path, self.cache_kib).map_err(db_err)?);
            if guard.checkpointer.is_none() {
                guard.checkpointer = Checkpointer::start(&self.path).ok();
            }
        }
        let Some(conn) = guard.conn.as_ref() else {
            unreachable!("opened above");
        };
        match conn.execute_batch("BEGIN IMMEDIATE") {
            Ok(()) => Ok(Begun::Here(self.tx(guard, false))),
            Err(e) if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy) => {
                Ok(Begun::Busy(Turn(std::sync::Mutex::new(guard))))
            }
            Err(e) => Err(db_err(e)),
        }
    }

    fn tx(&self, guard: OwnedMutexGuard<Slot>, joined: bool) -> WriteTx {
        WriteTx {
            slot: std::sync::Mutex::new(Some(guard)),
            joined,
            open: true,
            waiting: self.waiting.clone(),
            commits: self.commits.clone(),
        }
    }
}

fn open(path: &Path, cache_kib: u32) -> Result<Connection, rusqlite::Error> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    // As sqlx's connections are set up (`Db::connect`); the file is in WAL mode already.
    conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;")?;
    // Every write of the process goes through this connection: a page cache of its own large
    // enough for the indexes a bulk write walks (SQLite's default is 2 MiB, which a table of a
    // million rows outgrows, and each page missed is a `read` of the file again).
    conn.execute_batch(&format!("PRAGMA cache_size = -{cache_kib};"))?;
    // Checkpoints run on a thread of their own (`checkpoint.rs`).
    checkpoint::note_wal_pages(&conn);
    // `BEGIN IMMEDIATE` must not wait on the request's thread (see the module's doc).
    conn.busy_timeout(Duration::ZERO)?;
    conn.set_prepared_statement_cache_capacity(CACHED_STATEMENTS);
    Ok(conn)
}

/// Commits the open batch, if any (`None` when there is none): its members' `after` run in
/// order when it committed, and each member hears the outcome, which is also returned.
fn finish_batch(slot: &mut Slot, commits: &AtomicU64) -> Option<Result<(), String>> {
    let batch = slot.batch.take()?;
    let outcome = commit_conn(slot, commits).map_err(|e| e.to_string());
    if outcome.is_ok() {
        for after in batch.after {
            after();
        }
    }
    batch.done.send_replace(Some(outcome.clone()));
    Some(outcome)
}

/// Runs `COMMIT` on the slot's connection. When it fails the transaction is rolled back, and a
/// connection still inside a transaction afterwards is closed (the next turn opens another).
fn commit_conn(slot: &mut Slot, commits: &AtomicU64) -> Result<(), DbErr> {
    let Some(conn) = slot.conn.as_ref() else {
        return Err(closed());
    };
    if conn.is_autocommit() {
        return Err(DbErr::Custom(ROLLED_BACK.into()));
    }
    commits.fetch_add(1, Ordering::Relaxed);
    match conn.execute_batch("COMMIT") {
        Ok(()) => {
            let pages = checkpoint::pages_after_commit();
            if pages < slot.asked_at {
                slot.asked_at = 0;
            }
            if pages >= checkpoint::INLINE_PAGES || slot.checkpointer.is_none() {
                // The thread's checkpoints never copied all of the WAL (the writer appended to
                // it meanwhile, so SQLite never started it again), or there is no thread: this
                // one runs while nothing appends, as SQLite's own would. A failure leaves it to
                // the next commit.
                if pages >= checkpoint::CHECKPOINT_PAGES {
                    let _thread = slot.checkpointer.as_ref().map(Checkpointer::hold);
                    let _ = checkpoint::checkpoint(conn);
                }
            } else if pages >= slot.asked_at + checkpoint::CHECKPOINT_PAGES {
                slot.asked_at = pages;
                if let Some(checkpointer) = &slot.checkpointer {
                    checkpointer.wake();
                }
            }
            Ok(())
        }
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            if !conn.is_autocommit() {
                slot.conn = None;
            }
            Err(db_err(e))
        }
    }
}

fn closed() -> DbErr {
    DbErr::Custom("the writer connection is closed".into())
}

/// Commits batch `id` when it is still open once the turn comes: queued for the turn when the
/// batch opened, so nobody who queued after it joins the batch.
async fn committer(slot: Arc<Mutex<Slot>>, commits: Arc<AtomicU64>, id: u64) {
    let mut guard = slot.lock_owned().await;
    if guard.batch.as_ref().is_some_and(|b| b.id == id) {
        finish_batch(&mut guard, &commits);
    }
}

/// A transaction on the writer connection (or a member's savepoint in the open batch's
/// transaction): rolled back when dropped uncommitted.
pub struct WriteTx {
    /// The turn, held until the transaction commits or is rolled back. A `Mutex` only so that
    /// `&WriteTx` may cross an `.await` of a task that can move between threads; it is never
    /// contended.
    slot: std::sync::Mutex<Option<OwnedMutexGuard<Slot>>>,
    /// Whether this is a savepoint in the open batch's transaction.
    joined: bool,
    open: bool,
    waiting: Arc<AtomicUsize>,
    commits: Arc<AtomicU64>,
}

impl std::fmt::Debug for WriteTx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteTx")
            .field("open", &self.open)
            .field("joined", &self.joined)
            .finish()
    }
}

impl WriteTx {
    fn with<T>(&self, f: impl FnOnce(&Connection) -> Result<T, DbErr>) -> Result<T, DbErr> {
        let guard = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        match guard.as_ref().and_then(|slot| slot.conn.as_ref()) {
            Some(conn) => f(conn),
            None => Err(closed()),
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

    /// Ends a member's savepoint, keeping its work in the batch's transaction.
    fn release(&self) -> Result<(), DbErr> {
        if self.joined {
            self.with(|conn| conn.execute_batch("RELEASE member").map_err(db_err))?;
        }
        Ok(())
    }

    /// Commits now, on the calling thread, with the open batch's members when it joined one.
    pub fn commit(self) -> Result<(), DbErr> {
        self.commit_with(Box::new(|| {}))
    }

    /// [`WriteTx::commit`], running `after` once committed (after the batch's members').
    fn commit_with(mut self, after: After) -> Result<(), DbErr> {
        self.release()?;
        let mut guard = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        let Some(slot) = guard.as_mut() else {
            return Err(closed());
        };
        let outcome = match slot.batch.as_mut() {
            Some(batch) => {
                batch.after.push(after);
                finish_batch(slot, &self.commits)
                    .unwrap_or(Ok(()))
                    .map_err(DbErr::Custom)
            }
            None => commit_conn(slot, &self.commits).map(|()| after()),
        };
        drop(guard);
        // Committed, or rolled back by `commit_conn`.
        self.open = false;
        outcome
    }

    /// Whether a commit now goes alone: nobody waits for the turn, the batch is full, or no
    /// runtime is there to run a batch's committer.
    fn alone(&self) -> bool {
        let guard = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        let members = guard
            .as_ref()
            .and_then(|slot| slot.batch.as_ref())
            .map_or(0, |b| b.after.len());
        self.waiting.load(Ordering::SeqCst) == 0
            || members + 1 >= MAX_BATCH
            || tokio::runtime::Handle::try_current().is_err()
    }

    /// Commits, with whoever else is waiting for the turn: when anyone is, the work stays in
    /// the open transaction, the turn passes on, and this waits for the batch's commit. `after`
    /// runs once the work is committed, in commit order, on whichever task commits.
    pub async fn commit_grouped(mut self, after: After) -> Result<(), DbErr> {
        if self.alone() {
            return self.commit_with(after);
        }
        self.release()?;
        let (mut done, committer_of) = {
            let mut guard = self.slot.lock().unwrap_or_else(|e| e.into_inner());
            let Some(slot) = guard.as_mut() else {
                return Err(closed());
            };
            let opened = slot.batch.is_none();
            if opened {
                slot.batches += 1;
            }
            let id = slot.batches;
            let batch = slot.batch.get_or_insert_with(|| Batch {
                id,
                after: Vec::new(),
                done: watch::Sender::new(None),
            });
            batch.after.push(after);
            let done = batch.done.subscribe();
            // A new batch gets its committer, queued for the turn.
            let committer_of = guard
                .as_ref()
                .filter(|_| opened)
                .map(|g| (id, OwnedMutexGuard::mutex(g).clone()));
            (done, committer_of)
        };
        // The work is in the batch now: the turn passes on.
        self.open = false;
        let commits = self.commits.clone();
        drop(self);
        if let Some((id, slot)) = committer_of {
            tokio::spawn(committer(slot, commits, id));
        }
        match done.wait_for(Option::is_some).await.map(|d| d.clone()) {
            Ok(Some(Ok(()))) => Ok(()),
            Ok(Some(Err(e))) => Err(DbErr::Custom(format!("the commit failed: {e}"))),
            Ok(None) | Err(_) => Err(DbErr::Custom("the batch was never committed".into())),
        }
    }
}

impl Drop for WriteTx {
    fn drop(&mut self) {
        if !self.open {
            return;
        }
        let mut guard = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        let Some(slot) = guard.as_mut() else {
            return;
        };
        let Some(conn) = slot.conn.as_ref() else {
            return;
        };
        if self.joined {
            // This member's work goes; the batch's stays.
            let _ = conn.execute_batch("ROLLBACK TO member; RELEASE member");
            if conn.is_autocommit() {
                // SQLite rolled the whole transaction back (after some I/O errors): the batch
                // failed.
                if let Some(batch) = slot.batch.take() {
                    batch.done.send_replace(Some(Err(ROLLED_BACK.into())));
                }
            }
            return;
        }
        // SQLite may have rolled the transaction back itself (after some I/O errors); a
        // connection left inside a transaction is closed, and the next turn opens another.
        let _ = conn.execute_batch("ROLLBACK");
        if !conn.is_autocommit() {
            slot.conn = None;
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

    /// A new database file in WAL mode: `t (k)` with `k` unique, and `d (p)` whose foreign key to
    /// `p` is checked when the transaction commits. Its folder goes when it is dropped, also
    /// when a test panics (declare it before the writer, which is then dropped first).
    fn database(name: &str) -> Database {
        let dir = std::env::temp_dir().join(format!("svc-writer-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("data.db");
        Connection::open(&path)
            .unwrap()
            .execute_batch(
                "PRAGMA journal_mode = WAL; CREATE TABLE t (k TEXT UNIQUE);
                 CREATE TABLE p (id TEXT PRIMARY KEY);
                 CREATE TABLE d (p TEXT REFERENCES p (id) DEFERRABLE INITIALLY DEFERRED);",
            )
            .unwrap();
        Database(path)
    }

    /// The path of a test's database file ([`database`]).
    struct Database(PathBuf);

    impl std::ops::Deref for Database {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Database {
        fn drop(&mut self) {
            if let Some(dir) = self.0.parent() {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }

    /// What `t` holds, read through a connection of its own (committed rows only).
    fn keys(path: &Path) -> Vec<String> {
        let conn = Connection::open(path).unwrap();
        let mut stmt = conn.prepare("SELECT k FROM t ORDER BY rowid").unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    async fn begun(writer: &Writer) -> WriteTx {
        match writer.begin().await.unwrap() {
            Begun::Here(tx) => tx,
            Begun::Busy(_) => panic!("no other process writes"),
        }
    }

    fn insert(tx: &WriteTx, k: &str) -> Result<u64, DbErr> {
        tx.execute(
            "INSERT INTO t (k) VALUES (?)",
            &[Value::String(Some(k.into()))],
        )
    }

    type Log = Arc<std::sync::Mutex<Vec<&'static str>>>;

    fn logs(log: &Log, k: &'static str) -> After {
        let log = log.clone();
        Box::new(move || log.lock().unwrap().push(k))
    }

    /// A writer on a new database ([`database`]), a log, and a first transaction holding the
    /// turn, with `a` inserted.
    async fn started(name: &str) -> (Database, Arc<Writer>, Log, WriteTx) {
        let path = database(name);
        let writer = Arc::new(Writer::new(&path));
        let first = begun(&writer).await;
        insert(&first, "a").unwrap();
        (path, writer, Log::default(), first)
    }

    /// Waits until `n` tasks wait for the turn.
    async fn queued(writer: &Writer, n: usize) {
        for _ in 0..100 {
            if writer.waiting.load(Ordering::SeqCst) == n {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("{n} tasks never queued for the turn");
    }

    /// A task that begins, inserts `k` into `t` and commits (grouped), logging after its commit.
    fn member(
        writer: &Arc<Writer>,
        log: &Log,
        k: &'static str,
    ) -> tokio::task::JoinHandle<Result<(), DbErr>> {
        let (writer, log) = (writer.clone(), log.clone());
        tokio::spawn(async move {
            let tx = begun(&writer).await;
            insert(&tx, k)?;
            tx.commit_grouped(logs(&log, k)).await
        })
    }

    #[tokio::test]
    async fn waiting_mutations_commit_together_and_a_failing_one_alone() {
        let (path, writer, log, first) = started("batch").await;
        // Two more queue for the turn: one breaks the unique key, the other does not.
        let clash = member(&writer, &log, "a");
        let other = member(&writer, &log, "c");
        queued(&writer, 2).await;
        let commits = writer.commits();
        first.commit_grouped(logs(&log, "a")).await.unwrap();
        let clash = clash.await.unwrap().unwrap_err();
        assert!(
            matches!(sql_err(&clash), Some(SqlErr::UniqueConstraintViolation(_))),
            "{clash}"
        );
        other.await.unwrap().unwrap();
        assert_eq!(keys(&path), ["a", "c"]);
        assert_eq!(writer.commits() - commits, 1, "one COMMIT for both");
        assert_eq!(*log.lock().unwrap(), ["a", "c"], "in commit order");
    }

    #[tokio::test]
    async fn a_batch_that_fails_to_commit_fails_every_member() {
        let (path, writer, log, first) = started("failed").await;
        let (w, l) = (writer.clone(), log.clone());
        let breaking = tokio::spawn(async move {
            let tx = begun(&w).await;
            // Checked only by the COMMIT, which then fails for the whole batch.
            tx.execute("INSERT INTO d (p) VALUES ('missing')", &[])?;
            tx.commit_grouped(logs(&l, "d")).await
        });
        queued(&writer, 1).await;
        let failed = first.commit_grouped(logs(&log, "a")).await.unwrap_err();
        assert!(failed.to_string().contains("FOREIGN KEY"), "{failed}");
        let failed = breaking.await.unwrap().unwrap_err();
        assert!(failed.to_string().contains("FOREIGN KEY"), "{failed}");
        assert!(keys(&path).is_empty(), "nothing of the batch was committed");
        assert!(
            log.lock().unwrap().is_empty(),
            "no member was told of a commit"
        );
        // The writer goes on.
        member(&writer, &log, "b").await.unwrap().unwrap();
        assert_eq!(keys(&path), ["b"]);
    }

    #[tokio::test]
    async fn a_transaction_through_sqlx_takes_the_turn_after_the_batch_committed() {
        let (path, writer, log, first) = started("turn").await;
        let (w, p) = (writer.clone(), path.to_path_buf());
        let turn = tokio::spawn(async move {
            let _turn = w.turn().await;
            keys(&p)
        });
        queued(&writer, 1).await;
        first.commit_grouped(logs(&log, "a")).await.unwrap();
        assert_eq!(turn.await.unwrap(), ["a"]);
    }

    #[tokio::test]
    async fn a_waiter_that_gives_up_leaves_nobody_to_wait_for() {
        let (path, writer, log, first) = started("gave-up").await;
        let gone = member(&writer, &log, "b");
        queued(&writer, 1).await;
        gone.abort();
        assert!(gone.await.unwrap_err().is_cancelled());
        let commits = writer.commits();
        first.commit_grouped(logs(&log, "a")).await.unwrap();
        assert_eq!(writer.commits() - commits, 1, "committed at once");
        assert_eq!(writer.slot.lock().await.batches, 0, "without a batch");
        assert_eq!(keys(&path), ["a"]);
    }

    /// Commits that leave the WAL at 1 000 pages or more wake the checkpointing thread, which
    /// copies the WAL into the file; commits that go on while it copies keep SQLite from
    /// starting the WAL again, so past 4 000 pages the writer checkpoints itself. The WAL stays
    /// short under writes without a pause: the writer's commits no longer checkpoint at 1 000
    /// pages (its WAL hook replaced SQLite's), and without the thread and that bound this WAL
    /// would hold every page written (about 18 000 of 4 KiB).
    #[tokio::test]
    async fn the_wal_is_checkpointed_by_a_thread_of_its_own() {
        // Its 66 MB go whether the test passes or not.
        let path = database("checkpoint");
        let writer = Writer::new(&path);
        let filler = "x".repeat(16 * 1024);
        for i in 0..2000 {
            let tx = begun(&writer).await;
            insert(&tx, &format!("{i:04}{filler}")).unwrap();
            tx.commit().unwrap();
        }
        let mut done = None;
        for _ in 0..200 {
            let slot = writer.slot.lock().await;
            done = slot.checkpointer.as_ref().map(Checkpointer::done);
            if done.is_some_and(|n| n > 0) {
                break;
            }
            drop(slot);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(done.is_some_and(|n| n > 0), "{done:?} checkpoints");
        let wal = std::fs::metadata(path.with_extension("db-wal"))
            .unwrap()
            .len();
        assert!(wal < 20 * 1024 * 1024, "the WAL holds {wal} bytes");
        assert_eq!(keys(&path).len(), 2000);
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
