//! Functions (reference §7): the event a function receives, how a handler is invoked, and what
//! its answer means. The engine decides when a hook runs ([`crate::engine::functions`]) and the
//! Simple API adds the resolvers' fields; both invoke through [`Invoker`], installed in the
//! service's state as its [`Functions`].
//!
//! - Webhooks: the event is POSTed as JSON with the function's headers, within its timeout.
//! - Rust functions compiled into the service ([`rust`]): called in-process, within the
//!   timeout.
//! - JavaScript modules (`code:`) need a Node.js worker the server does not run yet: their
//!   invocations fail with 5008 and a text that says so.

pub mod rust;

pub use rust::{
    Caller, Context, Endpoints, Event, FunctionError, FunctionResult, RequestContext,
    ServiceContext,
};

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use serde_json::{Value as J, json};

use crate::auth::{Auth, Credential, Principal};
use crate::engine::{Functions, Reply, Request};
use crate::model::{ApiError, ApiResult, FunctionKind, FunctionMeta, HandlerMeta};

/// Runs the functions of a service.
pub struct Invoker {
    client: reqwest_tls::Client,
    /// The base address of the service's endpoints (`http://host:port`), known once the
    /// server listens.
    base: OnceLock<String>,
}

impl std::fmt::Debug for Invoker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Invoker")
            .field("base", &self.base.get())
            .finish_non_exhaustive()
    }
}

impl Invoker {
    pub fn new() -> Result<Arc<Invoker>, String> {
        // TLS for `https://` webhooks, with the same provider as the file stores.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest_tls::Client::builder()
            .redirect(reqwest_tls::redirect::Policy::none())
            .build()
            .map_err(|e| format!("the functions' HTTP client: {e}"))?;
        Ok(Arc::new(Invoker {
            client,
            base: OnceLock::new(),
        }))
    }

    /// Sets the base address of the endpoints the events name (`http://host:port`).
    pub fn set_base(&self, base: String) {
        let _ = self.base.set(base.trim_end_matches('/').to_owned());
    }

    /// The event of reference §7.2.
    fn event(&self, req: &Request, f: &FunctionMeta, data: J) -> J {
        let resolver = matches!(f.kind, FunctionKind::Resolver(_));
        let origin = req.origin();
        let auth = &req.state().auth;
        let token = auth.temporary_root_token().ok();
        let id = auth.project_id();
        let base = self
            .base
            .get()
            .map_or("http://localhost:60000", String::as_str);
        let ws = base
            .strip_prefix("http")
            .map_or_else(|| base.to_owned(), |rest| format!("ws{rest}"));
        let service = json!({
            "projectId": id,
            "serviceId": id,
            "alias": auth.alias(),
            "pat": token,
            "rootToken": token,
            "endpoints": {
                "simple": format!("{base}/simple/v1/{id}"),
                "relay": format!("{base}/relay/v1/{id}"),
                "system": format!("{base}/system"),
                "subscriptions": format!("{ws}/subscriptions/v1/{id}"),
            },
        });
        let caller = match (resolver, req.principal()) {
            (true, Principal::User { id, model }) => json!({
                "nodeId": id, "typeName": model, "token": origin.token,
            }),
            (true, Principal::Admin) => json!({
                "nodeId": null,
                "typeName": if platform(auth, origin.token.as_deref()) { "Customer" } else { "PAT" },
                "token": origin.token,
            }),
            _ => J::Null,
        };
        let environment: serde_json::Map<String, J> = match &f.handler {
            HandlerMeta::Code { environment, .. } => environment
                .iter()
                .map(|(k, v)| ((*k).to_owned(), J::String((*v).to_owned())))
                .collect(),
            HandlerMeta::Webhook { .. } | HandlerMeta::Rust(_) => serde_json::Map::new(),
        };
        json!({
            "data": data,
            "context": {
                "request": {
                    "sourceIp": if resolver { origin.source_ip.as_str() } else { "" },
                    "headers": {},
                    "httpMethod": "post",
                },
                "graphcool": service.clone(),
                "svc": service,
                "environment": environment,
                "auth": caller,
                "sessionCache": {},
            },
        })
    }

    async fn call(&self, req: &Request, f: &'static FunctionMeta, data: J) -> ApiResult<Option<J>> {
        let request_id = req.origin().request_id.as_str();
        let event = self.event(req, f, data);
        let started = Instant::now();
        let outcome = match &f.handler {
            HandlerMeta::Webhook { url, headers } => {
                self.webhook(f, url, headers, &event, request_id).await
            }
            HandlerMeta::Rust(handler) => {
                match tokio::time::timeout(f.timeout(), handler(event)).await {
                    Ok(answer) => answer,
                    Err(_) => Err(failed(format!(
                        "The function `{}` did not answer within {} ms (executionId '{request_id}')",
                        f.name,
                        f.timeout().as_millis()
                    ))),
                }
            }
            HandlerMeta::Code { src, .. } => Err(ApiError::Function {
                code: 5008,
                message: format!(
                    "The function `{}` is a JavaScript module (`{src}`), and this server does not run JavaScript functions yet",
                    f.name
                ),
                detail: None,
            }),
        };
        log(f, request_id, started, &outcome);
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
                return Err(failed(format!(
                    "The function `{}` did not answer within {} ms (executionId '{request_id}')",
                    f.name,
                    f.timeout().as_millis()
                )));
            }
            Err(_) => return Err(unreachable(request_id)),
        };
        let status = response.status();
        let bytes = match response.bytes().await {
            Ok(b) => b,
            Err(e) if e.is_timeout() => {
                return Err(failed(format!(
                    "The function `{}` did not answer within {} ms (executionId '{request_id}')",
                    f.name,
                    f.timeout().as_millis()
                )));
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

/// The invocation's record in the server's log (`svc logs --function NAME` reads them): one
/// JSON line, `svc: function-log {…}`, with what the function answered (at most 1000
/// characters of it) or its error. The event, which holds a root token, is not logged.
fn log(f: &FunctionMeta, request_id: &str, started: Instant, outcome: &ApiResult<Option<J>>) {
    let duration = started.elapsed().as_millis() as u64;
    let (status, message) = match outcome {
        Ok(data) => {
            let value = data.clone().unwrap_or(J::Null);
            let mut text = value.to_string();
            let shown = if text.len() > 1000 {
                let cut = (0..=1000)
                    .rev()
                    .find(|&i| text.is_char_boundary(i))
                    .unwrap_or(0);
                text.truncate(cut);
                text.push('…');
                J::String(text)
            } else {
                value
            };
            ("SUCCESS", json!({ "returnValue": shown }))
        }
        Err(e) => ("FAILURE", json!({ "error": e.message() })),
    };
    let record = json!({
        "id": crate::model::cuid(),
        "functionName": f.name,
        "requestId": request_id,
        "status": status,
        "duration": duration,
        "timestamp": chrono::Utc::now().format("%Y-%m-%d %H:%M:%S%.3f").to_string(),
        "message": message,
    });
    eprintln!("svc: function-log {record}");
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
