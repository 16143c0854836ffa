//! Measuring one cell (a query on a server): fixed concurrency, a warm-up, then a fixed window
//! in which every request's latency is kept. Every response is checked (one that repeats a
//! checked response byte for byte, by that comparison: [`Verified`]); the first error ends the
//! cell, which is then reported as failed.

use std::borrow::Cow;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::data::Rng;
use crate::json::Json;
use crate::targets::{Expect, Ids, Kind, Query, variables};
use svc_bench::http1::{Conn, Endpoint, Response};

/// The SQL statement count header of svc responses.
const STATEMENTS_HEADER: &str = "svc-sql-statements";

#[derive(Debug, Clone)]
pub struct Settings {
    pub clients: usize,
    /// Before the first round of a cell.
    pub warmup: Duration,
    /// In all, over the rounds.
    pub measure: Duration,
    /// A cell is measured in this many rounds, taking turns with the other servers' rounds of
    /// the same query, so that a burst of other work on the machine spreads over all of them.
    pub rounds: usize,
}

/// The result of one cell, or of one round of it.
#[derive(Debug, Default, Clone)]
pub struct Cell {
    /// Requests (or pgbench transactions) per second.
    pub rate: f64,
    pub p50: Duration,
    pub p99: Duration,
    pub requests: usize,
    /// Every request that succeeded, warm-up included (what the server's CPU time covers).
    pub all_requests: usize,
    /// CPU time the server process used, when its process id is known.
    pub cpu: Option<Duration>,
    /// CPU time the load generator (this process) used.
    pub client_cpu: Option<Duration>,
    /// SQL statements per request: the smallest and largest value seen.
    pub statements: Option<(u64, u64)>,
    pub failure: Option<String>,
    /// The measured latencies, sorted, and the window they were measured in.
    latencies: Vec<Duration>,
    window: Duration,
}

impl Cell {
    pub fn failed(message: impl Into<String>) -> Cell {
        Cell {
            failure: Some(message.into()),
            ..Cell::default()
        }
    }

    fn from_latencies(mut latencies: Vec<Duration>, window: Duration) -> Cell {
        latencies.sort_unstable();
        let pct = |p: f64| {
            latencies
                .get(((latencies.len() as f64 - 1.0) * p).round() as usize)
                .copied()
                .unwrap_or_default()
        };
        Cell {
            rate: latencies.len() as f64 / window.as_secs_f64().max(1e-9),
            p50: pct(0.50),
            p99: pct(0.99),
            requests: latencies.len(),
            all_requests: latencies.len(),
            cpu: None,
            client_cpu: None,
            statements: None,
            failure: None,
            window,
            latencies,
        }
    }

    /// The rounds of a cell as one cell: requests over the summed windows, percentiles over
    /// every latency. A failed round fails the cell.
    pub fn merge(rounds: Vec<Cell>) -> Cell {
        if let Some(failed) = rounds.iter().find(|c| c.failure.is_some()) {
            return failed.clone();
        }
        let window = rounds.iter().map(|c| c.window).sum();
        let all_requests = rounds.iter().map(|c| c.all_requests).sum();
        let cpu = rounds.iter().map(|c| c.cpu).sum::<Option<Duration>>();
        let client_cpu = rounds
            .iter()
            .map(|c| c.client_cpu)
            .sum::<Option<Duration>>();
        let statements = rounds
            .iter()
            .filter_map(|c| c.statements)
            .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)));
        let latencies = rounds.into_iter().flat_map(|c| c.latencies).collect();
        let mut cell = Cell::from_latencies(latencies, window);
        cell.all_requests = all_requests;
        cell.cpu = cpu;
        cell.client_cpu = client_cpu;
        cell.statements = statements;
        cell
    }

    /// Server CPU time per request, warm-up included.
    pub fn cpu_per_request(&self) -> Option<Duration> {
        self.per_request(self.cpu)
    }

    /// The load generator's CPU time per request, warm-up included.
    pub fn client_cpu_per_request(&self) -> Option<Duration> {
        self.per_request(self.client_cpu)
    }

    fn per_request(&self, cpu: Option<Duration>) -> Option<Duration> {
        let n = u32::try_from(self.all_requests).ok().filter(|n| *n > 0)?;
        Some(cpu? / n)
    }
}

