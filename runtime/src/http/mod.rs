//! The HTTP server: routes (`routes`), the client APIs' request envelope (batching, variables as
//! object or JSON text, compiled plans, `envelope`), the reference's response and error shapes
//! (`render`) with GraphQL null propagation (`nulls`) and the query's order of response keys
//! (`order`), request ids, CORS, the playground page
//! (GraphiQL, its files served from the binary under `/playground/`) and `/status`.
//!
//! The `Authorization: Bearer` header is resolved once per HTTP request (`Auth::resolve`) and
//! the principal goes into the engine's request of every GraphQL request of the envelope.

mod envelope;
mod files;
mod ndf;
mod nulls;
mod omitted;
mod order;
mod positions;
mod render;
mod routes;
mod sliced;
mod subscriptions;
mod validated;

pub use subscriptions::SocketTimes;

use std::sync::Arc;

use actix_web::dev::Server;
use actix_web::http::{Method, header};
use actix_web::{App, HttpServer, web};
use async_graphql::futures_util::StreamExt;
use async_graphql::{EmptyMutation, EmptySubscription, Schema};

use crate::api::Tables;
use crate::api::permission::PermissionQuery;
use crate::api::relay;
use crate::api::shape::Shape;
use crate::api::simple::{Mutation, Query};
use crate::api::subscriptions::{Hub, OneEvent, Subscription};
use crate::api::system::{self, SystemSchema};
use crate::auth::Auth;
use crate::engine::State;
use crate::events::{Event, EventBus};
use crate::functions::subscriptions::{Evaluate, Evaluation};
use crate::model::ServiceDef;
use crate::plan::{Api, Plans};
use nulls::Nullability;
use validated::Fast;

/// The bounds of what one request of a client may ask for (each a flag and an `SVC_*`
/// variable; docs/operations.md lists them). The defaults are generous enough for every
/// introspection query of graphql-js clients and every body the seed's limits allow, small
/// enough that a hostile client cannot take the server's memory.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct Limits {
    /// The most bytes a request body may hold (the seed's 10 MB import limit is the largest
    /// body any endpoint needs); larger bodies are refused with HTTP 413. Uploads have their
    /// own limit (`--max-upload-bytes`).
    #[arg(long, env = "SVC_MAX_BODY_BYTES", default_value_t = 10 * 1024 * 1024)]
    pub max_body_bytes: usize,
    /// The most GraphQL requests one batch (a JSON array body) may hold.
    #[arg(long, env = "SVC_MAX_BATCH", default_value_t = 100)]
    pub max_batch: usize,
    /// How deep a query's selections may nest.
    #[arg(long, env = "SVC_MAX_DEPTH", default_value_t = 32)]
    pub max_depth: usize,
    /// How many fields a query may select, aliases and fragments spread out.
    #[arg(long, env = "SVC_MAX_COMPLEXITY", default_value_t = 20_000)]
    pub max_complexity: usize,
    /// How many nodes the list fields of one request (a batch counts as one) may read in all.
    #[arg(long, env = "SVC_MAX_NODES", default_value_t = 100_000)]
    pub max_nodes: u64,
    /// How many subscriptions one subscription socket may run at once.
    #[arg(long, env = "SVC_MAX_SOCKET_SUBSCRIPTIONS", default_value_t = 100)]
    pub max_socket_subscriptions: usize,
    /// How many messages a client may send on one subscription socket per second (as a burst,
    /// then at that rate); 0 for no bound.
    #[arg(long, env = "SVC_MAX_SOCKET_MESSAGES", default_value_t = 100)]
    pub max_socket_messages: u32,
    /// How many subscription sockets may be open from one IP address; 0 for no bound. Behind
    /// a load balancer every socket comes from its address: raise it, or set 0.
    #[arg(long, env = "SVC_MAX_SOCKETS_PER_ADDRESS", default_value_t = 1000)]
    pub max_sockets_per_address: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 10 * 1024 * 1024,
            max_batch: 100,
            max_depth: 32,
            max_complexity: 20_000,
            max_nodes: 100_000,
            max_socket_subscriptions: 100,
            max_socket_messages: 100,
            max_sockets_per_address: 1000,
        }
    }
}

/// Response header carrying the number of SQL statements a request ran.
pub const STATEMENTS_HEADER: &str = "Svc-Sql-Statements";

/// Response header carrying how many of the request's GraphQL requests were answered by a
/// compiled plan instead of the executor (see `plan/`).
pub const DIRECT_HEADER: &str = "Svc-Direct";

