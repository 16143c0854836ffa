//! The storage layer: the only place that talks to the database.
//!
//! SQLite (the embedded default) and PostgreSQL are both first-class. SQLite runs in WAL mode with
//! a pool of reader connections and one write turn, so writes queue in the process instead of
//! failing with `SQLITE_BUSY`; compiled plans read through read-only connections of their own, on
//! the calling thread (`lite.rs`, through [`PlanExec`]), and bounded mutations write through a
//! connection of their own, also on the calling thread (`writer.rs`, through [`Tx`]). PostgreSQL
//! runs single statements, reads and writes, on connections kept outside sqlx's pool, so that each
//! costs one round trip (`pg.rs`), compiled plans' reads on connections each thread shares among
//! its requests, pipelined (`pipe.rs`), and transactions on a pool. Every statement goes through
//! [`Exec`], which counts statements per request (the count is reported in a response header and
//! used by tests that guard against N+1 queries).

pub mod ddl;
pub mod lite;
pub mod partner;
mod pg;
mod pipe;
pub mod sql;
pub mod writer;

use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use sea_orm::sqlx::postgres::PgPoolOptions;
use sea_orm::sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous,
};
use sea_orm::{
    ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbErr, ExecResult, QueryResult,
    SqlxPostgresConnector, SqlxSqliteConnector, Statement, TransactionTrait, Value,
};

use crate::meta::{FieldMeta, Kind};
use crate::value::{Val, format_datetime, parse_datetime};
pub use sql::Sql;

/// PostgreSQL connections for single statements, and for transactions; both sets open
/// connections only as concurrency needs them.
const STATEMENT_CONNECTIONS: usize = 16;
const TX_CONNECTIONS: u32 = 8;
/// PostgreSQL connections compiled plans read through (`pipe.rs`), shared by the requests of the
/// thread that opened each.
const PIPE_CONNECTIONS: usize = 16;
/// Rows a SQLite connection's worker thread may send ahead of the task reading them. With
/// sqlx's default (50), a 100-row page made the worker wait for the reader midway, one more
/// pair of thread wake-ups per request.
const SQLITE_ROW_BUFFER: usize = 1024;

/// Which SQL dialect a database speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A connected database.
#[derive(Debug, Clone)]
pub struct Db {
    backend: Backend,
    read: Conn,
    write: Conn,
    /// The pool transactions begin on.
    tx: DatabaseConnection,
    /// SQLite: the read-only connections compiled plans read through on the calling thread
    /// (`lite.rs`); absent for PostgreSQL and for a database that is not a file.
    lite: Option<Arc<lite::Readers>>,
    /// SQLite: the connection mutations write through on the calling thread, and the turn
    /// every write transaction takes (`writer.rs`); absent as `lite` is.
    writer: Option<Arc<writer::Writer>>,
    /// PostgreSQL: the connections compiled plans read through (`pipe.rs`), when they can serve
    /// the URL.
    pipe: Option<pipe::Pipe>,
}

/// Where statements outside a transaction run: a sqlx pool (SQLite), or on PostgreSQL a set of
/// connections that are not pinged between statements (`pg.rs`).
#[derive(Debug, Clone)]
pub enum Conn {
    Pool(DatabaseConnection),
    Pg(pg::Direct),
}

#[async_trait::async_trait]
impl ConnectionTrait for Conn {
    fn get_database_backend(&self) -> sea_orm::DbBackend {
        match self {
            Conn::Pool(c) => c.get_database_backend(),
            Conn::Pg(_) => sea_orm::DbBackend::Postgres,
        }
    }

    async fn execute_raw(&self, stmt: Statement) -> Result<ExecResult, DbErr> {
        match self {
            Conn::Pool(c) => c.execute_raw(stmt).await,
            Conn::Pg(c) => c.execute(&stmt).await,
        }
    }

    async fn execute_unprepared(&self, sql: &str) -> Result<ExecResult, DbErr> {
        match self {
            Conn::Pool(c) => c.execute_unprepared(sql).await,
            Conn::Pg(c) => c.execute_unprepared(sql).await,
        }
    }

