//! The routes' handlers: the client APIs (the Simple API and, for admins, the permission
//! schema), the System API, the playground page and its files (GraphiQL, embedded in the
//! binary by `svc-playground`), the introspection result, `/status`, and the response headers
//! every answer carries.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use async_graphql::Request;
use serde::Serialize;

use super::envelope::{Envelope, Outcome, parse_request};
use super::positions;
use super::render::render;
use super::{CHECKED_HEADER, DIRECT_HEADER, INTROSPECTION_QUERY, STATEMENTS_HEADER, Service};
use crate::api::system::Caller;
use crate::auth::bearer;
use crate::model::{ServiceDef, cuid};
use crate::storage::Counter;

pub(super) async fn status() -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain").body("OK")
}

pub(super) async fn fallback(req: HttpRequest) -> HttpResponse {
    if req.method() == actix_web::http::Method::OPTIONS {
        // CORS preflight: the default headers carry the answer.
        return HttpResponse::NoContent().finish();
    }
    HttpResponse::NotFound().finish()
}

pub(super) async fn playground<S: ServiceDef>(
    service: web::Data<Service<S>>,
    path: web::Path<String>,
    req: HttpRequest,
) -> HttpResponse {
    let id = path.into_inner();
    if !service.knows(&id) {
        return project_not_found(&id, &new_request_id());
    }
    playground_page(req.path())
}

/// [`playground`] at the fixed path of one of the service's own ids.
pub(super) async fn playground_own(req: HttpRequest) -> HttpResponse {
    playground_page(req.path())
}

/// The playground page of the API at `endpoint` (the page's own path: the Simple API's or the
/// Relay API's). It loads only the files of [`playground_asset`], from the same origin, and its
/// Content-Security-Policy keeps it there.
fn playground_page(endpoint: &str) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            svc_playground::CONTENT_SECURITY_POLICY,
        ))
        .body(svc_playground::page(endpoint))
}

/// `GET /playground/<name>`: a file the playground page loads (404 for any other name).
pub(super) async fn playground_asset(name: web::Path<String>) -> HttpResponse {
    match svc_playground::asset(&name) {
        Some(asset) => HttpResponse::Ok()
            .content_type(asset.content_type)
            .insert_header((header::CACHE_CONTROL, asset.cache_control))
            .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
            .body(asset.bytes),
        None => HttpResponse::NotFound().finish(),
    }
}

/// `GET /simple/v1/<id>/schema.json` ([`SIMPLE`]) and `GET /relay/v1/<id>/schema.json`
/// ([`RELAY`]): the API's introspection result.
pub(super) async fn schema_json<S: ServiceDef, const API: u8>(
    service: web::Data<Service<S>>,
    path: web::Path<String>,
) -> HttpResponse {
    let id = path.into_inner();
    let request_id = new_request_id();
    if !service.knows(&id) {
        return project_not_found(&id, &request_id);
    }
    let introspection = Request::new(INTROSPECTION_QUERY);
    let res = match API {
        RELAY => service.relay.execute(introspection).await,
        _ => service.schema.execute(introspection).await,
    };
    HttpResponse::Ok().json(serde_json::json!({ "data": res.data }))
}

pub(super) fn new_request_id() -> String {
    format!("local:simple:{}", cuid())
}

/// The `Authorization` header, if it is text.
pub(super) fn authorization(req: &HttpRequest) -> Option<&str> {
    req.headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
}

/// A request-level error (reference §11.1 c): `{"code", "requestId", "error"}`, HTTP 200.
pub(super) fn request_error(code: u32, message: &str, request_id: &str) -> HttpResponse {
    json_response(
        &serde_json::json!({
            "code": code,
            "requestId": request_id,
            "error": message,
        }),
        request_id,
        None,
    )
}

pub(super) fn project_not_found(id: &str, request_id: &str) -> HttpResponse {
    request_error(3016, &format!("Project not found: '{id}'"), request_id)
}

pub(super) fn json_response(
    body: &impl Serialize,
    request_id: &str,
    statements: Option<u32>,
) -> HttpResponse {
    match serde_json::to_vec(body) {
        Ok(bytes) => json_bytes_response(bytes, request_id, statements),
        Err(_) => HttpResponse::InternalServerError().finish(),
    }
}

/// A JSON body already serialised.
pub(super) fn json_bytes_response(
    body: Vec<u8>,
    request_id: &str,
    statements: Option<u32>,
) -> HttpResponse {
    media_response(
        StatusCode::OK,
        Media::Json,
        body,
        request_id,
        statements,
        None,
    )
}

