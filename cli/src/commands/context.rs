//! What the commands share: the service in the current directory with its target and local
//! server settings, requests to the server, and the platform token the System API takes.

use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use serde_json::{Value, json};

use crate::project::Service;
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

/// The service, its target and the local server's settings.
pub(super) struct Context {
    pub(super) service: Service,
    pub(super) local_rc: YamlFile,
    pub(super) target: Target,
    pub(super) settings: YamlFile,
}

impl Context {
    pub(super) fn load(target: &TargetArg) -> Result<Context> {
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

    pub(super) fn port(&self) -> Option<u16> {
        self.settings.get(&["port"]).and_then(|p| p.parse().ok())
    }

    pub(super) fn database_url(&self) -> Option<String> {
        self.settings.get(&["databaseUrl"])
    }

    /// `http://host:port` of the target's server.
    pub(super) fn base_url(&self) -> Result<String> {
        if self.target.is_local() {
            match self.port() {
                Some(port) => Ok(format!("http://localhost:{port}")),
                None => bail!("the service was never deployed: run `svc deploy`"),
            }
        } else {
            let global = rc::global()?;
            global
                .get(&["clusters", &self.target.cluster, "host"])
                .map(|h| h.trim_end_matches('/').to_owned())
                .with_context(|| {
                    format!(
                        "unknown cluster `{}`: `~/.svcrc` has no `clusters.{}.host`",
                        self.target.cluster, self.target.cluster
                    )
                })
        }
    }

    /// The id in API paths: the target's service id, else the crate name (the default alias).
    pub(super) fn project_id(&self) -> Result<String> {
        match &self.target.service_id {
            Some(id) => Ok(id.clone()),
            None => Ok(self.service.metadata()?.name),
        }
    }

    /// The local server must be running for commands that talk to it.
    pub(super) fn require_running(&self) -> Result<()> {
        if self.target.is_local() && server::running(&self.service).is_none() {
            bail!("the local server is not running: start it with `svc deploy`");
        }
        Ok(())
    }
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
pub(super) fn graphql(url: &str, token: &str, query: &str) -> Result<Value> {
    block_on(async move {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .context("cannot make an HTTP client")?;
        let res = client
            .post(url)
            .bearer_auth(token)
            .json(&json!({ "query": query }))
            .send()
            .await
            .with_context(|| format!("cannot reach `{url}`"))?;
        let body: Value = res
            .json()
            .await
            .with_context(|| format!("`{url}` did not answer with JSON"))?;
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
            bail!("the System API refused: {}", messages.join("; "));
        }
        Ok(body["data"].clone())
    })
}

/// A platform token for the target: `SVC_PLATFORM_TOKEN`, else the cluster's secret in
/// `~/.svcrc`, else (local) one signed by the service binary, else `platformToken` in `~/.svcrc`.
pub(super) fn platform_token(ctx: &Context) -> Result<String> {
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
                .with_context(|| format!("cannot run `{}`", binary.display()))?;
            if !output.status.success() {
                bail!(
                    "cannot get a platform token from the service binary: {}",
                    String::from_utf8_lossy(&output.stderr).trim()
                );
            }
            return Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned());
        }
    }
    global.get(&["platformToken"]).context(
        "no platform token: set SVC_PLATFORM_TOKEN or store one with `svc login --token TOKEN`",
    )
}