    async fn query_one_raw(&self, stmt: Statement) -> Result<Option<QueryResult>, DbErr> {
        match self {
            Conn::Pool(c) => c.query_one_raw(stmt).await,
            Conn::Pg(c) => c.query_one(&stmt).await,
        }
    }

    async fn query_all_raw(&self, stmt: Statement) -> Result<Vec<QueryResult>, DbErr> {
        match self {
            Conn::Pool(c) => c.query_all_raw(stmt).await,
            Conn::Pg(c) => c.query_all(&stmt).await,
        }
    }
}

impl Db {
    /// Connects to `sqlite://path` (created if missing) or `postgres://…`.
    pub async fn connect(url: &str) -> Result<Db, DbErr> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            // Transactions run on a sqlx pool (which pings a connection before lending it and
            // when it comes back); single statements on connections that are not pinged
            // between statements (`pg.rs`).
            let pool = PgPoolOptions::new()
                .max_connections(TX_CONNECTIONS)
                .acquire_timeout(Duration::from_secs(30))
                .connect_lazy(url)
                .map_err(|e| DbErr::Conn(sea_orm::RuntimeErr::Internal(e.to_string())))?;
            let statements = pg::Direct::connect(url, STATEMENT_CONNECTIONS).await?;
            let pipe = pipe::Pipe::connect(url, PIPE_CONNECTIONS, statements.clone()).await;
            let direct = Conn::Pg(statements);
            Ok(Db {
                backend: Backend::Postgres,
                read: direct.clone(),
                write: direct,
                tx: SqlxPostgresConnector::from_sqlx_postgres_pool(pool),
                lite: None,
                writer: None,
                pipe,
            })
        } else if url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(url)
                .map_err(|e| DbErr::Conn(sea_orm::RuntimeErr::Internal(e.to_string())))?
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .busy_timeout(Duration::from_secs(30))
                .foreign_keys(true)
                .row_buffer_size(SQLITE_ROW_BUFFER);
            let connect = |max: u32| {
                SqlitePoolOptions::new()
                    .max_connections(max)
                    .min_connections(1)
                    .connect_with(options.clone())
            };
            let writer = connect(1)
                .await
                .map_err(|e| DbErr::Conn(sea_orm::RuntimeErr::Internal(e.to_string())))?;
            let reader = connect(4)
                .await
                .map_err(|e| DbErr::Conn(sea_orm::RuntimeErr::Internal(e.to_string())))?;
            let orm_writer = SqlxSqliteConnector::from_sqlx_sqlite_pool(writer);
            // The pools have created the file (and, in WAL mode, its `-shm` index, which
            // read-only connections need). An in-memory database has no file to open again.
            let file = std::fs::canonicalize(options.get_filename())
                .ok()
                .filter(|path| path.is_file());
            let lite = file
                .as_deref()
                .map(|path| Arc::new(lite::Readers::new(path)));
            let writer = file
                .as_deref()
                .map(|path| Arc::new(writer::Writer::new(path)));
            Ok(Db {
                backend: Backend::Sqlite,
                read: Conn::Pool(SqlxSqliteConnector::from_sqlx_sqlite_pool(reader)),
                write: Conn::Pool(orm_writer.clone()),
                tx: orm_writer,
                lite,
                writer,
                pipe: None,
            })
        } else {
            Err(DbErr::Conn(sea_orm::RuntimeErr::Internal(format!(
                "unsupported database url `{url}`: use `sqlite://PATH` or `postgres://…`"
            ))))
        }
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The connection for reads outside a transaction.
    pub fn reader(&self) -> &Conn {
        &self.read
    }

    /// The connection for a write that is a single statement (its own transaction).
    pub fn writer(&self) -> &Conn {
        &self.write
    }

    /// Starts a transaction on sea-orm's connection (migrations, system tables), after taking
    /// the write turn on SQLite.
    pub async fn begin(&self) -> Result<OrmTx, DbErr> {
        let turn = match &self.writer {
            Some(writer) => Some(writer.turn().await),
            None => None,
        };
        self.begin_holding(turn).await
    }

    async fn begin_holding(&self, turn: Option<writer::Turn>) -> Result<OrmTx, DbErr> {
        Ok(OrmTx {
            tx: self.tx.begin().await?,
            _turn: turn,
        })
    }

    /// Starts the transaction a mutation runs in: on SQLite, on the calling thread when
    /// `inline` (work with a bound: `writer.rs`), else through sqlx after taking the write turn.
    pub async fn begin_write(&self, inline: bool) -> Result<Tx, DbErr> {
        match &self.writer {
            Some(writer) if inline => match writer.begin().await? {
                writer::Begun::Here(tx) => Ok(Tx::Lite(tx)),
                writer::Begun::Busy(turn) => Ok(Tx::Orm(self.begin_holding(Some(turn)).await?)),
            },
            _ => Ok(Tx::Orm(self.begin().await?)),
        }
    }

    /// A new SQL builder for this database's dialect.
    pub fn sql(&self) -> Sql {
        Sql::new(self.backend)
    }

    /// Turns SQLite's foreign-key enforcement on or off for the writer (a no-op on PostgreSQL).
    /// It cannot change inside a transaction; migrations turn it off while they rebuild tables.
    pub async fn set_foreign_keys(&self, on: bool) -> Result<(), DbErr> {
        if self.backend == Backend::Sqlite {
            let pragma = if on { "ON" } else { "OFF" };
            self.write
                .execute_unprepared(&format!("PRAGMA foreign_keys = {pragma}"))
                .await?;
        }
        Ok(())
    }

    /// Runs a batch of DDL statements in one transaction.
    pub async fn execute_script(&self, statements: &[String]) -> Result<(), DbErr> {
        let tx = self.begin().await?;
        for s in statements {
            tx.execute_unprepared(s).await?;
        }
        tx.commit().await
    }
}

