//! Functions (reference §7): the event a function receives, how a handler is invoked, and what
//! its answer means. The engine decides when a hook runs ([`crate::engine::functions`]) and the
//! Simple API adds the resolvers' fields; both invoke through [`Invoker`], installed in the
//! service's state as its [`Functions`].
//!
//! - Webhooks: the event is POSTed as JSON with the function's headers, within its timeout.
//! - Rust functions compiled into the service ([`rust`]): called in-process, within the
//!   timeout.
//! - Server-side subscriptions ([`subscriptions`]): kept in an outbox in the mutation's
//!   transaction, delivered after the commit, attempted again when the receiver fails.
//! - JavaScript modules (`code:`) run in Node.js workers the server supervises ([`node`]).

mod log;
pub mod node;
pub mod rust;
pub mod subscriptions;

pub use crate::model::{Caller, Context, Endpoints, Event, RequestContext, ServiceContext};
pub use rust::{FunctionError, FunctionResult};

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{Value as J, json};

use crate::auth::{Auth, Credential, Principal};
use crate::engine::{Functions, Reply, Request};
use crate::model::{ApiError, ApiResult, FunctionKind, FunctionMeta, HandlerMeta};

/// How long one temporary root token is handed to events (it is valid 5 minutes).
const TOKEN_REUSE: Duration = Duration::from_secs(60);

/// Runs the functions of a service.
pub struct Invoker {
    client: reqwest_tls::Client,
    /// The temporary root token events carry, and when it was minted.
    token: Mutex<Option<(String, Instant)>>,
    /// The service's part of the events (once `base` is known).
    service: OnceLock<ServiceContext>,
    /// The base address of the service's endpoints (`http://host:port`), known once the
    /// server listens.
    base: OnceLock<String>,
    /// The Node.js workers of JavaScript handlers, and the directory their modules' paths are
    /// relative to; set when the service has such handlers.
    node: OnceLock<(Arc<node::NodePool>, std::path::PathBuf)>,
}

impl std::fmt::Debug for Invoker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Invoker")
            .field("base", &self.base.get())
            .finish_non_exhaustive()
    }
}

impl Invoker {
    /// An invoker with its HTTP client for webhooks (which follows no redirects); the base
    /// address and the Node.js workers are set later. Fails when the client cannot be built.
    pub fn new() -> Result<Arc<Invoker>, String> {
        // TLS for `https://` webhooks, with the same provider as the file stores.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest_tls::Client::builder()
            .redirect(reqwest_tls::redirect::Policy::none())
            .build()
            .map_err(|e| format!("the functions' HTTP client: {e}"))?;
        Ok(Arc::new(Invoker {
            client,
            token: Mutex::new(None),
            service: OnceLock::new(),
            base: OnceLock::new(),
            node: OnceLock::new(),
        }))
    }

    /// Sets the base address of the endpoints the events name (`http://host:port`).
    pub fn set_base(&self, base: String) {
        let _ = self.base.set(base.trim_end_matches('/').to_owned());
    }

    /// Runs the service's JavaScript handlers on `pool`, their modules' paths relative to
    /// `dir`.
    pub fn set_node(&self, pool: Arc<node::NodePool>, dir: std::path::PathBuf) {
        let _ = self.node.set((pool, dir));
    }

    /// The service's part of every event, but its token: worked out once.
    fn service(&self, auth: &Auth) -> &ServiceContext {
        self.service.get_or_init(|| {
            let id = auth.project_id();
            let base = self
                .base
                .get()
                .map_or("http://localhost:60000", String::as_str);
            let ws = base
                .strip_prefix("http")
                .map_or_else(|| base.to_owned(), |rest| format!("ws{rest}"));
            ServiceContext {
                service_id: id.to_owned(),
                project_id: id.to_owned(),
                alias: Some(auth.alias().to_owned()),
                root_token: None,
                endpoints: Endpoints {
                    simple: format!("{base}/simple/v1/{id}"),
                    relay: format!("{base}/relay/v1/{id}"),
                    system: format!("{base}/system"),
                    subscriptions: format!("{ws}/subscriptions/v1/{id}"),
                },
            }
        })
    }

    /// A temporary root token for an event: one is minted at most once a minute and handed to
    /// every event of that minute, so each function gets a token valid at least 4 more minutes.
    fn root_token(&self, auth: &Auth) -> Option<String> {
        let mut cached = self.token.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((token, at)) = cached.as_ref()
            && at.elapsed() < TOKEN_REUSE
        {
            return Some(token.clone());
        }
        let token = auth.temporary_root_token().ok()?;
        *cached = Some((token.clone(), Instant::now()));
        Some(token)
    }

