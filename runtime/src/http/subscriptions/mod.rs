//! Subscription sockets (reference §4.1–§4.2): `GET /subscriptions/v1/<id>` (and the Simple
//! API's path) upgraded to a WebSocket, speaking one of three sub-protocols chosen by
//! `Sec-WebSocket-Protocol`:
//!
//! - `graphql-ws` (subscriptions-transport-ws ≥ 0.7) and `graphql-subscriptions` (the v0.5
//!   protocol): as in the reference, every message is read first as a v0.7 message and, failing
//!   that, as a v0.5 one, so the sub-protocol only chooses the keep-alive message (`ka`,
//!   `keepalive`). A socket that names no sub-protocol speaks these.
//! - `graphql-transport-ws` (the graphql-ws library): `connection_init`/`connection_ack`,
//!   `subscribe`/`next`/`error`/`complete`, `ping`/`pong`, and its close codes.
//!
//! Ids are echoed with their JSON type. The token in the init payload is resolved like the HTTP
//! header (an invalid one is no token). Each subscription is a member of a group ([`groups`]):
//! the subscriptions with the same query, variables, operation name and principal share one
//! stream of the Simple API's schema (`api/subscriptions`). Everything a socket sends goes
//! through one bounded queue, and a client that lets it fill up is disconnected.
//!
//! A socket is closed after [`SocketTimes::idle`] without a message from its client (60
//! minutes), and a `graphql-transport-ws` socket that has not sent `connection_init` within
//! [`SocketTimes::init`] with 4408. When a deploy changes the model (a migration heard of
//! through the event bus, or found when the server stops), every running subscription gets the
//! error `Schema changed` and ends.

mod groups;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use actix_ws::{AggregatedMessage, CloseCode, CloseReason, ProtocolError, Session};
use async_graphql::futures_util::StreamExt;
use async_graphql::{Data, Variables};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;

pub(super) use self::groups::Groups;
use self::groups::{AddressSlot, GroupKey, Member, Membership};
use super::Service;
use super::routes::project_not_found;
use crate::auth::Principal;
use crate::model::ServiceDef;
use crate::storage::Counter;

/// How many messages may wait for a slow client before it is disconnected.
const SEND_QUEUE: usize = 1024;

/// The largest message a client may send, in one frame or assembled from continuation frames.
const MAX_MESSAGE: usize = 1024 * 1024;

/// The keep-alive interval and the timeouts of subscription sockets (`None`: none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketTimes {
    /// Between keep-alive messages (`ka`, `keepalive`); 10 s.
    pub keepalive: Option<Duration>,
    /// Without a message from the client before the socket is closed; 60 min.
    pub idle: Option<Duration>,
    /// For a `graphql-transport-ws` client to send `connection_init`; 3 s.
    pub init: Option<Duration>,
}

impl Default for SocketTimes {
    fn default() -> Self {
        SocketTimes::from_ms(10_000, 3_600_000, 3_000)
    }
}

impl SocketTimes {
    /// The times in milliseconds, 0 for none.
    pub fn from_ms(keepalive: u64, idle: u64, init: u64) -> SocketTimes {
        let some = |ms: u64| (ms > 0).then(|| Duration::from_millis(ms));
        SocketTimes {
            keepalive: some(keepalive),
            idle: some(idle),
            init: some(init),
        }
    }
}

/// The message that ends every subscription when a deploy changed the model.
const SCHEMA_CHANGED: &str = "Schema changed";

/// The sub-protocols, in the order a socket offering several gets them.
const PROTOCOLS: [&str; 3] = [
    "graphql-transport-ws",
    "graphql-ws",
    "graphql-subscriptions",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    /// `graphql-ws` and `graphql-subscriptions`: their messages are read alike; the flag is
    /// whether the keep-alive is v0.5's `keepalive` (else `ka`).
    Legacy { v05_keepalive: bool },
    /// `graphql-transport-ws`.
    Transport,
}

