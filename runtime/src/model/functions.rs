//! The `functions:` of `svc.yml` (reference §7) as data tables the generator fills in.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::permission::Operation;
use super::tables::Kind;

/// Seconds a function may take when `svc.yml` does not say (reference §7.3: 15 s).
pub const DEFAULT_TIMEOUT_MS: u64 = 15_000;

/// One function.
#[derive(Debug)]
pub struct FunctionMeta {
    pub name: &'static str,
    pub kind: FunctionKind,
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
    Resolver(ResolverMeta),
    /// `operationBefore` (`before`) or `operationAfter` of `op` on the model at index `model`
    /// of `ServiceMeta::models`.
    Hook {
        before: bool,
        model: usize,
        op: Operation,
    },
    /// A server-side subscription: the path of its query file, the query, and the index in
    /// `ServiceMeta::models` of the model its one field selects.
    Subscription {
        query: &'static str,
        text: &'static str,
        model: usize,
    },
}

/// A resolver: a field of the Simple API's `Query` or `Mutation` and its payload type.
#[derive(Debug)]
pub struct ResolverMeta {
    pub mutation: bool,
    pub field: &'static str,
    pub args: &'static [ResolverField],
    pub payload: &'static str,
    pub fields: &'static [ResolverField],
    /// Returns `[P!]` (or `[P!]!`).
    pub list: bool,
    /// Returns `P!` (or `[P!]!`).
    pub required: bool,
}

/// An argument of a resolver, or a field of its payload.
#[derive(Debug)]
pub struct ResolverField {
    pub name: &'static str,
    pub kind: Kind,
    pub list: bool,
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
        url: &'static str,
        headers: &'static [(&'static str, &'static str)],
    },
    /// A JavaScript module (`code:`), with its environment.
    Code {
        src: &'static str,
        environment: &'static [(&'static str, &'static str)],
        /// The directory of `svc.yml`, which `src` is relative to: relative to the service
        /// crate's directory (`ServiceDef::DIR`), or absolute.
        dir: &'static str,
    },
}

/// The event a function receives (reference §7.2), its `data` typed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Event<D> {
    pub data: D,
    pub context: Context,
}

/// The event's `context`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Context {
    pub request: RequestContext,
    /// The service, and a temporary root token for its APIs (valid 5 minutes).
    pub svc: ServiceContext,
    /// `environment:` of the function (JavaScript handlers); empty for Rust handlers.
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
    pub service_id: String,
    pub project_id: String,
    pub alias: Option<String>,
    /// A temporary root token (admin for 5 minutes).
    pub root_token: Option<String>,
    pub endpoints: Endpoints,
}

/// The service's public endpoints.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Endpoints {
    pub simple: String,
    pub relay: String,
    pub system: String,
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
    pub token: Option<String>,
}
