//! `svc-lib`: the client library of svc services, for functions and for any Rust program.
//!
//! - [`from_event`] reads a function's event (reference §7.2): the service's endpoints and the
//!   temporary root token it carries, under `context.svc` or, for events shaped like the
//!   original service's, `context.graphcool`.
//! - [`Svc::generate_node_token`] issues a node token through the System API, sending the
//!   mutation the original's client library sends.
//! - [`Svc::simple`], [`Svc::relay`] and [`Svc::system`] send GraphQL requests with the token
//!   set, and answer the response's `data` or its errors.
//!
//! In a Rust handler of the service (`handler: { rust: … }` in `svc.yml`):
//!
//! ```no_run
//! # use serde_json::json;
//! # async fn handler(event: serde_json::Value) -> Result<(), svc_lib::Error> {
//! let svc = svc_lib::from_event(&event)?;
//! let user = svc
//!     .simple(r#"query ($e: String) { User(email: $e) { id } }"#, json!({ "e": "ada@example.com" }))
//!     .await?;
//! if let Some(id) = user["User"]["id"].as_str() {
//!     let token = svc.generate_node_token(id, "User", Some(3600)).await?;
//!     println!("a token for {id}: {token}");
//! }
//! # Ok(())
//! # }
//! ```
//!
//! From any program, with the addresses and a token of your own:
//!
//! ```no_run
//! # async fn run() -> Result<(), svc_lib::Error> {
//! let svc = svc_lib::Svc::new(
//!     svc_lib::Endpoints::local("http://localhost:60000", "my-service"),
//!     "my-service",
//!     Some("<a root token>".to_owned()),
//! );
//! let posts = svc.simple("{ allPosts(first: 10) { id title } }", serde_json::json!({})).await?;
//! # let _ = posts;
//! # Ok(())
//! # }
//! ```

// Every public item is documented; CI (clippy with `-D warnings`, and `cargo doc`) holds it so.
#![warn(missing_docs)]

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The event has no `context.svc` (nor `context.graphcool`) with the service's endpoints.
    #[error("the event has no service context: {0}")]
    NoContext(String),
    /// The request could not be sent, or its response could not be read (no connection, a
    /// timeout, a body cut short).
    #[error("the request to {url} failed: {source}")]
    Http {
        /// The endpoint the request was sent to.
        url: String,
        /// The HTTP client's error.
        #[source]
        source: reqwest::Error,
    },
    /// The response was not a GraphQL response.
    #[error("{url} answered {status}: {body}")]
    Response {
        /// The endpoint the request was sent to.
        url: String,
        /// The response's HTTP status code.
        status: u16,
        /// The start of the response's body: its first 500 characters.
        body: String,
    },
    /// The response carried errors (the `errors` array as sent).
    #[error("the request failed: {0}")]
    GraphQL(Value),
}

/// The endpoints of a service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoints {
    /// The URL of the service's Simple API (`http://host:port/simple/v1/<service id>`).
    pub simple: String,
    /// The URL of the service's Relay API (`http://host:port/relay/v1/<service id>`).
    pub relay: String,
    /// The URL of the System API (`http://host:port/system`), shared by every service of the
    /// server.
    pub system: String,
    /// The WebSocket URL of the service's subscriptions
    /// (`ws://host:port/subscriptions/v1/<service id>`).
    pub subscriptions: String,
}

impl Endpoints {
    /// The endpoints of the service `id` served at `base` (`http://host:port`), at the paths
    /// every svc server has.
    pub fn local(base: &str, id: &str) -> Endpoints {
        let base = base.trim_end_matches('/');
        let ws = match base.strip_prefix("http") {
            Some(rest) => format!("ws{rest}"),
            None => base.to_owned(),
        };
        Endpoints {
            simple: format!("{base}/simple/v1/{id}"),
            relay: format!("{base}/relay/v1/{id}"),
            system: format!("{base}/system"),
            subscriptions: format!("{ws}/subscriptions/v1/{id}"),
        }
    }
}

/// A client of one service.
#[derive(Debug, Clone)]
pub struct Svc {
    endpoints: Endpoints,
    service_id: String,
    token: Option<String>,
    http: reqwest::Client,
}

/// The service of a function's event: its endpoints, id and temporary root token. `event` is
/// the event as JSON, or any value that serializes to it (the typed events of Rust handlers).
pub fn from_event<E: Serialize>(event: &E) -> Result<Svc, Error> {
    let event = serde_json::to_value(event).map_err(|e| Error::NoContext(e.to_string()))?;
    let context = &event["context"];
    let svc = match &context["svc"] {
        Value::Object(_) => &context["svc"],
        _ => &context["graphcool"],
    };
    let endpoints: Endpoints = serde_json::from_value(svc["endpoints"].clone())
        .map_err(|e| Error::NoContext(format!("`endpoints`: {e}")))?;
    let service_id = svc["serviceId"]
        .as_str()
        .or_else(|| svc["projectId"].as_str())
        .ok_or_else(|| Error::NoContext("no `serviceId`".into()))?
        .to_owned();
    let token = svc["rootToken"]
        .as_str()
        .or_else(|| svc["pat"].as_str())
        .map(str::to_owned);
    Ok(Svc::new(endpoints, &service_id, token))
}

