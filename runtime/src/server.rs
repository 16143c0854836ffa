//! The HTTP server: routes, the Simple API request envelope (batching, variables as object or
//! JSON text, the reference's error shapes), request ids, CORS, the playground page, `/status`,
//! the permission endpoint (`/simple/v1/<id>/permissions`, admins only) and the System API
//! (`/system`).
//!
//! The `Authorization: Bearer` header is resolved once per HTTP request ([`Auth::resolve`]) and
//! the [`Principal`] goes into the data of every GraphQL request of the envelope.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use actix_web::dev::Server;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use async_graphql::http::{GraphQLPlaygroundConfig, playground_source};
use async_graphql::parser::types::ExecutableDocument;
use async_graphql::{
    EmptyMutation, EmptySubscription, Executor, PathSegment, Pos, Request, Response, Schema,
    ServerError, Value, Variables,
};
use serde::Serialize;

use crate::auth::{Auth, Principal, bearer};
use crate::cli::ServiceDef;
use crate::direct::{self, Plan, Plans};
use crate::error::INTERNAL;
use crate::nulls::Nullability;
use crate::roots::{Mutation, PermissionQuery, Query};
use crate::state::{RequestCx, State};
use crate::storage::Counter;
use crate::system::{Caller, SystemSchema};
use crate::value::cuid;

/// How deep a query may nest, and how many fields it may select; generous enough for every
/// introspection query of graphql-js clients, small enough to stop abusive queries.
const MAX_DEPTH: usize = 32;
const MAX_COMPLEXITY: usize = 20_000;

/// Response header carrying the number of SQL statements a request ran.
pub const STATEMENTS_HEADER: &str = "Svc-Sql-Statements";

/// Response header carrying how many of the request's GraphQL requests were answered by a
/// compiled plan instead of the executor (see `direct.rs`).
pub const DIRECT_HEADER: &str = "Svc-Direct";

/// Everything the HTTP handlers share.
pub struct Service<S: ServiceDef> {
    pub schema: Schema<Query<S>, Mutation<S>, EmptySubscription>,
    /// The permission schema (`Some<Type>Exists`), served at `/permissions` to admins.
    pub permissions: Schema<PermissionQuery<S>, EmptyMutation, EmptySubscription>,
    /// The System API.
    pub system: SystemSchema,
    pub service_id: String,
    pub alias: String,
    /// The field types of the client API, for null propagation.
    nulls: Nullability,
    /// The same for the permission schema.
    permission_nulls: Nullability,
    /// The compiled plans of the client API's query texts.
    plans: Plans,
    state: Arc<State>,
}

impl<S: ServiceDef> Service<S> {
    /// Builds the schemas once; requests reuse them. `master_token` is what the System API's
    /// `authenticateCustomer` accepts.
    pub fn new(
        state: Arc<State>,
        service_id: String,
        alias: String,
        master_token: Option<String>,
    ) -> Self {
        let schema = Schema::build(
            Query::<S>::default(),
            Mutation::<S>::default(),
            EmptySubscription,
        )
        .data(state.clone())
        .limit_depth(MAX_DEPTH)
        .limit_complexity(MAX_COMPLEXITY)
        .finish();
        let permissions = Schema::build(
            PermissionQuery::<S>::default(),
            EmptyMutation,
            EmptySubscription,
        )
        .data(state.clone())
        .limit_depth(MAX_DEPTH)
        .limit_complexity(MAX_COMPLEXITY)
        .finish();
        let system = crate::system::schema(state.clone(), master_token);
        let nulls = Nullability::of::<Query<S>, Mutation<S>>();
        let permission_nulls = Nullability::of::<PermissionQuery<S>, EmptyMutation>();
        Service {
            schema,
            permissions,
            system,
            service_id,
            alias,
            nulls,
            permission_nulls,
            plans: Plans::default(),
            state,
        }
    }

