//! Functions: what a hook costs a create. One server of `bench/functions-service/` has four
//! models of the same shape: `Plain` (no hook), `RustHooked` (an `operationBefore` hook in Rust,
//! compiled into the service, that returns the data it is given), `WebHooked` (the same hook
//! as a webhook, served by this program on loopback) and `Subscribed` (a server-side
//! subscription function on its creates, a webhook on loopback: every create also writes its
//! event to the outbox, and the deliverer posts it after the commit). Each is created by the same
//! clients in alternating rounds; the report gives creates per second and latencies of each,
//! then how long the subscription's deliveries take: every event of the rounds delivered, and
//! the time from a create's response to its delivery, one create at a time. A fifth model,
//! `JsHooked`, has the before-hook as a JavaScript module run by the server's Node.js workers.
//!
//! The goals of issue 28: the Rust hook costs under 5 % of the creates per second; the webhook
//! adds under 1 ms at p50. Issue 29: the JavaScript hook on a warm worker adds under 1 ms at p50.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use svc_bench::http1::{Conn, Endpoint};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

mod service {
    svc_macros::service!(relative_to_file = "../../functions-service/svc.yml");
}

/// The Rust hook of `RustHooked.create`.
mod handlers_impl {
    use svc_runtime::functions::FunctionResult;

    use super::service::handlers::{RustCheckData, RustCheckEvent};

    /// Keeps the data as given (a real hook checks it; this one measures the call).
    pub async fn check(event: RustCheckEvent) -> FunctionResult<RustCheckData> {
        let data = event.data;
        if data.title.as_deref() == Some("") {
            return Err("a title is needed".into());
        }
        Ok(Some(data))
    }
}

/// Where the webhook of `WebHooked.create` listens (`bench/functions-service/svc.yml`).
const WEBHOOK_PORT: u16 = 47612;
const MODELS: [(&str, &str); 5] = [
    ("Plain", "no hook"),
    ("RustHooked", "Rust operationBefore"),
    ("WebHooked", "webhook operationBefore (loopback)"),
    ("Subscribed", "subscription (webhook, outbox)"),
    ("JsHooked", "JavaScript operationBefore (Node.js)"),
];

/// When each delivery of the `Subscribed` subscription arrived, by the node's title.
static DELIVERED: std::sync::Mutex<Vec<(String, Instant)>> = std::sync::Mutex::new(Vec::new());

fn delivered() -> usize {
    DELIVERED.lock().map_or(0, |d| d.len())
}

struct Args {
    seconds: f64,
    rounds: usize,
    clients: usize,
    postgres: Option<String>,
    smoke: bool,
}