/// `GET /subscriptions/v1/<id>`: the socket, or the reference's 3016 for an unknown service.
pub(super) async fn socket<S: ServiceDef>(
    service: web::Data<Service<S>>,
    path: web::Path<String>,
    req: HttpRequest,
    body: web::Payload,
) -> actix_web::Result<HttpResponse> {
    let id = path.into_inner();
    if !service.knows(&id) {
        return Ok(project_not_found(&id, &super::routes::new_request_id()));
    }
    upgrade(service, req, body)
}

/// `GET` at the fixed path of one of the service's own ids.
pub(super) async fn own_socket<S: ServiceDef>(
    service: web::Data<Service<S>>,
    req: HttpRequest,
    body: web::Payload,
) -> actix_web::Result<HttpResponse> {
    upgrade(service, req, body)
}

/// `GET /simple/v1/<id>`: a subscription socket when the request asks for a WebSocket upgrade
/// (one URL for queries and subscriptions), else the playground page.
pub(super) async fn simple_get<S: ServiceDef>(
    service: web::Data<Service<S>>,
    path: web::Path<String>,
    req: HttpRequest,
    body: web::Payload,
) -> actix_web::Result<HttpResponse> {
    if asks_upgrade(&req) {
        socket(service, path, req, body).await
    } else {
        Ok(super::routes::playground(service, path, req).await)
    }
}

/// [`simple_get`] at the fixed path of one of the service's own ids.
pub(super) async fn own_simple_get<S: ServiceDef>(
    service: web::Data<Service<S>>,
    req: HttpRequest,
    body: web::Payload,
) -> actix_web::Result<HttpResponse> {
    if asks_upgrade(&req) {
        upgrade(service, req, body)
    } else {
        Ok(super::routes::playground_own(req).await)
    }
}

fn asks_upgrade(req: &HttpRequest) -> bool {
    req.headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

/// Upgrades `req` to a subscription socket of `service`.
pub(super) fn upgrade<S: ServiceDef>(
    service: web::Data<Service<S>>,
    req: HttpRequest,
    body: web::Payload,
) -> actix_web::Result<HttpResponse> {
    let offered: Vec<&str> = req
        .headers()
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    let chosen = PROTOCOLS.into_iter().find(|p| offered.contains(p));
    let protocol = match chosen {
        Some("graphql-transport-ws") => Protocol::Transport,
        Some("graphql-subscriptions") => Protocol::Legacy {
            v05_keepalive: true,
        },
        _ => Protocol::Legacy {
            v05_keepalive: false,
        },
    };
    let limits = &service.limits;
    let slot = match req.peer_addr() {
        Some(peer) => match service
            .groups
            .admit(peer.ip(), limits.max_sockets_per_address)
        {
            Some(slot) => Some(slot),
            None => {
                let body = json!({
                    "error": format!(
                        "Too many subscription sockets are open from this address (at most {}). Close one, or share one socket among subscriptions.",
                        limits.max_sockets_per_address
                    ),
                });
                return Ok(HttpResponse::TooManyRequests().json(body));
            }
        },
        None => None,
    };
    let rate = Rate::new(limits.max_socket_messages);
    let (mut response, session, messages) = actix_ws::handle(&req, body)?;
    if let Some(name) = chosen {
        response.headers_mut().insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static(name),
        );
    }
    let (out, queue) = mpsc::channel(SEND_QUEUE);
    actix_web::rt::spawn(write(session.clone(), queue));
    let service = service.into_inner();
    service.groups.sockets.fetch_add(1, Ordering::Relaxed);
    let socket = Socket {
        service,
        protocol,
        out,
        session,
        principal: None,
        running: HashMap::new(),
        rate,
        _slot: slot,
    };
    let messages = messages
        .max_frame_size(MAX_MESSAGE)
        .aggregate_continuations()
        .max_continuation_size(MAX_MESSAGE);
    actix_web::rt::spawn(socket.run(messages));
    Ok(response)
}

/// What goes to the client: a text message, or the close frame that ends the socket.
pub(crate) enum Outgoing {
    Text(String),
    Close(CloseCode, String),
}

