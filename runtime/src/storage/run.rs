//! Running statements: [`Statements`], implemented by every connection and transaction, and
//! [`Counted`], which counts what a request runs (the count is reported in a response header
//! and used by the tests that guard against N+1 queries).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use sea_orm::{ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbErr};

use super::db::{Backend, Pool};
use super::row::Row;
use super::sql::Sql;
use super::transaction::Tx;
use crate::model::ApiError;

/// Something that runs statements: a pool of connections or a transaction. Rows come back as
/// [`Row`]s, read through `Cells` whichever driver read them.
#[async_trait::async_trait]
pub trait Statements: Sync {
    /// The dialect the statements must be written in.
    fn backend(&self) -> Backend;
    /// Runs a query; returns every row it gives.
    async fn all(&self, sql: Sql) -> Result<Vec<Row>, DbErr>;
    /// Runs a query; returns its first row, `None` when it gives none.
    async fn one(&self, sql: Sql) -> Result<Option<Row>, DbErr>;
    /// Runs a write; returns how many rows it changed.
    async fn execute(&self, sql: Sql) -> Result<u64, DbErr>;
}

/// [`Statements`] for sea-orm's connections and transactions.
macro_rules! statements_through_sea_orm {
    ($($t:ty),*) => {$(
        #[async_trait::async_trait]
        impl Statements for $t {
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
statements_through_sea_orm!(Pool, DatabaseConnection, DatabaseTransaction);

#[async_trait::async_trait]
impl Statements for Tx {
    fn backend(&self) -> Backend {
        match self {
            Tx::Orm(tx) => Statements::backend(&**tx),
            Tx::Lite(_) => Backend::Sqlite,
            Tx::Single(pool) => Statements::backend(pool),
        }
    }
    async fn all(&self, sql: Sql) -> Result<Vec<Row>, DbErr> {
        match self {
            Tx::Orm(tx) => Statements::all(&**tx, sql).await,
            Tx::Lite(tx) => Ok(tx
                .query(sql.text(), sql.values())?
                .into_iter()
                .map(Row::Lite)
                .collect()),
            Tx::Single(pool) => Statements::all(pool, sql).await,
        }
    }
    async fn one(&self, sql: Sql) -> Result<Option<Row>, DbErr> {
        match self {
            Tx::Orm(tx) => Statements::one(&**tx, sql).await,
            Tx::Lite(_) => Ok(self.all(sql).await?.into_iter().next()),
            Tx::Single(pool) => Statements::one(pool, sql).await,
        }
    }
    async fn execute(&self, sql: Sql) -> Result<u64, DbErr> {
        match self {
            Tx::Orm(tx) => Statements::execute(&**tx, sql).await,
            Tx::Lite(tx) => tx.execute(sql.text(), sql.values()),
            Tx::Single(pool) => Statements::execute(pool, sql).await,
        }
    }
}

/// Counts the statements a request runs, and the nodes its list fields read against the
/// request's node budget (`--max-nodes`).
#[derive(Debug)]
pub struct Counter {
    statements: AtomicU32,
    nodes: AtomicU64,
    budget: u64,
}

impl Default for Counter {
    fn default() -> Self {
        Counter::new()
    }
}

/// A request read more nodes than its budget: the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverBudget(pub u64);

impl Counter {
    /// A counter without a node budget.
    pub const fn new() -> Self {
        Counter::with_node_budget(u64::MAX)
    }

    /// A counter whose request may read at most `budget` nodes in its list fields.
    pub const fn with_node_budget(budget: u64) -> Self {
        Counter {
            statements: AtomicU32::new(0),
            nodes: AtomicU64::new(0),
            budget,
        }
    }

    /// The statements counted.
    pub fn get(&self) -> u32 {
        self.statements.load(Ordering::Relaxed)
    }

    /// Counts `n` statements (run elsewhere, by a part of the request that kept its own count).
    pub fn add(&self, n: u32) {
        self.statements.fetch_add(n, Ordering::Relaxed);
    }

    /// The nodes counted.
    pub fn nodes(&self) -> u64 {
        self.nodes.load(Ordering::Relaxed)
    }

    /// The nodes the request may still read.
    pub fn nodes_left(&self) -> u64 {
        self.budget.saturating_sub(self.nodes())
    }

    /// `Err` once the request has read more than its budget: a list field then fails before
    /// its statement runs.
    pub fn within_budget(&self) -> Result<(), OverBudget> {
        if self.nodes() > self.budget {
            Err(OverBudget(self.budget))
        } else {
            Ok(())
        }
    }

    /// Counts `n` nodes a list field read; `Err` once the request has read more than its
    /// budget (the rows are read by then: the budget bounds what a request holds to one
    /// statement's rows past it).
    pub fn read_nodes(&self, n: usize) -> Result<(), OverBudget> {
        let n = u64::try_from(n).unwrap_or(u64::MAX);
        let before = self.nodes.fetch_add(n, Ordering::Relaxed);
        if before.saturating_add(n) > self.budget {
            Err(OverBudget(self.budget))
        } else {
            Ok(())
        }
    }
}

impl From<OverBudget> for ApiError {
    fn from(OverBudget(budget): OverBudget) -> Self {
        ApiError::TooManyNodesInRequest(budget)
    }
}

/// Statements run on `conn` (a pool or a transaction) and counted in the request's `counter`.
pub struct Counted<'a, C: Statements + ?Sized> {
    /// Where the statements run.
    pub conn: &'a C,
    /// The request's counter, which gets one more statement per run.
    pub counter: &'a Counter,
}

impl<C: Statements + ?Sized> Counted<'_, C> {
    /// The dialect of the connection.
    pub fn backend(&self) -> Backend {
        self.conn.backend()
    }

    /// [`Statements::all`], counted.
    pub async fn all(&self, sql: Sql) -> Result<Vec<Row>, DbErr> {
        self.counter.add(1);
        self.conn.all(sql).await
    }

    /// [`Statements::one`], counted.
    pub async fn one(&self, sql: Sql) -> Result<Option<Row>, DbErr> {
        self.counter.add(1);
        self.conn.one(sql).await
    }

    /// [`Statements::execute`], counted: how many rows the write changed.
    pub async fn execute(&self, sql: Sql) -> Result<u64, DbErr> {
        self.counter.add(1);
        self.conn.execute(sql).await
    }
}