impl Svc {
    /// A client of the service `service_id` at `endpoints`. Every request carries `token` as
    /// `Authorization: Bearer` (`None`: anonymous requests); `service_id` is the service
    /// [`Svc::generate_node_token`] names.
    pub fn new(endpoints: Endpoints, service_id: &str, token: Option<String>) -> Svc {
        Svc {
            endpoints,
            service_id: service_id.to_owned(),
            token,
            http: reqwest::Client::new(),
        }
    }

    /// The endpoints requests go to.
    pub fn endpoints(&self) -> &Endpoints {
        &self.endpoints
    }

    /// The id of the service (in an event: its `serviceId`, or `projectId` in the original
    /// service's shape).
    pub fn service_id(&self) -> &str {
        &self.service_id
    }

    /// The token requests carry (`Authorization: Bearer`).
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// The same client with another token (`None`: anonymous requests).
    pub fn with_token(&self, token: Option<String>) -> Svc {
        Svc {
            token,
            ..self.clone()
        }
    }

    /// A request to the Simple API: its `data`, or its errors.
    pub async fn simple(&self, query: &str, variables: Value) -> Result<Value, Error> {
        self.request(&self.endpoints.simple, query, variables).await
    }

    /// A request to the Relay API.
    pub async fn relay(&self, query: &str, variables: Value) -> Result<Value, Error> {
        self.request(&self.endpoints.relay, query, variables).await
    }

    /// A request to the System API.
    pub async fn system(&self, query: &str, variables: Value) -> Result<Value, Error> {
        self.request(&self.endpoints.system, query, variables).await
    }

    /// A node token for the node `node_id` of the type `type_name`, valid `expires_in` seconds
    /// (the server's default, 30 days, when `None`), issued by the System API's
    /// `generateNodeToken` with this client's token as the root token.
    pub async fn generate_node_token(
        &self,
        node_id: &str,
        type_name: &str,
        expires_in: Option<i64>,
    ) -> Result<String, Error> {
        let quoted = |s: &str| Value::String(s.to_owned()).to_string();
        let expiry = expires_in
            .map(|s| format!("\n    expirationInSeconds: {s}"))
            .unwrap_or_default();
        let query = format!(
            "mutation {{\n  generateNodeToken(input: {{\n    rootToken: {}\n    serviceId: {}\n    nodeId: {}\n    modelName: {}\n    clientMutationId: \"static\"{expiry}\n  }}) {{\n    token\n  }}\n}}",
            quoted(self.token.as_deref().unwrap_or_default()),
            quoted(&self.service_id),
            quoted(node_id),
            quoted(type_name),
        );
        let data = self.system(&query, json!({})).await?;
        data["generateNodeToken"]["token"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| Error::GraphQL(json!([{ "message": "no token in the answer" }])))
    }

    async fn request(&self, url: &str, query: &str, variables: Value) -> Result<Value, Error> {
        let mut request = self
            .http
            .post(url)
            .json(&json!({ "query": query, "variables": variables }));
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        let http = |source| Error::Http {
            url: url.to_owned(),
            source,
        };
        let response = request.send().await.map_err(http)?;
        let status = response.status().as_u16();
        let text = response.text().await.map_err(http)?;
        let mut body: Value = serde_json::from_str(&text).map_err(|_| Error::Response {
            url: url.to_owned(),
            status,
            body: text.chars().take(500).collect(),
        })?;
        match body.get("errors") {
            Some(errors) if errors.as_array().is_some_and(|e| !e.is_empty()) => {
                Err(Error::GraphQL(errors.clone()))
            }
            // A request-level error of the reference's shape: `{code, requestId, error}`.
            _ if body.get("error").is_some() => Err(Error::GraphQL(json!([body]))),
            _ => Ok(body["data"].take()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_spellings_of_the_event() {
        let endpoints = Endpoints::local("http://localhost:60000/", "s1");
        assert_eq!(
            endpoints.subscriptions,
            "ws://localhost:60000/subscriptions/v1/s1"
        );
        let svc = json!({ "serviceId": "s1", "rootToken": "t", "endpoints": endpoints });
        let ours = from_event(&json!({ "data": {}, "context": { "svc": svc } })).unwrap();
        assert_eq!((ours.service_id(), ours.token()), ("s1", Some("t")));
        let legacy = json!({ "projectId": "s1", "pat": "p", "endpoints": endpoints });
        let theirs = from_event(&json!({ "context": { "graphcool": legacy } })).unwrap();
        assert_eq!((theirs.service_id(), theirs.token()), ("s1", Some("p")));
        assert_eq!(theirs.endpoints(), &endpoints);
        assert!(matches!(
            from_event(&json!({ "context": {} })),
            Err(Error::NoContext(_))
        ));
    }
}