/// Counts the statements a request runs.
#[derive(Debug, Default)]
pub struct Counter(AtomicU32);

impl Counter {
    pub const fn new() -> Self {
        Counter(AtomicU32::new(0))
    }

    pub fn get(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }

    /// Counts `n` statements run elsewhere (by a part of the request that kept its own count).
    pub fn add(&self, n: u32) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
}

/// A transaction on sea-orm's connection, holding the write turn on SQLite ([`Db::begin`]).
pub struct OrmTx {
    tx: DatabaseTransaction,
    _turn: Option<writer::Turn>,
}

impl std::ops::Deref for OrmTx {
    type Target = DatabaseTransaction;
    fn deref(&self) -> &DatabaseTransaction {
        &self.tx
    }
}

impl OrmTx {
    pub async fn commit(self) -> Result<(), DbErr> {
        self.tx.commit().await
    }

    pub async fn rollback(self) -> Result<(), DbErr> {
        self.tx.rollback().await
    }
}

/// A mutation's transaction ([`Db::begin_write`]): rolled back when dropped uncommitted.
pub enum Tx {
    Orm(OrmTx),
    /// SQLite, on the calling thread.
    Lite(writer::WriteTx),
}

impl Tx {
    pub async fn commit(self) -> Result<(), DbErr> {
        match self {
            Tx::Orm(tx) => tx.commit().await,
            Tx::Lite(tx) => tx.commit(),
        }
    }
}

/// Where [`Exec`] runs statements: a connection or a transaction. Rows come back as [`Row`]s,
/// read through [`Cells`] whichever driver read them.
#[async_trait::async_trait]
pub trait Run: Sync {
    fn backend(&self) -> Backend;
    async fn all(&self, sql: Sql) -> Result<Vec<Row>, DbErr>;
    async fn one(&self, sql: Sql) -> Result<Option<Row>, DbErr>;
    /// Runs a write; returns how many rows it changed.
    async fn execute(&self, sql: Sql) -> Result<u64, DbErr>;
}

/// [`Run`] for sea-orm's connections and transactions.
macro_rules! run_through_sea_orm {
    ($($t:ty),*) => {$(
        #[async_trait::async_trait]
        impl Run for $t {
            fn backend(&self) -> Backend {
                match self.get_database_backend() {
                    sea_orm::DbBackend::Postgres => Backend::Postgres,
                    _ => Backend::Sqlite,
                }
            }
            async fn all(&self, sql: Sql) -> Result<Vec<Row>, DbErr> {
                let rows = self.query_all_raw(sql.into_statement()).await?;
                Ok(rows.into_iter().map(Row::Orm).collect())
            }
            async fn one(&self, sql: Sql) -> Result<Option<Row>, DbErr> {
                Ok(self.query_one_raw(sql.into_statement()).await?.map(Row::Orm))
            }
            async fn execute(&self, sql: Sql) -> Result<u64, DbErr> {
                Ok(self.execute_raw(sql.into_statement()).await?.rows_affected())
            }
        }
    )*};
}
run_through_sea_orm!(Conn, DatabaseConnection, DatabaseTransaction);

