//! The commands that work on an existing service: `deploy`, `info`, `root-token`, `login`,
//! `playground`, `down`, `logs`.

use std::io::{Read, Seek, SeekFrom, Write};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::project::{Metadata, Service};
use crate::rc::{self, Target, YamlFile};
use crate::server;

/// `-t, --target`.
#[derive(Debug, clap::Args)]
pub struct TargetArg {
    /// Target from `.svcrc` (`targets:`), or `<cluster>/<service id>`; default: `SVC_TARGET`,
    /// else `targets.default`, else `local`.
    #[arg(short, long, value_name = "TARGET")]
    pub target: Option<String>,
}

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

#[derive(Debug, clap::Args)]
pub struct LoginArgs {
    /// The platform token (or, with `--cluster`, the cluster's secret) to store.
    #[arg(short = 'T', long, env = "SVC_PLATFORM_TOKEN", hide_env_values = true)]
    pub token: String,
    /// Store the token as `clusters.<NAME>.clusterSecret` instead of `platformToken`.
    #[arg(long, value_name = "NAME")]
    pub cluster: Option<String>,
    /// With `--cluster`: the cluster's base URL, e.g. `http://localhost:60000`.
    #[arg(long, value_name = "URL", requires = "cluster")]
    pub host: Option<String>,
}

/// The service, its target and the local server's settings.
struct Context {
    service: Service,
    local_rc: YamlFile,
    target: Target,
    settings: YamlFile,
}

impl Context {
    fn load(target: &TargetArg) -> Result<Context, String> {
        let service = Service::find()?;
        let local_rc = rc::local(&service.dir)?;
        let target = rc::target(&local_rc, target.target.as_deref())?;
        let settings = rc::server_settings(&service.dir)?;
        Ok(Context {
            service,
            local_rc,
            target,
            settings,
        })
    }

    fn port(&self) -> Option<u16> {
        self.settings.get(&["port"]).and_then(|p| p.parse().ok())
    }

    fn database_url(&self) -> Option<String> {
        self.settings.get(&["databaseUrl"])
    }

    /// `http://host:port` of the target's server.
    fn base_url(&self) -> Result<String, String> {
        if self.target.is_local() {
            match self.port() {
                Some(port) => Ok(format!("http://localhost:{port}")),
                None => Err("the service was never deployed: run `svc deploy`".to_owned()),
            }
        } else {
            let global = rc::global()?;
            global
                .get(&["clusters", &self.target.cluster, "host"])
                .map(|h| h.trim_end_matches('/').to_owned())
                .ok_or_else(|| {
                    format!(
                        "unknown cluster `{}`: `~/.svcrc` has no `clusters.{}.host`",
                        self.target.cluster, self.target.cluster
                    )
                })
        }
    }

    /// The id in API paths: the target's service id, else the crate name (the default alias).
    fn project_id(&self) -> Result<String, String> {
        match &self.target.service_id {
            Some(id) => Ok(id.clone()),
            None => Ok(self.service.metadata()?.name),
        }
    }

    /// The local server must be running for commands that talk to it.
    fn require_running(&self) -> Result<(), String> {
        if self.target.is_local() && server::running(&self.service).is_none() {
            return Err("the local server is not running: start it with `svc deploy`".to_owned());
        }
        Ok(())
    }
}

pub fn deploy(args: &DeployArgs) -> Result<(), String> {
    let mut ctx = Context::load(&args.target)?;
    if !ctx.target.is_local() {
        return Err(format!(
            "cannot deploy to the cluster `{}`: only the local cluster (`local`) is supported",
            ctx.target.cluster
        ));
    }
    let database_url = args.database_url.clone().or_else(|| ctx.database_url());
    ctx.service.build()?;
    let meta = ctx.service.metadata()?;
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

/// Runs `<binary> migrate`, prints its plan, and returns whether the plan has destructive steps.
/// A dry run passes `--force` so that the whole plan is checked and shown.
fn migrate(meta: &Metadata, database_url: Option<&str>, args: &DeployArgs) -> Result<bool, String> {
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
        .map_err(|e| format!("cannot run `{}`: {e}", meta.binary.display()))?;
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
    Err(message
        .replace(
            "Apply it with the `migrate --force` subcommand.",
            "Apply it with `svc deploy --force`.",
        )
        .replace(
            "\nNothing was changed.",
            "\nNothing was changed; the server was not restarted.",
        ))
}

/// Whether the server on `port` answers `GET /status`.
pub fn status_ok(port: u16) -> bool {
    block_on(async move {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()
            .ok()?;
        let res = client
            .get(format!("http://127.0.0.1:{port}/status"))
            .send()
            .await
            .ok()?;
        Some(res.status().is_success())
    })
    .unwrap_or(false)
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(future)
}

/// POSTs a GraphQL request and returns its `data`, or the errors' messages.
fn graphql(url: &str, token: &str, query: &str) -> Result<Value, String> {
    block_on(async move {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| e.to_string())?;
        let res = client
            .post(url)
            .bearer_auth(token)
            .json(&json!({ "query": query }))
            .send()
            .await
            .map_err(|e| format!("cannot reach `{url}`: {e}"))?;
        let body: Value = res
            .json()
            .await
            .map_err(|e| format!("`{url}` did not answer with JSON: {e}"))?;
        if let Some(errors) = body["errors"].as_array().filter(|e| !e.is_empty()) {
            let messages: Vec<String> = errors
                .iter()
                .map(|e| {
                    let message = e["message"].as_str().unwrap_or("unknown error");
                    match e["code"].as_u64() {
                        Some(code) => format!("{code}: {message}"),
                        None => message.to_owned(),
                    }
                })
                .collect();
            return Err(format!("the System API refused: {}", messages.join("; ")));
        }
        Ok(body["data"].clone())
    })
}

