//! The command line of a service binary (`serve`, `platform-token`), and [`spawn`] to run a
//! service inside another program (the behaviour tests do).

use std::fmt;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use async_graphql::OutputType;
use clap::{Parser, Subcommand};

use crate::auth::{Auth, service_secret};
use crate::meta::ServiceMeta;
use crate::migrate::{self, Hints, MigrationError, Outcome, Schema};
use crate::permissions::read::ReadTable;
use crate::server::{Service, bind};
use crate::state::State;
use crate::storage::{Db, ddl};
use crate::value::cuid;

/// What the generator emits for a service: its root types and data tables.
pub trait ServiceDef: 'static {
    /// The `Node` interface over every model type (async-graphql derives interfaces, so the
    /// generator emits it; the root types are built from [`ServiceDef::META`]).
    type Node: OutputType;
    /// The data model.
    const META: &'static ServiceMeta;
    /// The directory the service was built from (holds `svc.yml` and `.svc/`).
    const DIR: &'static str;
}

#[derive(Debug, Parser)]
#[command(about = "An svc service: a GraphQL backend generated from its data model")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create the database tables if needed, apply pending non-destructive migrations and serve
    /// the APIs.
    Serve(Options),
    /// Bring the database to this build's model: print the plan and apply it in one
    /// transaction. Destructive steps (removing a type, relation or field) need `--force`.
    Migrate {
        #[command(flatten)]
        options: Options,
        /// Print the plan and check it against the stored data; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Apply destructive steps too.
        #[arg(long)]
        force: bool,
    },
    /// Print a platform token (for the System API, e.g. to read root tokens), signed with the
    /// service's secret. Takes the same options as `serve`.
    PlatformToken {
        #[command(flatten)]
        options: Options,
        /// Validity of the token in seconds; default: no expiry.
        #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(i64).range(1..))]
        expires_in: Option<i64>,
    },
}

/// Deployment settings of a running service.
#[derive(Clone, Default, clap::Args)]
pub struct Options {
    /// Port to listen on (0 picks a free port).
    #[arg(long, env = "SVC_PORT", default_value_t = 60000)]
    pub port: u16,
    /// `sqlite://PATH` or `postgres://…`; default: a SQLite file under the service's `.svc/`.
    #[arg(long, env = "SVC_DATABASE_URL")]
    pub database_url: Option<String>,
    /// Service id used in API paths; default: the id stored in the database at first start.
    #[arg(long, env = "SVC_SERVICE_ID")]
    pub service_id: Option<String>,
    /// Alias accepted in API paths instead of the id; default: the service's name.
    #[arg(long, env = "SVC_ALIAS")]
    pub alias: Option<String>,
    /// Secret that signs and checks tokens (HS256); default: a random secret generated at first
    /// start and kept in the database, shared by every instance on it.
    #[arg(
        long,
        env = "SVC_SECRET",
        hide_env_values = true,
        value_name = "SECRET"
    )]
    pub secret: Option<String>,
    /// Master token that the System API's `authenticateCustomer` exchanges for a platform
    /// token; default: none (`authenticateCustomer` always fails).
    #[arg(
        long,
        env = "SVC_MASTER_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub master_token: Option<String>,
}

/// Secrets stay out of debug output.
impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hidden = |v: &Option<String>| v.as_ref().map(|_| "<redacted>");
        f.debug_struct("Options")
            .field("port", &self.port)
            .field("database_url", &self.database_url.as_deref().map(redact))
            .field("service_id", &self.service_id)
            .field("alias", &self.alias)
            .field("secret", &hidden(&self.secret))
            .field("master_token", &hidden(&self.master_token))
            .finish()
    }
}

