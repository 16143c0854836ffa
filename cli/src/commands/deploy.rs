//! `svc deploy`: builds the service, installs its JavaScript handlers' npm dependencies (where a
//! `package.json` is), migrates the target's database with the service binary's `migrate`, and
//! (re)starts the local server in the background.

use std::process::Command;

use anyhow::{Context as _, Result, bail};

use super::context::{Context, TargetArg};
use super::dependencies;
use crate::project::Metadata;
use crate::server;

#[derive(Debug, clap::Args)]
pub struct DeployArgs {
    #[command(flatten)]
    pub target: TargetArg,
    /// Print the migration plan and check it against the data; change nothing.
    #[arg(short, long)]
    pub dry_run: bool,
    /// Apply destructive steps too (removing a type, a relation or a field, with their data).
    #[arg(short, long)]
    pub force: bool,
    /// Port of the local server (remembered in `.svc/local.yml`); default: the remembered one,
    /// else a free port picked at the first deploy.
    #[arg(long)]
    pub port: Option<u16>,
    /// Database of the local server, `sqlite://PATH` or `postgres://…` (remembered in
    /// `.svc/local.yml`); default: the remembered one, else `.svc/data.db`.
    #[arg(long, value_name = "URL")]
    pub database_url: Option<String>,
}

pub fn deploy(args: &DeployArgs) -> Result<()> {
    let mut ctx = Context::load(&args.target)?;
    if !ctx.target.is_local() {
        bail!(
            "cannot deploy to the cluster `{}`: only the local cluster (`local`) is supported",
            ctx.target.cluster
        );
    }
    let database_url = args.database_url.clone().or_else(|| ctx.database_url());
    ctx.service.build()?;
    let meta = ctx.service.metadata()?;
    if !args.dry_run {
        install_dependencies(&ctx.service.dir)?;
    }
    let destructive = migrate(&meta, database_url.as_deref(), args)?;
    if args.dry_run {
        if destructive && !args.force {
            println!(
                "\nThe plan has destructive steps: `svc deploy` applies it only with `--force`."
            );
        }
        return Ok(());
    }
    let port = match args.port.or_else(|| ctx.port()) {
        Some(port) => port,
        None => server::free_port()?,
    };
    ctx.settings.set(&["port"], serde_yaml::Value::from(port));
    if let Some(url) = &args.database_url {
        ctx.settings
            .set(&["databaseUrl"], serde_yaml::Value::from(url.clone()));
    }
    // The binary that serves, for `root-token` (cargo's target directory may depend on the
    // environment of the shell that runs `svc`).
    ctx.settings.set(
        &["binary"],
        serde_yaml::Value::from(meta.binary.display().to_string()),
    );
    ctx.settings.save()?;
    if let Some(pid) = server::stop(&ctx.service)? {
        eprintln!("Stopped the previous server (pid {pid}).");
    }
    let started = server::start(&ctx.service, &meta.binary, port, database_url.as_deref())?;
    let id = started
        .service_id
        .clone()
        .or_else(|| ctx.target.service_id.clone())
        .unwrap_or_else(|| meta.name.clone());
    // Record the target on the first deploy (or when the database now holds another service).
    let entry = format!("local/{id}");
    if ctx.local_rc.get(&["targets", "default"]).is_none() {
        ctx.local_rc.set(
            &["targets", "default"],
            serde_yaml::Value::from(ctx.target.name.clone()),
        );
    }
    let name = if ctx.target.name.contains('/') {
        "local".to_owned()
    } else {
        ctx.target.name.clone()
    };
    if ctx.local_rc.get(&["targets", &name]).as_deref() != Some(entry.as_str()) {
        ctx.local_rc
            .set(&["targets", &name], serde_yaml::Value::from(entry.clone()));
        ctx.local_rc.save()?;
    }
    let base = format!("http://localhost:{port}");
    println!(
        "\nDeployed `{}` to the target `{name}` ({entry}); server pid {}, log {}",
        meta.name,
        started.pid,
        server::log_file(&ctx.service).display()
    );
    println!("\n  Simple API:  {base}/simple/v1/{id}");
    println!("  Playground:  {base}/simple/v1/{id}");
    println!("  System API:  {base}/system");
    Ok(())
}

/// `npm install` for the JavaScript handlers' `package.json` files, when there are any.
fn install_dependencies(dir: &std::path::Path) -> Result<()> {
    let model = svc_generator::frontend::load(&dir.join("svc.yml"))
        .map_err(|failure| anyhow::anyhow!("{}", failure.to_string().trim_end()))?
        .model
        .into_inner();
    dependencies::install(dir, &dependencies::packages(dir, &model))
}

/// Runs `<binary> migrate`, prints its plan, and returns whether the plan has destructive steps.
/// A dry run passes `--force` so that the whole plan is checked and shown.
fn migrate(meta: &Metadata, database_url: Option<&str>, args: &DeployArgs) -> Result<bool> {
    let mut command = Command::new(&meta.binary);
    command.arg("migrate");
    if args.dry_run {
        command.args(["--dry-run", "--force"]);
    } else if args.force {
        command.arg("--force");
    }
    if let Some(url) = database_url {
        command.arg("--database-url").arg(url);
    }
    let output = command
        .output()
        .with_context(|| format!("cannot run `{}`", meta.binary.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    print!("{stdout}");
    if output.status.success() {
        // The server's own notes (e.g. connecting), if any.
        eprint!("{stderr}");
        return Ok(stdout.contains("(destructive)"));
    }
    let message = stderr.trim_end();
    let message = message.strip_prefix("error: ").unwrap_or(message);
    bail!(
        "{}",
        message
            .replace(
                "Apply it with the `migrate --force` subcommand.",
                "Apply it with `svc deploy --force`.",
            )
            .replace(
                "\nNothing was changed.",
                "\nNothing was changed; the server was not restarted.",
            )
    )
}
