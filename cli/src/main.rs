//! `svc`: the command line of svc. It scaffolds a service crate (`init`), builds it and brings the
//! target's database and server up to date (`deploy`), and talks to the running service (`info`,
//! `root-token`, `playground`, `logs`, `down`, and `export` / `import` of its data). See
//! `docs/cli.md`.
//!
//! The CLI never touches a database itself: migrations run inside the service binary
//! (`<binary> migrate`), which the CLI builds with cargo and then runs.

mod commands;
mod project;
mod rc;
mod server;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// `svc import` checks an archive by reading every document into JSON trees on every core: with
/// glibc's `malloc` about 40 % of that time went to allocating and freeing (docs/benchmarks.md,
/// "NDF import and export"), as it did in the server ("Allocator: mimalloc").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(
    name = "svc",
    version,
    about = "Create, deploy and inspect svc services (GraphQL backends generated from a data model)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create a new service crate in DIR (Cargo.toml, build.rs, src/, svc.yml, types.graphql,
    /// .cargo/config.toml).
    Init {
        /// Directory to create; it must not exist or be empty.
        dir: PathBuf,
        /// Crate name of the service; default: the directory's name.
        #[arg(long)]
        name: Option<String>,
    },
    /// Build the service, migrate the target's database to its model and (re)start the local
    /// server in the background.
    Deploy(commands::DeployArgs),
    /// Show the service's target, server state, endpoints and database.
    Info {
        #[command(flatten)]
        target: commands::TargetArg,
        /// Print the information as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the service's root tokens, or print the value of the one named NAME.
    RootToken {
        /// Name of a root token (from `rootTokens:` in svc.yml).
        name: Option<String>,
        #[command(flatten)]
        target: commands::TargetArg,
    },
    /// Store a platform token (or a cluster's secret) in `~/.svcrc`.
    Login(commands::LoginArgs),
    /// Print the GraphQL playground's URL, or open it in a browser with `--web`.
    Playground {
        #[command(flatten)]
        target: commands::TargetArg,
        /// Open the URL in the default browser.
        #[arg(short, long)]
        web: bool,
    },
    /// Export the service's data into a zip of NDF documents (`nodes/`, `lists/`, `relations/`).
    Export(commands::ExportArgs),
    /// Import a zip of NDF documents (as `svc export` writes them) into the service; a rerun
    /// after a failure goes on after the last file imported.
    Import(commands::ImportArgs),
    /// Stop the local server started by `svc deploy`.
    Down,
    /// Print the local server's log (`.svc/server.log`).
    Logs {
        /// Print only the last N lines.
        #[arg(long, value_name = "N")]
        tail: Option<usize>,
        /// Keep printing lines as they are written.
        #[arg(short, long)]
        follow: bool,
        /// Print only the invocations of the function NAME (status, duration, request id).
        #[arg(long, value_name = "NAME")]
        function: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Init { dir, name } => commands::init::init(&dir, name.as_deref()),
        Command::Deploy(args) => commands::deploy(&args),
        Command::Info { target, json } => commands::info(&target, json),
        Command::RootToken { name, target } => commands::root_token(&target, name.as_deref()),
        Command::Login(args) => commands::login(&args),
        Command::Playground { target, web } => commands::playground(&target, web),
        Command::Export(args) => commands::export(&args),
        Command::Import(args) => commands::import(&args),
        Command::Down => commands::down(),
        Command::Logs {
            tail,
            follow,
            function,
        } => commands::logs(tail, follow, function.as_deref()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
