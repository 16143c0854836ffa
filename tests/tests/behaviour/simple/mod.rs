//! The Simple API (reference §2): queries, mutations, filters, ordering and pagination, scalars,
//! the request envelope, the schema as introspection shows it, compiled plans, the statements
//! each request costs, the changes mutations hand to observers, and GraphQL over HTTP.

mod changes;
pub(crate) mod direct;
mod envelope;
mod filters;
pub(crate) mod introspection;
mod mutations;
mod ordering;
mod over_http;
mod pagination;
mod queries;
mod scalars;
mod statements;