/// A platform token for the target: `SVC_PLATFORM_TOKEN`, else the cluster's secret in
/// `~/.svcrc`, else (local) one signed by the service binary, else `platformToken` in `~/.svcrc`.
fn platform_token(ctx: &Context) -> Result<String, String> {
    if let Some(token) = std::env::var("SVC_PLATFORM_TOKEN")
        .ok()
        .filter(|t| !t.is_empty())
    {
        return Ok(token);
    }
    let global = rc::global()?;
    if let Some(secret) = global.get(&["clusters", &ctx.target.cluster, "clusterSecret"]) {
        return Ok(secret);
    }
    if ctx.target.is_local() {
        let binary = match ctx.settings.get(&["binary"]) {
            Some(path) => std::path::PathBuf::from(path),
            None => ctx.service.metadata()?.binary,
        };
        if binary.is_file() {
            let mut command = Command::new(&binary);
            command.arg("platform-token");
            if let Some(url) = ctx.database_url() {
                command.arg("--database-url").arg(url);
            }
            let output = command
                .output()
                .map_err(|e| format!("cannot run `{}`: {e}", binary.display()))?;
            if !output.status.success() {
                return Err(format!(
                    "cannot get a platform token from the service binary: {}",
                    String::from_utf8_lossy(&output.stderr).trim()
                ));
            }
            return Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned());
        }
    }
    global.get(&["platformToken"]).ok_or_else(|| {
        "no platform token: set SVC_PLATFORM_TOKEN or store one with `svc login --token TOKEN`"
            .to_owned()
    })
}

