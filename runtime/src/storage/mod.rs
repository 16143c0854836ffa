//! The storage layer: the only place that talks to the database.
//!
//! SQLite (the embedded default, [`sqlite`]) and PostgreSQL ([`postgres`]) are both first-class.
//! Every statement is built with [`Sql`] and runs on something that implements [`Statements`]
//! (a pool or a transaction), counted per request by [`Counted`]. Compiled plans read through
//! [`PlanReads`], which takes each database's fastest path. Rows of every driver are read
//! through the model's `Cells`.
//!
//! Architecture invariant: storage knows nothing of GraphQL, and imports nothing of the runtime
//! but the model.

pub mod bookkeeping;
pub mod bulk;
mod db;
mod errors;
pub mod layout;
pub mod outbox;
mod params;
mod plan_reads;
pub mod postgres;
mod row;
mod run;
mod sql;
pub mod sqlite;
mod transaction;

pub use db::{Backend, ConnectOptions, Db, Pool, WriteUnit};
pub use errors::{is_conflict, sql_err, unique_violation};
pub use params::{id_array, to_db};
pub use plan_reads::{InlineReads, PlanReads};
pub use postgres::listen::{
    Listener, NOTIFY_SCHEMA_CHANGED, Notice, SCHEMA_CHANGED, events_channel, send as send_notices,
};
pub use row::Row;
pub use run::{Counted, Counter, OverBudget, Statements};
pub use sql::Sql;
pub use sqlite::readers::Keep;
pub use sqlite::writer::After;
pub use transaction::{OrmTx, Tx};
