//! The `functions:` of `svc.yml` (reference §7) as data tables the generator fills in.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::permission::Operation;
use super::tables::Kind;

/// Milliseconds a function may take when `svc.yml` does not say (reference §7.3: 15 s).
pub const DEFAULT_TIMEOUT_MS: u64 = 15_000;

/// One function.
#[derive(Debug)]
pub struct FunctionMeta {
    /// Its key under `functions:`.
    pub name: &'static str,
    /// What it is invoked for (`type:`).
    pub kind: FunctionKind,
    /// Where it runs (`handler:`).
    pub handler: HandlerMeta,
    /// `timeout:` in milliseconds; 0 when not given ([`DEFAULT_TIMEOUT_MS`]).
    pub timeout_ms: u64,
    /// Where it is declared, `svc.yml:line:col`.
    pub at: &'static str,
}

impl FunctionMeta {
    /// How long an invocation may take.
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(match self.timeout_ms {
            0 => DEFAULT_TIMEOUT_MS,
            ms => ms,
        })
    }

    /// Whether this is the `operationBefore` (`before`) or `operationAfter` hook of `op` on
    /// the model at index `model` of `ServiceMeta::models`.
    pub fn hooks(&self, before: bool, model: usize, op: Operation) -> bool {
        matches!(self.kind, FunctionKind::Hook { before: b, model: m, op: o } if b == before && m == model && o == op)
    }
}

/// What a function is invoked for.
#[derive(Debug)]
pub enum FunctionKind {
    /// A resolver: a field it adds to the Simple API.
    Resolver(ResolverMeta),
    /// `operationBefore` (`before`) or `operationAfter` of `op` on the model at index `model`
    /// of `ServiceMeta::models`.
    Hook {
        /// `operationBefore` (else `operationAfter`).
        before: bool,
        /// The model, an index into `ServiceMeta::models`.
        model: usize,
        /// The operation: `Create`, `Update` or `Delete`.
        op: Operation,
    },
    /// A server-side subscription: the path of its query file, the query, and the index in
    /// `ServiceMeta::models` of the model its one field selects.
    Subscription {
        /// The path of its query file, as written in `svc.yml`.
        query: &'static str,
        /// The subscription query's text.
        text: &'static str,
        /// The model, an index into `ServiceMeta::models`.
        model: usize,
    },
}

/// A resolver: a field of the Simple API's `Query` or `Mutation` and its payload type.
#[derive(Debug)]
pub struct ResolverMeta {
    /// A field of `Mutation` (`extend type Mutation`), else of `Query`.
    pub mutation: bool,
    /// The field's name.
    pub field: &'static str,
    /// The field's arguments, in declaration order.
    pub args: &'static [ResolverField],
    /// The name of the payload type.
    pub payload: &'static str,
    /// The payload type's fields, in declaration order.
    pub fields: &'static [ResolverField],
    /// Returns `[P!]` (or `[P!]!`).
    pub list: bool,
    /// Returns `P!` (or `[P!]!`).
    pub required: bool,
}

/// An argument of a resolver, or a field of its payload.
#[derive(Debug)]
pub struct ResolverField {
    /// The argument's or field's name.
    pub name: &'static str,
    /// Its scalar type (never [`Kind::Enum`] or [`Kind::Relation`]).
    pub kind: Kind,
    /// `[S!]` or `[S!]!`.
    pub list: bool,
    /// `S!` or `[S!]!`.
    pub required: bool,
}

/// The future a Rust handler's glue returns: the function's `data` (`None` for a null result)
/// or its error, as a webhook's answer means them.
pub type RustReply = std::pin::Pin<
    Box<
        dyn std::future::Future<Output = Result<Option<serde_json::Value>, super::ApiError>> + Send,
    >,
>;

/// The generated glue of a Rust handler: the event (reference §7.2), as its `data` and its
/// `context`, in; the answer out.
pub type RustHandler = fn(serde_json::Value, Context) -> RustReply;

/// Where a function runs.
#[derive(Debug)]
pub enum HandlerMeta {
    /// A Rust function compiled into the service (`handler: { rust: path }`).
    Rust(RustHandler),
    /// POSTed to `url` with `headers`.
    Webhook {
        /// The webhook's URL (`handler: { webhook: { url } }`).
        url: &'static str,
        /// Headers sent with every request, as name and value.
        headers: &'static [(&'static str, &'static str)],
    },
    /// A JavaScript module (`code:`), with its environment.
    Code {
        /// The module's path (`code: { src }`), relative to `dir`.
        src: &'static str,
        /// The module's `environment:`, as name and value (also the event's
        /// `context.environment`).
        environment: &'static [(&'static str, &'static str)],
        /// The directory of `svc.yml`, which `src` is relative to: relative to the service
        /// crate's directory (`ServiceDef::DIR`), or absolute.
        dir: &'static str,
    },
}

/// The event a function receives (reference §7.2), its `data` typed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Event<D> {
    /// The invocation's input: a resolver's arguments, an `operationBefore` hook's write
    /// arguments, an `operationAfter` hook's node, a subscription query's result.
    pub data: D,
    /// Where the invocation comes from, and how to call the service back.
    pub context: Context,
}

/// The event's `context`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Context {
    /// The request that caused the invocation.
    pub request: RequestContext,
    /// The service, and a temporary root token for its APIs (valid 5 minutes).
    pub svc: ServiceContext,
    /// `environment:` of the function (JavaScript handlers); empty for Rust handlers and
    /// webhooks.
    #[serde(default)]
    pub environment: BTreeMap<String, String>,
    /// The caller of a resolver (`None` when anonymous, and for hooks).
    pub auth: Option<Caller>,
}

/// Where the invocation's request came from.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RequestContext {
    /// The caller's address, for resolvers; empty for hooks.
    #[serde(rename = "sourceIp")]
    pub source_ip: String,
}

/// The service a function runs for.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceContext {
    /// The service's id (`serviceId`; the `projectId` its tokens carry).
    pub service_id: String,
    /// The same id again (`projectId`), for code written against the original service.
    pub project_id: String,
    /// The service's alias, which URLs accept in place of its id.
    pub alias: Option<String>,
    /// A temporary root token (admin for 5 minutes).
    pub root_token: Option<String>,
    /// The URLs of the service's APIs.
    pub endpoints: Endpoints,
}

/// The service's public endpoints.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Endpoints {
    /// The Simple API, `<base>/simple/v1/<service id>`.
    pub simple: String,
    /// The Relay API, `<base>/relay/v1/<service id>`.
    pub relay: String,
    /// The System API, `<base>/system`.
    pub system: String,
    /// The subscriptions endpoint, `ws(s)://…/subscriptions/v1/<service id>`.
    pub subscriptions: String,
}

/// Who called a resolver.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Caller {
    /// The node of a node token.
    pub node_id: Option<String>,
    /// The node token's model, `PAT` for a root token, `Customer` for a platform token.
    pub type_name: String,
    /// The token the request carried.
    pub token: Option<String>,
}