/// A GraphQL server under test.
#[derive(Debug)]
pub struct HttpTarget {
    pub kind: Kind,
    pub url: String,
    pub token: Option<String>,
    pub ids: Ids,
}

/// A response as it came: status, body and the statement count header.
pub struct Raw {
    status: u16,
    body: bytes::Bytes,
    pub statements: Option<u64>,
}

impl Raw {
    /// The `data` of a successful response, checked as [`send`] does, without copying the
    /// body into an owned tree (what every request of a measured window goes through).
    pub fn data(&self) -> Result<Json<'_>, String> {
        let body = Json::parse(&self.body).map_err(|e| self.not_json(e))?;
        let data = match body {
            Json::Object(entries) => {
                let mut data = None;
                for (k, v) in entries {
                    match &*k {
                        "errors" if !v.is_null() => return Err(format!("GraphQL errors: {v}")),
                        "data" => data = Some(v),
                        _ => {}
                    }
                }
                data
            }
            _ => None,
        };
        if !self.is_success() {
            return Err(format!("HTTP {}: {}", self.status, self.text()));
        }
        data.filter(|d| !d.is_null())
            .ok_or_else(|| format!("no data: {}", self.text()))
    }

    fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    fn text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.body[..self.body.len().min(300)])
    }

    fn not_json(&self, e: serde_json::Error) -> String {
        format!("HTTP {}, not JSON ({e}): {}", self.status, self.text())
    }
}

impl From<Response> for Raw {
    fn from(r: Response) -> Raw {
        Raw {
            status: r.status,
            body: r.body,
            statements: r.header.and_then(|v| v.parse().ok()),
        }
    }
}