/// Entry point of a generated service binary.
pub fn run<S: ServiceDef>() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(options) => actix_web::rt::System::new().block_on(async move {
            let started = start::<S>(options).await?;
            println!(
                "svc: serving `{}` (service id {}) on {}",
                started.alias,
                started.service_id,
                redact(&started.database_url)
            );
            let base = format!("http://localhost:{}", started.port);
            let id = &started.service_id;
            println!(
                "  Simple API   POST {base}/simple/v1/{id}  (or /simple/v1/{})",
                started.alias
            );
            println!("  Playground   GET  {base}/simple/v1/{id}");
            println!("  Permissions  POST {base}/simple/v1/{id}/permissions");
            println!("  System API   POST {base}/system");
            println!("  Health       GET  {base}/status");
            started
                .server
                .await
                .map_err(|e| format!("server failed: {e}"))
        }),
        Command::Migrate {
            options,
            dry_run,
            force,
        } => actix_web::rt::System::new().block_on(async move {
            let (db, _) = connect::<S>(options.database_url).await?;
            let outcome = migrate::migrate(
                &db,
                &Schema::of(S::META),
                &Hints::of(S::META),
                migrate::Options { dry_run, force },
            )
            .await
            .map_err(|e| migration_failure(&e))?;
            match outcome {
                Outcome::Created => println!("Created the tables of a new database."),
                Outcome::UpToDate => println!("The database is up to date."),
                Outcome::Planned(plan) => {
                    println!("Planned changes (dry run, nothing was changed):\n{plan}");
                    if plan.is_destructive() && !force {
                        println!("{}", migrate::DESTRUCTIVE);
                    }
                }
                Outcome::Applied(plan) => println!("Applied:\n{plan}"),
            }
            Ok(())
        }),
        Command::PlatformToken {
            options,
            expires_in,
        } => actix_web::rt::System::new().block_on(async move {
            let token = platform_token::<S>(options, expires_in).await?;
            println!("{token}");
            Ok(())
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// A service that is listening.
pub struct Started {
    pub server: actix_web::dev::Server,
    pub port: u16,
    pub service_id: String,
    pub alias: String,
    pub database_url: String,
}

/// Connects to the database and creates missing tables.
async fn open<S: ServiceDef>(database_url: Option<String>) -> Result<(Db, String), String> {
    let (db, database_url) = connect::<S>(database_url).await?;
    let (target, hints) = (Schema::of(S::META), Hints::of(S::META));
    match migrate::migrate(&db, &target, &hints, migrate::Options::default()).await {
        Ok(Outcome::Applied(plan)) => eprintln!("svc: migrated the database:\n{plan}"),
        Ok(_) => {}
        Err(e) => return Err(migration_failure(&e)),
    }
    Ok((db, database_url))
}

/// Connects to the database without touching its tables.
async fn connect<S: ServiceDef>(database_url: Option<String>) -> Result<(Db, String), String> {
    let database_url = match database_url {
        Some(url) => url,
        None => default_database_url(S::DIR)?,
    };
    let db = Db::connect(&database_url).await.map_err(|e| {
        format!(
            "cannot connect to the database: {}",
            redact_error(e, &database_url)
        )
    })?;
    Ok((db, database_url))
}

/// A migration error with its plan, for the command line.
fn migration_failure(e: &MigrationError) -> String {
    let mut text = e.to_string();
    if let Some(plan) = &e.plan {
        text.push_str(&format!("\nThe migration:\n{plan}"));
    }
    if e.is_destructive() {
        text.push_str("Nothing was changed. Apply it with the `migrate --force` subcommand.");
    } else {
        text.push_str("\nNothing was changed.");
    }
    text
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
async fn platform_token<S: ServiceDef>(
    options: Options,
    expires_in: Option<i64>,
) -> Result<String, String> {
    // No migration here: a token must not change the database of a service not yet deployed.
    let (db, _) = connect::<S>(options.database_url).await?;
    db.execute_script(&ddl::base_statements(db.backend()))
        .await
        .map_err(|e| format!("cannot prepare the database: {e}"))?;
    let secret = service_secret(&db, options.secret.as_deref()).await?;
    let auth = Auth::new(String::new(), String::new(), S::META.models, &secret);
    auth.platform_token(expires_in).map_err(|e| e.message())
}

/// Connects to the database, creates missing tables, loads the secret and the root tokens, and
/// binds the HTTP server.
pub async fn start<S: ServiceDef>(options: Options) -> Result<Started, String> {
    let (db, database_url) = open::<S>(options.database_url).await?;
    let stored_id = ddl::meta_value(&db, "service_id", cuid())
        .await
        .map_err(|e| format!("cannot read the service id: {e}"))?;
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
    let state = Arc::new(State {
        db,
        service: S::META,
        auth,
        reads: ReadTable::new(S::META),
    });
    let svc = Service::<S>::new(
        state,
        service_id.clone(),
        alias.clone(),
        options.master_token,
    );
    let (server, port) = bind(svc, options.port)
        .map_err(|e| format!("cannot listen on port {}: {e}", options.port))?;
    Ok(Started {
        server,
        port,
        service_id,
        alias,
        database_url,
    })
}

/// A service running on a background thread.
pub struct Running {
    pub port: u16,
    pub service_id: String,
    handle: actix_web::dev::ServerHandle,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    /// Stops the server and waits for its thread.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(thread) = self.thread.take() {
            let handle = self.handle.clone();
            // The server's own system drives the stop; wait for it from this thread.
            let stopper = std::thread::spawn(move || {
                actix_web::rt::System::new().block_on(handle.stop(true));
            });
            let _ = stopper.join();
            let _ = thread.join();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Starts the service on a background thread and returns once it listens.
pub fn spawn<S: ServiceDef>(options: Options) -> Result<Running, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        actix_web::rt::System::new().block_on(async move {
            match start::<S>(options).await {
                Ok(started) => {
                    let handle = started.server.handle();
                    let _ = tx.send(Ok((started.port, started.service_id, handle)));
                    let _ = started.server.await;
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                }
            }
        });
    });
    match rx.recv() {
        Ok(Ok((port, service_id, handle))) => Ok(Running {
            port,
            service_id,
            handle,
            thread: Some(thread),
        }),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(e)
        }
        Err(_) => Err("the service thread ended before it started listening".to_owned()),
    }
}

/// The default database: `<service dir>/.svc/data.db`, or `./.svc/data.db` when the directory the
/// service was built from is gone.
fn default_database_url(service_dir: &str) -> Result<String, String> {
    let base = if Path::new(service_dir).is_dir() {
        Path::new(service_dir).to_path_buf()
    } else {
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?
    };
    let dir = base.join(".svc");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create `{}`: {e}", dir.display()))?;
    Ok(format!("sqlite://{}", dir.join("data.db").display()))
}

/// Hides the password of a database URL before printing it.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}
