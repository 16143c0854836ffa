//! `svc export` and `svc import`: the service's data as an archive of NDF documents (reference
//! §8.5), moved through the server's `POST /simple/v1/<id>/export` and `/import` endpoints.
//!
//! The archive is a zip with the folders `nodes/`, `lists/` and `relations/`, each holding
//! numbered documents (`000001.json`, …; on import leading zeros are optional). Neither command
//! holds the archive in memory: export writes each page into the zip as it arrives, import reads
//! one entry at a time (once to check every file against the model, once to upload).

pub mod export;
pub mod import;
mod progress;
pub mod validate;

use std::time::Duration;

use anyhow::{Context as _, Result};

use super::context::{Context, platform_token};

/// The three kinds of NDF documents, in the order they are exported and imported.
pub(crate) const FILE_TYPES: [&str; 3] = ["nodes", "lists", "relations"];

/// The largest request body the server takes (seed §8: 10 MB per import request).
pub(crate) const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// How the command reaches the server's NDF endpoints: `<base>/simple/v1/<id>/{export,import}`
/// with an admin token (a platform token: the same one `svc root-token` uses).
pub(super) struct Endpoint {
    runtime: tokio::runtime::Runtime,
    client: reqwest::Client,
    base: String,
    token: String,
}

impl Endpoint {
    pub(super) fn new(ctx: &Context) -> Result<Endpoint> {
        ctx.require_running()?;
        let base = format!("{}/simple/v1/{}", ctx.base_url()?, ctx.project_id()?);
        let token = platform_token(ctx)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start a tokio runtime")?;
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            // One page or one document of at most 10 MB; a large import transaction may take
            // a while on the server.
            .timeout(Duration::from_secs(30 * 60))
            .build()
            .context("cannot make an HTTP client")?;
        Ok(Endpoint {
            runtime,
            client,
            base,
            token,
        })
    }

    /// A query of the Simple API (`<base>` itself); its `data`.
    pub(super) fn query(&self, query: &str) -> Result<serde_json::Value> {
        let body = serde_json::json!({ "query": query })
            .to_string()
            .into_bytes();
        let answer = self.post("", body)?;
        let body: serde_json::Value = serde_json::from_slice(&answer.body)
            .with_context(|| format!("the Simple API answered: {}", answer.excerpt()))?;
        match body.get("data") {
            Some(data) if body.get("errors").is_none() => Ok(data.clone()),
            _ => anyhow::bail!("the Simple API answered: {}", answer.excerpt()),
        }
    }

    /// POSTs `body` (JSON) to `<base>/<path>` (`<base>` itself when `path` is empty); the
    /// answer's `Request-Id` header and its body.
    pub(super) fn post(&self, path: &str, body: Vec<u8>) -> Result<Answer> {
        self.runtime.block_on(self.send(path, body))
    }

    /// Runs `future` (requests made with [`Endpoint::send`]) to its end.
    pub(super) fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// [`Endpoint::post`], for requests sent side by side inside [`Endpoint::block_on`].
    pub(super) async fn send(&self, path: &str, body: Vec<u8>) -> Result<Answer> {
        let url = if path.is_empty() {
            self.base.clone()
        } else {
            format!("{}/{path}", self.base)
        };
        let res = self
            .client
            .post(&url)
            .bearer_auth(&self.token)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await
            .with_context(|| format!("cannot reach `{url}`"))?;
        let status = res.status();
        let request_id = res
            .headers()
            .get("Request-Id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = res
            .bytes()
            .await
            .with_context(|| format!("cannot read the answer of `{url}`"))?;
        Ok(Answer {
            status,
            request_id,
            body: body.to_vec(),
        })
    }
}

/// A server's answer.
pub(super) struct Answer {
    pub(super) status: reqwest::StatusCode,
    pub(super) request_id: Option<String>,
    pub(super) body: Vec<u8>,
}

impl Answer {
    /// The request id: the body's `requestId`, else the `Request-Id` header, else `unknown`.
    pub(super) fn request_id(&self, body: Option<&serde_json::Value>) -> String {
        body.and_then(|b| b.get("requestId"))
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
            .or_else(|| self.request_id.clone())
            .unwrap_or_else(|| "unknown".to_owned())
    }

    /// The body as text, shortened for a message.
    pub(super) fn excerpt(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        let text = text.trim();
        match text.char_indices().nth(300) {
            Some((i, _)) => format!("{}…", &text[..i]),
            None => text.to_owned(),
        }
    }
}

/// `1234` → `1.2 KB` (decimal units, as the progress bars show them).
pub(crate) fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// `elements` with its noun.
pub(crate) fn count(n: u64, singular: &str, plural: &str) -> String {
    if n == 1 {
        format!("1 {singular}")
    } else {
        format!("{n} {plural}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(999), "999 B");
        assert_eq!(human_bytes(98_123), "98.1 KB");
        assert_eq!(human_bytes(12_500_000), "12.5 MB");
        assert_eq!(count(1, "file", "files"), "1 file");
        assert_eq!(count(2, "file", "files"), "2 files");
    }
}
