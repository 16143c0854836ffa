//! The HTTP server: routes, the Simple API request envelope (batching, variables as object or
//! JSON text, the reference's error shapes), request ids, CORS, the playground page and `/status`.

use std::sync::Arc;

use actix_web::dev::Server;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use async_graphql::http::{GraphQLPlaygroundConfig, playground_source};
use async_graphql::{
    EmptySubscription, ObjectType, PathSegment, Pos, Request, Schema, ServerError, Value, Variables,
};
use serde::Serialize;

use crate::error::INTERNAL;
use crate::state::{RequestCx, State};
use crate::storage::Counter;
use crate::value::cuid;

/// How deep a query may nest, and how many fields it may select; generous enough for every
/// introspection query of graphql-js clients, small enough to stop abusive queries.
const MAX_DEPTH: usize = 32;
const MAX_COMPLEXITY: usize = 20_000;

/// Response header carrying the number of SQL statements a request ran.
pub const STATEMENTS_HEADER: &str = "Svc-Sql-Statements";

/// Everything the HTTP handlers share.
pub struct Service<Q, M> {
    pub schema: Schema<Q, M, EmptySubscription>,
    pub service_id: String,
    pub alias: String,
    /// Root fields whose type is non-null (`all<Plural>`, `_all<Plural>Meta`): when one of them
    /// fails, `data` as a whole is `null`, as GraphQL's null propagation requires.
    non_null_roots: Vec<String>,
    state: Arc<State>,
}

impl<Q, M> Service<Q, M>
where
    Q: ObjectType + Default + 'static,
    M: ObjectType + Default + 'static,
{
    /// Builds the schema once; requests reuse it.
    pub fn new(state: Arc<State>, service_id: String, alias: String) -> Self {
        let schema = Schema::build(Q::default(), M::default(), EmptySubscription)
            .data(state.clone())
            .limit_depth(MAX_DEPTH)
            .limit_complexity(MAX_COMPLEXITY)
            .finish();
        let non_null_roots = state
            .service
            .models
            .iter()
            .flat_map(|m| {
                [
                    format!("all{}", m.plural),
                    format!("_all{}Meta", m.plural),
                    format!("deleteMany{}", m.plural),
                    format!("updateMany{}", m.plural),
                ]
            })
            .collect();
        Service {
            schema,
            service_id,
            alias,
            non_null_roots,
            state,
        }
    }

    fn knows(&self, id: &str) -> bool {
        id == self.service_id || id == self.alias
    }
}