/// Sends one GraphQL request and reads the whole response (outside the measured loops).
pub async fn send_raw(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    query: &str,
    variables: &Value,
) -> Result<Raw, String> {
    let res = svc_bench::request(client, url, token, query, variables)
        .send()
        .await
        .map_err(|e| format!("request failed: {e}"))?;
    let status = res.status().as_u16();
    let statements = res
        .headers()
        .get(STATEMENTS_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let body = res
        .bytes()
        .await
        .map_err(|e| format!("reading the response failed: {e}"))?;
    Ok(Raw {
        status,
        body,
        statements,
    })
}

/// Sends one GraphQL request; returns `data` and the statement count header. HTTP failures and
/// GraphQL errors are errors.
pub async fn send(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    query: &str,
    variables: &Value,
) -> Result<(Value, Option<u64>), String> {
    let raw = send_raw(client, url, token, query, variables).await?;
    // Checked first with the lean tree, so both paths give the same verdicts and messages.
    raw.data()?;
    let mut body: Value = serde_json::from_slice(&raw.body).map_err(|e| raw.not_json(e))?;
    Ok((body["data"].take(), raw.statements))
}

/// The last response a client loop checked, with the variables it was for: a later response
/// to the same request whose status and body are byte for byte those of the checked one gets
/// the same verdict without parsing its JSON again. For the reads whose request never changes
/// (queries 1, 3 and 4); query 2 asks for another post each time and each create's response is
/// new, and their responses are small. Query 6 is checked once too.
///
/// Parsing and checking a response took the load generator about 0.13 ms per 100-post
/// request, about two thirds of what svc's server took to answer it, on the same two cores.
/// What the generator spends is taken from the servers under test, and the more so the faster
/// they are; pgbench, the raw-SQL peer, spends almost nothing.
struct Verified {
    enabled: bool,
    last: Option<(Value, bytes::Bytes)>,
}

impl Verified {
    fn new(query: Query) -> Verified {
        Verified {
            enabled: matches!(
                query,
                Query::List
                    | Query::LeftOut
                    | Query::Nested
                    | Query::Filter
                    | Query::Search
                    | Query::FilterLarge
                    | Query::SearchLarge
            ),
            last: None,
        }
    }

    /// Runs `check` unless `raw` repeats the response that last passed it for `variables`.
    fn check(
        &mut self,
        raw: &Raw,
        variables: &Value,
        check: impl FnOnce() -> Result<(), String>,
    ) -> Result<(), String> {
        if !self.enabled || !raw.is_success() {
            return check();
        }
        if self
            .last
            .as_ref()
            .is_some_and(|(vars, body)| vars == variables && *body == raw.body)
        {
            return Ok(());
        }
        check()?;
        self.last = Some((variables.clone(), raw.body.clone()));
        Ok(())
    }
}

/// Runs `query` against `target` from `settings.clients` concurrent loops.
pub async fn http(
    target: &Arc<HttpTarget>,
    query: Query,
    expect: &Arc<Expect>,
    settings: &Settings,
    run: &Arc<str>,
    counter: &Arc<AtomicU64>,
) -> Cell {
    let Some(document) = target.kind.document(query) else {
        return Cell::failed("no GraphQL document for this server");
    };
    let document: Arc<str> = document.into();
    let start = Instant::now();
    let from = start + settings.warmup;
    let until = from + settings.measure;
    let stop = Arc::new(AtomicBool::new(false));
    let failure = Arc::new(Mutex::new(None::<String>));
    let mut tasks = Vec::new();
    for c in 0..settings.clients {
        let (target, expect) = (target.clone(), expect.clone());
        let (document, run, counter) = (document.clone(), run.clone(), counter.clone());
        let (stop, failure) = (stop.clone(), failure.clone());
        let mut rng = Rng(0xB5E_0000 + (query.number() * 1000 + c) as u64);
        tasks.push(tokio::spawn(async move {
            let endpoint = match Endpoint::post_json(&target.url, target.token.as_deref()) {
                Ok(endpoint) => endpoint,
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    failure.lock().unwrap().get_or_insert(e);
                    return (Vec::new(), None, from, 0);
                }
            };
            let mut conn = Conn::new(&endpoint);
            // The request body: the document is written once, the variables each time.
            let mut prefix = br#"{"query":"#.to_vec();
            serde_json::to_writer(&mut prefix, &*document).expect("a string serialises");
            prefix.extend_from_slice(br#","variables":"#);
            let mut body = Vec::with_capacity(prefix.len() + 256);
            let mut verified = Verified::new(query);
            let mut latencies = Vec::new();
            let mut statements: Option<(u64, u64)> = None;
            let mut last = from;
            let mut completed = 0usize;
            loop {
                let t = Instant::now();
                if t >= until || stop.load(Ordering::Relaxed) {
                    break;
                }
                let n = counter.fetch_add(1, Ordering::Relaxed);
                let vars = variables(query, &target.ids, n, &run, |k| rng.below(k));
                body.clear();
                body.extend_from_slice(&prefix);
                serde_json::to_writer(&mut body, &vars).expect("variables serialise");
                body.push(b'}');
                let result = conn
                    .post(&body, STATEMENTS_HEADER)
                    .await
                    .map(Raw::from)
                    .and_then(|raw| {
                        verified.check(&raw, &vars, || {
                            target.kind.check(query, &vars, &raw.data()?, &expect)
                        })?;
                        Ok(raw.statements)
                    });
                let done = Instant::now();
                completed += usize::from(result.is_ok());
                match result {
                    Ok(s) if t >= from => {
                        latencies.push(done - t);
                        last = last.max(done);
                        if let Some(s) = s {
                            statements =
                                Some(statements.map_or((s, s), |(lo, hi)| (lo.min(s), hi.max(s))));
                        }
                    }
                    Ok(_) => {}
                    Err(e) => {
                        stop.store(true, Ordering::Relaxed);
                        failure.lock().unwrap().get_or_insert(e);
                        break;
                    }
                }
            }
            (latencies, statements, last, completed)
        }));
    }
    let mut all = Vec::new();
    let mut statements: Option<(u64, u64)> = None;
    let mut end = from;
    let mut completed = 0;
    for task in tasks {
        match task.await {
            Ok((latencies, s, last, n)) => {
                all.extend(latencies);
                completed += n;
                end = end.max(last);
                if let Some((lo, hi)) = s {
                    statements = Some(statements.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
                }
            }
            Err(e) => return Cell::failed(format!("a client task failed: {e}")),
        }
    }
    if let Some(e) = failure.lock().unwrap().take() {
        return Cell::failed(e);
    }
    if all.is_empty() {
        return Cell::failed("no request completed in the measured window");
    }
    let mut cell = Cell::from_latencies(all, end - from);
    cell.statements = statements;
    cell.all_requests = completed;
    cell
}

/// Runs a pgbench script: a warm-up run, then a measured run whose per-transaction log gives
/// the latencies. pgbench's own tps (without connection time) is the rate.
pub async fn pgbench(
    conninfo: &str,
    script: &Path,
    settings: &Settings,
    log_dir: &Path,
    tag: &str,
    defines: &[String],
) -> Cell {
    let text = match std::fs::read_to_string(script) {
        Ok(text) => text,
        Err(e) => return Cell::failed(format!("cannot read {}: {e}", script.display())),
    };
    let statements = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("--") && !l.starts_with('\\') && l.ends_with(';'))
        .count() as u64;
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(settings.clients);
    let base = |seconds: Duration| {
        let mut cmd = tokio::process::Command::new("pgbench");
        cmd.args(["-n", "-M", "prepared"])
            .arg(format!("-c{}", settings.clients))
            .arg(format!("-j{threads}"))
            .arg(format!(
                "-T{}",
                seconds.as_secs_f64().ceil().max(1.0) as u64
            ))
            .args(defines.iter().map(|d| format!("-D{d}")))
            .arg("-f")
            .arg(script)
            .kill_on_drop(true);
        cmd
    };
    if !settings.warmup.is_zero() {
        let out = base(settings.warmup).arg(conninfo).output().await;
        if let Err(e) = check_pgbench(out) {
            return Cell::failed(e);
        }
    }
    let prefix = log_dir.join(tag);
    let out = base(settings.measure)
        .arg("-l")
        .arg(format!("--log-prefix={}", prefix.display()))
        .arg(conninfo)
        .output()
        .await;
    let stdout = match check_pgbench(out) {
        Ok(stdout) => stdout,
        Err(e) => return Cell::failed(e),
    };
    let tps = stdout
        .lines()
        .find(|l| l.starts_with("tps = "))
        .and_then(|l| l["tps = ".len()..].split_whitespace().next())
        .and_then(|v| v.parse::<f64>().ok());
    let Some(tps) = tps else {
        return Cell::failed(format!("no tps in pgbench's output: {stdout}"));
    };
    let latencies = match read_pgbench_logs(log_dir, tag) {
        Ok(l) if !l.is_empty() => l,
        Ok(_) => return Cell::failed("pgbench logged no transaction"),
        Err(e) => return Cell::failed(e),
    };
    // pgbench's rate leaves out connection set-up; the window follows from it.
    let window = Duration::from_secs_f64(latencies.len() as f64 / tps.max(1e-9));
    let mut cell = Cell::from_latencies(latencies, window);
    cell.statements = Some((statements, statements));
    cell
}

/// pgbench's stdout when it succeeded with no failed transaction.
fn check_pgbench(out: std::io::Result<std::process::Output>) -> Result<String, String> {
    let out = out.map_err(|e| format!("cannot run pgbench: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!(
            "pgbench failed ({}): {stderr} {stdout}",
            out.status
        ));
    }
    let failed = stdout
        .lines()
        .find_map(|l| l.strip_prefix("number of failed transactions: "))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse::<u64>().ok());
    if failed.unwrap_or(0) > 0 {
        return Err(format!("pgbench: failed transactions: {stdout}"));
    }
    Ok(stdout)
}