/// Sends the queue's messages in order; ends with the socket.
async fn write(mut session: Session, mut queue: mpsc::Receiver<Outgoing>) {
    while let Some(message) = queue.recv().await {
        match message {
            Outgoing::Text(text) => {
                if session.text(text).await.is_err() {
                    return;
                }
            }
            Outgoing::Close(code, description) => {
                let reason = CloseReason {
                    code,
                    description: Some(description),
                };
                let _ = session.close(Some(reason)).await;
                return;
            }
        }
    }
}

/// One socket: who it is for, and its running subscriptions by id.
struct Socket<S: ServiceDef> {
    service: Arc<Service<S>>,
    protocol: Protocol,
    out: mpsc::Sender<Outgoing>,
    session: Session,
    /// The principal of the init payload; `None` before init.
    principal: Option<Principal>,
    running: HashMap<String, Running>,
    /// The messages the client may still send now.
    rate: Rate,
    /// The socket's place in the count of its address.
    _slot: Option<AddressSlot>,
}

/// The bound on a socket's incoming messages: a bucket of `per_second` messages, refilled at
/// that rate (`None`: no bound).
struct Rate {
    per_second: u32,
    bucket: Option<(f64, Instant)>,
}

impl Rate {
    fn new(per_second: u32) -> Rate {
        let bucket = (per_second > 0).then(|| (f64::from(per_second), Instant::now()));
        Rate { per_second, bucket }
    }

    /// Takes one message from the bucket; false when it is empty.
    fn take(&mut self) -> bool {
        let Some((left, at)) = self.bucket.as_mut() else {
            return true;
        };
        let now = Instant::now();
        let cap = f64::from(self.per_second);
        *left = (*left + now.duration_since(*at).as_secs_f64() * cap).min(cap);
        *at = now;
        if *left < 1.0 {
            return false;
        }
        *left -= 1.0;
        true
    }
}

/// A running subscription of a socket.
struct Running {
    /// Its place in its group; dropping it ends the subscription.
    membership: Membership,
    /// The id as the client sent it.
    id: Value,
    flavour: Flavour,
}

impl Running {
    /// The message that ends it with the error `message`, in its protocol.
    fn error(&self, message: &str) -> Value {
        let id = &self.id;
        match self.flavour {
            Legacy(true) => json!({ "id": id, "type": "error", "payload": { "message": message } }),
            Legacy(false) => json!({
                "id": id,
                "type": "subscription_fail",
                "payload": { "errors": [{ "message": message }] },
            }),
            Transport => json!({ "id": id, "type": "error", "payload": [{ "message": message }] }),
        }
    }
}