/// Binds `service` to `port` (0 picks a free one) and returns the server (to be awaited) and the
/// port it listens on.
pub fn bind<Q, M>(service: Service<Q, M>, port: u16) -> std::io::Result<(Server, u16)>
where
    Q: ObjectType + Default + 'static,
    M: ObjectType + Default + 'static,
{
    let service = web::Data::new(service);
    let server = HttpServer::new(move || {
        App::new()
            .app_data(service.clone())
            .app_data(web::PayloadConfig::new(MAX_BODY_BYTES))
            .wrap(
                actix_web::middleware::DefaultHeaders::new()
                    .add((header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"))
                    .add((
                        header::ACCESS_CONTROL_ALLOW_HEADERS,
                        "Content-Type, Authorization",
                    ))
                    .add((header::ACCESS_CONTROL_ALLOW_METHODS, "GET, POST, OPTIONS")),
            )
            .route("/status", web::get().to(status))
            .route("/simple/v1/{id}", web::post().to(simple::<Q, M>))
            .route("/simple/v1/{id}", web::get().to(playground::<Q, M>))
            .route(
                "/simple/v1/{id}/schema.json",
                web::get().to(schema_json::<Q, M>),
            )
            .default_service(web::route().to(fallback))
    })
    .bind(("0.0.0.0", port))?;
    let port = server.addrs().first().map_or(port, |a| a.port());
    Ok((server.run(), port))
}

/// Requests larger than this are refused (the import limit of the seed is the largest body any
/// endpoint takes).
const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;

async fn status() -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain").body("OK")
}

async fn fallback(req: HttpRequest) -> HttpResponse {
    if req.method() == actix_web::http::Method::OPTIONS {
        // CORS preflight: the default headers carry the answer.
        return HttpResponse::NoContent().finish();
    }
    HttpResponse::NotFound().finish()
}

async fn playground<Q, M>(
    service: web::Data<Service<Q, M>>,
    path: web::Path<String>,
) -> HttpResponse
where
    Q: ObjectType + Default + 'static,
    M: ObjectType + Default + 'static,
{
    let id = path.into_inner();
    if !service.knows(&id) {
        return project_not_found(&id, &new_request_id());
    }
    let endpoint = format!("/simple/v1/{id}");
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .body(playground_source(GraphQLPlaygroundConfig::new(&endpoint)))
}

async fn schema_json<Q, M>(
    service: web::Data<Service<Q, M>>,
    path: web::Path<String>,
) -> HttpResponse
where
    Q: ObjectType + Default + 'static,
    M: ObjectType + Default + 'static,
{
    let id = path.into_inner();
    let request_id = new_request_id();
    if !service.knows(&id) {
        return project_not_found(&id, &request_id);
    }
    let res = service
        .schema
        .execute(Request::new(INTROSPECTION_QUERY))
        .await;
    HttpResponse::Ok().json(serde_json::json!({ "data": res.data }))
}

fn new_request_id() -> String {
    format!("local:simple:{}", cuid())
}

fn project_not_found(id: &str, request_id: &str) -> HttpResponse {
    json_response(
        &serde_json::json!({
            "code": 3016,
            "requestId": request_id,
            "error": format!("Project not found: '{id}'"),
        }),
        request_id,
        None,
    )
}

fn json_response(body: &impl Serialize, request_id: &str, statements: Option<u32>) -> HttpResponse {
    let mut res = HttpResponse::Ok();
    res.content_type("application/json");
    if let Ok(v) = HeaderValue::from_str(request_id) {
        res.insert_header(("Request-Id", v));
    }
    if let Some(n) = statements {
        res.insert_header((STATEMENTS_HEADER, n.to_string()));
    }
    match serde_json::to_vec(body) {
        Ok(bytes) => res.body(bytes),
        Err(_) => HttpResponse::InternalServerError().finish(),
    }
}

async fn simple<Q, M>(
    service: web::Data<Service<Q, M>>,
    path: web::Path<String>,
    body: web::Bytes,
) -> HttpResponse
where
    Q: ObjectType + Default + 'static,
    M: ObjectType + Default + 'static,
{
    let id = path.into_inner();
    let request_id = new_request_id();
    if !service.knows(&id) {
        return project_not_found(&id, &request_id);
    }
    let counter = Arc::new(Counter::new());
    let parsed: Result<serde_json::Value, _> = serde_json::from_slice(&body);
    let out = match parsed {
        Ok(serde_json::Value::Array(items)) => {
            let mut outs = Vec::with_capacity(items.len());
            for item in items {
                outs.push(run_one(&service, item, &request_id, &counter).await);
            }
            serde_json::Value::Array(outs)
        }
        Ok(item @ serde_json::Value::Object(_)) => {
            run_one(&service, item, &request_id, &counter).await
        }
        _ => serde_json::json!({
            "error": format!("input could not be parsed: '{}'", String::from_utf8_lossy(&body)),
        }),
    };
    json_response(&out, &request_id, Some(counter.get()))
}

/// Runs one GraphQL request of the envelope and renders it in the reference's shapes.
async fn run_one<Q, M>(
    service: &Service<Q, M>,
    item: serde_json::Value,
    request_id: &str,
    counter: &Arc<Counter>,
) -> serde_json::Value
where
    Q: ObjectType + Default + 'static,
    M: ObjectType + Default + 'static,
{
    let serde_json::Value::Object(mut obj) = item else {
        return serde_json::json!({ "error": format!("input could not be parsed: '{item}'") });
    };
    let query = match obj.remove("query") {
        Some(serde_json::Value::String(q)) => q,
        _ => String::new(),
    };
    let variables = match obj.remove("variables") {
        None | Some(serde_json::Value::Null) => Variables::default(),
        Some(serde_json::Value::String(text)) if text.trim().is_empty() => Variables::default(),
        Some(serde_json::Value::String(text)) => match serde_json::from_str(&text) {
            Ok(v) => Variables::from_json(v),
            Err(_) => {
                return serde_json::json!({
                    "code": 3024,
                    "requestId": request_id,
                    "error": format!("Variables could not be parsed as json: {text}"),
                });
            }
        },
        Some(v) => Variables::from_json(v),
    };
    let mut request = Request::new(query).variables(variables);
    if let Some(serde_json::Value::String(name)) = obj.remove("operationName") {
        request = request.operation_name(name);
    }
    if let Err(err) = request.parsed_query() {
        return serde_json::json!({
            "error": format!("Syntax error while parsing GraphQL query. {}", err.message),
        });
    }
    let request = request
        .data(RequestCx {
            request_id: request_id.to_owned(),
            statements: counter.clone(),
        })
        .data(crate::related::loaders(
            service.state.clone(),
            counter.clone(),
        ));
    let response = service.schema.execute(request).await;
    let validation_failed = matches!(response.data, Value::Null)
        && !response.errors.is_empty()
        && response.errors.iter().all(|e| e.path.is_empty());
    if validation_failed {
        let errors: Vec<_> = response
            .errors
            .iter()
            .map(|e| ValidationErrorOut {
                message: validation_message(&e.message),
                locations: &e.locations,
            })
            .collect();
        return serde_json::json!({ "errors": errors });
    }
    let errors: Vec<_> = response
        .errors
        .iter()
        .map(|e| field_error(e, request_id))
        .collect();
    let mut data = response.data.into_json().unwrap_or(serde_json::Value::Null);
    for e in &response.errors {
        null_at_path(&mut data, &e.path, &service.non_null_roots);
    }
    let mut out = serde_json::Map::new();
    out.insert("data".to_owned(), data);
    if !errors.is_empty() {
        out.insert("errors".to_owned(), serde_json::Value::Array(errors));
    }
    serde_json::Value::Object(out)
}

/// Puts the `null` of a failed field back into `data`: the executor leaves failed fields out, but
/// clients expect `{"data": {"updatePost": null}, "errors": […]}`. A failed non-null root field
/// makes all of `data` null.
fn null_at_path(data: &mut serde_json::Value, path: &[PathSegment], non_null_roots: &[String]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    if let [PathSegment::Field(root)] = path
        && non_null_roots.iter().any(|r| r == root)
    {
        *data = serde_json::Value::Null;
        return;
    }
    if parents.is_empty() && data.is_null() {
        *data = serde_json::Value::Object(serde_json::Map::new());
    }
    let mut node = data;
    for segment in parents {
        node = match (segment, node) {
            (PathSegment::Field(name), serde_json::Value::Object(map)) => match map.get_mut(name) {
                Some(child) => child,
                None => return,
            },
            (PathSegment::Index(i), serde_json::Value::Array(items)) => match items.get_mut(*i) {
                Some(child) => child,
                None => return,
            },
            _ => return,
        };
    }
    if let (PathSegment::Field(name), serde_json::Value::Object(map)) = (last, node) {
        map.entry(name.clone()).or_insert(serde_json::Value::Null);
    }
}

/// async-graphql reports a bad literal for a custom scalar generically ("Invalid value for
/// argument …, expected type \"DateTime\""); the reference's message names the reason too, and
/// clients look for it.
fn validation_message(message: &str) -> String {
    if message.ends_with("expected type \"DateTime\"") {
        format!("{message}: Date value expected")
    } else if message.ends_with("expected type \"Json\"") {
        format!("{message}: Not valid JSON")
    } else {
        message.to_owned()
    }
}

#[derive(Serialize)]
struct ValidationErrorOut<'a> {
    message: String,
    locations: &'a [Pos],
}