/// Response header carrying how many of the request's GraphQL requests the executor ran
/// without validating them in full, their text validated before and their variables passing its
/// checks (see `http/validated.rs`).
pub const CHECKED_HEADER: &str = "Svc-Checked";

/// The Simple API's schema.
type SimpleSchema<S> = Schema<Query<S>, Mutation<S>, Subscription<S>>;

/// The Relay API's schema.
type RelaySchema<S> = Schema<relay::Query<S>, relay::Mutation<S>, EmptySubscription>;

/// The permission schema.
type PermissionSchema<S> = Schema<PermissionQuery<S>, EmptyMutation, EmptySubscription>;

/// Everything the HTTP handlers share.
pub struct Service<S: ServiceDef> {
    /// The Simple API (with its subscriptions).
    pub schema: Schema<Query<S>, Mutation<S>, Subscription<S>>,
    /// The Relay API.
    pub relay: Schema<relay::Query<S>, relay::Mutation<S>, EmptySubscription>,
    /// The Simple API's schema for texts validated before ([`validated`]).
    pub(super) schema_fast: Option<Fast<SimpleSchema<S>>>,
    /// The same for the Relay API.
    pub(super) relay_fast: Option<Fast<RelaySchema<S>>>,
    /// The permission schema (`Some<Type>Exists`), served at `/permissions` to admins.
    pub permissions: PermissionSchema<S>,
    /// Its validator and registry (no text of it is learned: its checks are never read).
    pub(super) permissions_fast: Option<Fast<PermissionSchema<S>>>,
    /// The System API.
    pub system: SystemSchema,
    /// Its validator and registry.
    pub(super) system_fast: Option<Fast<SystemSchema>>,
    /// The service's id: the `{id}` of its endpoints' paths (`/simple/v1/{id}`, …).
    pub service_id: String,
    /// The service's alias, which the endpoints' paths accept in place of its id.
    pub alias: String,
    /// The field types of the client API, for null propagation and the order of keys (also
    /// in subscription payloads).
    pub(super) nulls: Arc<Nullability>,
    /// The same for the permission schema.
    pub(super) permission_nulls: Nullability,
    /// The same for the Relay API.
    pub(super) relay_nulls: Nullability,
    /// The compiled plans of the Simple API's query texts.
    pub(super) plans: Plans,
    /// The same for the Relay API.
    pub(super) relay_plans: Plans,
    /// The keep-alive interval and the timeouts of subscription sockets.
    pub(super) times: SocketTimes,
    /// The most characters of element text an NDF export response holds.
    pub(super) export_page_limit: usize,
    /// What one request may ask for.
    pub(super) limits: Limits,
    /// The Image API, and through it the File API's store and addresses; `None` serves no
    /// files.
    pub(super) images: Option<crate::files::images::Images>,
    /// Where the NDF export pages handed out last end ([`crate::ndf::export::Resumes`]).
    pub(super) export_resumes: Arc<crate::ndf::export::Resumes>,
    /// Turns true when the server is asked to stop ([`Closing`]).
    stop_requested: Arc<tokio::sync::watch::Sender<bool>>,
    /// Turns true when subscription sockets are to close: after a stop was asked for and the
    /// sockets were told whether a deploy changed the schema.
    pub(super) closing: tokio::sync::watch::Receiver<bool>,
    closing_sender: Arc<tokio::sync::watch::Sender<bool>>,
    /// The subscriptions' dispatcher.
    pub(super) hub: Arc<Hub>,
    /// The subscriptions that share evaluations.
    pub(super) groups: Arc<subscriptions::Groups>,
    pub(super) state: Arc<State>,
}

