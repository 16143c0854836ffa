//! The `functions:` of `svc.yml` (reference §7) as data tables the generator fills in.

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
    /// A server-side subscription and the path of its query file.
    Subscription {
        query: &'static str,
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

/// The generated glue of a Rust handler: the event (reference §7.2) in, the answer out.
pub type RustHandler = fn(serde_json::Value) -> RustReply;

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
    },
}