impl<S: ServiceDef> Socket<S> {
    async fn run(mut self, mut messages: actix_ws::AggregatedMessageStream) {
        let times = self.service.times;
        let mut closing = self.service.closing.clone();
        let mut schema = self.service.hub.bus().schema_changes();
        schema.mark_unchanged();
        let mut schema_open = true;
        let mut ticks = times.keepalive.map(|every| {
            let mut interval = tokio::time::interval_at(Instant::now() + every, every);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            interval
        });
        let opened = Instant::now();
        let mut heard = opened;
        loop {
            let tick = async {
                match ticks.as_mut() {
                    Some(interval) => {
                        interval.tick().await;
                    }
                    None => std::future::pending().await,
                }
            };
            // Idle: no message from the client for `times.idle`.
            let idle = async {
                match times.idle {
                    Some(idle) => tokio::time::sleep_until(heard + idle).await,
                    None => std::future::pending().await,
                }
            };
            // `graphql-transport-ws` without `connection_init` within `times.init`.
            let uninitialised = async {
                match times.init {
                    Some(init)
                        if self.protocol == Protocol::Transport && self.principal.is_none() =>
                    {
                        tokio::time::sleep_until(opened + init).await;
                    }
                    _ => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                changed = schema.changed(), if schema_open => {
                    if changed.is_err() {
                        // The bus is gone: no schema change will come.
                        schema_open = false;
                    } else if !self.end_all(SCHEMA_CHANGED) {
                        break;
                    }
                }
                _ = closing.wait_for(|stopping| *stopping) => {
                    let _ = self.out.try_send(Outgoing::Close(
                        CloseCode::Away,
                        "The server is shutting down".to_owned(),
                    ));
                    break;
                }
                message = messages.next() => {
                    heard = Instant::now();
                    if message.as_ref().is_some_and(Result::is_ok) && !self.rate.take() {
                        let reason = format!(
                            "Too many messages: at most {} a second",
                            self.rate.per_second
                        );
                        let _ = self.out.try_send(Outgoing::Close(CloseCode::Policy, reason));
                        break;
                    }
                    match message {
                        Some(Ok(AggregatedMessage::Text(text))) => {
                            if !self.receive(&text).await {
                                break;
                            }
                        }
                        Some(Ok(AggregatedMessage::Ping(bytes))) => {
                            let _ = self.session.pong(&bytes).await;
                        }
                        Some(Ok(AggregatedMessage::Close(_))) | None => break,
                        // A message larger than the limit (one frame or assembled), or a frame
                        // that breaks the protocol, ends the socket.
                        Some(Err(e)) => {
                            let (code, reason) = match e {
                                ProtocolError::Overflow | ProtocolError::Io(_) => {
                                    (CloseCode::Size, "The message is too large")
                                }
                                _ => (CloseCode::Protocol, "The frame breaks the WebSocket protocol"),
                            };
                            let _ = self.out.try_send(Outgoing::Close(code, reason.to_owned()));
                            break;
                        }
                        Some(Ok(_)) => {}
                    }
                }
                () = uninitialised => {
                    self.close(4408, "Connection initialisation timeout");
                    break;
                }
                () = idle => {
                    let _ = self.out.try_send(Outgoing::Close(
                        CloseCode::Normal,
                        "The connection was idle for too long".to_owned(),
                    ));
                    break;
                }
                () = tick => {
                    // Keep-alives go to initialised legacy sockets.
                    if let (Protocol::Legacy { v05_keepalive }, Some(_)) = (self.protocol, &self.principal) {
                        let ka = if v05_keepalive { "keepalive" } else { "ka" };
                        if !self.send(json!({ "type": ka })) {
                            break;
                        }
                    }
                }
            }
        }
        self.running.clear();
        self.service.groups.sockets.fetch_sub(1, Ordering::Relaxed);
    }

    /// Ends every running subscription with the error `message`; false when the client cannot
    /// keep up.
    fn end_all(&mut self, message: &str) -> bool {
        let mut ok = true;
        for (_, running) in self.running.drain() {
            ok = ok
                && queue(
                    &self.out,
                    &self.session,
                    Outgoing::Text(running.error(message).to_string()),
                );
        }
        ok
    }

    /// Queues `message`; false when the client cannot keep up (it is then disconnected).
    fn send(&self, message: Value) -> bool {
        queue(
            &self.out,
            &self.session,
            Outgoing::Text(message.to_string()),
        )
    }

    /// Ends the socket with a close frame.
    fn close(&self, code: u16, reason: &str) {
        let _ = self
            .out
            .try_send(Outgoing::Close(CloseCode::Other(code), reason.to_owned()));
    }

    /// Handles one text message; false when the socket is to end.
    async fn receive(&mut self, text: &str) -> bool {
        let message: Option<serde_json::Map<String, Value>> = serde_json::from_str(text).ok();
        match self.protocol {
            Protocol::Transport => self.receive_transport(message).await,
            Protocol::Legacy { .. } => self.receive_legacy(message).await,
        }
    }

    /// A message of `graphql-ws` or `graphql-subscriptions`.
    async fn receive_legacy(&mut self, message: Option<serde_json::Map<String, Value>>) -> bool {
        let Some(message) = message else {
            return self.send(unparsable());
        };
        let kind = message.get("type").and_then(Value::as_str).unwrap_or("");
        let id = message.get("id").cloned();
        match kind {
            "connection_init" | "init" => {
                let v07 = kind == "connection_init";
                match self.authenticate(message.get("payload")).await {
                    Ok(principal) => {
                        self.principal = Some(principal);
                        let ack = if v07 {
                            "connection_ack"
                        } else {
                            "init_success"
                        };
                        if !self.send(json!({ "type": ack })) {
                            return false;
                        }
                        if v07
                            && let Protocol::Legacy {
                                v05_keepalive: false,
                            } = self.protocol
                        {
                            // subscriptions-transport-ws clients expect a first `ka` at once.
                            return self.send(json!({ "type": "ka" }));
                        }
                        true
                    }
                    Err(text) => {
                        let fail = if v07 { "connection_error" } else { "init_fail" };
                        self.send(json!({ "type": fail, "payload": { "message": text } }))
                    }
                }
            }
            // Messages before init are ignored.
            _ if self.principal.is_none() => true,
            "start" | "subscription_start" if id.is_some() => {
                let v07 = kind == "start";
                let id = id.unwrap_or(Value::Null);
                let payload = if v07 {
                    message.get("payload").cloned().unwrap_or(Value::Null)
                } else {
                    Value::Object(message.clone())
                };
                self.start_legacy(id, &payload, v07).await
            }
            "stop" | "subscription_end" if id.is_some() => {
                self.stop(&key(id.as_ref()));
                true
            }
            "connection_terminate" => false,
            _ => self.send(unparsable()),
        }
    }

    /// `start` (v0.7) or `subscription_start` (v0.5): the subscription, or its error.
    async fn start_legacy(&mut self, id: Value, payload: &Value, v07: bool) -> bool {
        let started = self.start(&id, payload, Legacy(v07)).await;
        match started {
            Ok(()) if v07 => true,
            Ok(()) => self.send(json!({ "id": id, "type": "subscription_success" })),
            Err(message) if v07 => {
                self.send(json!({ "id": id, "type": "error", "payload": { "message": message } }))
            }
            Err(message) => self.send(json!({
                "id": id,
                "type": "subscription_fail",
                "payload": { "errors": [{ "message": message }] },
            })),
        }
    }

    /// A message of `graphql-transport-ws`.
    async fn receive_transport(&mut self, message: Option<serde_json::Map<String, Value>>) -> bool {
        let Some(message) = message else {
            self.close(4400, "Invalid message received");
            return false;
        };
        let kind = message.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "connection_init" if self.principal.is_some() => {
                self.close(4429, "Too many initialisation requests");
                false
            }
            "connection_init" => match self.authenticate(message.get("payload")).await {
                Ok(principal) => {
                    self.principal = Some(principal);
                    self.send(json!({ "type": "connection_ack" }))
                }
                Err(text) => {
                    self.close(4403, &text);
                    false
                }
            },
            "ping" => self.send(json!({ "type": "pong" })),
            "pong" => true,
            "subscribe" | "complete" if self.principal.is_none() => {
                self.close(4401, "Unauthorized");
                false
            }
            "subscribe" => {
                let Some(id) = message.get("id").and_then(Value::as_str) else {
                    self.close(4400, "Invalid message received");
                    return false;
                };
                let id = Value::String(id.to_owned());
                if self
                    .running
                    .get(&key(Some(&id)))
                    .is_some_and(|r| r.membership.is_live())
                {
                    self.close(
                        4409,
                        &format!("Subscriber for {} already exists", key(Some(&id))),
                    );
                    return false;
                }
                let payload = message.get("payload").cloned().unwrap_or(Value::Null);
                match self.start(&id, &payload, Transport).await {
                    Ok(()) => true,
                    Err(message) => self.send(json!({
                        "id": id,
                        "type": "error",
                        "payload": [{ "message": message }],
                    })),
                }
            }
            "complete" => {
                let id = message.get("id");
                self.stop(&key(id));
                true
            }
            _ => {
                self.close(4400, "Invalid message received");
                false
            }
        }
    }