    fn knows(&self, id: &str) -> bool {
        id == self.service_id || id == self.alias
    }

    fn auth(&self) -> &Auth {
        &self.state.auth
    }
}

/// Binds `service` to `port` (0 picks a free one) and returns the server (to be awaited) and the
/// port it listens on.
pub fn bind<S: ServiceDef>(service: Service<S>, port: u16) -> std::io::Result<(Server, u16)> {
    // The paths of this service's own ids are routed as fixed paths: actix matches a path with
    // a `{id}` segment by a regular expression, which took about 3 % of the server's CPU on the
    // benchmark's query by id. Other ids still reach the handlers through `{id}` (and get 3016).
    // A method no route takes goes to `fallback`, as it does for the `{id}` routes.
    let own_ids: Vec<String> = {
        let mut ids = vec![service.service_id.clone(), service.alias.clone()];
        ids.dedup();
        ids.retain(|id| {
            !id.is_empty()
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
        ids
    };
    let service = web::Data::new(service);
    let server = HttpServer::new(move || {
        let mut app = App::new()
            .app_data(service.clone())
            .app_data(web::PayloadConfig::new(MAX_BODY_BYTES));
        for id in &own_ids {
            app = app
                .service(
                    web::resource(format!("/simple/v1/{id}"))
                        .route(web::post().to(own_api::<S, false>))
                        .route(web::get().to(playground_own))
                        .default_service(web::route().to(fallback)),
                )
                .service(
                    web::resource(format!("/simple/v1/{id}/permissions"))
                        .route(web::post().to(own_api::<S, true>))
                        .default_service(web::route().to(fallback)),
                );
        }
        app.wrap(
            actix_web::middleware::DefaultHeaders::new()
                .add((header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"))
                .add((
                    header::ACCESS_CONTROL_ALLOW_HEADERS,
                    "Content-Type, Authorization",
                ))
                .add((header::ACCESS_CONTROL_ALLOW_METHODS, "GET, POST, OPTIONS")),
        )
        .route("/status", web::get().to(status))
        .route("/system", web::post().to(system::<S>))
        .route("/simple/v1/{id}", web::post().to(api::<S, false>))
        .route("/simple/v1/{id}", web::get().to(playground::<S>))
        .route(
            "/simple/v1/{id}/schema.json",
            web::get().to(schema_json::<S>),
        )
        .route(
            "/simple/v1/{id}/permissions",
            web::post().to(api::<S, true>),
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

async fn playground<S: ServiceDef>(
    service: web::Data<Service<S>>,
    path: web::Path<String>,
) -> HttpResponse {
    let id = path.into_inner();
    if !service.knows(&id) {
        return project_not_found(&id, &new_request_id());
    }
    playground_page(&id)
}

/// [`playground`] at the fixed path of one of the service's own ids.
async fn playground_own(req: HttpRequest) -> HttpResponse {
    let id = req.path().rsplit('/').next().unwrap_or_default();
    playground_page(id)
}

fn playground_page(id: &str) -> HttpResponse {
    let endpoint = format!("/simple/v1/{id}");
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .body(playground_source(GraphQLPlaygroundConfig::new(&endpoint)))
}

async fn schema_json<S: ServiceDef>(
    service: web::Data<Service<S>>,
    path: web::Path<String>,
) -> HttpResponse {
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

/// The `Authorization` header, if it is text.
fn authorization(req: &HttpRequest) -> Option<&str> {
    req.headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
}

/// A request-level error (reference §11.1 c): `{"code", "requestId", "error"}`, HTTP 200.
fn request_error(code: u32, message: &str, request_id: &str) -> HttpResponse {
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

fn project_not_found(id: &str, request_id: &str) -> HttpResponse {
    request_error(3016, &format!("Project not found: '{id}'"), request_id)
}

fn json_response(body: &impl Serialize, request_id: &str, statements: Option<u32>) -> HttpResponse {
    match serde_json::to_vec(body) {
        Ok(bytes) => json_bytes_response(bytes, request_id, statements, None),
        Err(_) => HttpResponse::InternalServerError().finish(),
    }
}

/// A JSON body already serialised; `direct` is the value of [`DIRECT_HEADER`].
fn json_bytes_response(
    body: Vec<u8>,
    request_id: &str,
    statements: Option<u32>,
    direct: Option<u32>,
) -> HttpResponse {
    let mut res = HttpResponse::Ok();
    res.content_type("application/json");
    if let Ok(v) = HeaderValue::from_str(request_id) {
        res.insert_header(("Request-Id", v));
    }
    if let Some(n) = statements {
        res.insert_header((STATEMENTS_HEADER, n.to_string()));
    }
    if let Some(n) = direct {
        res.insert_header((DIRECT_HEADER, n.to_string()));
    }
    res.body(body)
}

/// `POST /simple/v1/<id>`, and with `PERMISSIONS` `POST /simple/v1/<id>/permissions`: the
/// permission schema, for admins only (reference §5.5).
async fn api<S: ServiceDef, const PERMISSIONS: bool>(
    service: web::Data<Service<S>>,
    path: web::Path<String>,
    req: HttpRequest,
    body: web::Bytes,
) -> HttpResponse {
    client_api(&service, &path, &req, &body, PERMISSIONS).await
}

/// [`api`] at the fixed paths of the service's own ids.
async fn own_api<S: ServiceDef, const PERMISSIONS: bool>(
    service: web::Data<Service<S>>,
    req: HttpRequest,
    body: web::Bytes,
) -> HttpResponse {
    client_api(&service, &service.service_id, &req, &body, PERMISSIONS).await
}

/// A request of a client API: the service's schema, or its permission schema (admins only).
async fn client_api<S: ServiceDef>(
    service: &Service<S>,
    id: &str,
    req: &HttpRequest,
    body: &[u8],
    permission_schema: bool,
) -> HttpResponse {
    let request_id = new_request_id();
    if !service.knows(id) {
        return project_not_found(id, &request_id);
    }
    let counter = Arc::new(Counter::new());
    let principal = service
        .auth()
        .resolve(&service.state.db, &counter, authorization(req))
        .await;
    if permission_schema && !principal.is_admin() {
        return request_error(3008, "Insufficient permissions for this query", &request_id);
    }
    let cx = Envelope {
        state: &service.state,
        nulls: if permission_schema {
            &service.permission_nulls
        } else {
            &service.nulls
        },
        plans: (!permission_schema).then_some(&service.plans),
        request_id: &request_id,
        counter: &counter,
        principal: &principal,
        direct: AtomicU32::new(0),
    };
    let out = if permission_schema {
        cx.run(&service.permissions, body).await
    } else {
        cx.run(&service.schema, body).await
    };
    let direct = cx.direct.load(Ordering::Relaxed);
    json_bytes_response(out, &request_id, Some(counter.get()), Some(direct))
}

/// `POST /system`: the System API. One request per body (no batching); a body or query that
/// cannot be parsed is HTTP 400 `{"error": …}` (reference §10.1).
async fn system<S: ServiceDef>(
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
    let request = match parse_request(item, &request_id) {
        Ok(request) => request,
        Err(error) => return bad_request(error),
    };
    let caller = Caller(bearer(authorization(&req)).and_then(|t| service.auth().credential(t)));
    let counter = Arc::new(Counter::new());
    let request = request.data(caller).data(RequestCx {
        request_id: request_id.clone(),
        statements: counter.clone(),
    });
    let response = service.system.execute(request).await;
    let out = render(response, &request_id, None);
    json_response(&out, &request_id, None)
}

/// What the GraphQL requests of one HTTP request share.
struct Envelope<'a> {
    state: &'a Arc<State>,
    nulls: &'a Nullability,
    /// The plan cache, for the client API (`None` for the permission schema).
    plans: Option<&'a Plans>,
    request_id: &'a str,
    counter: &'a Arc<Counter>,
    principal: &'a Principal,
    /// How many requests a plan answered.
    direct: AtomicU32,
}

impl Envelope<'_> {
    /// Runs a body of the client APIs: one request object, or a batch (a JSON array of them).
    /// Returns the response body.
    async fn run<E: Executor>(&self, schema: &E, body: &[u8]) -> Vec<u8> {
        match serde_json::from_slice::<serde_json::Value>(body) {
            Ok(serde_json::Value::Array(items)) => {
                let mut out = vec![b'['];
                for (i, item) in items.into_iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend(self.run_one(schema, item).await);
                }
                out.push(b']');
                out
            }
            Ok(item @ serde_json::Value::Object(_)) => self.run_one(schema, item).await,
            _ => to_json(&serde_json::json!({
                "error": format!("input could not be parsed: '{}'", String::from_utf8_lossy(body)),
            })),
        }
    }

    /// Runs one GraphQL request of the envelope and renders it in the reference's shapes: by
    /// its compiled plan when it has one that applies, otherwise by the executor.
    async fn run_one<E: Executor>(&self, schema: &E, item: serde_json::Value) -> Vec<u8> {
        let incoming = match read_request(item, self.request_id) {
            Ok(incoming) => incoming,
            Err(error) => return to_json(&error),
        };
        let known = self
            .plans
            .map(|p| p.get(&incoming.query, incoming.operation.as_deref()));
        if let Some(Some(direct::Seen {
            plan: Some(plan), ..
        })) = &known
            && let Some(out) = self.direct(plan, &incoming.variables).await
        {
            self.direct.fetch_add(1, Ordering::Relaxed);
            return out;
        }
        let document = known.as_ref().and_then(|k| k.as_ref()?.document.clone());
        let mut request = match incoming.into_request(document.as_deref()) {
            Ok(request) => request,
            Err(error) => return to_json(&error),
        };
        // A text not seen before: compile it now (the executor consumes the document), and
        // keep the plan, or without one the document, once the executor has validated the text.
        let operation = request.operation_name.clone();
        let learned = match (known, request.parsed_query()) {
            (Some(None), Ok(doc)) => {
                let plan = direct::compile(self.state.service, doc, operation.as_deref());
                let doc = plan.is_none().then(|| doc.clone());
                Some((plan.map(Arc::new), doc))
            }
            _ => None,
        };
        let request = request
            .data(RequestCx {
                request_id: self.request_id.to_owned(),
                statements: self.counter.clone(),
            })
            .data(self.principal.clone())
            .data(crate::related::loaders(
                self.state.clone(),
                self.counter.clone(),
                self.principal.clone(),
            ));
        let query = request.query.clone();
        let response = schema.execute(request).await;
        // Errors without a path are the document's (syntax, validation, operation choice).
        if let (Some(plans), Some((plan, doc))) = (self.plans, learned)
            && response.errors.iter().all(|e| !e.path.is_empty())
        {
            plans.insert(&query, operation.as_deref(), plan, doc);
        }
        let types = (self.nulls, query.as_str(), operation.as_deref());
        to_json(&render(response, self.request_id, Some(types)))
    }

    /// Runs `plan`; `None` when the executor must answer. The statements of a run that gives
    /// up are not counted.
    async fn direct(&self, plan: &Plan, variables: &Variables) -> Option<Vec<u8>> {
        let counter = Arc::new(Counter::new());
        let loaders =
            crate::related::loaders(self.state.clone(), counter.clone(), self.principal.clone());
        let run = direct::Run {
            plan,
            state: self.state,
            principal: self.principal,
            variables,
            counter: &counter,
            loaders: &loaders,
        };
        let out = run.execute().await?;
        self.counter.add(counter.get());
        Some(out)
    }
}

fn to_json(value: &serde_json::Value) -> Vec<u8> {
    // A `serde_json::Value` always serialises.
    serde_json::to_vec(value).unwrap_or_default()
}

/// A request object's parts: `query`, `variables` (an object or JSON text) and
/// `operationName`.
struct Incoming {
    query: String,
    variables: Variables,
    operation: Option<String>,
}

/// Reads one request object; `Err` holds the error body (3024 for bad variables).
fn read_request(item: serde_json::Value, request_id: &str) -> Result<Incoming, serde_json::Value> {
    let serde_json::Value::Object(mut obj) = item else {
        return Err(serde_json::json!({ "error": format!("input could not be parsed: '{item}'") }));
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
                return Err(serde_json::json!({
                    "code": 3024,
                    "requestId": request_id,
                    "error": format!("Variables could not be parsed as json: {text}"),
                }));
            }
        },
        Some(v) => Variables::from_json(v),
    };
    let operation = match obj.remove("operationName") {
        Some(serde_json::Value::String(name)) => Some(name),
        _ => None,
    };
    Ok(Incoming {
        query,
        variables,
        operation,
    })
}

impl Incoming {
    /// The request, its query parsed (or `document`, the query's document parsed before);
    /// `Err` holds the reference's syntax-error body.
    fn into_request(
        self,
        document: Option<&ExecutableDocument>,
    ) -> Result<Request, serde_json::Value> {
        let mut request = Request::new(self.query).variables(self.variables);
        if let Some(name) = self.operation {
            request = request.operation_name(name);
        }
        if let Some(doc) = document {
            request.set_parsed_query(doc.clone());
        } else if let Err(err) = request.parsed_query() {
            return Err(serde_json::json!({
                "error": format!("Syntax error while parsing GraphQL query. {}", err.message),
            }));
        }
        Ok(request)
    }
}

/// Reads one request object and parses its query; `Err` holds the error body.
fn parse_request(item: serde_json::Value, request_id: &str) -> Result<Request, serde_json::Value> {
    read_request(item, request_id)?.into_request(None)
}

/// Renders an executed request: validation errors without `data` or `code`; otherwise `data`
/// (with failed fields `null`) and field errors carrying `code` and `requestId`.
/// `types` (the field types, the query and the operation's name) lets a failed non-null field
/// null its parent as GraphQL requires; without it, only the failed field is `null`.
fn render(
    response: Response,
    request_id: &str,
    types: Option<(&Nullability, &str, Option<&str>)>,
) -> serde_json::Value {
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
        null_at_path(&mut data, &e.path);
    }
    if let Some((nulls, query, operation)) = types {
        crate::nulls::propagate(nulls, query, operation, &mut data, &response.errors);
    }
    let mut out = serde_json::Map::new();
    out.insert("data".to_owned(), data);
    if !errors.is_empty() {
        out.insert("errors".to_owned(), serde_json::Value::Array(errors));
    }
    serde_json::Value::Object(out)
}

/// Puts the `null` of a failed field back into `data`: the executor leaves failed fields out (and
/// turns an object none of whose fields succeeded into `null`), but clients expect
/// `{"data": {"updatePost": null}, "errors": […]}` and `{"viewer": {"project": null}}`.
fn null_at_path(data: &mut serde_json::Value, path: &[PathSegment]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut node = data;
    for segment in parents {
        // An error below an object means the object was resolved: `null` there is the executor
        // dropping an object whose only fields failed.
        if node.is_null() && matches!(segment, PathSegment::Field(_)) {
            *node = serde_json::Value::Object(serde_json::Map::new());
        }
        match crate::nulls::child(node, segment) {
            Some(next) => node = next,
            None => return,
        }
    }
    if node.is_null() && matches!(last, PathSegment::Field(_)) {
        *node = serde_json::Value::Object(serde_json::Map::new());
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