pub fn root_token(target: &TargetArg, name: Option<&str>) -> Result<(), String> {
    let ctx = Context::load(target)?;
    ctx.require_running()?;
    let base = ctx.base_url()?;
    let id = ctx.project_id()?;
    let token = platform_token(&ctx)?;
    let query = format!(
        "{{ viewer {{ project(id: {}) {{ permanentAuthTokens {{ edges {{ node {{ name token }} }} }} }} }} }}",
        Value::from(id.clone())
    );
    let data = graphql(&format!("{base}/system"), &token, &query)?;
    let edges = data["viewer"]["project"]["permanentAuthTokens"]["edges"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let tokens: Vec<(String, String)> = edges
        .iter()
        .map(|e| {
            (
                e["node"]["name"].as_str().unwrap_or_default().to_owned(),
                e["node"]["token"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    match name {
        Some(name) => match tokens.iter().find(|(n, _)| n == name) {
            Some((_, token)) => {
                println!("{token}");
                Ok(())
            }
            None => Err(format!(
                "the service has no root token named `{name}`; its root tokens: {}",
                if tokens.is_empty() {
                    "none (add names to `rootTokens:` in svc.yml and deploy)".to_owned()
                } else {
                    tokens
                        .iter()
                        .map(|(n, _)| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            )),
        },
        None => {
            if tokens.is_empty() {
                eprintln!(
                    "The service has no root tokens (add names to `rootTokens:` in svc.yml)."
                );
            }
            for (name, _) in tokens {
                println!("{name}");
            }
            Ok(())
        }
    }
}

pub fn info(target: &TargetArg, as_json: bool) -> Result<(), String> {
    let ctx = Context::load(target)?;
    let pid = if ctx.target.is_local() {
        server::running(&ctx.service)
    } else {
        None
    };
    let id = ctx.project_id()?;
    let base = ctx.base_url().ok();
    let database_url = ctx.database_url().unwrap_or_else(|| {
        format!(
            "sqlite://{}",
            ctx.service.state_dir().join("data.db").display()
        )
    });
    let endpoints = base.as_ref().map(|base| {
        json!({
            "simple": format!("{base}/simple/v1/{id}"),
            "playground": format!("{base}/simple/v1/{id}"),
            "system": format!("{base}/system"),
        })
    });
    let info = json!({
        "serviceDir": ctx.service.dir.display().to_string(),
        "target": ctx.target.name,
        "cluster": ctx.target.cluster,
        "serviceId": ctx.target.service_id,
        "port": ctx.port(),
        "pid": pid,
        "running": if ctx.target.is_local() { Value::from(pid.is_some()) } else { Value::Null },
        "databaseUrl": if ctx.target.is_local() { Value::from(rc::redact(&database_url)) } else { Value::Null },
        "endpoints": endpoints,
    });
    if as_json {
        println!(
            "{}",
            serde_json::to_string_pretty(&info).unwrap_or_default()
        );
        return Ok(());
    }
    println!("Service:     {}", ctx.service.dir.display());
    println!(
        "Target:      {} ({}/{})",
        ctx.target.name,
        ctx.target.cluster,
        ctx.target
            .service_id
            .as_deref()
            .unwrap_or("not deployed yet")
    );
    if ctx.target.is_local() {
        match (pid, ctx.port()) {
            (Some(pid), Some(port)) => println!("Server:      running, pid {pid}, port {port}"),
            (None, Some(port)) => println!("Server:      stopped (port {port})"),
            _ => println!("Server:      never deployed"),
        }
        println!("Database:    {}", rc::redact(&database_url));
    }
    if let Some(base) = base {
        println!("Simple API:  {base}/simple/v1/{id}");
        println!("Playground:  {base}/simple/v1/{id}");
        println!("System API:  {base}/system");
    }
    Ok(())
}

pub fn login(args: &LoginArgs) -> Result<(), String> {
    let mut global = rc::global()?;
    match &args.cluster {
        Some(cluster) => {
            global.set(
                &["clusters", cluster, "clusterSecret"],
                serde_yaml::Value::from(args.token.clone()),
            );
            if let Some(host) = &args.host {
                global.set(
                    &["clusters", cluster, "host"],
                    serde_yaml::Value::from(host.clone()),
                );
            }
        }
        None => global.set(
            &["platformToken"],
            serde_yaml::Value::from(args.token.clone()),
        ),
    }
    global.save()?;
    println!(
        "Stored the {} in {}.",
        match &args.cluster {
            Some(cluster) => format!("secret of the cluster `{cluster}`"),
            None => "platform token".to_owned(),
        },
        global.path.display()
    );
    Ok(())
}

pub fn playground(target: &TargetArg, web: bool) -> Result<(), String> {
    let ctx = Context::load(target)?;
    let url = format!("{}/simple/v1/{}", ctx.base_url()?, ctx.project_id()?);
    println!("{url}");
    if web {
        let opener = if cfg!(target_os = "macos") {
            "open"
        } else {
            "xdg-open"
        };
        Command::new(opener)
            .arg(&url)
            .status()
            .map_err(|e| format!("cannot open a browser with `{opener}`: {e}"))?;
    }
    Ok(())
}

pub fn down() -> Result<(), String> {
    let service = Service::find()?;
    match server::stop(&service)? {
        Some(pid) => println!("Stopped the server (pid {pid})."),
        None => println!("No local server is running."),
    }
    Ok(())
}

pub fn logs(tail: Option<usize>, follow: bool) -> Result<(), String> {
    let service = Service::find()?;
    let path = server::log_file(&service);
    let mut file = std::fs::File::open(&path).map_err(|e| {
        format!(
            "cannot open `{}` ({e}); the server writes it once `svc deploy` started it",
            path.display()
        )
    })?;
    let mut text = String::new();
    file.read_to_string(&mut text)
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    let shown = match tail {
        Some(n) => {
            let lines: Vec<&str> = text.lines().collect();
            let mut out = lines[lines.len().saturating_sub(n)..].join("\n");
            if !out.is_empty() {
                out.push('\n');
            }
            out
        }
        None => text,
    };
    let mut stdout = std::io::stdout();
    let _ = stdout.write_all(shown.as_bytes());
    let _ = stdout.flush();
    if follow {
        let mut position = file.stream_position().unwrap_or(0);
        loop {
            std::thread::sleep(Duration::from_millis(300));
            let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            if len < position {
                position = 0;
            }
            if len > position {
                let _ = file.seek(SeekFrom::Start(position));
                let mut chunk = Vec::new();
                let _ = file.read_to_end(&mut chunk);
                position += chunk.len() as u64;
                let _ = stdout.write_all(&chunk);
                let _ = stdout.flush();
            }
        }
    }
    Ok(())
}