fn args() -> Result<Args, String> {
    let mut out = Args {
        seconds: 3.0,
        rounds: 3,
        clients: 4,
        postgres: None,
        smoke: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--seconds" => out.seconds = parse(&value("--seconds")?, "--seconds")?,
            "--rounds" => out.rounds = parse(&value("--rounds")?, "--rounds")?,
            "--clients" => out.clients = parse(&value("--clients")?, "--clients")?,
            "--postgres" => out.postgres = Some(value("--postgres")?),
            "--smoke" => {
                out.seconds = 0.5;
                out.rounds = 1;
                out.clients = 2;
                out.smoke = true;
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(out)
}

fn parse<T: std::str::FromStr>(text: &str, name: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    text.parse().map_err(|e| format!("{name}: {e}"))
}

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), String> {
    let args = args()?;
    // Bound before the server starts: a create of `WebHooked` must never find the port closed.
    let listener = bind_fixed(WEBHOOK_PORT)
        .await
        .map_err(|e| format!("the webhook cannot listen on {WEBHOOK_PORT}: {e}"))?;
    tokio::spawn(webhook(listener));
    let dir = std::env::temp_dir().join(format!("svc-bench-functions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let database_url = match &args.postgres {
        Some(url) => url.clone(),
        None => format!("sqlite://{}", dir.join("data.db").display()),
    };
    let options = svc_runtime::Options {
        port: 0,
        database_url: Some(database_url),
        service_id: Some("bench".into()),
        alias: Some("bench".into()),
        secret: Some("svc-bench-secret-0123456789abcdef".into()),
        file_store: Some(dir.join("files").display().to_string()),
        ..Default::default()
    };
    let running =
        tokio::task::spawn_blocking(move || svc_runtime::spawn::<service::Service>(options))
            .await
            .map_err(|e| format!("the server thread failed: {e}"))?
            .map_err(|e| format!("the server did not start: {e}"))?;
    let api = format!("http://127.0.0.1:{}/simple/v1/bench", running.port);
    println!(
        "functions benchmark: creates on {}, {} clients, {} rounds of {}s per model",
        if args.postgres.is_some() {
            "PostgreSQL"
        } else {
            "SQLite"
        },
        args.clients,
        args.rounds,
        args.seconds
    );
    // Each model's create works, and the Rust hook's refusal arrives as the client's error.
    let endpoint = Endpoint::post_json(&api, None)?;
    for (model, _) in MODELS {
        let body = create_body(model, "check");
        let out = send(&endpoint, &body).await?;
        if out["data"][format!("create{model}")]["title"] != "check" {
            return Err(format!("create{model} failed: {out}"));
        }
    }
    let refused = send(&endpoint, &create_body("RustHooked", "")).await?;
    if refused["errors"][0]["code"] != 5001 {
        return Err(format!(
            "the Rust hook did not refuse an empty title: {refused}"
        ));
    }
    let mut totals: Vec<(usize, Duration, Vec<Duration>)> = MODELS
        .iter()
        .map(|_| (0, Duration::ZERO, Vec::new()))
        .collect();
    for _ in 0..args.rounds {
        for (i, (model, _)) in MODELS.iter().enumerate() {
            let (n, elapsed, mut latencies) = load(&endpoint, model, &args).await?;
            totals[i].0 += n;
            totals[i].1 += elapsed;
            totals[i].2.append(&mut latencies);
        }
    }
    let mut rates = Vec::new();
    let mut p50s = Vec::new();
    println!(
        "{:<40} {:>10} {:>9} {:>9}",
        "create", "creates/s", "p50 ms", "p99 ms"
    );
    for (i, (model, what)) in MODELS.iter().enumerate() {
        let (n, elapsed, latencies) = &mut totals[i];
        latencies.sort();
        let pct = |p: f64| {
            latencies
                .get(((latencies.len().max(1) - 1) as f64 * p) as usize)
                .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
        };
        let rate = *n as f64 / elapsed.as_secs_f64().max(1e-9);
        println!(
            "{:<40} {:>10.0} {:>9.3} {:>9.3}",
            format!("create{model} ({what})"),
            rate,
            pct(0.5),
            pct(0.99)
        );
        rates.push(rate);
        p50s.push(pct(0.5));
    }
    let rust_cost = 1.0 - rates[1] / rates[0];
    let webhook_added = p50s[2] - p50s[0];
    println!(
        "Rust hook: {:.1} % fewer creates/s than no hook (goal < 5 %); webhook hook: +{:.3} ms at p50 (goal < 1 ms)",
        rust_cost * 100.0,
        webhook_added
    );
    println!(
        "subscription: {:.1} % fewer creates/s than no hook",
        (1.0 - rates[3] / rates[0]) * 100.0
    );
    println!(
        "JavaScript hook: +{:.3} ms at p50 (goal < 1 ms), {:.1} % fewer creates/s than no hook",
        p50s[4] - p50s[0],
        (1.0 - rates[4] / rates[0]) * 100.0
    );
    // Every create of `Subscribed` (the rounds' and the check's) is delivered.
    let expected = totals[3].0 + 1;
    let drained = Instant::now();
    while delivered() < expected {
        if drained.elapsed() > Duration::from_secs(120) {
            return Err(format!(
                "{} of {expected} subscription events delivered after 120 s",
                delivered()
            ));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    println!(
        "subscription: all {expected} events delivered {:.0} ms after the last round",
        drained.elapsed().as_secs_f64() * 1000.0
    );
    let lags = delivery_lags(&endpoint, if args.smoke { 20 } else { 300 }).await?;
    println!(
        "subscription: delivered {:.3} ms (p50), {:.3} ms (p99) after the create's response, one create at a time",
        lags[lags.len() / 2],
        lags[(lags.len() - 1) * 99 / 100]
    );
    running.stop();
    let _ = std::fs::remove_dir_all(&dir);
    if args.smoke {
        println!("smoke: every create answered");
    }
    Ok(())
}

/// Creates `n` nodes of `Subscribed` one after the other, each once the previous one was
/// delivered: how long after each create's response its delivery arrived (ms, sorted).
async fn delivery_lags(endpoint: &Endpoint, n: usize) -> Result<Vec<f64>, String> {
    let mut lags = Vec::with_capacity(n);
    let mut conn = Conn::new(endpoint);
    for i in 0..n {
        let title = format!("lag-{i}");
        let res = conn
            .post(&create_body("Subscribed", &title), "request-id")
            .await?;
        let answered = Instant::now();
        if res.status != 200 {
            return Err(format!("createSubscribed failed: {}", res.status));
        }
        let arrived = loop {
            let found = DELIVERED
                .lock()
                .ok()
                .and_then(|d| d.iter().rev().find(|(t, _)| *t == title).map(|(_, at)| *at));
            if let Some(at) = found {
                break at;
            }
            if answered.elapsed() > Duration::from_secs(30) {
                return Err(format!("`{title}` was not delivered within 30 s"));
            }
            tokio::time::sleep(Duration::from_micros(200)).await;
        };
        let lag = if arrived >= answered {
            arrived.duration_since(answered).as_secs_f64()
        } else {
            -answered.duration_since(arrived).as_secs_f64()
        };
        lags.push(lag * 1000.0);
    }
    lags.sort_by(f64::total_cmp);
    Ok(lags)
}

fn create_body(model: &str, title: &str) -> Vec<u8> {
    let query =
        format!("mutation($t: String!) {{ create{model}(title: $t, votes: 1) {{ id title }} }}");
    serde_json::to_vec(&json!({ "query": query, "variables": { "t": title } })).unwrap_or_default()
}

async fn send(endpoint: &Endpoint, body: &[u8]) -> Result<Value, String> {
    let mut conn = Conn::new(endpoint);
    let res = conn.post(body, "request-id").await?;
    serde_json::from_slice(&res.body).map_err(|e| format!("not JSON: {e}"))
}

/// `clients` loops creating nodes of `model` for `seconds`: how many, in what time, and each
/// one's latency.
async fn load(
    endpoint: &Endpoint,
    model: &str,
    args: &Args,
) -> Result<(usize, Duration, Vec<Duration>), String> {
    let deadline = Instant::now() + Duration::from_secs_f64(args.seconds);
    let started = Instant::now();
    let body = create_body(model, "a title of a usual length");
    let expect = format!("\"create{model}\":{{\"id\"");
    let loops = (0..args.clients).map(|_| {
        let body = &body;
        let expect = &expect;
        async move {
            let mut conn = Conn::new(endpoint);
            let mut latencies = Vec::new();
            while Instant::now() < deadline {
                let t = Instant::now();
                let res = conn.post(body, "request-id").await?;
                latencies.push(t.elapsed());
                let text = String::from_utf8_lossy(&res.body);
                if res.status != 200 || !text.contains(expect.as_str()) {
                    return Err(format!("create{model} failed: {text}"));
                }
            }
            Ok::<_, String>(latencies)
        }
    });
    let results = futures_util::future::join_all(loops).await;
    let elapsed = started.elapsed();
    let mut all = Vec::new();
    for r in results {
        all.append(&mut r?);
    }
    Ok((all.len(), elapsed, all))
}

/// The webhook of `WebHooked.create`: answers `{"data": <the event's data>}`, keeping
/// connections alive.
async fn webhook(listener: TcpListener) {
    while let Ok((stream, _)) = listener.accept().await {
        let _ = stream.set_nodelay(true);
        tokio::spawn(answer(stream));
    }
}

/// Listens on 127.0.0.1:`port`. The port lies in Linux's range of ephemeral ports: a
/// connection that used it as its local port (to PostgreSQL, say) may hold it in TIME-WAIT for
/// up to a minute, so a refused bind is tried again for 90 s.
async fn bind_fixed(port: u16) -> std::io::Result<TcpListener> {
    let start = Instant::now();
    loop {
        match TcpListener::bind(("127.0.0.1", port)).await {
            Err(e)
                if e.kind() == std::io::ErrorKind::AddrInUse
                    && start.elapsed() < Duration::from_secs(90) =>
            {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            other => return other,
        }
    }
}

async fn answer(mut stream: TcpStream) {
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    let mut chunk = [0u8; 8192];
    loop {
        // One request: its head, then `Content-Length` bytes of body.
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
        let subscription = head.starts_with("post /subscribed ");
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        while buf.len() < head_end + length {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let event: Value =
            serde_json::from_slice(&buf[head_end..head_end + length]).unwrap_or_default();
        buf.drain(..head_end + length);
        let body = if subscription {
            let title = event["data"]["Subscribed"]["node"]["title"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            if let Ok(mut d) = DELIVERED.lock() {
                d.push((title, Instant::now()));
            }
            "{}".to_owned()
        } else {
            json!({ "data": event["data"] }).to_string()
        };
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        if stream.write_all(response.as_bytes()).await.is_err() {
            return;
        }
    }
}