/// Latencies from pgbench's per-transaction logs (`<tag>.<pid>[.<thread>]`, the third field is
/// the transaction's time in microseconds).
fn read_pgbench_logs(dir: &Path, tag: &str) -> Result<Vec<Duration>, String> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(&format!("{tag}.")) {
            continue;
        }
        let text = std::fs::read_to_string(entry.path())
            .map_err(|e| format!("{}: {e}", entry.path().display()))?;
        out.extend(text.lines().filter_map(|l| {
            l.split_whitespace()
                .nth(2)
                .and_then(|v| v.parse::<u64>().ok())
                .map(Duration::from_micros)
        }));
    }
    Ok(out)
}

/// CPU time (user and system) a process has used so far, from `/proc/<pid>/stat`.
pub fn process_cpu(pid: u32, ticks_per_second: u64) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name, which is in parentheses and may hold spaces:
    // state is field 3, utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_secs_f64(
        ticks as f64 / ticks_per_second.max(1) as f64,
    ))
}

#[cfg(test)]
mod tests {
    use std::cell::Cell as Calls;

    use serde_json::json;

    use super::*;

    fn raw(status: u16, body: &'static str) -> Raw {
        Raw {
            status,
            body: bytes::Bytes::from_static(body.as_bytes()),
            statements: None,
        }
    }

