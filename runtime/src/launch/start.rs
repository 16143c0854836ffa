//! Starting a service: connecting to its database, bringing the tables to the compiled model,
//! loading the secret and root tokens, building the schemas and binding the HTTP server.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Options;
use super::options::redact;
use crate::auth::{Auth, SecretError, service_secret};
use crate::engine::{Functions, Observer, State};
use crate::events::{EventBus, LocalBus, PgBus};
use crate::files::sweep::Swept;
use crate::files::{Cleanup, Files};
use crate::functions::Invoker;
use crate::functions::node::{NodeOptions, NodePool, worker_environment};
use crate::functions::subscriptions::{Deliverer, Outbox, Retry};
use crate::http::{Closing, Service, SocketTimes, bind};
use crate::migrate::{self, Hints, MigrationError, Outcome, Schema, ddl};
use crate::model::{HandlerMeta, ServiceDef, cuid};
use crate::permissions::ReadTable;
use crate::storage::Db;
use crate::storage::bookkeeping::{meta_value, stored_meta_value};

/// Why a service did not start (or a command of its binary failed).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The current directory, used when the service's source directory is gone, cannot be
    /// read.
    #[error("cannot read the current directory: {0}")]
    CurrentDir(std::io::Error),
    /// The service's data directory (`.svc`) cannot be created.
    #[error("cannot create `{}`: {source}", path.display())]
    DataDir {
        /// The directory that could not be created.
        path: PathBuf,
        /// The file system's error.
        source: std::io::Error,
    },
    /// The file store cannot be opened (a bad location or S3 URL, an unusable directory).
    #[error("{0}")]
    Files(String),
    /// The functions cannot be set up: their HTTP client, the Node.js workers that run
    /// `code:` handlers, or the delivery of subscription events.
    #[error("{0}")]
    Functions(String),
    /// The database cannot be reached; the text has the URL's password hidden.
    #[error("cannot connect to the database: {0}")]
    Connect(String),
    /// The migration to the compiled model failed or needs `--force`; the text has its plan.
    #[error("{0}")]
    Migration(String),
    /// The service's own tables (meta, events, root tokens) cannot be created.
    #[error("cannot prepare the database: {0}")]
    Prepare(sea_orm::DbErr),
    /// The service id stored in the meta table cannot be read or stored.
    #[error("cannot read the service id: {0}")]
    ServiceId(sea_orm::DbErr),
    /// The secret that signs tokens cannot be read or made (or `SVC_SECRET` is empty), or the
    /// root tokens cannot be stored.
    #[error(transparent)]
    Secret(#[from] SecretError),
    /// The binary's `sweep-files` could not read the file store or the `File` nodes, or
    /// remove an object.
    #[error("cannot sweep the file store: {0}")]
    Sweep(String),
    /// A platform token cannot be signed (the binary's token subcommand).
    #[error("cannot sign the token: {0}")]
    Token(String),
    /// PostgreSQL: listening for the events of the other instances on the database failed.
    #[error("cannot listen for the other instances' events: {0}")]
    Events(String),
    /// The HTTP server cannot bind its port.
    #[error("cannot listen on port {port}: {source}")]
    Listen {
        /// The port asked for (0 for any free one).
        port: u16,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The HTTP server stopped with an error.
    #[error("server failed: {0}")]
    Server(std::io::Error),
    /// [`spawn`](super::spawn()): the service's thread ended without reporting a start.
    #[error("the service thread ended before it started listening")]
    ThreadEnded,
}

/// A service that is listening.
pub struct Started {
    /// The HTTP server; await it to serve until it stops.
    pub server: actix_web::dev::Server,
    /// Closes the subscription sockets; call it before stopping the server.
    pub closing: Closing,
    /// The port the server listens on (the one picked when the options asked for 0).
    pub port: u16,
    /// The service id in API paths: the option's, or the one stored in the database.
    pub service_id: String,
    /// The alias accepted in API paths instead of the id: the option's, or the service's name.
    pub alias: String,
    /// The database URL the service uses (with its password; redact it before printing).
    pub database_url: String,
}

/// Connects to the database and creates missing tables.
async fn open<S: ServiceDef>(options: &Options) -> Result<(Db, String), StartError> {
    let (db, database_url) = connect::<S>(options).await?;
    let (target, hints) = (Schema::of(S::META), Hints::of(S::META));
    match migrate::migrate(&db, &target, &hints, migrate::Options::default()).await {
        Ok(Outcome::Applied(plan)) => eprintln!("svc: migrated the database:\n{plan}"),
        Ok(_) => {}
        Err(e) => return Err(migration_failure(&e)),
    }
    Ok((db, database_url))
}

/// Connects to the database of `options` without touching its tables.
pub(super) async fn connect<S: ServiceDef>(options: &Options) -> Result<(Db, String), StartError> {
    let database_url = match &options.database_url {
        Some(url) => url.clone(),
        None => default_database_url(S::DIR)?,
    };
    let db = Db::connect_with(&database_url, options.connect_options())
        .await
        .map_err(|e| StartError::Connect(redact_error(e, &database_url)))?;
    Ok((db, database_url))
}

/// A migration error with its plan, for the command line.
pub(super) fn migration_failure(e: &MigrationError) -> StartError {
    let mut text = e.to_string();
    if let Some(plan) = &e.plan {
        text.push_str(&format!("\nThe migration:\n{plan}"));
    }
    if e.is_destructive() {
        text.push_str("Nothing was changed. Apply it with the `migrate --force` subcommand.");
    } else {
        text.push_str("\nNothing was changed.");
    }
    StartError::Migration(text)
}

/// A database error's text with the URL's password hidden, in case the driver repeats the URL.
fn redact_error(err: sea_orm::DbErr, url: &str) -> String {
    let text = err.to_string();
    if url.is_empty() {
        text
    } else {
        text.replace(url, &redact(url))
    }
}

/// A platform token signed with the service's secret (`SVC_SECRET`, or the stored one).
pub(super) async fn platform_token<S: ServiceDef>(
    options: Options,
    expires_in: Option<i64>,
) -> Result<String, StartError> {
    // No migration here: a token must not change the database of a service not yet deployed.
    let (db, _) = connect::<S>(&options).await?;
    db.execute_script(&ddl::base_statements(db.backend()))
        .await
        .map_err(StartError::Prepare)?;
    let secret = service_secret(&db, options.secret.as_deref()).await?;
    let auth = Auth::new(String::new(), String::new(), S::META.models, &secret);
    auth.platform_token(expires_in)
        .map_err(|e| StartError::Token(e.message()))
}

/// Connects to the database, creates missing tables, loads the secret and the root tokens, and
/// binds the HTTP server; `observers` are told of every committed mutation.
pub async fn start<S: ServiceDef>(
    options: Options,
    observers: Vec<Arc<dyn Observer>>,
) -> Result<Started, StartError> {
    let (db, database_url) = open::<S>(&options).await?;
    let times = SocketTimes::from_ms(
        options.keepalive_ms,
        options.idle_timeout_ms,
        options.init_timeout_ms,
    );
    let export_page_limit = options.export_page_limit;
    let public_url = options.public_url;
    // The first start on a database stores its service id: the one given, or a new one. A later
    // start without `--service-id` serves under it; one with another id serves under that.
    let first = options.service_id.clone().unwrap_or_else(cuid);
    let stored_id = meta_value(&db, "service_id", first)
        .await
        .map_err(StartError::ServiceId)?;
    let service_id = options.service_id.unwrap_or(stored_id);
    let alias = options.alias.unwrap_or_else(|| S::META.name.to_owned());
    let auth = Auth::load(
        &db,
        S::META,
        service_id.clone(),
        alias.clone(),
        options.secret.as_deref(),
    )
    .await?;
    // The subscriptions' event bus observes every commit, beside the caller's observers. On
    // PostgreSQL it also carries events between the instances on the database.
    let events: Arc<dyn EventBus> = if db.notifies() {
        PgBus::start(db.clone(), S::META)
            .await
            .map_err(StartError::Events)?
    } else {
        Arc::new(LocalBus::default())
    };
    let file_store = file_store::<S>(options.file_store.as_deref())?;
    let files = Files::open(
        &file_store,
        S::META,
        service_id.clone(),
        options.files_url,
        options.max_upload_bytes,
    )
    .map(Arc::new)
    .map_err(StartError::Files)?;
    let mut observers = observers;
    observers.push(events.clone());
    observers.push(Arc::new(Cleanup::new(files.clone())));
    // Server-side subscription functions keep their events in the outbox.
    let outbox = Outbox::of(S::META);
    if let Some(outbox) = &outbox {
        observers.push(outbox.clone());
    }
    let retry = Retry {
        attempts: options.function_attempts,
        backoff: std::time::Duration::from_millis(options.function_backoff_ms),
    };
    let invoker = if S::META.functions.is_empty() {
        None
    } else {
        Some(Invoker::new().map_err(StartError::Functions)?)
    };
    if let Some(invoker) = &invoker {
        let scripts: Vec<&str> = S::META
            .functions
            .iter()
            .filter(|f| matches!(f.handler, HandlerMeta::Code { .. }))
            .map(|f| f.name)
            .collect();
        if !scripts.is_empty() {
            let node = NodeOptions {
                binary: options.node.clone(),
                workers: options.node_workers,
                memory_mb: options.node_memory_mb,
                environment: worker_environment(std::env::vars_os()),
            };
            let pool = NodePool::start(node).await.map_err(|e| {
                StartError::Functions(format!(
                    "the functions `{}` are JavaScript modules (`code:`), which run on Node.js: {e}. Install Node.js, or name its binary with --node / SVC_NODE",
                    scripts.join("`, `")
                ))
            })?;
            let dir = if Path::new(S::DIR).is_dir() {
                PathBuf::from(S::DIR)
            } else {
                std::env::current_dir().map_err(StartError::CurrentDir)?
            };
            invoker.set_node(pool, dir);
        }
    }
    let state = Arc::new(State {
        db,
        service: S::META,
        auth,
        reads: ReadTable::new(S::META),
        observers,
        functions: invoker.clone().map(|i| i as Arc<dyn Functions>),
    });
    let svc = Service::<S>::new(
        state.clone(),
        events,
        service_id.clone(),
        alias.clone(),
        options.master_token,
        options.limits,
    )
    .with_socket_times(times)
    .with_export_page_limit(export_page_limit)
    .with_files(files);
    let queries = svc.subscription_queries();
    let port = options.port;
    let closing = svc.closing();
    let (server, port) = bind(svc, port).map_err(|source| StartError::Listen { port, source })?;
    if let Some(invoker) = invoker {
        invoker.set_base(public_url.unwrap_or_else(|| format!("http://localhost:{port}")));
        // Once the events can name the endpoints; the rows an earlier run left go first.
        if let Some(outbox) = &outbox {
            Deliverer::start(state, invoker, queries, outbox, retry)
                .await
                .map_err(StartError::Functions)?;
        }
    }
    Ok(Started {
        server,
        closing,
        port,
        service_id,
        alias,
        database_url,
    })
}

/// The default database: `<service dir>/.svc/data.db`, or `./.svc/data.db` when the directory the
/// service was built from is gone.
fn default_database_url(service_dir: &str) -> Result<String, StartError> {
    let dir = service_data_dir(service_dir)?;
    Ok(format!("sqlite://{}", dir.join("data.db").display()))
}

/// Where the service keeps its files: `--file-store`, or `files/` under its `.svc/`.
fn file_store<S: ServiceDef>(option: Option<&str>) -> Result<String, StartError> {
    Ok(match option {
        Some(store) => store.to_owned(),
        None => service_data_dir(S::DIR)?
            .join("files")
            .display()
            .to_string(),
    })
}

/// The binary's `sweep-files`: removes (or, on a dry run, lists) the objects of the file store
/// older than `grace` that no `File` node names ([`crate::files::sweep`]). Touches no table.
pub(super) async fn sweep_files<S: ServiceDef>(
    options: Options,
    grace: std::time::Duration,
    dry_run: bool,
) -> Result<Swept, StartError> {
    let (db, _) = connect::<S>(&options).await?;
    let service_id = match options.service_id.clone() {
        Some(id) => id,
        None => stored_meta_value(&db, "service_id")
            .await
            .map_err(StartError::ServiceId)?
            .ok_or_else(|| {
                StartError::Sweep(
                    "the database has no service id: the service never started on it, so it \
                     has no files (give --service-id to sweep another database's)"
                        .into(),
                )
            })?,
    };
    let files = Files::open(
        &file_store::<S>(options.file_store.as_deref())?,
        S::META,
        service_id,
        None,
        0,
    )
    .map_err(StartError::Files)?;
    crate::files::sweep::sweep(&files, &db, grace, dry_run)
        .await
        .map_err(StartError::Sweep)
}

/// `<service dir>/.svc`, or `./.svc` when the directory the service was built from is gone;
/// created when missing.
fn service_data_dir(service_dir: &str) -> Result<std::path::PathBuf, StartError> {
    let base = if Path::new(service_dir).is_dir() {
        Path::new(service_dir).to_path_buf()
    } else {
        std::env::current_dir().map_err(StartError::CurrentDir)?
    };
    let dir = base.join(".svc");
    std::fs::create_dir_all(&dir).map_err(|source| StartError::DataDir {
        path: dir.clone(),
        source,
    })?;
    Ok(dir)
}