#[async_trait::async_trait]
impl Run for Tx {
    fn backend(&self) -> Backend {
        match self {
            Tx::Orm(tx) => Run::backend(&**tx),
            Tx::Lite(_) => Backend::Sqlite,
        }
    }
    async fn all(&self, sql: Sql) -> Result<Vec<Row>, DbErr> {
        match self {
            Tx::Orm(tx) => Run::all(&**tx, sql).await,
            Tx::Lite(tx) => Ok(tx
                .query(sql.text(), sql.values())?
                .into_iter()
                .map(Row::Lite)
                .collect()),
        }
    }
    async fn one(&self, sql: Sql) -> Result<Option<Row>, DbErr> {
        match self {
            Tx::Orm(tx) => Run::one(&**tx, sql).await,
            Tx::Lite(_) => Ok(self.all(sql).await?.into_iter().next()),
        }
    }
    async fn execute(&self, sql: Sql) -> Result<u64, DbErr> {
        match self {
            Tx::Orm(tx) => Run::execute(&**tx, sql).await,
            Tx::Lite(tx) => tx.execute(sql.text(), sql.values()),
        }
    }
}

/// A connection (pool or transaction) plus the request's statement counter.
pub struct Exec<'a, C: Run + ?Sized> {
    pub conn: &'a C,
    pub counter: &'a Counter,
}

impl<C: Run + ?Sized> Exec<'_, C> {
    /// The dialect of the connection.
    pub fn backend(&self) -> Backend {
        self.conn.backend()
    }

    pub async fn all(&self, sql: Sql) -> Result<Vec<Row>, DbErr> {
        self.counter.0.fetch_add(1, Ordering::Relaxed);
        self.conn.all(sql).await
    }

    pub async fn one(&self, sql: Sql) -> Result<Option<Row>, DbErr> {
        self.counter.0.fetch_add(1, Ordering::Relaxed);
        self.conn.one(sql).await
    }

    pub async fn execute(&self, sql: Sql) -> Result<u64, DbErr> {
        self.counter.0.fetch_add(1, Ordering::Relaxed);
        self.conn.execute(sql).await
    }
}

/// Whether PostgreSQL rolled the statement's transaction back for a deadlock (40P01) or a
/// serialization failure (40001), so that running the transaction again can succeed.
pub fn is_conflict(err: &DbErr) -> bool {
    let (DbErr::Exec(sea_orm::RuntimeErr::SqlxError(e))
    | DbErr::Query(sea_orm::RuntimeErr::SqlxError(e))) = err
    else {
        return false;
    };
    e.as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|code| code == "40P01" || code == "40001")
}

/// The constraint a failed statement broke, whichever driver ran it.
pub fn sql_err(err: &DbErr) -> Option<sea_orm::SqlErr> {
    err.sql_err().or_else(|| writer::sql_err(err))
}

/// A row of a compiled plan's statement: read by sqlx, on SQLite by [`lite`], or on PostgreSQL
/// by [`pipe`].
#[derive(Debug)]
pub enum Row {
    Orm(QueryResult),
    Lite(lite::LiteRow),
    Pipe(tokio_postgres::Row),
}

/// Where a compiled plan's reads run. On SQLite they run on the calling thread ([`lite`]) unless
/// the plan's [`Inline`] says otherwise.
pub struct PlanExec<'a> {
    pub db: &'a Db,
    pub counter: &'a Counter,
    pub inline: &'a Inline,
}

