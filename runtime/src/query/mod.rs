//! The SQL of reads: filters, orders and pages of a model's nodes, selects, relation pages of
//! many parents at once, and the list arguments they come from.
//!
//! Architecture invariant: outside `storage/`, this is the only place where SQL differs between
//! SQLite and PostgreSQL. The layers above build statements from these pieces and never branch on
//! the database.

pub mod args;
pub mod filter;
pub mod order;
pub mod page;
pub mod relation;
pub mod select;

pub use args::ListArgs;
pub use filter::{Cond, OUTER, parse_filter, render};
pub use order::Order;
pub use page::{MAX_NODES, Page};
