//! The GraphQL APIs: their schemas, built from the data tables at start, and their resolvers,
//! which read arguments, ask the engine, and output what it returns.
//!
//! - [`simple`]: the Simple API's roots, relation fields and relation mutation payloads.
//! - [`relay`]: the Relay API's roots, connections and relation fields (its queries).
//! - [`permission`]: the permission schema (`Some<Type>Exists`), served to admins.
//! - [`system`]: the System API (tokens for the CLI and for functions).
//! - [`subscriptions`]: the Simple API's Subscription root, fed by the event bus.
//!
//! What the APIs share sits beside them: schema registration from the tables ([`registry`]), the
//! model-dependent input types ([`inputs`]), argument reading ([`args`]), the per-model entry
//! points ([`resolve`]), the write arguments of mutations ([`writes`]), what the root types
//! share ([`roots`]), the shape the model types take
//! in each API ([`shape`]), and the read-permission guard every model type carries ([`guard`]).
//! The APIs in sub-folders import this shared part, the layers below, and never each other.

pub mod args;
pub mod guard;
pub mod inputs;
pub mod mutations;
pub mod permission;
pub mod registry;
pub mod relay;
pub mod resolve;
pub mod resolvers;
pub mod roots;
pub mod shape;
pub mod simple;
pub mod subscriptions;
pub mod system;
pub mod writes;

use std::sync::Arc;

use async_graphql::{Context, ServerError, ServerResult, SimpleObject};

use crate::engine::Request;

pub use guard::{ReadGuard, Whitelist};
pub use resolve::Tables;

/// The engine's view of the GraphQL request resolving now.
pub(crate) fn request<'a>(ctx: &Context<'a>) -> ServerResult<&'a Arc<Request>> {
    ctx.data_opt::<Arc<Request>>()
        .ok_or_else(|| ServerError::new("internal error: no request context", None))
}

/// `_QueryMeta { count }`.
#[derive(Debug, Clone, Copy, SimpleObject)]
#[graphql(name = "_QueryMeta")]
pub struct QueryMeta {
    // Only for rustdoc: a `///` comment would become the field's description in the schema;
    // outside rustdoc the lint cannot see these docs, hence the `allow`.
    #[cfg_attr(
        doc,
        doc = "How many nodes match the field's `filter` (the other arguments are ignored)."
    )]
    #[cfg_attr(not(doc), allow(missing_docs))]
    #[graphql(name = "count")]
    pub count: i32,
}

/// `_BatchPayload { count }`: how many nodes a `deleteMany`/`updateMany` touched.
#[derive(Debug, Clone, Copy, SimpleObject)]
#[graphql(name = "_BatchPayload")]
pub struct BatchPayload {
    // Only for rustdoc: a `///` comment would become the field's description in the schema;
    // outside rustdoc the lint cannot see these docs, hence the `allow`.
    #[cfg_attr(doc, doc = "How many nodes were deleted or updated.")]
    #[cfg_attr(not(doc), allow(missing_docs))]
    #[graphql(name = "count")]
    pub count: i32,
}