impl PlanExec<'_> {
    pub fn backend(&self) -> Backend {
        self.db.backend
    }

    /// Every row of `sql`. A statement the calling thread gave up on is counted once, when it
    /// runs through sqlx.
    pub async fn rows(&self, sql: Sql) -> Result<Vec<Row>, DbErr> {
        if let Some(readers) = &self.db.lite
            && self.inline.take_turn()
        {
            match readers.query(sql.text(), sql.values()) {
                Ok(rows) => {
                    self.inline.fitted();
                    self.counter.0.fetch_add(1, Ordering::Relaxed);
                    return Ok(rows.into_iter().map(Row::Lite).collect());
                }
                Err(lite::Refused::TooLong) => self.inline.too_long(),
                Err(lite::Refused::Failed(_)) => {}
            }
        }
        if let Some(pipe) = &self.db.pipe
            && let Some(rows) = pipe.rows(sql.text(), sql.values()).await
        {
            self.counter.0.fetch_add(1, Ordering::Relaxed);
            return Ok(rows.into_iter().map(Row::Pipe).collect());
        }
        let exec = Exec {
            conn: self.db.reader(),
            counter: self.counter,
        };
        exec.all(sql).await
    }
}

/// The most reads of a plan that go through sqlx's pool after statements too long for the
/// calling thread.
const MAX_SKIPPED: u32 = 1024;

/// Whether a compiled plan's SQLite reads run on the calling thread. After a statement too long
/// for it (its work, a cold cache, or the thread descheduled under load), the plan's next read
/// goes through sqlx's pool; after consecutive ones, the next 2, 4, … up to [`MAX_SKIPPED`].
/// A read that fits starts the count again. So a plan whose reads are long costs the calling
/// thread one interrupted attempt per 1024 reads, and one that met a passing delay is back on
/// the fast path after a read or two.
#[derive(Debug, Default)]
pub struct Inline {
    /// Reads left to send through the pool.
    skip: AtomicU32,
    /// How many the next statement too long will skip.
    penalty: AtomicU32,
}

impl Inline {
    /// Whether this read may run on the calling thread (else it counts as one skipped).
    fn take_turn(&self) -> bool {
        self.skip
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_err()
    }

    fn too_long(&self) {
        let penalty = self
            .penalty
            .load(Ordering::Relaxed)
            .saturating_mul(2)
            .clamp(1, MAX_SKIPPED);
        self.penalty.store(penalty, Ordering::Relaxed);
        self.skip.store(penalty, Ordering::Relaxed);
    }

    fn fitted(&self) {
        if self.penalty.load(Ordering::Relaxed) != 0 {
            self.penalty.store(0, Ordering::Relaxed);
        }
    }

    /// How many of the next reads go through sqlx's pool.
    pub fn skipped(&self) -> u32 {
        self.skip.load(Ordering::Relaxed)
    }
}

/// Reading the columns of a row, whichever driver read it.
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
    fn datetime(
        &self,
        idx: usize,
        backend: Backend,
    ) -> Result<Option<chrono::DateTime<chrono::Utc>>, DbErr>;
}

/// PostgreSQL type oids of the values [`pg_binary`] reads itself.
mod oid {
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
fn pg_binary<'r>(row: &'r QueryResult, idx: usize, oids: &[u32]) -> Option<Option<&'r [u8]>> {
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
fn utf8(bytes: &[u8]) -> Result<&str, DbErr> {
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
fn pg_epoch() -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp(946_684_800, 0).expect("2000-01-01 is a valid timestamp")
}

/// A binary `int4`.
fn int4(bytes: &[u8]) -> Result<i32, DbErr> {
    Ok(i32::from_be_bytes(fixed(bytes)?))
}

/// A binary `int8`.
fn int8(bytes: &[u8]) -> Result<i64, DbErr> {
    Ok(i64::from_be_bytes(fixed(bytes)?))
}

/// A binary `float8`.
fn float8(bytes: &[u8]) -> Result<f64, DbErr> {
    Ok(f64::from_be_bytes(fixed(bytes)?))
}

/// A binary `bool`.
fn bool1(bytes: &[u8]) -> Result<bool, DbErr> {
    Ok(u8::from_be_bytes(fixed(bytes)?) != 0)
}

/// A binary `timestamptz`: microseconds since [`pg_epoch`].
fn timestamptz(bytes: &[u8]) -> Result<chrono::DateTime<chrono::Utc>, DbErr> {
    let micros = i64::from_be_bytes(fixed(bytes)?);
    pg_epoch()
        .checked_add_signed(chrono::TimeDelta::microseconds(micros))
        .ok_or_else(|| DbErr::Type(format!("a timestamp out of range: {micros}")))
}

