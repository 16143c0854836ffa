//! The Relay API (reference §3): the same nodes, permissions and engine as the Simple API, in
//! the schema conventions of the Relay client framework. Its root query type holds `viewer` and
//! `node(id)` ([`Query`]); lists are connections with page facts and a count ([`Connections`]);
//! the model types are the Simple API's, with to-many relation fields as connections
//! ([`relation_fields`], chosen by [`crate::api::shape`]).
//!
//! Its mutations, model and relation ones and the `deleteMany`/`updateMany` extensions, take
//! `input` with `clientMutationId` and answer payloads ([`Mutation`], reference §3.2).

mod connection;
mod fields;
mod mutation;
mod query;

pub use connection::Connections;
pub use fields::{relation_field, relation_fields};
pub use mutation::{Mutation, Writes};
pub use query::{Query, ViewerFields};
