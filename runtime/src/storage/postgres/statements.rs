//! PostgreSQL connections for statements that run outside a transaction.
//!
//! sqlx's pool pings every connection it takes back (`Sync`, then a wait for `ReadyForQuery`),
//! so each pooled statement costs two round trips: on a 100-row read that ping was a third of
//! the server's traffic with PostgreSQL and woke both processes once more per request. These
//! connections are kept in a plain stack instead. A connection goes back as it is; sqlx's
//! connection drains whatever a dropped statement left unread (it waits for every outstanding
//! `ReadyForQuery`) before it sends the next one, so a request cancelled mid-statement leaves
//! nothing behind for the next. A connection idle long enough to have been dropped by the
//! server, a proxy or a firewall is pinged before use. One that fails below the SQL level (I/O,
//! protocol) is closed, and so are the idle ones; a `SELECT` that met a dead connection runs
//! once more on a new one, any other statement reports the error (it may have been applied).
//! Transactions keep using sqlx's pool.
//!
//! A connection's socket answers to the event loop of the thread that opened it: the HTTP
//! server runs one event loop per worker thread, and a statement sent from another thread is
//! woken through the opener's loop, which then wakes the sender's (two thread wake-ups where one
//! would do). So a statement takes a connection its own thread opened, and opens one while fewer
//! than the maximum are open; only then does it borrow another thread's.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use sea_orm::sqlx::postgres::{PgConnectOptions, PgConnection, PgRow};
use sea_orm::sqlx::{self, AssertSqlSafe, Connection, Executor};
use sea_orm::{DbErr, ExecResult, QueryResult, RuntimeErr, Statement, Values};
use sea_query_sqlx::SqlxValues;
use tokio::sync::{Semaphore, SemaphorePermit};

/// How long a connection may sit idle before it is pinged when taken.
const IDLE_BEFORE_PING: Duration = Duration::from_secs(30);
/// How long a statement waits for a free connection.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

/// A bounded set of PostgreSQL connections, opened on demand.
#[derive(Clone)]
pub struct Statements(Arc<Inner>);

struct Inner {
    options: PgConnectOptions,
    /// Connections not in use, the most recently returned last.
    idle: Mutex<Vec<Idle>>,
    /// Bounds the connections in use.
    permits: Semaphore,
    /// Connections open, in use or idle (at most `max`).
    open: AtomicUsize,
    max: usize,
}

struct Idle {
    conn: PgConnection,
    since: Instant,
    /// The thread that opened the connection.
    home: ThreadId,
}

impl Inner {
    /// Takes note of connections that were closed or lost.
    fn closed(&self, n: usize) {
        self.open.fetch_sub(n, Ordering::Relaxed);
    }

    /// Closes every idle connection.
    fn close_idle(&self) {
        let gone = std::mem::take(&mut *lock(&self.idle));
        self.closed(gone.len());
    }
}

impl std::fmt::Debug for Statements {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Statements")
            .field("available", &self.0.permits.available_permits())
            .finish_non_exhaustive()
    }
}

/// One of the `open` connections, taken out of the idle ones or about to be opened. Dropped, it
/// goes back to the idle ones, or, when it has no connection (it broke, or opening it failed or
/// was abandoned), leaves room for another.
struct Slot<'a> {
    conn: Option<PgConnection>,
    home: ThreadId,
    inner: &'a Inner,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        match self.conn.take() {
            Some(conn) => lock(&self.inner.idle).push(Idle {
                conn,
                since: Instant::now(),
                home: self.home,
            }),
            None => self.inner.closed(1),
        }
    }
}

/// A connection taken from [`Statements`]; it goes back when dropped unless it broke.
struct Lease<'a> {
    slot: Slot<'a>,
    /// Whether the connection had served statements before (so it may have died idle).
    reused: bool,
    _permit: SemaphorePermit<'a>,
}

