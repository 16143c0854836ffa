//! The command line of a service binary (`serve`, `migrate`, `platform-token`,
//! `sweep-files`), starting a service ([`start`]), and [`spawn`] to run one inside another
//! program (the behaviour tests do).

mod options;
mod spawn;
mod start;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::migrate::{self, Hints, Outcome, Schema};
use crate::model::ServiceDef;
pub use options::Options;
use options::redact;
pub use spawn::{Running, spawn, spawn_observed};
pub use start::{StartError, Started, start};
use start::{connect, migration_failure, platform_token, sweep_files};

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
    /// Remove the stored files that no `File` node names (an upload or a deletion cut short by
    /// a stop of the server) and the image variants computed from them. Takes the same options
    /// as `serve`; run it against the database whose files the store keeps.
    SweepFiles {
        #[command(flatten)]
        options: Options,
        /// Leave alone the objects stored less than this many minutes ago (an upload still on
        /// its way to its node). 0 only while no server of the service runs.
        #[arg(long, value_name = "MINUTES", default_value_t = 60)]
        older_than_minutes: u64,
        /// Print what would be removed; remove nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

/// Entry point of a generated service binary.
pub fn run<S: ServiceDef>() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(options) => actix_web::rt::System::new().block_on(async move {
            // Freed memory waits a second for reuse; the HTTP workers return what is left on a
            // timer (docs/operations.md, "Memory after a large response").
            svc_alloc::delay_returns();
            let started = start::<S>(options, Vec::new()).await?;
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
            println!("  File API     POST {base}/file/v1/{id}");
            println!("  Files        GET  {base}/files/v1/{id}/<secret>");
            println!("  Images       GET  {base}/images/v1/{id}/<secret>/<operations>");
            println!("  System API   POST {base}/system");
            println!("  Health       GET  {base}/status");
            // The server stops itself on SIGINT and SIGTERM; its subscription sockets are
            // closed first, with a close frame, so the graceful stop does not wait for them.
            let closing = started.closing.clone();
            actix_web::rt::spawn(async move {
                stop_signal().await;
                closing.close();
            });
            started.server.await.map_err(StartError::Server)
        }),
        Command::Migrate {
            options,
            dry_run,
            force,
        } => actix_web::rt::System::new().block_on(async move {
            let (db, _) = connect::<S>(&options).await?;
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
            Ok::<(), StartError>(())
        }),
        Command::PlatformToken {
            options,
            expires_in,
        } => actix_web::rt::System::new().block_on(async move {
            let token = platform_token::<S>(options, expires_in).await?;
            println!("{token}");
            Ok::<(), StartError>(())
        }),
        Command::SweepFiles {
            options,
            older_than_minutes,
            dry_run,
        } => actix_web::rt::System::new().block_on(async move {
            let grace = std::time::Duration::from_secs(older_than_minutes.saturating_mul(60));
            let swept = sweep_files::<S>(options, grace, dry_run).await?;
            let verb = if dry_run { "would remove" } else { "removed" };
            for key in &swept.orphans {
                println!("{verb} {key}");
            }
            println!(
                "{} {} objects ({} bytes) that no File node names; kept {} files, and {} objects \
                 younger than {older_than_minutes} minutes",
                if dry_run { "Would remove" } else { "Removed" },
                swept.orphans.len(),
                swept.orphan_bytes,
                swept.kept,
                swept.recent,
            );
            Ok::<(), StartError>(())
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

/// The first SIGINT or SIGTERM (on other systems, Ctrl-C).
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(mut interrupt), Ok(mut terminate)) => {
                tokio::select! {
                    _ = interrupt.recv() => {}
                    _ = terminate.recv() => {}
                }
            }
            _ => std::future::pending().await,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
