//! The Simple API (reference §2): its root types, the relation fields of model types and the
//! relation mutations' payloads, all registered and resolved from the service's data tables.

mod fields;
mod mutation;
mod payloads;
mod query;

pub use fields::{relation_field, relation_fields};
pub use mutation::Mutation;
pub use query::Query;