impl Lease<'_> {
    fn conn(&mut self) -> &mut PgConnection {
        self.slot
            .conn
            .as_mut()
            .expect("a lease holds its connection until dropped")
    }

    /// Takes note of a failed statement: a connection that failed below the SQL level is closed,
    /// not returned, and so are the idle ones (a server restart or a network cut ends them all;
    /// the next statements open new connections instead of failing one by one). Returns whether
    /// the connection broke.
    fn failed(&mut self, err: &sqlx::Error) -> bool {
        let broke = match err {
            // The server says the session is over: it was ended (class 57, e.g. 57P01 when an
            // administrator or a shutdown terminated it) or the connection failed (class 08).
            sqlx::Error::Database(e) => e
                .code()
                .is_some_and(|code| code.starts_with("57P") || code.starts_with("08")),
            _ => !matches!(
                err,
                sqlx::Error::RowNotFound
                    | sqlx::Error::ColumnDecode { .. }
                    | sqlx::Error::ColumnIndexOutOfBounds { .. }
                    | sqlx::Error::ColumnNotFound(_)
                    | sqlx::Error::Decode(_)
                    | sqlx::Error::Encode(_)
                    | sqlx::Error::TypeNotFound { .. }
            ),
        };
        if broke {
            self.slot.conn = None;
            self.slot.inner.close_idle();
        }
        broke
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn conn_err(err: sqlx::Error) -> DbErr {
    DbErr::Conn(RuntimeErr::SqlxError(Arc::new(err)))
}

/// Whether `sql` is a `SELECT` (the runtime's `SELECT`s only read).
pub(super) fn is_select(sql: &str) -> bool {
    sql.trim_start()
        .get(..7)
        .is_some_and(|s| s.eq_ignore_ascii_case("SELECT "))
}

fn query_err(err: sqlx::Error) -> DbErr {
    DbErr::Query(RuntimeErr::SqlxError(Arc::new(err)))
}

fn exec_err(err: sqlx::Error) -> DbErr {
    DbErr::Exec(RuntimeErr::SqlxError(Arc::new(err)))
}

fn query(stmt: &Statement) -> sqlx::query::Query<'_, sqlx::Postgres, SqlxValues> {
    let values = stmt.values.clone().unwrap_or(Values(Vec::new()));
    sqlx::query_with(AssertSqlSafe(stmt.sql.as_str()), SqlxValues(values))
}

impl Statements {
    /// Opens the first connection (so a wrong URL fails at start) and keeps it.
    pub async fn connect(url: &str, max: usize) -> Result<Statements, DbErr> {
        let options: PgConnectOptions = url.parse().map_err(conn_err)?;
        let first = PgConnection::connect_with(&options)
            .await
            .map_err(conn_err)?;
        Ok(Statements(Arc::new(Inner {
            options,
            idle: Mutex::new(vec![Idle {
                conn: first,
                since: Instant::now(),
                home: thread::current().id(),
            }]),
            permits: Semaphore::new(max),
            open: AtomicUsize::new(1),
            max,
        })))
    }

    /// Closes every idle connection (they are most likely dead: see `pipeline.rs`).
    pub(super) fn close_idle(&self) {
        self.0.close_idle();
    }