/// The binary value of column `idx` of a row read by [`pipe`] when its type is one of `oids`,
/// `Ok(None)` for null.
fn pipe_cell<'r>(
    row: &'r tokio_postgres::Row,
    idx: usize,
    oids: &[u32],
) -> Result<Option<&'r [u8]>, DbErr> {
    let (oid, value) = pipe::raw(row, idx)?;
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
    fn datetime(
        &self,
        idx: usize,
        _: Backend,
    ) -> Result<Option<chrono::DateTime<chrono::Utc>>, DbErr> {
        pipe_cell(self, idx, &[oid::TIMESTAMPTZ])?
            .map(timestamptz)
            .transpose()
    }
}

impl Cells for QueryResult {
    fn text(&self, idx: usize) -> Result<Option<&str>, DbErr> {
        match pg_binary(self, idx, &oid::TEXT) {
            Some(bytes) => bytes.map(utf8).transpose(),
            None => get_text(self, idx),
        }
    }
    fn string(&self, idx: usize) -> Result<Option<String>, DbErr> {
        match pg_binary(self, idx, &oid::TEXT) {
            Some(bytes) => bytes.map(|b| utf8(b).map(str::to_owned)).transpose(),
            None => self.try_get_by_index(idx),
        }
    }
    fn int(&self, idx: usize) -> Result<Option<i32>, DbErr> {
        match pg_binary(self, idx, &[oid::INT4]) {
            Some(bytes) => bytes.map(int4).transpose(),
            None => self.try_get_by_index(idx),
        }
    }
    fn int64(&self, idx: usize) -> Result<Option<i64>, DbErr> {
        match pg_binary(self, idx, &[oid::INT8]) {
            Some(bytes) => bytes.map(int8).transpose(),
            None => self.try_get_by_index(idx),
        }
    }
    fn float(&self, idx: usize) -> Result<Option<f64>, DbErr> {
        match pg_binary(self, idx, &[oid::FLOAT8]) {
            Some(bytes) => bytes.map(float8).transpose(),
            None => self.try_get_by_index(idx),
        }
    }
    fn boolean(&self, idx: usize) -> Result<Option<bool>, DbErr> {
        match pg_binary(self, idx, &[oid::BOOL]) {
            Some(bytes) => bytes.map(bool1).transpose(),
            None => self.try_get_by_index(idx),
        }
    }
    fn datetime(
        &self,
        idx: usize,
        backend: Backend,
    ) -> Result<Option<chrono::DateTime<chrono::Utc>>, DbErr> {
        match pg_binary(self, idx, &[oid::TIMESTAMPTZ]) {
            Some(bytes) => bytes.map(timestamptz).transpose(),
            None => get_datetime(self, idx, backend),
        }
    }
}