impl<S: ServiceDef> Service<S> {
    /// Builds the schemas once; requests reuse them. `master_token` is what the System API's
    /// `authenticateCustomer` accepts.
    pub fn new(
        state: Arc<State>,
        events: Arc<dyn EventBus>,
        service_id: String,
        alias: String,
        master_token: Option<String>,
        limits: Limits,
    ) -> Self {
        let tables = Tables::of::<S>();
        let closing = tokio::sync::watch::channel(false);
        let hub = Hub::new(events, state.clone());
        let simple = || {
            Schema::build(
                Query::<S>::default(),
                Mutation::<S>::default(),
                Subscription::<S>::default(),
            )
            .data(state.clone())
            .data(tables.clone())
            .data(hub.clone())
            .limit_depth(limits.max_depth)
            .limit_complexity(limits.max_complexity)
        };
        let schema = simple().finish();
        let schema_fast = validated::fast(simple);
        let permission_schema = || {
            Schema::build(
                PermissionQuery::<S>::default(),
                EmptyMutation,
                EmptySubscription,
            )
            .data(state.clone())
            .data(tables.clone())
            .limit_depth(limits.max_depth)
            .limit_complexity(limits.max_complexity)
        };
        let permissions = permission_schema().finish();
        let permissions_fast = validated::validator(permission_schema);
        // The Relay API's model types have its relation fields: its schema and the field types
        // of its null propagation are built in its shape.
        let (relay, relay_fast, relay_nulls) = Shape::Relay.build(|| {
            let build = || {
                Schema::build(
                    relay::Query::<S>::default(),
                    relay::Mutation::<S>::default(),
                    EmptySubscription,
                )
                .data(state.clone())
                .data(tables.clone())
                .data(relay::Connections::of::<S>())
                .data(relay::Writes::of::<S>())
                .data(relay::ViewerFields::of::<S>())
                .data(Shape::Relay)
                .limit_depth(limits.max_depth)
                .limit_complexity(limits.max_complexity)
            };
            (
                build().finish(),
                validated::fast(build),
                Nullability::of::<relay::Query<S>, relay::Mutation<S>, EmptySubscription>(),
            )
        });
        let system_schema = || system::schema(state.clone(), master_token.clone());
        let system = system_schema().finish();
        let system_fast = validated::validator(system_schema);
        let nulls = Arc::new(Nullability::of::<Query<S>, Mutation<S>, Subscription<S>>());
        let permission_nulls =
            Nullability::of::<PermissionQuery<S>, EmptyMutation, EmptySubscription>();
        Service {
            schema,
            schema_fast,
            relay_fast,
            permissions,
            permissions_fast,
            system,
            system_fast,
            service_id,
            alias,
            permission_nulls,
            relay,
            relay_nulls,
            plans: Plans::new(Api::Simple),
            relay_plans: Plans::new(Api::Relay),
            times: SocketTimes::default(),
            export_page_limit: crate::ndf::DEFAULT_PAGE_LIMIT,
            limits,
            export_resumes: Arc::default(),
            images: None,
            stop_requested: Arc::new(tokio::sync::watch::channel(false).0),
            closing: closing.1,
            closing_sender: Arc::new(closing.0),
            hub,
            groups: Arc::new(subscriptions::Groups::new(nulls.clone())),
            nulls,
            state,
        }
    }

    /// Sets the keep-alive interval and the timeouts of subscription sockets.
    pub fn with_socket_times(mut self, times: SocketTimes) -> Self {
        self.times = times;
        self
    }

    /// Sets the most characters of element text an NDF export response holds.
    pub fn with_export_page_limit(mut self, limit: usize) -> Self {
        self.export_page_limit = limit.max(1);
        self
    }

    /// Serves the File API from `files`.
    pub fn with_files(mut self, files: Arc<crate::files::Files>) -> Self {
        self.images = Some(crate::files::images::Images::new(files));
        self
    }

    /// The handle that closes the service's subscription sockets when the server stops.
    pub fn closing(&self) -> Closing {
        Closing {
            requested: self.stop_requested.clone(),
            closed: self.closing.clone(),
        }
    }

    /// Waits for a stop to be asked for; then tells the subscriptions `Schema changed` when
    /// the database's model is no longer this server's (a deploy migrated it), and closes the
    /// sockets.
    fn spawn_closer(&self) {
        let mut requested = self.stop_requested.subscribe();
        let closing = self.closing_sender.clone();
        let db = self.state.db.clone();
        let hub = self.hub.clone();
        actix_web::rt::spawn(async move {
            if requested.wait_for(|stop| *stop).await.is_err() {
                return;
            }
            let own = crate::migrate::Schema::of(S::META);
            let check = crate::migrate::schema_differs(&db, &own);
            let changed = tokio::time::timeout(std::time::Duration::from_secs(2), check).await;
            if changed == Ok(true) {
                hub.bus().schema_changed();
            }
            closing.send_replace(true);
        });
    }

    /// The Simple API's subscription queries, worked out for one event at a time: what
    /// server-side subscription functions receive.
    pub fn subscription_queries(&self) -> Arc<dyn Evaluate> {
        Arc::new(SubscriptionQueries {
            schema: self.schema.clone(),
            nulls: self.nulls.clone(),
            parsed: std::sync::Mutex::default(),
        })
    }

    pub(super) fn knows(&self, id: &str) -> bool {
        id == self.service_id || id == self.alias
    }

