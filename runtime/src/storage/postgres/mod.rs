//! PostgreSQL, for scale-out: single statements (reads and writes) on connections kept outside
//! sqlx's pool, so that each costs one round trip ([`statements`]); compiled plans' reads on
//! connections each thread shares among its requests, pipelined ([`pipeline`]), with their binary
//! values read directly ([`binary`]); transactions on sqlx's pool.

pub mod binary;
pub mod listen;
pub mod pipeline;
pub mod statements;

use std::time::Duration;

use sea_orm::sqlx::postgres::PgPoolOptions;
use sea_orm::{DbErr, SqlxPostgresConnector};

use super::db::{Backend, Db, Pool};

/// Connections for single statements, and for transactions; both sets open connections only as
/// concurrency needs them.
const STATEMENT_CONNECTIONS: usize = 16;
const TX_CONNECTIONS: u32 = 8;
/// Connections compiled plans read through ([`pipeline`]), shared by the requests of the thread
/// that opened each.
const PIPELINE_CONNECTIONS: usize = 16;

/// Connects to `postgres://…`.
pub(super) async fn connect(url: &str) -> Result<Db, DbErr> {
    // Transactions run on a sqlx pool (which pings a connection before lending it and when it
    // comes back); single statements on connections that are not pinged between statements.
    let pool = PgPoolOptions::new()
        .max_connections(TX_CONNECTIONS)
        .acquire_timeout(Duration::from_secs(30))
        .connect_lazy(url)
        .map_err(|e| DbErr::Conn(sea_orm::RuntimeErr::Internal(e.to_string())))?;
    let statements = statements::Statements::connect(url, STATEMENT_CONNECTIONS).await?;
    let pipeline = pipeline::Pipeline::connect(url, PIPELINE_CONNECTIONS, statements.clone()).await;
    let single = Pool::Pg(statements);
    Ok(Db {
        backend: Backend::Postgres,
        read: single.clone(),
        write: single,
        tx: SqlxPostgresConnector::from_sqlx_postgres_pool(pool),
        readers: None,
        writer: None,
        pipeline,
        listen_url: Some(url.to_owned()),
    })
}