impl Row {
    fn cells(&self) -> &dyn Cells {
        match self {
            Row::Orm(r) => r,
            Row::Lite(r) => r,
            Row::Pipe(r) => r,
        }
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
    fn datetime(
        &self,
        idx: usize,
        backend: Backend,
    ) -> Result<Option<chrono::DateTime<chrono::Utc>>, DbErr> {
        self.cells().datetime(idx, backend)
    }
}

/// Converts a value into the SQL parameter for a column of `field`'s type. Nulls are typed, as
/// PostgreSQL requires.
pub fn to_db(val: &Val, field: &FieldMeta, backend: Backend) -> Value {
    if field.list {
        return match val {
            Val::Null => Value::String(None),
            v => Value::String(Some(v.to_json().to_string())),
        };
    }
    match (val, field.kind) {
        (Val::Null, Kind::Int) => Value::Int(None),
        (Val::Null, Kind::Float) => Value::Double(None),
        (Val::Null, Kind::Boolean) => Value::Bool(None),
        (Val::Null, Kind::DateTime) if backend == Backend::Postgres => {
            Value::ChronoDateTimeUtc(None)
        }
        (Val::Null, _) => Value::String(None),
        (Val::Int(i), Kind::Float) => Value::Double(Some(f64::from(*i))),
        (Val::Int(i), _) => Value::Int(Some(*i)),
        (Val::Float(f), _) => Value::Double(Some(*f)),
        (Val::Bool(b), _) => Value::Bool(Some(*b)),
        (Val::DateTime(d), _) => match backend {
            Backend::Postgres => Value::ChronoDateTimeUtc(Some(*d)),
            Backend::Sqlite => Value::String(Some(format_datetime(d))),
        },
        (Val::Json(j), _) => Value::String(Some(j.to_string())),
        (Val::String(s) | Val::Enum(s), _) => Value::String(Some(s.clone())),
        (v @ Val::List(_), _) => Value::String(Some(v.to_json().to_string())),
    }
}

/// Appends the select expression of a column: PostgreSQL `citext` columns are cast to `text` so
/// the driver decodes them as plain strings (and so `ILIKE` patterns on them are estimated from
/// the column's statistics).
pub fn push_select_col(sql: &mut Sql, alias: &str, field: &FieldMeta) {
    sql.col(alias, field.name);
    if sql.backend() == Backend::Postgres && field.kind.is_text() && !field.list {
        sql.push("::text");
    }
}

/// Appends a placeholder for a comparison with a column of `field`, cast so that comparisons
/// with PostgreSQL `citext` columns stay case-insensitive.
pub fn push_param(sql: &mut Sql, val: &Val, field: &FieldMeta) {
    let backend = sql.backend();
    sql.bind(to_db(val, field, backend));
    if backend == Backend::Postgres && field.kind.is_text() && !field.list {
        sql.push("::citext");
    }
}

/// Appends ` IN (<ids>)` with the ids bound as one JSON array parameter, so a batch of any size
/// is one placeholder.
pub fn push_id_list<'a>(sql: &mut Sql, ids: impl IntoIterator<Item = &'a str>) {
    let param = Value::String(Some(id_array(ids)));
    match sql.backend() {
        Backend::Sqlite => {
            sql.push(" IN (SELECT value FROM json_each(")
                .bind(param)
                .push("))");
        }
        Backend::Postgres => {
            sql.push(" IN (SELECT json_array_elements_text(")
                .bind(param)
                .push("::json))");
        }
    }
}

/// Appends a membership test of the preceding column in `ids`, in the form PostgreSQL plans best
/// for a few ids in a large table: `= ANY(ARRAY(SELECT …))` is evaluated once and matched
/// through an index on the column, where `IN (SELECT json_array_elements_text(…))` is planned as
/// a hash join over the whole table. Only for a positive test (`NOT` needs [`push_id_list`]).
pub fn push_id_any<'a>(sql: &mut Sql, ids: impl IntoIterator<Item = &'a str>) {
    match sql.backend() {
        Backend::Sqlite => push_id_list(sql, ids),
        Backend::Postgres => {
            sql.push(" = ANY(ARRAY(SELECT json_array_elements_text(")
                .bind(Value::String(Some(id_array(ids))))
                .push("::json)))");
        }
    }
}

/// Ids as the text of a JSON array (how a batch of ids travels as one parameter).
pub fn id_array<'a>(ids: impl IntoIterator<Item = &'a str>) -> String {
    serde_json::Value::Array(
        ids.into_iter()
            .map(|id| serde_json::Value::String(id.to_owned()))
            .collect(),
    )
    .to_string()
}

/// The text at `idx` in `row`, borrowed from the row rather than copied out of it.
pub fn get_text(row: &QueryResult, idx: usize) -> Result<Option<&str>, DbErr> {
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

/// Reads column `idx` of a result row as a `DateTime`.
pub fn get_datetime(
    row: &QueryResult,
    idx: usize,
    backend: Backend,
) -> Result<Option<chrono::DateTime<chrono::Utc>>, DbErr> {
    match backend {
        Backend::Postgres => row.try_get_by_index(idx),
        Backend::Sqlite => {
            let text: Option<String> = row.try_get_by_index(idx)?;
            text.as_deref().map(parse_stored_datetime).transpose()
        }
    }
}

/// A date as SQLite stores it (text).
fn parse_stored_datetime(text: &str) -> Result<chrono::DateTime<chrono::Utc>, DbErr> {
    parse_datetime(text).ok_or_else(|| DbErr::Type(format!("bad stored date `{text}`")))
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