    pub(super) fn auth(&self) -> &Auth {
        &self.state.auth
    }
}

/// [`Evaluate`] through the Simple API's schema: the query runs as a subscription given the
/// event ([`OneEvent`]) rather than listening, so it answers exactly what a subscriber with every
/// permission would be sent for the event.
/// Each query is parsed once. The answer's entries come in the query's order ([`order`]).
struct SubscriptionQueries<S: ServiceDef> {
    schema: Schema<Query<S>, Mutation<S>, Subscription<S>>,
    nulls: Arc<Nullability>,
    parsed: std::sync::Mutex<
        std::collections::HashMap<&'static str, async_graphql::parser::types::ExecutableDocument>,
    >,
}

impl<S: ServiceDef> Evaluate for SubscriptionQueries<S> {
    fn evaluate<'a>(&'a self, query: &'static str, event: Option<Event>) -> Evaluation<'a> {
        Box::pin(async move {
            let mut request = async_graphql::Request::new(query).data(OneEvent(event));
            let parsed = {
                let mut parsed = self.parsed.lock().unwrap_or_else(|e| e.into_inner());
                match parsed.get(query) {
                    Some(doc) => Some(doc.clone()),
                    None => match async_graphql::parser::parse_query(query) {
                        Ok(doc) => Some(parsed.entry(query).or_insert(doc).clone()),
                        // The executor reports it.
                        Err(_) => None,
                    },
                }
            };
            if let Some(doc) = &parsed {
                request.set_parsed_query(doc.clone());
            }
            let mut responses = self.schema.execute_stream(request);
            let Some(response) = responses.next().await else {
                return Ok(None);
            };
            if !response.errors.is_empty() {
                let messages: Vec<String> =
                    response.errors.into_iter().map(|e| e.message).collect();
                return Err(messages.join("; "));
            }
            let mut data = serde_json::to_value(&response.data).map_err(|e| e.to_string())?;
            if let Some(doc) = &parsed {
                order::restore(&self.nulls, doc, None, &mut data);
            }
            Ok(Some(data))
        })
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
    use routes::{PERMISSIONS, RELAY, SIMPLE};
    let max_body_bytes = service.limits.max_body_bytes;
    service.spawn_closer();
    let service = web::Data::new(service);
    let server = HttpServer::new(move || {
        // Called on each worker's thread as it starts.
        return_freed_memory_on_a_timer();
        let mut app = App::new()
            .app_data(service.clone())
            .app_data(web::PayloadConfig::new(max_body_bytes));
        for id in &own_ids {
            app = app
                .service(
                    web::resource(format!("/simple/v1/{id}"))
                        .route(web::post().to(routes::own_api::<S, SIMPLE>))
                        .route(web::get().to(subscriptions::own_simple_get::<S>))
                        .default_service(web::route().to(routes::fallback)),
                )
                .service(
                    web::resource(format!("/simple/v1/{id}/export"))
                        .route(web::post().to(ndf::own_export::<S>))
                        .default_service(web::route().to(routes::fallback)),
                )
                .service(
                    web::resource(format!("/simple/v1/{id}/import"))
                        .route(web::post().to(ndf::own_import::<S>))
                        .default_service(web::route().to(routes::fallback)),
                )
                .service(
                    web::resource(format!("/simple/v1/{id}/permissions"))
                        .route(web::post().to(routes::own_api::<S, PERMISSIONS>))
                        .default_service(web::route().to(routes::fallback)),
                )
                .service(
                    web::resource(format!("/subscriptions/v1/{id}"))
                        .route(web::get().to(subscriptions::own_socket::<S>))
                        .default_service(web::route().to(routes::fallback)),
                )
                .service(
                    web::resource(format!("/relay/v1/{id}"))
                        .route(web::post().to(routes::own_api::<S, RELAY>))
                        .route(web::get().to(routes::playground_own))
                        .default_service(web::route().to(routes::fallback)),
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
        .route("/status", web::get().to(routes::status))
        .route(
            "/status/subscriptions",
            web::get().to(subscriptions::status::<S>),
        )
        .route(
            &format!("{}{{name}}", svc_playground::PATH),
            web::get().to(routes::playground_asset),
        )
        .route("/system", web::post().to(routes::system::<S>))
        .service(
            web::resource("/file/v1/{id}")
                .route(web::post().to(files::upload::<S>))
                .route(web::get().to(files::upload_get))
                .route(web::method(Method::OPTIONS).to(files::upload_options))
                .default_service(web::route().to(routes::fallback)),
        )
        .service(
            web::resource([
                "/images/v1/{id}/{secret}",
                "/images/v1/{id}/{secret}/{ops:.*}",
            ])
            .route(web::get().to(files::image::<S>))
            .default_service(web::route().to(routes::fallback)),
        )
        .route("/images/{rest:.*}", web::get().to(files::image_legacy))
        .service(
            web::resource("/files/v1/{id}/{secret}")
                .route(web::get().to(files::download::<S>))
                .route(web::head().to(files::download::<S>))
                .default_service(web::route().to(routes::fallback)),
        )
        .route("/simple/v1/{id}", web::post().to(routes::api::<S, SIMPLE>))
        .route(
            "/simple/v1/{id}",
            web::get().to(subscriptions::simple_get::<S>),
        )
        .route(
            "/subscriptions/v1/{id}",
            web::get().to(subscriptions::socket::<S>),
        )
        .route(
            "/simple/v1/{id}/schema.json",
            web::get().to(routes::schema_json::<S, SIMPLE>),
        )
        .route(
            "/simple/v1/{id}/permissions",
            web::post().to(routes::api::<S, PERMISSIONS>),
        )
        .route("/simple/v1/{id}/export", web::post().to(ndf::export::<S>))
        .route("/simple/v1/{id}/import", web::post().to(ndf::import::<S>))
        .route("/relay/v1/{id}", web::post().to(routes::api::<S, RELAY>))
        .route("/relay/v1/{id}", web::get().to(routes::playground::<S>))
        .route(
            "/relay/v1/{id}/schema.json",
            web::get().to(routes::schema_json::<S, RELAY>),
        )
        .default_service(web::route().to(routes::fallback))
    })
    .worker_max_blocking_threads(BLOCKING_THREADS_PER_WORKER)
    .bind(("0.0.0.0", port))?;
    let port = server.addrs().first().map_or(port, |a| a.port());
    Ok((server.run(), port))
}

/// The blocking threads of each HTTP worker's runtime, at most (actix's default is 512 shared
/// among the workers). Blocking work is short or bounded on its own: each file operation of the
/// local object store, image transforms (one per core at a time) and bulk reads. Each thread has
/// a heap of its own in the allocator, and memory freed by another thread goes back to its heap
/// only when it allocates again: under a soak, the default let 31 of them run at once and 55 come
/// and go in 10 minutes, and SQLite's server grew from 105 to 149 MiB; with this bound, 24
/// threads in all and 88 to 86 MiB, at the same throughput (docs/benchmarks.md, "Soak").
const BLOCKING_THREADS_PER_WORKER: usize = 8;

/// Where the allocator delays returning freed memory ([`svc_alloc::delay_returns`]), starts on
/// the calling HTTP worker, once, a task that returns what the worker's heap holds freed every
/// second ([`svc_alloc::return_freed_memory`]), with the memory of ended threads (a blocking
/// thread ends after 10 s idle): mimalloc purges a thread's expired memory only when that thread
/// allocates again, so an idle worker would keep the peak of its last large response. Under load
/// it purges once a second what a purge at every free did thousands of times.
fn return_freed_memory_on_a_timer() {
    thread_local! {
        static STARTED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    if !svc_alloc::returns_delayed() || STARTED.with(|started| started.replace(true)) {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async {
        let mut every = tokio::time::interval(std::time::Duration::from_secs(1));
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            svc_alloc::return_freed_memory();
        }
    });
}

/// Closes a service's subscription sockets, each with a close frame (1001, going away): called
/// before the server stops, so that clients learn it at once and the server's graceful stop
/// does not wait for open sockets.
#[derive(Clone)]
pub struct Closing {
    requested: Arc<tokio::sync::watch::Sender<bool>>,
    /// True once the sockets were told to close (after the check of the stored model).
    closed: tokio::sync::watch::Receiver<bool>,
}

impl Closing {
    /// Asks the service's subscription sockets to close; returns at once.
    pub fn close(&self) {
        self.requested.send_replace(true);
    }

    /// Waits (blocking this thread, at most `limit`) until the sockets were told to close: the
    /// check of the stored model is then over, and stopping the server does not cancel it
    /// halfway through a statement.
    pub fn wait_closed(&self, limit: std::time::Duration) {
        let until = std::time::Instant::now() + limit;
        while !*self.closed.borrow() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

/// The introspection query of graphql-js (`getIntrospectionQuery` with `specifiedByUrl` and
/// `directiveIsRepeatable`), served as `schema.json`.
pub const INTROSPECTION_QUERY: &str = include_str!("introspection.graphql");