    /// The principal of an init payload's `Authorization` (or `authorization`): none without
    /// one or with a token that does not authenticate, as over HTTP.
    async fn authenticate(&self, payload: Option<&Value>) -> Result<Principal, String> {
        let token = payload
            .and_then(Value::as_object)
            .and_then(|p| p.get("Authorization").or_else(|| p.get("authorization")));
        let header = match token {
            None | Some(Value::Null) => return Ok(Principal::default()),
            Some(Value::String(text)) => text.clone(),
            Some(_) => return Err("No Authorization field was provided in payload.".to_owned()),
        };
        // The header's `Bearer ` prefix is optional here.
        let header = if header.starts_with("Bearer ") {
            header
        } else {
            format!("Bearer {header}")
        };
        let state = &self.service.state;
        Ok(state
            .auth
            .resolve(&state.db, &Counter::new(), Some(&header))
            .await)
    }

    /// Starts the subscription `id` from a request payload (`query`, `variables`,
    /// `operationName`); the message of its first error when it cannot start.
    async fn start(&mut self, id: &Value, payload: &Value, flavour: Flavour) -> Result<(), String> {
        let max = self.service.limits.max_socket_subscriptions;
        if self.running.len() >= max {
            // Subscriptions whose stream ended keep their id until stopped; they do not count.
            self.running.retain(|_, r| r.membership.is_live());
        }
        let this = key(Some(id));
        if self.running.keys().filter(|k| **k != this).count() >= max {
            return Err(format!(
                "A socket may run at most {max} subscriptions at once; stop one before starting another."
            ));
        }
        let query = payload.get("query").and_then(Value::as_str).unwrap_or("");
        let document = match async_graphql::parser::parse_query(query) {
            Ok(document) => document,
            Err(e) => {
                return Err(match flavour {
                    Legacy(_) => "the GraphQL Query was not valid".to_owned(),
                    Transport => e.to_string(),
                });
            }
        };
        let models = S::META.models;
        let names_a_model = document.operations.iter().any(|(_, op)| {
            op.node
                .selection_set
                .node
                .items
                .iter()
                .any(|item| match &item.node {
                    async_graphql::parser::types::Selection::Field(f) => {
                        models.iter().any(|m| m.name == f.node.name.node.as_str())
                    }
                    _ => false,
                })
        });
        if !names_a_model && matches!(flavour, Legacy(_)) {
            return Err("The provided query doesn't include any known model name. Please check for the latest subscriptions API.".to_owned());
        }
        let mut request = async_graphql::Request::new(query);
        if let Some(variables) = payload.get("variables").filter(|v| !v.is_null()) {
            request = request.variables(Variables::from_json(variables.clone()));
        }
        if let Some(name) = payload.get("operationName").and_then(Value::as_str)
            && !name.is_empty()
        {
            request = request.operation_name(name);
        }
        // Arguments filled by variables the payload leaves out are not given (`omitted.rs`):
        // the document runs without them once its text passed a full validation, and as it is
        // (its left-out variables null, its validation's errors the answer) otherwise.
        let operation = request.operation_name.clone();
        let operation = operation.as_deref();
        // Variables used where their types do not fit (`positions.rs`): the subscription's
        // answer is every error of the text's validation.
        let refused = match &self.service.schema_fast {
            Some(fast) => {
                let vars = &request.variables;
                super::positions::refused_document(fast, query, &document, vars, operation).await
            }
            None => None,
        };
        // A refused text runs nothing: no pruning, nor a second validation of it.
        let pruned = super::omitted::optional(&document, operation)
            .filter(|_| refused.is_none())
            .map(|optional| crate::plan::left_out(&optional, &request.variables))
            .and_then(|left_out| super::omitted::pruned(&document, operation, &left_out));
        let run = match (pruned, &self.service.schema_fast) {
            (Some(pruned), Some(fast)) => {
                let variables = &request.variables;
                match super::omitted::check_text(fast, query, &document, operation, variables).await
                {
                    Ok(()) => pruned,
                    Err(variables) => {
                        request.variables = variables;
                        document
                    }
                }
            }
            (Some(pruned), None) => pruned,
            (None, _) => document,
        };
        request.set_parsed_query(run);
        let principal = self.principal.clone().unwrap_or_default();
        let group = GroupKey {
            query: query.to_owned(),
            variables: payload
                .get("variables")
                .filter(|v| !v.is_null())
                .map(Value::to_string)
                .unwrap_or_default(),
            operation: payload
                .get("operationName")
                .and_then(Value::as_str)
                .filter(|name| !name.is_empty())
                .map(str::to_owned),
            principal: principal.clone(),
        };
        let (data_type, complete) = match flavour {
            Legacy(true) => ("data", None),
            Legacy(false) => ("subscription_data", None),
            Transport => (
                "next",
                Some(json!({ "id": id, "type": "complete" }).to_string()),
            ),
        };
        let member = Member::new(
            self.out.clone(),
            self.session.clone(),
            id,
            data_type,
            complete,
        );
        let schema = &self.service.schema;
        let membership = self.service.groups.join(group, member, || {
            if let Some(errors) = refused {
                let response = async_graphql::Response::from_errors(errors);
                return async_graphql::futures_util::stream::once(async { response }).boxed();
            }
            let mut data = Data::default();
            data.insert(principal);
            schema
                .execute_stream_with_session_data(request, Arc::new(data))
                .boxed()
        })?;
        let running = Running {
            membership,
            id: id.clone(),
            flavour,
        };
        // A running subscription of the same id is replaced.
        self.running.insert(key(Some(id)), running);
        Ok(())
    }