#[derive(Serialize)]
struct FieldErrorOut<'a> {
    locations: &'a [Pos],
    path: &'a [PathSegment],
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<Value>,
    message: String,
    #[serde(rename = "requestId")]
    request_id: &'a str,
}

/// An execution error: `code` and `requestId` at the top level; internal failures say only
/// "Whoops" and the request id.
fn field_error(e: &ServerError, request_id: &str) -> serde_json::Value {
    let ext = e.extensions.as_ref();
    let internal = ext.and_then(|x| x.get(INTERNAL)).is_some();
    let message = if internal {
        format!(
            "Whoops. Looks like an internal server error. Please contact us from the Console (https://console.graph.cool) or via email (support@graph.cool) and include your Request ID: {request_id}"
        )
    } else {
        e.message.clone()
    };
    let out = FieldErrorOut {
        locations: &e.locations,
        path: &e.path,
        code: ext.and_then(|x| x.get("code")).cloned(),
        message,
        request_id,
    };
    serde_json::to_value(out).unwrap_or(serde_json::Value::Null)
}

/// The introspection query of graphql-js (`getIntrospectionQuery` with `specifiedByUrl` and
/// `directiveIsRepeatable`), served as `schema.json`.
pub const INTROSPECTION_QUERY: &str = include_str!("introspection.graphql");