    /// The event's `context` (reference §7.2).
    fn context(&self, req: &Request, f: &FunctionMeta) -> Context {
        let resolver = matches!(f.kind, FunctionKind::Resolver(_));
        let origin = req.origin();
        let auth = &req.state().auth;
        let caller = match (resolver, req.principal()) {
            (true, Principal::User { id, model }) => Some(Caller {
                node_id: Some(id.clone()),
                type_name: model.clone(),
                token: origin.token.clone(),
            }),
            (true, Principal::Admin) => Some(Caller {
                node_id: None,
                type_name: if platform(auth, origin.token.as_deref()) {
                    "Customer"
                } else {
                    "PAT"
                }
                .to_owned(),
                token: origin.token.clone(),
            }),
            _ => None,
        };
        let environment = match &f.handler {
            HandlerMeta::Code { environment, .. } => environment
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            HandlerMeta::Webhook { .. } | HandlerMeta::Rust(_) => Default::default(),
        };
        Context {
            request: RequestContext {
                source_ip: if resolver {
                    origin.source_ip.clone()
                } else {
                    String::new()
                },
            },
            svc: ServiceContext {
                root_token: self.root_token(auth),
                ..self.service(auth).clone()
            },
            environment,
            auth: caller,
        }
    }

    async fn call(&self, req: &Request, f: &'static FunctionMeta, data: J) -> ApiResult<Option<J>> {
        let request_id = req.origin().request_id.as_str();
        let context = self.context(req, f);
        let started = Instant::now();
        let mut logs = Vec::new();
        let outcome = match &f.handler {
            HandlerMeta::Webhook { url, headers } => {
                let event = event_json(data, &context);
                self.webhook(f, url, headers, &event, request_id).await
            }
            HandlerMeta::Rust(handler) => {
                match tokio::time::timeout(f.timeout(), handler(data, context)).await {
                    Ok(answer) => answer,
                    Err(_) => Err(timed_out(f, request_id)),
                }
            }
            HandlerMeta::Code {
                src,
                environment,
                dir: config_dir,
            } => match self.node.get() {
                Some((pool, dir)) => {
                    let event = event_json(data, &context);
                    let module = node::module_path(&dir.join(config_dir), src);
                    let ran = pool.invoke(&module, environment, &event, f.timeout()).await;
                    logs = ran.logs;
                    match ran.outcome {
                        // `undefined` or `null`: a null result.
                        Ok(J::Null) => Ok(None),
                        Ok(value) => answer(value, request_id),
                        Err(text) => Err(failed(text)),
                    }
                }
                None => Err(failed(format!(
                    "The function `{}` is a JavaScript module (`{src}`), and this server runs no Node.js",
                    f.name
                ))),
            },
        };
        log::record(f, request_id, started, &outcome, &logs);
        outcome
    }

    async fn webhook(
        &self,
        f: &FunctionMeta,
        url: &str,
        headers: &[(&str, &str)],
        event: &J,
        request_id: &str,
    ) -> ApiResult<Option<J>> {
        let mut call = self
            .client
            .post(url)
            .timeout(f.timeout())
            .header("Content-Type", "application/json");
        for (name, value) in headers {
            call = call.header(*name, *value);
        }
        let body = serde_json::to_vec(event).map_err(|e| ApiError::Internal(e.to_string()))?;
        let response = match call.body(body).send().await {
            Ok(r) => r,
            Err(e) if e.is_timeout() => {
                return Err(timed_out(f, request_id));
            }
            Err(_) => return Err(unreachable(request_id)),
        };
        let status = response.status();
        let bytes = match response.bytes().await {
            Ok(b) => b,
            Err(e) if e.is_timeout() => {
                return Err(timed_out(f, request_id));
            }
            Err(_) => return Err(unhandled(request_id)),
        };
        if status.as_u16() == 204 {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(unhandled(request_id));
        }
        let body: J = serde_json::from_slice(&bytes).map_err(|_| invalid_body(request_id))?;
        answer(body, request_id)
    }
}