/// The media type of a client API's responses, chosen by the request's `Accept` header (the
/// GraphQL-over-HTTP specification).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Media {
    /// `application/json`: every GraphQL answer is HTTP 200, errors in the body, as the
    /// reference's clients expect.
    Json,
    /// `application/graphql-response+json`, for clients that ask for it: a request refused
    /// before execution (parameters, syntax, validation, variables) is HTTP 400.
    GraphqlResponse,
}

impl Media {
    const GRAPHQL_RESPONSE: &str = "application/graphql-response+json";

    fn of(req: &HttpRequest) -> Media {
        let accepts = req
            .headers()
            .get_all(header::ACCEPT)
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|item| {
                let mut parts = item.split(';');
                let name = parts.next().unwrap_or("").trim();
                // `q=0` says "not this one".
                let refused = parts.any(|p| {
                    p.trim()
                        .strip_prefix("q=")
                        .and_then(|q| q.trim().parse::<f32>().ok())
                        .is_some_and(|q| q == 0.0)
                });
                name.eq_ignore_ascii_case(Media::GRAPHQL_RESPONSE) && !refused
            });
        if accepts {
            Media::GraphqlResponse
        } else {
            Media::Json
        }
    }

    fn content_type(self) -> &'static str {
        match self {
            Media::Json => "application/json",
            Media::GraphqlResponse => "application/graphql-response+json; charset=utf-8",
        }
    }

    /// The status of an answer: a body that is not JSON is 400 whatever was accepted (its
    /// body is the reference's); a request refused before execution is 400 for clients of
    /// the GraphQL response media type, 200 for the others.
    fn status(self, outcome: Outcome) -> StatusCode {
        match (outcome, self) {
            (Outcome::Malformed, _) | (Outcome::Rejected, Media::GraphqlResponse) => {
                StatusCode::BAD_REQUEST
            }
            _ => StatusCode::OK,
        }
    }
}

/// Whether a client API request's body may be read as JSON: its `Content-Type` is JSON
/// (`application/json`, or any `…+json`). A request without one is read as JSON for
/// clients of `application/json` (as before the GraphQL-over-HTTP specification), refused for
/// those of the GraphQL response media type, which the specification holds to it.
fn json_body(req: &HttpRequest, media: Media) -> bool {
    let Some(value) = req.headers().get(header::CONTENT_TYPE) else {
        return media == Media::Json;
    };
    // Compared without allocating: this runs for every request of the client APIs.
    let essence = value.to_str().unwrap_or("").split(';').next().unwrap_or("");
    let (kind, subtype) = essence.trim().split_once('/').unwrap_or(("", ""));
    let subtype = subtype.as_bytes();
    kind.eq_ignore_ascii_case("application")
        && (subtype.eq_ignore_ascii_case(b"json")
            || subtype.len() > 5 && subtype[subtype.len() - 5..].eq_ignore_ascii_case(b"+json"))
}

/// `answered`: the values of [`DIRECT_HEADER`] and [`CHECKED_HEADER`].
fn media_response(
    status: StatusCode,
    media: Media,
    body: Vec<u8>,
    request_id: &str,
    statements: Option<u32>,
    answered: Option<(u32, u32)>,
) -> HttpResponse {
    let mut res = HttpResponse::build(status);
    res.content_type(media.content_type());
    if let Ok(v) = HeaderValue::from_str(request_id) {
        res.insert_header(("Request-Id", v));
    }
    if let Some(n) = statements {
        res.insert_header((STATEMENTS_HEADER, n.to_string()));
    }
    if let Some((direct, checked)) = answered {
        res.insert_header((DIRECT_HEADER, direct.to_string()));
        res.insert_header((CHECKED_HEADER, checked.to_string()));
    }
    super::sliced::respond(&mut res, body)
}

/// The client APIs, as the `API` parameter of [`api`] and [`own_api`].
pub(super) const SIMPLE: u8 = 0;
pub(super) const PERMISSIONS: u8 = 1;
pub(super) const RELAY: u8 = 2;

/// `POST /simple/v1/<id>` ([`SIMPLE`]); `POST /simple/v1/<id>/permissions` ([`PERMISSIONS`]),
/// the permission schema, for admins only (reference §5.5); `POST /relay/v1/<id>` ([`RELAY`]).
pub(super) async fn api<S: ServiceDef, const API: u8>(
    service: web::Data<Service<S>>,
    path: web::Path<String>,
    req: HttpRequest,
    body: web::Bytes,
) -> HttpResponse {
    client_api(&service, &path, &req, &body, API).await
}

