//! The storage layer: the only place that talks to the database.
//!
//! SQLite (the embedded default) and PostgreSQL are both first-class. SQLite runs in WAL mode with
//! a pool of reader connections and a single writer connection, so writes queue in the process
//! instead of failing with `SQLITE_BUSY`. PostgreSQL runs single statements, reads and writes, on
//! connections kept outside sqlx's pool, so that each costs one round trip (`pg.rs`), and
//! transactions on a pool. Every statement goes through [`Exec`], which counts statements per
//! request (the count is reported in a response header and used by tests that guard against N+1
//! queries).

pub mod ddl;
mod pg;
pub mod sql;

use std::str::FromStr;
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
            let direct = Conn::Pg(pg::Direct::connect(url, STATEMENT_CONNECTIONS).await?);
            Ok(Db {
                backend: Backend::Postgres,
                read: direct.clone(),
                write: direct,
                tx: SqlxPostgresConnector::from_sqlx_postgres_pool(pool),
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
            let writer = SqlxSqliteConnector::from_sqlx_sqlite_pool(writer);
            Ok(Db {
                backend: Backend::Sqlite,
                read: Conn::Pool(SqlxSqliteConnector::from_sqlx_sqlite_pool(reader)),
                write: Conn::Pool(writer.clone()),
                tx: writer,
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

    /// Starts the transaction a mutation runs in.
    pub async fn begin(&self) -> Result<DatabaseTransaction, DbErr> {
        self.tx.begin().await
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
        let tx = self.tx.begin().await?;
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

/// A connection (pool or transaction) plus the request's statement counter.
pub struct Exec<'a, C: ConnectionTrait> {
    pub conn: &'a C,
    pub counter: &'a Counter,
}

impl<C: ConnectionTrait> Exec<'_, C> {
    /// The dialect of the connection.
    pub fn backend(&self) -> Backend {
        match self.conn.get_database_backend() {
            sea_orm::DbBackend::Postgres => Backend::Postgres,
            _ => Backend::Sqlite,
        }
    }

    pub async fn all(&self, sql: Sql) -> Result<Vec<QueryResult>, DbErr> {
        self.counter.0.fetch_add(1, Ordering::Relaxed);
        self.conn.query_all_raw(sql.into_statement()).await
    }

    pub async fn one(&self, sql: Sql) -> Result<Option<QueryResult>, DbErr> {
        self.counter.0.fetch_add(1, Ordering::Relaxed);
        self.conn.query_one_raw(sql.into_statement()).await
    }

    pub async fn execute(&self, sql: Sql) -> Result<u64, DbErr> {
        self.counter.0.fetch_add(1, Ordering::Relaxed);
        Ok(self
            .conn
            .execute_raw(sql.into_statement())
            .await?
            .rows_affected())
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
            text.map(|t| {
                parse_datetime(&t).ok_or_else(|| DbErr::Type(format!("bad stored date `{t}`")))
            })
            .transpose()
        }
    }
}

/// The field named by a unique-constraint violation, if `err` is one. `Some(None)` means it is a
/// violation whose field could not be determined.
pub fn unique_violation(err: &DbErr, table: &str) -> Option<Option<String>> {
    let sea_orm::SqlErr::UniqueConstraintViolation(message) = err.sql_err()? else {
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