/// The event as a webhook receives it: `{data, context}`, the service's context under both
/// `svc` and `graphcool` (for code written against the original's client library), its token
/// also as `pat`, with the keys the original sent and svc has no value for (`headers`,
/// `httpMethod`, `sessionCache`).
fn event_json(data: J, context: &Context) -> J {
    let mut context = serde_json::to_value(context).unwrap_or(J::Null);
    if let J::Object(c) = &mut context {
        if let Some(J::Object(request)) = c.get_mut("request") {
            request.insert("headers".into(), json!({}));
            request.insert("httpMethod".into(), json!("post"));
        }
        if let Some(J::Object(svc)) = c.get_mut("svc") {
            let token = svc.get("rootToken").cloned().unwrap_or(J::Null);
            svc.insert("pat".into(), token);
        }
        let svc = c.get("svc").cloned().unwrap_or(J::Null);
        c.insert("graphcool".into(), svc);
        c.insert("sessionCache".into(), json!({}));
    }
    json!({ "data": data, "context": context })
}

impl Functions for Invoker {
    fn invoke<'a>(
        &'a self,
        req: &'a Request,
        function: &'static FunctionMeta,
        data: J,
    ) -> Reply<'a> {
        Box::pin(self.call(req, function, data))
    }
}

/// Whether `token` is a platform token (a resolver's caller is then a `Customer`).
fn platform(auth: &Auth, token: Option<&str>) -> bool {
    token.and_then(|t| auth.credential(t)) == Some(Credential::PlatformToken)
}

/// What a function's answer means (reference §7.3): `data` on success (`None` for a null
/// result), or the error it reports.
pub fn answer(body: J, request_id: &str) -> ApiResult<Option<J>> {
    let J::Object(mut body) = body else {
        return Err(invalid_body(request_id));
    };
    match body.remove("error") {
        None | Some(J::Null) => {}
        Some(J::String(text)) => {
            return Err(ApiError::Function {
                code: 5001,
                message: format!("function execution error: {text}"),
                detail: Some(J::String(text)),
            });
        }
        Some(object @ J::Object(_)) => {
            return Err(ApiError::Function {
                code: 5002,
                message: "function execution error".to_owned(),
                detail: Some(object),
            });
        }
        Some(_) => return Err(invalid_body(request_id)),
    }
    Ok(body.remove("data").filter(|d| !d.is_null()))
}

/// 5000: the handler failed (a webhook answered with a status other than 2xx).
fn unhandled(request_id: &str) -> ApiError {
    ApiError::Function {
        code: 5000,
        message: format!(
            "A function returned an unhandled error. Please check the logs for executionId '{request_id}'"
        ),
        detail: None,
    }
}

/// 5003: an answer that is not JSON, or an `error` of another type.
fn invalid_body(request_id: &str) -> ApiError {
    ApiError::Function {
        code: 5003,
        message: format!(
            "A function returned an invalid body. You can refer to the docs for the expected shape. Please check the logs for executionId '{request_id}'"
        ),
        detail: None,
    }
}

/// 5005: the webhook could not be reached.
fn unreachable(request_id: &str) -> ApiError {
    ApiError::Function {
        code: 5005,
        message: format!(
            "A function webhook url was not valid. Please check the logs for executionId '{request_id}'"
        ),
        detail: None,
    }
}

/// 5008: the function did not answer within its timeout.
fn timed_out(f: &FunctionMeta, request_id: &str) -> ApiError {
    failed(format!(
        "The function `{}` did not answer within {} ms (executionId '{request_id}')",
        f.name,
        f.timeout().as_millis()
    ))
}

/// 5008: the invocation failed, with the failure's text.
fn failed(message: String) -> ApiError {
    ApiError::Function {
        code: 5008,
        message,
        detail: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(r: ApiResult<Option<J>>) -> Option<u32> {
        r.err().and_then(|e| e.code())
    }

    #[test]
    fn answers_mean_what_the_reference_says() {
        assert_eq!(
            answer(json!({"data": {"a": 1}}), "r").unwrap(),
            Some(json!({"a": 1}))
        );
        assert_eq!(
            answer(json!({"data": {"a": 1}, "error": null}), "r").unwrap(),
            Some(json!({"a": 1}))
        );
        assert_eq!(answer(json!({}), "r").unwrap(), None);
        assert_eq!(answer(json!({"data": null}), "r").unwrap(), None);
        let e = answer(json!({"error": "Invalid email!"}), "r").unwrap_err();
        assert_eq!(e.code(), Some(5001));
        assert_eq!(e.message(), "function execution error: Invalid email!");
        let e = answer(json!({"error": {"reason": 1}}), "r").unwrap_err();
        assert_eq!(
            (e.code(), e.message().as_str()),
            (Some(5002), "function execution error")
        );
        assert_eq!(code(answer(json!({"error": 3}), "r")), Some(5003));
        assert_eq!(code(answer(json!([1]), "r")), Some(5003));
        assert!(
            invalid_body("req-1")
                .message()
                .ends_with("executionId 'req-1'")
        );
    }
}
