//! PostgreSQL reads of compiled plans, over connections each thread shares among its requests.
//!
//! A compiled plan's `SELECT` runs here when it can: on a connection its own thread opened, which
//! several requests of that thread use at once. Their statements are pipelined: each is sent as
//! soon as it is issued, behind those still running, and the answers come back in order. Under
//! load one PostgreSQL wake-up then serves several statements, where a connection per statement
//! (`statements.rs`) wakes a backend process, and the HTTP worker after it, once per statement;
//! and the rows are read straight from the protocol's binary values, without sqlx's row stream
//! and per-cell type checks.
//!
//! A thread sends its statements to the first of its connections that is not stalled: one with
//! statements in flight that has answered none for 2 ms (it is running a slow one, which those
//! queued behind it wait for). When all are stalled it opens another, up to 4 per thread.
//! So under load a thread's statements share one connection, and a slow statement holds back
//! only the statements sent behind it before it was found stalled. Statements are prepared
//! once per connection with the parameter types sqlx would send (so PostgreSQL resolves them the
//! same way) and kept, up to 256 per connection.
//!
//! Anything this path cannot do goes to sqlx as before, and answers exactly as it did: a value of
//! a type it does not bind, no runtime to run a connection on, every connection taken
//! ([`Pipeline`]'s bound), a connection that cannot be opened, or a statement that fails (sqlx
//! runs it again and reports what happens). A connection is a
//! [`tokio_postgres`] client, whose connection task runs on the thread that opened it; a request
//! dropped mid-statement leaves its answer to that task, which discards it.

use std::collections::HashMap;
use std::error::Error;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use bytes::{BufMut, BytesMut};
use sea_orm::Value;
use sea_orm::sqlx::postgres::{PgConnectOptions, PgSslMode};
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{Client, NoTls, Row, Statement};

use super::statements::{self, lock};

/// The most connections a thread opens.
const PER_THREAD: usize = 4;
/// How long a connection may go without answering a statement before the thread's next
/// statements go to another.
const STALLED: Duration = Duration::from_millis(2);
/// Prepared statements a connection keeps; when one more is needed it forgets them all.
const STATEMENTS: usize = 256;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The connections of one database, at most `max` open.
#[derive(Clone)]
pub struct Pipeline(Arc<Inner>);

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("open", &self.0.open.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

struct Inner {
    config: tokio_postgres::Config,
    max: usize,
    /// Connections open or being opened (at most `max`).
    open: AtomicUsize,
    /// Each thread's connections.
    conns: Mutex<HashMap<ThreadId, Slots>>,
    next_id: AtomicUsize,
    /// What `Conn::progress` counts from.
    start: Instant,
    /// The connections for single statements (see [`Pipeline::connect`]).
    single: statements::Statements,
}

impl Inner {
    /// Microseconds since `start`.
    fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX)
    }
}

/// A thread's connections, and how many it is opening.
#[derive(Default)]
struct Slots {
    conns: Vec<Arc<Conn>>,
    opening: usize,
}

/// Room taken for a connection a thread is opening. Dropped, it is given back unless the
/// connection opened (whose task gives it back when it ends), also when the request that was
/// opening it went away mid-way.
struct Opening<'a> {
    inner: &'a Inner,
    home: ThreadId,
    opened: bool,
}

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        if let Some(slots) = lock(&self.inner.conns).get_mut(&self.home) {
            slots.opening = slots.opening.saturating_sub(1);
        }
        if !self.opened {
            self.inner.open.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// The statements prepared from one SQL text, one per list of parameter types.
type Prepared = Vec<(Vec<Type>, Statement)>;

struct Conn {
    id: usize,
    client: Client,
    /// Prepared statements by SQL text.
    statements: Mutex<HashMap<String, Prepared>>,
    /// Statements sent and not yet answered.
    in_flight: AtomicUsize,
    /// When (`Inner::now`) the connection last answered a statement, or was given one while it
    /// had none.
    progress: AtomicU64,
}

impl Conn {
    /// Whether the connection has statements in flight and has answered none for [`STALLED`]:
    /// it is running a slow one, which the statements behind it wait for.
    fn stalled(&self, now: u64) -> bool {
        self.in_flight.load(Ordering::Relaxed) > 0
            && now.saturating_sub(self.progress.load(Ordering::Relaxed))
                > STALLED.as_micros() as u64
    }
}

/// Counts a statement in flight on a connection while it lives.
struct InFlight<'a> {
    conn: &'a Conn,
    inner: &'a Inner,
}

