//! Rust handlers (`handler: { rust: crate::path::f }`): functions compiled into the service. The
//! generator emits, per function, the types of its event's `data` and of its answer, and glue
//! that calls the handler through [`call`], so a handler of the wrong type fails `cargo build`
//! with a message naming the function and where `svc.yml` declares it.
//!
//! A handler is an `async fn(Event<D>) -> FunctionResult<O>`:
//!
//! ```ignore
//! pub async fn hello(event: handlers::HelloEvent) -> FunctionResult<handlers::HelloPayload> {
//!     let name = event.data.name.unwrap_or_else(|| "World".into());
//!     Ok(Some(handlers::HelloPayload { message: format!("Hello {name}") }))
//! }
//! ```

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::model::{ApiError, RustReply};

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

/// A function's error: the client sees 5001 `function execution error: <text>` (a message) or
/// 5002 `function execution error` (an object), with the error as `functionError`.
#[derive(Debug, Clone, PartialEq)]
pub enum FunctionError {
    Message(String),
    Object(serde_json::Value),
}

impl From<String> for FunctionError {
    fn from(text: String) -> FunctionError {
        FunctionError::Message(text)
    }
}

impl From<&str> for FunctionError {
    fn from(text: &str) -> FunctionError {
        FunctionError::Message(text.to_owned())
    }
}

/// What a handler answers: `Ok(Some(data))`, `Ok(None)` (a null result: a hook keeps the
/// values), or an error.
pub type FunctionResult<T> = Result<Option<T>, FunctionError>;

/// A handler of the function `F` (a type the generator names after the function and its place in
/// `svc.yml`) taking events with `data` of type `D` and answering `O`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a handler for {F}",
    label = "this handler has the wrong type",
    note = "a handler for {F} is an `async fn(Event<{D}>) -> FunctionResult<{O}>`"
)]
pub trait Handler<F, D, O>: Copy + Send + 'static {
    fn run(self, event: Event<D>) -> Pin<Box<dyn Future<Output = FunctionResult<O>> + Send>>;
}

impl<F, D, O, H, Fut> Handler<F, D, O> for H
where
    H: Fn(Event<D>) -> Fut + Copy + Send + 'static,
    Fut: Future<Output = FunctionResult<O>> + Send + 'static,
{
    fn run(self, event: Event<D>) -> Pin<Box<dyn Future<Output = FunctionResult<O>> + Send>> {
        Box::pin(self(event))
    }
}

/// Calls `handler` with the event: what the generated glue of each Rust handler runs.
pub fn call<F, D, O, H: Handler<F, D, O>>(event: serde_json::Value, handler: H) -> RustReply
where
    D: DeserializeOwned + Send + 'static,
    O: Serialize,
{
    let event = serde_json::from_value::<Event<D>>(event);
    Box::pin(async move {
        let event = event.map_err(|e| ApiError::Function {
            code: 5008,
            message: format!("The event does not fit the handler's type: {e}"),
            detail: None,
        })?;
        match handler.run(event).await {
            Ok(None) => Ok(None),
            Ok(Some(out)) => serde_json::to_value(out)
                .map(Some)
                .map_err(|e| ApiError::Internal(format!("a handler's answer: {e}"))),
            Err(FunctionError::Message(text)) => Err(ApiError::Function {
                code: 5001,
                message: format!("function execution error: {text}"),
                detail: Some(serde_json::Value::String(text)),
            }),
            Err(FunctionError::Object(object)) => Err(ApiError::Function {
                code: 5002,
                message: "function execution error".to_owned(),
                detail: Some(object),
            }),
        }
    })
}
