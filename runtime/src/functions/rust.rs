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

use std::future::Future;
use std::pin::Pin;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::model::{ApiError, Context, Event, RustReply};

/// A function's error: the client sees 5001 `function execution error: <text>` (a message) or
/// 5002 `function execution error` (an object), with the error as `functionError`.
#[derive(Debug, Clone, PartialEq)]
pub enum FunctionError {
    /// A message: 5001 `function execution error: <text>`, with the text as `functionError`.
    Message(String),
    /// Any JSON value: 5002 `function execution error`, with the value as `functionError`.
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
    /// Calls the handler with `event`.
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

/// Calls `handler` with the event's `data` and `context`: what the generated glue of each Rust
/// handler runs.
pub fn call<F, D, O, H: Handler<F, D, O>>(
    data: serde_json::Value,
    context: Context,
    handler: H,
) -> RustReply
where
    D: DeserializeOwned + Send + 'static,
    O: Serialize,
{
    let data = serde_json::from_value::<D>(data);
    Box::pin(async move {
        let data = data.map_err(|e| ApiError::Function {
            code: 5008,
            message: format!("The event does not fit the handler's type: {e}"),
            detail: None,
        })?;
        let event = Event { data, context };
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