impl<'a> InFlight<'a> {
    fn new(conn: &'a Conn, inner: &'a Inner) -> Self {
        if conn.in_flight.load(Ordering::Relaxed) == 0 {
            conn.progress.store(inner.now(), Ordering::Relaxed);
        }
        conn.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight { conn, inner }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.conn
            .progress
            .store(self.inner.now(), Ordering::Relaxed);
        self.conn.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Lives as long as a connection's task: when the connection ends (or its thread's runtime
/// stops and drops the task), it leaves the thread's connections and room for another.
struct Gone {
    inner: Weak<Inner>,
    home: ThreadId,
    id: usize,
}

impl Drop for Gone {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.upgrade() {
            if let Some(slots) = lock(&inner.conns).get_mut(&self.home) {
                slots.conns.retain(|c| c.id != self.id);
            }
            inner.open.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Pipeline {
    /// The connections of `url` (a sqlx PostgreSQL URL), after checking that one opens. `None`
    /// when this path cannot serve it (TLS asked for, or the connection fails, e.g. for a
    /// password it would read from a password file), and every read goes through sqlx.
    /// `statements` are the connections for single statements, whose idle ones are closed when a
    /// connection here is lost (the server most likely ended them too; see `Pipeline::open`).
    pub async fn connect(
        url: &str,
        max: usize,
        statements: statements::Statements,
    ) -> Option<Pipeline> {
        let config = config(url)?;
        let (client, connection) = match config.connect(NoTls).await {
            Ok(connected) => connected,
            Err(e) => {
                eprintln!(
                    "svc: compiled plans read PostgreSQL through sqlx: cannot open a connection \
                     of their own ({e})"
                );
                return None;
            }
        };
        // Its client gone, the connection says goodbye and ends; each thread opens its own.
        drop(client);
        tokio::spawn(connection);
        Some(Pipeline(Arc::new(Inner {
            config,
            max,
            open: AtomicUsize::new(0),
            conns: Mutex::new(HashMap::new()),
            next_id: AtomicUsize::new(0),
            start: Instant::now(),
            single: statements,
        })))
    }

    /// Takes room for one more connection.
    fn reserve(&self) -> bool {
        let inner = &*self.0;
        inner
            .open
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < inner.max).then_some(n + 1)
            })
            .is_ok()
    }

    /// Opens a connection for the thread `home`, with room taken for it (`opening`).
    async fn open(&self, mut opening: Opening<'_>) -> Option<Arc<Conn>> {
        let home = opening.home;
        let connected = match tokio::runtime::Handle::try_current() {
            Ok(_) => self.0.config.connect(NoTls).await.ok(),
            Err(_) => None,
        };
        let (client, connection) = connected?;
        let id = self.0.next_id.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn {
            id,
            client,
            statements: Mutex::new(HashMap::new()),
            in_flight: AtomicUsize::new(0),
            progress: AtomicU64::new(0),
        });
        lock(&self.0.conns)
            .entry(home)
            .or_default()
            .conns
            .push(conn.clone());
        opening.opened = true;
        drop(opening);
        let gone = Gone {
            inner: Arc::downgrade(&self.0),
            home,
            id,
        };
        let single = self.0.single.clone();
        tokio::spawn(async move {
            let _gone = gone;
            // An error ends the connection, and the client then reports itself closed. When
            // the server ended it (a restart, a failover, an administrator), the idle
            // connections for single statements are most likely dead too: closing them lets
            // the next write open a new one instead of failing on a dead one, as reads no
            // longer find them dead first.
            if connection.await.is_err() {
                single.close_idle();
            }
        });
        Some(conn)
    }

    /// The connection for this thread's next statement: the first of its own that is not
    /// stalled (so under load the thread's statements share one connection), else a new one
    /// while the thread has fewer than [`PER_THREAD`], counting those it is opening, and there
    /// is room, else the one with the fewest in flight. `None` when there is none (the thread's
    /// first connections are still opening, or every connection is taken).
    async fn conn(&self) -> Option<Arc<Conn>> {
        let here = thread::current().id();
        let now = self.0.now();
        let found = {
            let mut conns = lock(&self.0.conns);
            let mine = conns.entry(here).or_default();
            mine.conns.retain(|c| !c.client.is_closed());
            match mine.conns.iter().find(|c| !c.stalled(now)) {
                Some(c) => Some(c.clone()),
                None if mine.conns.len() + mine.opening < PER_THREAD && self.reserve() => {
                    mine.opening += 1;
                    None
                }
                None => Some(
                    mine.conns
                        .iter()
                        .min_by_key(|c| c.in_flight.load(Ordering::Relaxed))
                        .cloned()?,
                ),
            }
        };
        match found {
            Some(conn) => Some(conn),
            None => {
                let opening = Opening {
                    inner: &self.0,
                    home: here,
                    opened: false,
                };
                self.open(opening).await
            }
        }
    }

