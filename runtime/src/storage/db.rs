//! [`Db`], the connected database: the connections each kind of statement runs on, and the
//! transactions mutations and migrations run in.

use std::sync::Arc;

use sea_orm::{
    ConnectionTrait, DatabaseConnection, DbErr, ExecResult, QueryResult, Statement,
    TransactionTrait,
};

use super::Sql;
use super::postgres::{pipeline, statements};
use super::run::Statements as _;
use super::sqlite::{readers, writer};
use super::transaction::{OrmTx, Tx};
use crate::model::Cells as _;

/// Which SQL dialect a database speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// SQLite (`sqlite://PATH`).
    Sqlite,
    /// PostgreSQL (`postgres://…` or `postgresql://…`).
    Postgres,
}

impl Backend {
    /// Whether a data-modifying statement may sit in a `WITH` (PostgreSQL), so that a write of
    /// several rows can be one statement.
    pub fn writes_in_with(self) -> bool {
        self == Backend::Postgres
    }

    /// Whether a subquery may refer to the row beside it in a `FROM` (`LATERAL`, PostgreSQL),
    /// so that a page of related rows per parent can be joined to its parents.
    pub fn joins_laterally(self) -> bool {
        self == Backend::Postgres
    }
}

/// A connected database.
#[derive(Debug, Clone)]
pub struct Db {
    pub(super) backend: Backend,
    pub(super) read: Pool,
    pub(super) write: Pool,
    /// The pool transactions begin on.
    pub(super) tx: DatabaseConnection,
    /// SQLite: the read-only connections compiled plans read through on the calling thread
    /// (`sqlite/readers.rs`); absent for PostgreSQL and for a database that is not a file.
    pub(super) readers: Option<Arc<readers::Readers>>,
    /// SQLite: the connection mutations write through on the calling thread, and the turn
    /// every write transaction takes (`sqlite/writer.rs`); absent as `readers` is.
    pub(super) writer: Option<Arc<writer::Writer>>,
    /// PostgreSQL: the connections compiled plans read through (`postgres/pipeline.rs`), when
    /// they can serve the URL.
    pub(super) pipeline: Option<pipeline::Pipeline>,
    /// PostgreSQL: the URL a notification listener connects to.
    pub(super) listen_url: Option<String>,
}

/// Where statements outside a transaction run: a sqlx pool (SQLite), or on PostgreSQL a set of
/// connections that are not pinged between statements (`postgres/statements.rs`).
#[derive(Debug, Clone)]
pub enum Pool {
    /// SQLite: sea-orm's connection over a sqlx pool.
    Orm(DatabaseConnection),
    /// PostgreSQL: the statement connections of `postgres/statements.rs`.
    Pg(statements::Statements),
}

#[async_trait::async_trait]
impl ConnectionTrait for Pool {
    fn get_database_backend(&self) -> sea_orm::DbBackend {
        match self {
            Pool::Orm(c) => c.get_database_backend(),
            Pool::Pg(_) => sea_orm::DbBackend::Postgres,
        }
    }

    async fn execute_raw(&self, stmt: Statement) -> Result<ExecResult, DbErr> {
        match self {
            Pool::Orm(c) => c.execute_raw(stmt).await,
            Pool::Pg(c) => c.execute(&stmt).await,
        }
    }

    async fn execute_unprepared(&self, sql: &str) -> Result<ExecResult, DbErr> {
        match self {
            Pool::Orm(c) => c.execute_unprepared(sql).await,
            Pool::Pg(c) => c.execute_unprepared(sql).await,
        }
    }

    async fn query_one_raw(&self, stmt: Statement) -> Result<Option<QueryResult>, DbErr> {
        match self {
            Pool::Orm(c) => c.query_one_raw(stmt).await,
            Pool::Pg(c) => c.query_one(&stmt).await,
        }
    }

    async fn query_all_raw(&self, stmt: Statement) -> Result<Vec<QueryResult>, DbErr> {
        match self {
            Pool::Orm(c) => c.query_all_raw(stmt).await,
            Pool::Pg(c) => c.query_all(&stmt).await,
        }
    }
}

/// How much a mutation writes, which decides where its statements run ([`Db::begin_write`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteUnit {
    /// A transaction whose work is bounded by the request (one node, what its arguments name,
    /// and cascades): on SQLite it may run on the calling thread.
    Bounded,
    /// A transaction whose work has no bound (the filtered `deleteMany`/`updateMany`): it stays
    /// off the calling thread.
    Unbounded,
    /// Exactly one statement, which is its own transaction: on PostgreSQL it runs without
    /// `BEGIN`/`COMMIT`; on SQLite it is a bounded transaction, as every SQLite write takes the
    /// process's write turn.
    Statement,
}

/// How [`Db::connect_with`] sets up its connections, beyond what the URL says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectOptions {
    /// On SQLite, the page cache of each connection that reads, in KiB; the writer's is twice
    /// as large. PostgreSQL ignores it.
    pub sqlite_cache_kib: u32,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            sqlite_cache_kib: super::sqlite::readers::READER_CACHE_KIB,
        }
    }
}

