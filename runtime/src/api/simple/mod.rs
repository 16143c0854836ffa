//! The Simple API (reference §2): its root types, the relation fields of model types, the
//! relation mutations' payloads, and the write arguments of its mutations, all registered and
//! resolved from the service's data tables.

mod fields;
mod mutation;
mod payloads;
mod query;
mod writes;

pub use fields::{relation_field, relation_fields};
pub use mutation::Mutation;
pub use query::Query;