    /// Every row of the `SELECT` `sql` with `values` bound, or `None` when this path does not
    /// answer it (see the module's documentation) and sqlx must.
    pub async fn rows(&self, sql: &str, values: &[Value]) -> Option<Vec<Row>> {
        if !statements::is_select(sql) {
            return None;
        }
        let types = values.iter().map(param_type).collect::<Option<Vec<_>>>()?;
        let conn = self.conn().await?;
        let _in_flight = InFlight::new(&conn, &self.0);
        let statement = match conn.statement(sql, &types) {
            Some(statement) => statement,
            None => {
                let statement = conn.client.prepare_typed(sql, &types).await.ok()?;
                conn.keep(sql, types, statement.clone());
                statement
            }
        };
        let params: Vec<Param<'_>> = values.iter().map(Param).collect();
        let refs: Vec<&(dyn ToSql + Sync)> =
            params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        match conn.client.query(&statement, &refs).await {
            Ok(rows) => Some(rows),
            Err(_) => {
                // A statement the schema changed under (e.g. "cached plan must not change
                // result type") is prepared again next time.
                conn.forget(sql);
                None
            }
        }
    }
}

impl Conn {
    fn statement(&self, sql: &str, types: &[Type]) -> Option<Statement> {
        lock(&self.statements)
            .get(sql)?
            .iter()
            .find(|(t, _)| t == types)
            .map(|(_, s)| s.clone())
    }

    fn keep(&self, sql: &str, types: Vec<Type>, statement: Statement) {
        let mut statements = lock(&self.statements);
        if statements.len() >= STATEMENTS && !statements.contains_key(sql) {
            // Dropping the last handle of a statement closes it on the server.
            statements.clear();
        }
        statements
            .entry(sql.to_owned())
            .or_default()
            .push((types, statement));
    }

    fn forget(&self, sql: &str) {
        lock(&self.statements).remove(sql);
    }
}

/// The connection settings of a sqlx URL, as sqlx reads them (the host, port, user and database
/// also from `PG…` environment variables), with the session settings sqlx sets. `None` for a
/// URL that asks for TLS, which this path does not speak (sqlx, built without TLS, refuses it
/// too).
fn config(url: &str) -> Option<tokio_postgres::Config> {
    let options: PgConnectOptions = url.parse().ok()?;
    if matches!(
        options.get_ssl_mode(),
        PgSslMode::Require | PgSslMode::VerifyCa | PgSslMode::VerifyFull
    ) {
        return None;
    }
    let mut config = tokio_postgres::Config::new();
    match options.get_socket() {
        Some(dir) => config.host_path(dir),
        None => config.host(options.get_host()),
    };
    config
        .port(options.get_port())
        .user(options.get_username())
        .connect_timeout(CONNECT_TIMEOUT);
    if let Some(database) = options.get_database() {
        config.dbname(database);
    }
    if let Some(name) = options.get_application_name() {
        config.application_name(name);
    }
    let mut session = String::from("-c DateStyle=ISO,MDY -c TimeZone=UTC");
    if let Some(more) = options.get_options() {
        session.push(' ');
        session.push_str(more);
    }
    config.options(&session);
    if let Some(password) = password(url) {
        config.password(password);
    }
    Some(config)
}

/// The password of a URL (percent-decoded), or else of `PGPASSWORD`.
fn password(url: &str) -> Option<Vec<u8>> {
    let without_query = url.split('?').next().unwrap_or(url);
    let from_url = without_query
        .parse::<tokio_postgres::Config>()
        .ok()
        .and_then(|c| c.get_password().map(<[u8]>::to_vec));
    from_url.or_else(|| std::env::var("PGPASSWORD").ok().map(String::into_bytes))
}