    async fn lease(&self) -> Result<Lease<'_>, DbErr> {
        let inner = &*self.0;
        let permit = tokio::time::timeout(ACQUIRE_TIMEOUT, inner.permits.acquire())
            .await
            .map_err(|_| DbErr::ConnectionAcquire(sea_orm::ConnAcquireErr::Timeout))?
            .map_err(|_| DbErr::ConnectionAcquire(sea_orm::ConnAcquireErr::ConnectionClosed))?;
        let here = thread::current().id();
        loop {
            let taken = {
                let mut idle = lock(&inner.idle);
                if let Some(at) = idle.iter().rposition(|c| c.home == here) {
                    Some(idle.remove(at))
                } else if inner
                    .open
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                        (n < inner.max).then_some(n + 1)
                    })
                    .is_ok()
                {
                    None
                } else if let Some(other) = idle.pop() {
                    Some(other)
                } else {
                    // Not reached: with this statement's permit, fewer than `max` are in use,
                    // so with none idle there is room. Open one anyway rather than wait.
                    inner.open.fetch_add(1, Ordering::Relaxed);
                    None
                }
            };
            let mut slot = Slot {
                conn: None,
                home: taken.as_ref().map_or(here, |c| c.home),
                inner,
            };
            let reused = match taken {
                Some(c) => {
                    let mut conn = c.conn;
                    if c.since.elapsed() >= IDLE_BEFORE_PING && conn.ping().await.is_err() {
                        // A dropped connection: try the next idle one, or open a new one.
                        continue;
                    }
                    slot.conn = Some(conn);
                    true
                }
                None => {
                    let conn = PgConnection::connect_with(&inner.options)
                        .await
                        .map_err(conn_err)?;
                    slot.conn = Some(conn);
                    false
                }
            };
            return Ok(Lease {
                slot,
                reused,
                _permit: permit,
            });
        }
    }

    /// Runs a statement that returns rows: all of them, or only the first when `one`. A
    /// `SELECT` that finds its reused connection dead is run once more on a new one: it wrote
    /// nothing, so the client never sees a connection the server dropped while it sat idle.
    /// Other statements that return rows (`INSERT … RETURNING`, a `WITH` holding inserts) are
    /// writes and are never sent twice.
    async fn read(&self, stmt: &Statement, one: bool) -> Result<Vec<QueryResult>, DbErr> {
        async fn run(
            stmt: &Statement,
            one: bool,
            conn: &mut PgConnection,
        ) -> Result<Vec<QueryResult>, sqlx::Error> {
            let rows: Vec<PgRow> = if one {
                query(stmt)
                    .fetch_optional(conn)
                    .await?
                    .into_iter()
                    .collect()
            } else {
                query(stmt).fetch_all(conn).await?
            };
            Ok(rows.into_iter().map(QueryResult::from).collect())
        }
        let mut lease = self.lease().await?;
        match run(stmt, one, lease.conn()).await {
            Ok(rows) => Ok(rows),
            Err(e) if lease.failed(&e) && lease.reused && is_select(&stmt.sql) => {
                drop(lease);
                let mut lease = self.lease().await?;
                run(stmt, one, lease.conn()).await.map_err(|e| {
                    lease.failed(&e);
                    query_err(e)
                })
            }
            Err(e) => Err(query_err(e)),
        }
    }

    /// Runs a statement that returns rows and gives all of them (a `SELECT` on a dead reused
    /// connection is run again on a new one).
    pub async fn query_all(&self, stmt: &Statement) -> Result<Vec<QueryResult>, DbErr> {
        self.read(stmt, false).await
    }

    /// Runs a statement that returns rows and gives the first, `None` when there is none (a
    /// `SELECT` on a dead reused connection is run again on a new one).
    pub async fn query_one(&self, stmt: &Statement) -> Result<Option<QueryResult>, DbErr> {
        Ok(self.read(stmt, true).await?.into_iter().next())
    }

    /// Runs a write. A write is never repeated: if the connection broke, the statement may or
    /// may not have been applied, and the error goes to the client.
    pub async fn execute(&self, stmt: &Statement) -> Result<ExecResult, DbErr> {
        let mut lease = self.lease().await?;
        match query(stmt).execute(lease.conn()).await {
            Ok(done) => Ok(done.into()),
            Err(e) => {
                lease.failed(&e);
                Err(exec_err(e))
            }
        }
    }

    /// Runs SQL text as it is, without parameters or a prepared statement (DDL, for one); like
    /// [`Self::execute`], never repeated.
    pub async fn execute_unprepared(&self, sql: &str) -> Result<ExecResult, DbErr> {
        let mut lease = self.lease().await?;
        match lease.conn().execute(AssertSqlSafe(sql.to_owned())).await {
            Ok(done) => Ok(done.into()),
            Err(e) => {
                lease.failed(&e);
                Err(exec_err(e))
            }
        }
    }
}