impl Db {
    /// Connects to `sqlite://path` (created if missing) or `postgres://…`, with the default
    /// [`ConnectOptions`].
    pub async fn connect(url: &str) -> Result<Db, DbErr> {
        Db::connect_with(url, ConnectOptions::default()).await
    }

    /// Connects to `sqlite://path` (created if missing) or `postgres://…`.
    pub async fn connect_with(url: &str, options: ConnectOptions) -> Result<Db, DbErr> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            super::postgres::connect(url).await
        } else if url.starts_with("sqlite:") {
            super::sqlite::connect(url, options.sqlite_cache_kib).await
        } else {
            Err(DbErr::Conn(sea_orm::RuntimeErr::Internal(format!(
                "unsupported database url `{url}`: use `sqlite://PATH` or `postgres://…`"
            ))))
        }
    }

    /// The database's dialect.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The connections for reads outside a transaction.
    pub fn reader(&self) -> &Pool {
        &self.read
    }

    /// The connections for a write that is a single statement (its own transaction).
    pub fn writer(&self) -> &Pool {
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
        Ok(OrmTx::new(self.tx.begin().await?, turn))
    }

    /// Starts what a mutation writes in ([`WriteUnit`]): on SQLite, a bounded transaction runs
    /// on the calling thread (`sqlite/writer.rs`), any other through sqlx after taking the write
    /// turn.
    pub async fn begin_write(&self, unit: WriteUnit) -> Result<Tx, DbErr> {
        match (&self.writer, unit) {
            (_, WriteUnit::Statement) if self.backend == Backend::Postgres => {
                Ok(Tx::Single(self.write.clone()))
            }
            (Some(writer), WriteUnit::Bounded | WriteUnit::Statement) => {
                match writer.begin().await? {
                    writer::Begun::Here(tx) => Ok(Tx::Lite(tx)),
                    writer::Begun::Busy(turn) => Ok(Tx::Orm(self.begin_holding(Some(turn)).await?)),
                }
            }
            _ => Ok(Tx::Orm(self.begin().await?)),
        }
    }

    /// Every row of the `SELECT` `sql`, a bulk read (an NDF export's): on SQLite on a blocking
    /// thread over a read-only connection of its own (`sqlite/readers.rs`, without the calling
    /// thread's budget), on PostgreSQL over the pipelined connections, through sqlx otherwise.
    pub async fn bulk_rows(&self, sql: Sql) -> Result<Vec<super::Row>, DbErr> {
        if let Some(readers) = &self.readers {
            let readers = readers.clone();
            let (text, values) = (sql.text().to_owned(), sql.values().to_vec());
            let read =
                tokio::task::spawn_blocking(move || readers.query_unbounded(&text, &values)).await;
            if let Ok(Ok(rows)) = read {
                return Ok(rows.into_iter().map(super::Row::Lite).collect());
            }
        }
        if let Some(pipeline) = &self.pipeline
            && let Some(rows) = pipeline.rows(sql.text(), sql.values()).await
        {
            return Ok(rows.into_iter().map(super::Row::Pipe).collect());
        }
        self.read.all(sql).await
    }

    /// A new SQL builder for this database's dialect.
    pub fn sql(&self) -> Sql {
        Sql::new(self.backend)
    }

    /// Whether the database carries notifications between the servers on it (PostgreSQL's
    /// `LISTEN/NOTIFY`).
    pub fn notifies(&self) -> bool {
        self.listen_url.is_some()
    }

    /// Sends `payload` to the listeners of `channel` (PostgreSQL; at most 8000 bytes).
    pub async fn notify(&self, channel: &str, payload: &str) -> Result<(), DbErr> {
        let mut sql = self.sql();
        sql.push("SELECT pg_notify(")
            .bind(channel.into())
            .push(", ")
            .bind(payload.into())
            .push(")");
        self.write.one(sql).await.map(|_| ())
    }

    /// The payload a mutation kept under `id` ([`super::Notice::Keep`]), if it is still there.
    pub async fn stored_event(&self, id: &str) -> Result<Option<String>, DbErr> {
        let table = super::layout::quote(super::bookkeeping::EVENT_TABLE);
        let mut sql = self.sql();
        sql.push(&format!("SELECT \"payload\" FROM {table} WHERE \"id\" = "))
            .bind(id.into());
        match self.write.one(sql).await? {
            Some(row) => row.string(0),
            None => Ok(None),
        }
    }

    /// Listens to `channel` on a connection of its own (PostgreSQL only).
    pub async fn listen(&self, channel: &str) -> Result<super::postgres::listen::Listener, DbErr> {
        let url = self.listen_url.as_deref().ok_or_else(|| {
            DbErr::Conn(sea_orm::RuntimeErr::Internal(
                "only PostgreSQL carries notifications".into(),
            ))
        })?;
        super::postgres::listen::Listener::connect(url, channel).await
    }

    /// The schema the connections work in (PostgreSQL's `current_schema()`; `main` on SQLite).
    pub async fn schema_name(&self) -> Result<String, DbErr> {
        if self.backend == Backend::Sqlite {
            return Ok("main".to_owned());
        }
        let mut sql = self.sql();
        sql.push("SELECT current_schema()");
        let row = self.write.one(sql).await?;
        Ok(row
            .and_then(|r| r.string(0).ok().flatten())
            .unwrap_or_else(|| "public".to_owned()))
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