    /// Stops the subscription `id` (unknown ids are no error).
    fn stop(&mut self, id: &str) {
        self.running.remove(id);
    }
}

/// Which protocol a subscription answers in: the legacy ones (`true` for v0.7's `data`) or
/// `graphql-transport-ws`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavour {
    Legacy(bool),
    Transport,
}
use Flavour::{Legacy, Transport};

/// Queues `message` for the client; false when the socket is gone, or when the queue is full:
/// the client does not keep up, and is disconnected with a close frame that says so (sent past
/// the queue).
pub(super) fn queue(out: &mpsc::Sender<Outgoing>, session: &Session, message: Outgoing) -> bool {
    match out.try_send(message) {
        Ok(()) => true,
        Err(mpsc::error::TrySendError::Full(_)) => {
            let session = session.clone();
            actix_web::rt::spawn(async move {
                let reason = CloseReason {
                    code: CloseCode::Policy,
                    description: Some(TOO_SLOW.to_owned()),
                };
                let _ = session.close(Some(reason)).await;
            });
            false
        }
        Err(mpsc::error::TrySendError::Closed(_)) => false,
    }
}

/// The close reason of a client that let its send queue fill up.
const TOO_SLOW: &str = "The client did not read its messages fast enough";

/// The map key of a subscription id (ids keep their JSON type in messages).
fn key(id: Option<&Value>) -> String {
    match id {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

/// `{"id":"","type":"error","payload":{"message":"The message can't be parsed"}}`.
fn unparsable() -> Value {
    json!({ "id": "", "type": "error", "payload": { "message": "The message can't be parsed" } })
}

/// `GET /status/subscriptions`: what the service's subscriptions are and have done, as JSON
/// (`sockets`, `subscriptions`, `groups`, `streams`; `events`, `deliveries`, `evaluations`,
/// `messages`, `checkStatements` since the start).
pub(super) async fn status<S: ServiceDef>(service: web::Data<Service<S>>) -> HttpResponse {
    let groups = &service.groups;
    let (count, members) = groups.sizes();
    let hub = service.hub.counts();
    let load = |n: &std::sync::atomic::AtomicU64| n.load(Ordering::Relaxed);
    HttpResponse::Ok().json(json!({
        "sockets": groups.sockets.load(Ordering::Relaxed),
        "subscriptions": members,
        "groups": count,
        "streams": service.hub.streams(),
        "events": load(&hub.events),
        "deliveries": load(&hub.deliveries),
        "evaluations": load(&groups.evaluations),
        "messages": load(&groups.messages),
        "checkStatements": load(&hub.check_statements),
        "nodeReads": load(&hub.node_reads),
    }))
}
