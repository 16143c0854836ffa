//! The Simple API (reference §2): queries, mutations, filters, ordering and pagination, scalars,
//! the request envelope, the indexes of `@search` fields, the schema as introspection shows it, compiled plans, the statements
//! each request costs, the changes mutations hand to observers, GraphQL over HTTP, the memory a
//! server returns after a large response, and the playground pages (of both APIs).

mod changes;
mod checked;
pub(crate) mod direct;
mod envelope;
mod filters;
pub(crate) mod introspection;
mod memory;
mod mutations;
mod ordering;
mod over_http;
mod pagination;
mod playground;
mod queries;
mod scalars;
mod search;
mod statements;
mod variables;