/// The type a value is bound as: the one sqlx binds it as.
fn param_type(value: &Value) -> Option<Type> {
    Some(match value {
        Value::Bool(_) => Type::BOOL,
        Value::Int(_) => Type::INT4,
        Value::BigInt(_) => Type::INT8,
        Value::Double(_) => Type::FLOAT8,
        Value::String(_) => Type::TEXT,
        Value::ChronoDateTimeUtc(_) => Type::TIMESTAMPTZ,
        _ => None?,
    })
}

/// A bound value in PostgreSQL's binary format (the types [`param_type`] names).
#[derive(Debug)]
struct Param<'a>(&'a Value);

impl ToSql for Param<'_> {
    fn to_sql(&self, _: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match self.0 {
            Value::Bool(Some(b)) => out.put_u8(u8::from(*b)),
            Value::Int(Some(i)) => out.put_i32(*i),
            Value::BigInt(Some(i)) => out.put_i64(*i),
            Value::Double(Some(f)) => out.put_f64(*f),
            Value::String(Some(s)) => out.put_slice(s.as_bytes()),
            Value::ChronoDateTimeUtc(Some(d)) => out.put_i64(
                d.signed_duration_since(super::binary::pg_epoch())
                    .num_microseconds()
                    .ok_or("a timestamp out of PostgreSQL's range")?,
            ),
            _ => return Ok(IsNull::Yes),
        }
        Ok(IsNull::No)
    }

    fn accepts(_: &Type) -> bool {
        // Statements are prepared with the types `param_type` gives.
        true
    }

    to_sql_checked!();
}

/// A column's value as the protocol sent it (binary), whatever its type.
struct Raw<'a>(Option<&'a [u8]>);

impl<'a> FromSql<'a> for Raw<'a> {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn Error + Sync + Send>> {
        Ok(Raw(Some(raw)))
    }

    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn Error + Sync + Send>> {
        Ok(Raw(None))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// The type oid and binary value (`None` for null) of column `idx` of `row`.
pub(super) fn raw(row: &Row, idx: usize) -> Result<(u32, Option<&[u8]>), sea_orm::DbErr> {
    let column = row
        .columns()
        .get(idx)
        .ok_or_else(|| sea_orm::DbErr::Type(format!("no column {idx} in the row")))?;
    let Raw(value) = row
        .try_get(idx)
        .map_err(|e| sea_orm::DbErr::Type(e.to_string()))?;
    Ok((column.type_().oid(), value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_gives_host_port_user_database_password_and_sqlx_session_settings() {
        let config =
            config("postgres://ann:p%40ss@db.example:6543/shop?application_name=svc").unwrap();
        assert_eq!(
            config.get_hosts(),
            &[tokio_postgres::config::Host::Tcp("db.example".into())]
        );
        assert_eq!(config.get_ports(), &[6543]);
        assert_eq!(config.get_user(), Some("ann"));
        assert_eq!(config.get_dbname(), Some("shop"));
        assert_eq!(config.get_password(), Some(&b"p@ss"[..]));
        assert_eq!(config.get_application_name(), Some("svc"));
        assert_eq!(
            config.get_options(),
            Some("-c DateStyle=ISO,MDY -c TimeZone=UTC")
        );
    }

    #[test]
    fn urls_asking_for_tls_are_left_to_sqlx() {
        assert!(config("postgres://a@localhost/db?sslmode=require").is_none());
        assert!(config("postgres://a@localhost/db?sslmode=verify-full").is_none());
        assert!(config("postgres://a@localhost/db?sslmode=disable").is_some());
    }

    #[test]
    fn values_bind_as_sqlx_binds_them_or_not_at_all() {
        assert_eq!(param_type(&Value::String(None)), Some(Type::TEXT));
        assert_eq!(param_type(&Value::Int(Some(1))), Some(Type::INT4));
        assert_eq!(param_type(&Value::Double(Some(1.5))), Some(Type::FLOAT8));
        assert_eq!(param_type(&Value::SmallInt(Some(1))), None);
        let mut out = BytesMut::new();
        let epoch = super::super::binary::pg_epoch();
        let at = epoch + chrono::TimeDelta::microseconds(1_500_001);
        let written = Param(&Value::ChronoDateTimeUtc(Some(at)))
            .to_sql(&Type::TIMESTAMPTZ, &mut out)
            .unwrap();
        assert!(matches!(written, IsNull::No));
        assert_eq!(&out[..], &1_500_001_i64.to_be_bytes());
        out.clear();
        let written = Param(&Value::String(None))
            .to_sql(&Type::TEXT, &mut out)
            .unwrap();
        assert!(matches!(written, IsNull::Yes) && out.is_empty());
    }
}