    /// Checks `raw` through `verified` with a check that counts its calls and gives `verdict`.
    fn check(
        verified: &mut Verified,
        raw: &Raw,
        vars: &Value,
        verdict: Result<(), String>,
    ) -> (Result<(), String>, u32) {
        let calls = Calls::new(0);
        let result = verified.check(raw, vars, || {
            calls.set(calls.get() + 1);
            verdict
        });
        (result, calls.get())
    }

    #[test]
    fn only_an_exact_repeat_of_a_checked_response_skips_the_check() {
        let mut v = Verified::new(Query::List);
        let vars = json!({});
        let ok = raw(200, r#"{"data":{"allPosts":[]}}"#);
        // A failed check is not remembered.
        assert_eq!(
            check(&mut v, &ok, &vars, Err("wrong".into())),
            (Err("wrong".into()), 1)
        );
        assert_eq!(check(&mut v, &ok, &vars, Ok(())), (Ok(()), 1));
        assert_eq!(check(&mut v, &ok, &vars, Err("unused".into())), (Ok(()), 0));
        // Another body, another status or other variables are checked again.
        let other = raw(200, r#"{"data":{"allPosts":[{}]}}"#);
        assert_eq!(
            check(&mut v, &other, &vars, Err("bad".into())),
            (Err("bad".into()), 1)
        );
        let error = raw(500, r#"{"data":{"allPosts":[]}}"#);
        assert_eq!(
            check(&mut v, &error, &vars, Err("500".into())),
            (Err("500".into()), 1)
        );
        assert_eq!(check(&mut v, &ok, &json!({"id": "x"}), Ok(())), (Ok(()), 1));
        // Queries 2 and 5 check every response.
        for query in [Query::ById, Query::Create] {
            let mut v = Verified::new(query);
            assert_eq!(check(&mut v, &ok, &vars, Ok(())), (Ok(()), 1));
            assert_eq!(
                check(&mut v, &ok, &vars, Err("again".into())),
                (Err("again".into()), 1)
            );
        }
    }
}
