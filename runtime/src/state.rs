//! What resolvers find in the GraphQL context: the service state (schema-wide) and the request's
//! own data (request id, statement counter).

use std::sync::Arc;

use async_graphql::Context;

use crate::auth::Auth;
use crate::meta::ServiceMeta;
use crate::permissions::read::ReadTable;
use crate::storage::{Counter, Db};

/// Shared by every request of a running service.
#[derive(Debug)]
pub struct State {
    pub db: Db,
    pub service: &'static ServiceMeta,
    /// Keys, service identity and stored root tokens.
    pub auth: Auth,
    /// The read permission rules, worked out once from `service`.
    pub reads: ReadTable,
}

impl State {
    /// The state stored in the schema. Every schema built by [`crate::server`] carries one.
    pub fn of<'a>(ctx: &Context<'a>) -> &'a State {
        ctx.data_unchecked::<Arc<State>>()
    }
}

/// Per-request data.
#[derive(Debug, Clone)]
pub struct RequestCx {
    pub request_id: String,
    pub statements: Arc<Counter>,
}

static NO_COUNTER: Counter = Counter::new();

/// The statement counter of the current request.
pub fn request_counter<'a>(ctx: &Context<'a>) -> &'a Counter {
    ctx.data_opt::<RequestCx>()
        .map_or(&NO_COUNTER, |cx| &cx.statements)
}