/// [`api`] at the fixed paths of the service's own ids.
pub(super) async fn own_api<S: ServiceDef, const API: u8>(
    service: web::Data<Service<S>>,
    req: HttpRequest,
    body: web::Bytes,
) -> HttpResponse {
    client_api(&service, &service.service_id, &req, &body, API).await
}

/// A request of a client API: the Simple API, its permission schema (admins only), or the
/// Relay API.
async fn client_api<S: ServiceDef>(
    service: &Service<S>,
    id: &str,
    req: &HttpRequest,
    body: &[u8],
    api: u8,
) -> HttpResponse {
    let request_id = new_request_id();
    if !service.knows(id) {
        return project_not_found(id, &request_id);
    }
    let media = Media::of(req);
    if !json_body(req, media) {
        let body = serde_json::json!({
            "error": "the request's Content-Type must be `application/json`",
        });
        return media_response(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            media,
            serde_json::to_vec(&body).unwrap_or_default(),
            &request_id,
            None,
            None,
        );
    }
    let counter = Arc::new(Counter::with_node_budget(service.limits.max_nodes));
    let principal = service
        .auth()
        .resolve(&service.state.db, &counter, authorization(req))
        .await;
    if api == PERMISSIONS && !principal.is_admin() {
        return request_error(3008, "Insufficient permissions for this query", &request_id);
    }
    let origin = crate::engine::Origin {
        request_id: request_id.clone(),
        source_ip: req
            .peer_addr()
            .map(|a| a.ip().to_string())
            .unwrap_or_default(),
        token: bearer(authorization(req)).map(str::to_owned),
    };
    let cx = Envelope {
        state: &service.state,
        nulls: match api {
            PERMISSIONS => &service.permission_nulls,
            RELAY => &service.relay_nulls,
            _ => &service.nulls,
        },
        // Compiled plans answer the client APIs' queries.
        plans: match api {
            SIMPLE => Some(&service.plans),
            RELAY => Some(&service.relay_plans),
            _ => None,
        },
        request_id: &request_id,
        counter: &counter,
        principal: &principal,
        origin: &origin,
        direct: AtomicU32::new(0),
        checked: AtomicU32::new(0),
        max_batch: service.limits.max_batch,
    };
    let answer = match api {
        PERMISSIONS => {
            let fast = service.permissions_fast.as_ref();
            cx.run(&service.permissions, fast, body).await
        }
        RELAY => {
            cx.run(&service.relay, service.relay_fast.as_ref(), body)
                .await
        }
        _ => {
            cx.run(&service.schema, service.schema_fast.as_ref(), body)
                .await
        }
    };
    let answered = (
        cx.direct.load(Ordering::Relaxed),
        cx.checked.load(Ordering::Relaxed),
    );
    media_response(
        media.status(answer.outcome),
        media,
        answer.body,
        &request_id,
        Some(counter.get()),
        Some(answered),
    )
}

/// `POST /system`: the System API. One request per body (no batching); a body or query that
/// cannot be parsed is HTTP 400 `{"error": …}` (reference §10.1).
pub(super) async fn system<S: ServiceDef>(
    service: web::Data<Service<S>>,
    req: HttpRequest,
    body: web::Bytes,
) -> HttpResponse {
    let request_id = format!("local:system:{}", cuid());
    let bad_request = |body: serde_json::Value| {
        let mut res = HttpResponse::BadRequest();
        if let Ok(v) = HeaderValue::from_str(&request_id) {
            res.insert_header(("Request-Id", v));
        }
        res.json(body)
    };
    let item = match serde_json::from_slice::<serde_json::Value>(&body) {
        Ok(item @ serde_json::Value::Object(_)) => item,
        _ => {
            return bad_request(serde_json::json!({
                "error": format!("input could not be parsed: '{}'", String::from_utf8_lossy(&body)),
            }));
        }
    };
    let mut request = match parse_request(item, &request_id) {
        Ok(request) => request,
        Err(error) => return bad_request(error),
    };
    // Variables used where their types do not fit (`positions.rs`).
    if let Some(fast) = &service.system_fast
        && let Some(response) = positions::refused(fast, &mut request).await
    {
        return json_response(&render(response, &request_id, None), &request_id, None);
    }
    let caller = Caller(bearer(authorization(&req)).and_then(|t| service.auth().credential(t)));
    let request = request.data(caller);
    let response = service.system.execute(request).await;
    let out = render(response, &request_id, None);
    json_response(&out, &request_id, None)
}
