//! Subscription fan-out (`bench/subscriptions` calls it): N WebSocket subscribers on one server,
//! then events caused by writes, one at a time (latency) and back to back (messages per second),
//! and the server's resident memory per idle subscription.
//!
//! ```text
//! subscriptions run --target KIND=WHERE [--label NAME] [--pid PID] [--subscribers N]
//!                   [--events E] [--burst B] [--concurrency C] [--settle-ms MS]
//!                   [--timeout S] [--threads T] [--sockets-only] [--distinct]
//!                   [--out FILE.json]
//! subscriptions report [--out FILE.md] [--note TEXT]… RESULT.json…
//! ```
//!
//! Targets: `svc=BASE` (an example-model server started with `--service-id bench`, BASE is
//! `http://host:port`; events are `createPost` mutations of its Simple API with its `admin` root
//! token, read through the System API with the master token in `SVC_BENCH_MASTER_TOKEN`) and
//! `postgraphile4=URL` (PostGraphile 4's GraphQL endpoint with `--simple-subscriptions`; events
//! are its own `createPost` mutations, and a trigger on `posts` notifies the `posts` topic).
//!
//! Every subscriber speaks `graphql-ws` (subscriptions-transport-ws): `connection_init`,
//! `connection_ack`, `start`, then `data` messages; keep-alives (`ka`) are ignored. Each event's
//! post has a title naming the event's number, so a message is counted for its event. A run:
//! read the server's VmRSS, connect and subscribe all N (at most C sockets in their handshake at
//! once), wait the settle time and read VmRSS again (the idle figure: no event yet), cause one
//! warm-up event that every subscriber must get (it proves every subscription listens; not
//! measured), wait the settle time and read VmRSS (after one event: what the fan-out of an event
//! left the allocator holding), then E events one at a time (each waits until every subscriber
//! has it, or the timeout), then B events back to back (each write waits for its response, not
//! for the deliveries). Latencies run from the instant just before the write is sent to the first and to
//! the last subscriber's receipt. The JSON result goes to `--out` (or stdout); the run exits with
//! status 1 when a subscriber missed an event or failed to subscribe. Before it opens the N
//! sockets, it waits until one socket gets `connection_ack` (PostGraphile 4 listens before it
//! serves WebSockets). `--sockets-only` opens and initialises the N sockets without starting a
//! subscription and reports the resident memory per socket (what a subscription adds to its
//! socket is the difference with a full run's idle figure). `--distinct` gives every subscriber
//! a text of its own (an alias named after it in the payload's selection), so that no two share
//! an evaluation: svc then forms one group per subscriber, as for subscribers with their own
//! tokens. For svc, the run also reads `/status/subscriptions` before and after the measured
//! events, for the groups, payloads resolved and node reads per event.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::{Notify, Semaphore, watch};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// The service id every svc server of the benchmark is started with.
const SERVICE: &str = "bench";
/// The label of the peer in reports (ratios are svc ÷ this).
const PEER: &str = "postgraphile4";
/// Goals of the fan-out issue.
const GOAL_THROUGHPUT: f64 = 3.0;
const GOAL_P50_MS: f64 = 10.0;
const GOAL_P50_AT: u64 = 1000;
const GOAL_KB: f64 = 30.0;
const GOAL_KB_AT: u64 = 10_000;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("run") => run_command(&args[1..]),
        Some("report") => report_command(&args[1..]).map(|()| true),
        _ => Err("usage: subscriptions run|report [options] (see the file's header)".into()),
    };
    match result {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("subscriptions: {e}");
            std::process::exit(2);
        }
    }
}

// ---------------------------------------------------------------- targets

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Svc,
    PostGraphile4,
}

#[derive(Debug, Clone)]
struct Target {
    kind: Kind,
    /// Where writes go (a GraphQL endpoint over HTTP).
    http: String,
    /// Where subscribers connect.
    ws: String,
    /// svc's Simple API base, for its root token.
    base: String,
}

impl Target {
    fn parse(spec: &str) -> Result<Target, String> {
        let (kind, place) = spec
            .split_once('=')
            .ok_or_else(|| format!("--target {spec}: expected KIND=WHERE"))?;
        let place = place.trim_end_matches('/');
        let ws_of = |http: &str| {
            http.strip_prefix("http://")
                .map(|rest| format!("ws://{rest}"))
                .ok_or_else(|| format!("--target {spec}: expected an http:// address"))
        };
        match kind {
            "svc" => {
                let http = format!("{place}/simple/v1/{SERVICE}");
                Ok(Target {
                    kind: Kind::Svc,
                    ws: ws_of(&http)?,
                    http,
                    base: place.to_owned(),
                })
            }
            "postgraphile4" => Ok(Target {
                kind: Kind::PostGraphile4,
                ws: ws_of(place)?,
                http: place.to_owned(),
                base: place.to_owned(),
            }),
            other => Err(format!("--target {spec}: unknown kind `{other}`")),
        }
    }

    /// The subscription every subscriber starts: posts as they are created. With `distinct`,
    /// subscriber `i`'s text has an alias of its own (`s<i>`) in the payload's selection.
    fn subscription(&self, i: usize, distinct: bool) -> String {
        let alias = if distinct {
            match self.kind {
                Kind::Svc => format!(" s{i}: mutation"),
                Kind::PostGraphile4 => format!(" s{i}: relatedNodeId"),
            }
        } else {
            String::new()
        };
        match self.kind {
            Kind::Svc => format!(
                "subscription {{ Post(filter: {{mutation_in: [CREATED]}}) {{ mutation{alias} node {{ id title slug }} }} }}"
            ),
            Kind::PostGraphile4 => format!(
                "subscription {{ listen(topic: \"posts\") {{ relatedNodeId{alias} relatedNode {{ ... on Post {{ id title slug }} }} }} }}"
            ),
        }
    }

    /// The mutation that creates a post, and where its id sits in the response.
    fn mutation(&self) -> (&'static str, &'static str) {
        match self.kind {
            Kind::Svc => (
                "mutation ($slug: String!, $title: String!) { createPost(slug: $slug, title: $title) { id } }",
                "/data/createPost/id",
            ),
            Kind::PostGraphile4 => (
                "mutation ($slug: String!, $title: String!) { createPost(input: {post: {slug: $slug, title: $title}}) { post { id } } }",
                "/data/createPost/post/id",
            ),
        }
    }
}

// ---------------------------------------------------------------- the run's arguments

#[derive(Debug)]
struct RunArgs {
    target: Target,
    label: String,
    pid: Option<u32>,
    subscribers: usize,
    events: usize,
    burst: usize,
    concurrency: usize,
    settle: Duration,
    timeout: Duration,
    threads: usize,
    /// Open and initialise the sockets but start no subscription; measure memory only.
    sockets_only: bool,
    /// Every subscriber's text its own: no two share a group.
    distinct: bool,
    out: Option<PathBuf>,
}

fn run_args(args: &[String]) -> Result<RunArgs, String> {
    let mut target = None;
    let mut out = RunArgs {
        target: Target {
            kind: Kind::Svc,
            http: String::new(),
            ws: String::new(),
            base: String::new(),
        },
        label: String::new(),
        pid: None,
        subscribers: 1000,
        events: 10,
        burst: 10,
        concurrency: 200,
        settle: Duration::from_millis(500),
        timeout: Duration::from_secs(60),
        threads: 1,
        sockets_only: false,
        distinct: false,
        out: None,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{arg} needs a value"));
        let number = |v: &String| {
            v.parse::<usize>()
                .map_err(|e| format!("{arg}: not a number: {v} ({e})"))
        };
        match arg.as_str() {
            "--target" => target = Some(Target::parse(value()?)?),
            "--label" => out.label = value()?.clone(),
            "--pid" => out.pid = Some(number(value()?)? as u32),
            "--subscribers" => out.subscribers = number(value()?)?,
            "--events" => out.events = number(value()?)?,
            "--burst" => out.burst = number(value()?)?,
            "--concurrency" => out.concurrency = number(value()?)?.max(1),
            "--settle-ms" => out.settle = Duration::from_millis(number(value()?)? as u64),
            "--timeout" => out.timeout = Duration::from_secs(number(value()?)? as u64),
            "--threads" => out.threads = number(value()?)?.max(1),
            "--sockets-only" => out.sockets_only = true,
            "--distinct" => out.distinct = true,
            "--out" => out.out = Some(PathBuf::from(value()?)),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    out.target = target.ok_or("run needs --target KIND=WHERE")?;
    if out.label.is_empty() {
        out.label = match out.target.kind {
            Kind::Svc => "svc".into(),
            Kind::PostGraphile4 => PEER.into(),
        };
    }
    if out.subscribers == 0 {
        return Err("--subscribers must be at least 1".into());
    }
    Ok(out)
}

fn run_command(args: &[String]) -> Result<bool, String> {
    let args = run_args(args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let result = runtime.block_on(run(&args))?;
    let ok = result["ok"].as_bool() == Some(true);
    let text = serde_json::to_string_pretty(&result).map_err(|e| e.to_string())?;
    match &args.out {
        Some(path) => std::fs::write(path, text + "\n")
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?,
        None => println!("{text}"),
    }
    Ok(ok)
}

// ---------------------------------------------------------------- what the subscribers record

/// Deliveries per event, shared by every subscriber's task. Times are nanoseconds since `base`.
struct Tally {
    base: Instant,
    /// The event names' marker: `fanout <nonce> event <i>` is event `i`'s title.
    marker: String,
    /// How many subscribers each event must reach (set once every socket has subscribed).
    expected: AtomicUsize,
    delivered: Vec<AtomicUsize>,
    first: Vec<AtomicU64>,
    last: Vec<AtomicU64>,
    /// Woken when an event reaches every subscriber.
    complete: Notify,
    /// Messages that were neither keep-alives nor an event's data.
    unexpected: AtomicUsize,
    first_unexpected: Mutex<Option<String>>,
}

impl Tally {
    fn new(events: usize, marker: String) -> Tally {
        Tally {
            base: Instant::now(),
            marker,
            expected: AtomicUsize::new(usize::MAX),
            delivered: (0..events).map(|_| AtomicUsize::new(0)).collect(),
            first: (0..events).map(|_| AtomicU64::new(u64::MAX)).collect(),
            last: (0..events).map(|_| AtomicU64::new(0)).collect(),
            complete: Notify::new(),
            unexpected: AtomicUsize::new(0),
            first_unexpected: Mutex::new(None),
        }
    }

    fn now(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64
    }

    /// Counts a message; the event it carries, if any.
    fn receive(&self, text: &str) -> Option<usize> {
        if text.contains(r#""type":"ka""#) {
            return None;
        }
        let event = text
            .find(&self.marker)
            .map(|at| &text[at + self.marker.len()..])
            .and_then(|rest| {
                let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
                rest[..digits].parse::<usize>().ok()
            })
            .filter(|&i| i < self.delivered.len())
            .filter(|_| text.contains(r#""type":"data""#) && !text.contains(r#""errors""#));
        match event {
            Some(i) => {
                let now = self.now();
                self.first[i].fetch_min(now, Ordering::Relaxed);
                self.last[i].fetch_max(now, Ordering::Relaxed);
                let count = self.delivered[i].fetch_add(1, Ordering::AcqRel) + 1;
                if count == self.expected.load(Ordering::Acquire) {
                    self.complete.notify_one();
                }
            }
            None => self.unexpected(text),
        }
        event
    }

    fn unexpected(&self, text: &str) {
        self.unexpected.fetch_add(1, Ordering::Relaxed);
        let mut first = self
            .first_unexpected
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if first.is_none() {
            *first = Some(text.chars().take(300).collect());
        }
    }

    /// Waits until events `range` have reached every subscriber, or `deadline`; whether they did.
    async fn wait_all(
        &self,
        range: std::ops::Range<usize>,
        deadline: tokio::time::Instant,
    ) -> bool {
        let expected = self.expected.load(Ordering::Acquire);
        loop {
            let notified = self.complete.notified();
            if range
                .clone()
                .all(|i| self.delivered[i].load(Ordering::Acquire) >= expected)
            {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return false;
            }
        }
    }
}

/// How one subscriber's socket went.
#[derive(Debug, Default)]
struct Outcome {
    subscribed: bool,
    /// Messages per event.
    seen: Vec<u32>,
    /// Why it failed to subscribe, or why it ended early.
    error: Option<String>,
    /// The server closed the socket before the run ended.
    closed_early: bool,
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Opens a `graphql-ws` socket to `target` and waits for `connection_ack`; then starts the
/// subscription `query`, if any.
async fn open(target: &Target, query: Option<&str>) -> Result<Socket, String> {
    let mut request = target
        .ws
        .as_str()
        .into_client_request()
        .map_err(|e| format!("bad URL {}: {e}", target.ws))?;
    request.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        HeaderValue::from_static("graphql-ws"),
    );
    // Small buffers: ten thousand sockets in one process.
    let config = WebSocketConfig::default()
        .read_buffer_size(4096)
        .write_buffer_size(0);
    let (mut ws, _) = tokio_tungstenite::connect_async_with_config(request, Some(config), true)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let init = json!({ "type": "connection_init", "payload": {} });
    ws.send(Message::text(init.to_string()))
        .await
        .map_err(|e| format!("connection_init: {e}"))?;
    loop {
        match ws.next().await {
            Some(Ok(Message::Text(text))) => {
                if text.contains(r#""type":"connection_ack""#) {
                    break;
                }
                if !text.contains(r#""type":"ka""#) {
                    return Err(format!("expected connection_ack, got {text}"));
                }
            }
            Some(Ok(Message::Close(frame))) => {
                return Err(format!("closed before connection_ack: {frame:?}"));
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(format!("before connection_ack: {e}")),
            None => return Err("closed before connection_ack".into()),
        }
    }
    if let Some(query) = query {
        let start = json!({ "id": "1", "type": "start", "payload": { "query": query } });
        ws.send(Message::text(start.to_string()))
            .await
            .map_err(|e| format!("start: {e}"))?;
    }
    Ok(ws)
}

/// Waits until the server answers a socket with `connection_ack` (a server may listen before it
/// serves WebSockets: PostGraphile 4 attaches its upgrade handler once its schema is built, and
/// answers an upgrade before that with 405), up to `patience`.
async fn wait_ready(target: &Target, patience: Duration) -> Result<(), String> {
    let deadline = Instant::now() + patience;
    loop {
        let attempt = tokio::time::timeout(Duration::from_secs(10), open(target, None)).await;
        match attempt {
            Ok(Ok(mut ws)) => {
                let _ = ws.close(None).await;
                return Ok(());
            }
            Ok(Err(e)) if Instant::now() >= deadline => {
                return Err(format!("{} does not serve subscriptions: {e}", target.ws));
            }
            Err(_) if Instant::now() >= deadline => {
                return Err(format!("{} does not answer connection_init", target.ws));
            }
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// One subscriber: connects, subscribes to `query` (if any), then counts messages until `stop`.
async fn subscriber(
    target: Arc<Target>,
    query: Option<String>,
    gate: Arc<Semaphore>,
    tally: Arc<Tally>,
    ready: Arc<(AtomicUsize, Notify)>,
    mut stop: watch::Receiver<bool>,
) -> Outcome {
    let mut outcome = Outcome {
        seen: vec![0; tally.delivered.len()],
        ..Outcome::default()
    };
    let handshake = async {
        let _permit = gate.acquire().await.map_err(|e| e.to_string())?;
        open(&target, query.as_deref()).await
    };
    let result = tokio::time::timeout(Duration::from_secs(60), handshake).await;
    let ws = match result {
        Ok(Ok(ws)) => Some(ws),
        Ok(Err(e)) => {
            outcome.error = Some(e);
            None
        }
        Err(_) => {
            outcome.error = Some("no connection_ack within 60 s".into());
            None
        }
    };
    outcome.subscribed = ws.is_some();
    ready.0.fetch_add(1, Ordering::AcqRel);
    ready.1.notify_one();
    let Some(mut ws) = ws else {
        return outcome;
    };
    loop {
        tokio::select! {
            message = ws.next() => match message {
                Some(Ok(Message::Text(text))) => {
                    if let Some(i) = tally.receive(&text) {
                        outcome.seen[i] += 1;
                    }
                }
                Some(Ok(Message::Close(frame))) => {
                    outcome.closed_early = true;
                    outcome.error = Some(format!("closed by the server: {frame:?}"));
                    break;
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    outcome.closed_early = true;
                    outcome.error = Some(format!("socket error: {e}"));
                    break;
                }
                None => {
                    outcome.closed_early = true;
                    outcome.error = Some("closed by the server".into());
                    break;
                }
            },
            _ = stop.changed() => {
                let _ = tokio::time::timeout(Duration::from_secs(2), ws.close(None)).await;
                break;
            }
        }
    }
    outcome
}

// ---------------------------------------------------------------- the server's process

/// VmRSS of `pid` in KiB.
fn rss_kib(pid: Option<u32>) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", pid?)).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// CPU time (user and system) `pid` has used so far, from `/proc/<pid>/stat`.
fn cpu_seconds(pid: Option<u32>) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid?)).ok()?;
    // The fields after the command name (in parentheses, may hold spaces): utime and stime are
    // the 14th and 15th fields of the line.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    let per_second = std::env::var("SVC_BENCH_CLK_TCK")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(100);
    Some(ticks as f64 / per_second.max(1) as f64)
}

// ---------------------------------------------------------------- writes

struct Writer {
    client: reqwest::Client,
    target: Arc<Target>,
    token: Option<String>,
    nonce: String,
}

impl Writer {
    /// Creates event `i`'s post; the write's round trip.
    async fn write(&self, i: usize) -> Result<Duration, String> {
        let (query, id) = self.target.mutation();
        let variables = json!({
            "slug": format!("fanout-{}-{i}", self.nonce),
            "title": format!("fanout {} event {i}", self.nonce),
        });
        let started = Instant::now();
        let res = svc_bench::post(
            &self.client,
            &self.target.http,
            self.token.as_deref(),
            query,
            &variables,
        )
        .await?;
        let took = started.elapsed();
        if res.pointer(id).is_none_or(Value::is_null) {
            return Err(format!("the write of event {i} failed: {res}"));
        }
        Ok(took)
    }

    /// svc's `/status/subscriptions` (what its subscriptions are and have done); `None` for
    /// other servers or when it cannot be read.
    async fn status(&self) -> Option<Value> {
        if self.target.kind != Kind::Svc {
            return None;
        }
        let url = format!("{}/status/subscriptions", self.target.base);
        let res = self.client.get(url).send().await.ok()?;
        res.json::<Value>().await.ok()
    }
}

/// What svc's counters in `/status/subscriptions` grew by over `events` events, per event (a
/// counter the server does not have, as an older build, is `null`), and its groups then.
fn counters(before: Option<&Value>, after: Option<&Value>, events: usize) -> Value {
    let (Some(before), Some(after)) = (before, after) else {
        return Value::Null;
    };
    let per_event = |key: &str| match (before[key].as_u64(), after[key].as_u64()) {
        (Some(b), Some(a)) if events > 0 => json!(a.saturating_sub(b) as f64 / events as f64),
        _ => Value::Null,
    };
    json!({
        "groups": after["groups"],
        "evaluations_per_event": per_event("evaluations"),
        "node_reads_per_event": per_event("nodeReads"),
        "check_statements_per_event": per_event("checkStatements"),
    })
}

// ---------------------------------------------------------------- one run

fn ms(nanos: u64) -> f64 {
    nanos as f64 / 1e6
}

/// The nearest-rank percentile `p` (0–100) of `sorted`.
fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    Some(sorted[rank.min(sorted.len()) - 1])
}

fn sorted(mut values: Vec<f64>) -> Vec<f64> {
    values.sort_by(f64::total_cmp);
    values
}

async fn run(args: &RunArgs) -> Result<Value, String> {
    let target = Arc::new(args.target.clone());
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let token = match target.kind {
        Kind::Svc => {
            let master = std::env::var("SVC_BENCH_MASTER_TOKEN")
                .map_err(|_| "SVC_BENCH_MASTER_TOKEN is not set")?;
            Some(svc_bench::admin_root_token(&client, &target.base, SERVICE, &master).await?)
        }
        Kind::PostGraphile4 => None,
    };
    let nonce = format!(
        "{}{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0)
    );
    let writer = Writer {
        client,
        target: target.clone(),
        token,
        nonce: nonce.clone(),
    };
    // Event 0 is the warm-up, 1..=events one at a time, then the burst.
    let total = 1 + args.events + args.burst;
    let tally = Arc::new(Tally::new(total, format!("fanout {nonce} event ")));
    let n = args.subscribers;
    let label = &args.label;

    wait_ready(&target, Duration::from_secs(60)).await?;
    let rss_before = rss_kib(args.pid);
    let gate = Arc::new(Semaphore::new(args.concurrency));
    let ready = Arc::new((AtomicUsize::new(0), Notify::new()));
    let (stop, stopped) = watch::channel(false);
    let connect_started = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            tokio::spawn(subscriber(
                target.clone(),
                (!args.sockets_only).then(|| target.subscription(i, args.distinct)),
                gate.clone(),
                tally.clone(),
                ready.clone(),
                stopped.clone(),
            ))
        })
        .collect();
    let mut reported = 0;
    loop {
        let notified = ready.1.notified();
        let done = ready.0.load(Ordering::Acquire);
        if done >= n {
            break;
        }
        if done >= reported + n.div_ceil(4).max(1000) {
            reported = done;
            eprintln!("subscriptions: {label}: {done} of {n} sockets through their handshake");
        }
        let _ = tokio::time::timeout(Duration::from_secs(1), notified).await;
    }
    let connect_seconds = connect_started.elapsed().as_secs_f64();
    tokio::time::sleep(args.settle).await;
    if args.sockets_only {
        return sockets_only(args, rss_before, tasks, stop, connect_seconds).await;
    }

    // Who is subscribed now: the tasks that failed have ended.
    let failed_now = tasks.iter().filter(|t| t.is_finished()).count();
    let subscribed = n - failed_now;
    tally.expected.store(subscribed, Ordering::Release);
    let rss_idle = rss_kib(args.pid);
    eprintln!(
        "subscriptions: {label}: {subscribed} of {n} subscribed in {connect_seconds:.1} s; warm-up event"
    );
    let mut write_errors = Vec::new();
    let warm_up_ok = match writer.write(0).await {
        Ok(_) => {
            tally
                .wait_all(0..1, tokio::time::Instant::now() + args.timeout)
                .await
        }
        Err(e) => {
            write_errors.push(e);
            false
        }
    };
    tokio::time::sleep(args.settle).await;
    let rss_one_event = rss_kib(args.pid);
    let status_before = writer.status().await;
    let cpu_before = cpu_seconds(args.pid);
    let own_cpu_before = cpu_seconds(Some(std::process::id()));

    // One at a time.
    let mut writes = Vec::new();
    let mut timed_out = 0;
    // When each event's write started (the warm-up's is not measured).
    let mut started_at = vec![0u64];
    for i in 1..=args.events {
        started_at.push(tally.now());
        match writer.write(i).await {
            Ok(took) => writes.push(took.as_secs_f64() * 1000.0),
            Err(e) => {
                write_errors.push(e);
                continue;
            }
        }
        let deadline = tokio::time::Instant::now() + args.timeout;
        if !tally.wait_all(i..i + 1, deadline).await {
            timed_out += 1;
        }
    }

    // Back to back.
    let burst = 1 + args.events..total;
    let burst_started = tally.now();
    for i in burst.clone() {
        started_at.push(tally.now());
        if let Err(e) = writer.write(i).await {
            write_errors.push(e);
        }
    }
    let burst_complete = tally
        .wait_all(
            burst.clone(),
            tokio::time::Instant::now() + args.timeout * 2,
        )
        .await;
    let cpu_after = cpu_seconds(args.pid);
    let own_cpu_after = cpu_seconds(Some(std::process::id()));
    let rss_after = rss_kib(args.pid);
    let status_after = writer.status().await;

    let _ = stop.send(true);
    let mut outcomes = Vec::with_capacity(n);
    for task in tasks {
        outcomes.push(
            task.await
                .map_err(|e| format!("a subscriber panicked: {e}"))?,
        );
    }

    // Per event, of the subscribed sockets.
    let delivered: Vec<usize> = tally
        .delivered
        .iter()
        .map(|d| d.load(Ordering::Acquire))
        .collect();
    let last_ms = |i: usize| {
        let last = tally.last[i].load(Ordering::Acquire);
        (delivered[i] > 0).then(|| ms(last.saturating_sub(started_at[i])))
    };
    let first_ms = |i: usize| {
        let first = tally.first[i].load(Ordering::Acquire);
        (delivered[i] > 0).then(|| ms(first.saturating_sub(started_at[i])))
    };
    let one = 1..1 + args.events;
    let lasts = sorted(one.clone().filter_map(last_ms).collect());
    let firsts = sorted(one.clone().filter_map(first_ms).collect());
    let writes = sorted(writes);
    let burst_messages: usize = burst.clone().map(|i| delivered[i]).sum();
    let burst_end = burst
        .clone()
        .filter(|&i| delivered[i] > 0)
        .map(|i| tally.last[i].load(Ordering::Acquire))
        .max()
        .unwrap_or(burst_started);
    let burst_seconds = ms(burst_end.saturating_sub(burst_started)) / 1000.0;
    let messages_per_second =
        (burst_messages > 0 && burst_seconds > 0.0).then(|| burst_messages as f64 / burst_seconds);
    let measured_messages: usize = (1..total).map(|i| delivered[i]).sum();
    let missed: usize = (0..total)
        .map(|i| subscribed.saturating_sub(delivered[i]))
        .sum();
    let duplicates: u64 = outcomes
        .iter()
        .flat_map(|o| o.seen.iter())
        .map(|&c| u64::from(c.saturating_sub(1)))
        .sum();
    let closed_early = outcomes.iter().filter(|o| o.closed_early).count();
    let failed: Vec<&Outcome> = outcomes.iter().filter(|o| !o.subscribed).collect();
    let first_failure = failed.first().and_then(|o| o.error.clone());
    let first_closed = outcomes
        .iter()
        .find(|o| o.closed_early)
        .and_then(|o| o.error.clone());
    let per_subscription = |rss: Option<u64>| match (rss_before, rss) {
        (Some(before), Some(rss)) if subscribed > 0 => {
            Some((rss as f64 - before as f64) / subscribed as f64)
        }
        _ => None,
    };
    let per_subscription_kib = per_subscription(rss_idle);
    let per_message_us = |before: Option<f64>, after: Option<f64>| match (before, after) {
        (Some(before), Some(after)) if measured_messages > 0 => {
            Some((after - before) * 1e6 / measured_messages as f64)
        }
        _ => None,
    };
    let cpu_per_message_us = per_message_us(cpu_before, cpu_after);
    let client_cpu_per_message_us = per_message_us(own_cpu_before, own_cpu_after);
    let unexpected = tally.unexpected.load(Ordering::Acquire);
    let ok = failed.is_empty()
        && missed == 0
        && closed_early == 0
        && write_errors.is_empty()
        && duplicates == 0
        && unexpected == 0;
    let summary = json!({
        "label": label,
        "kind": match target.kind { Kind::Svc => "svc", Kind::PostGraphile4 => PEER },
        "subscribers": n,
        "distinct": args.distinct,
        "subscribed": subscribed,
        "events": args.events,
        "burst": args.burst,
        "connect_seconds": connect_seconds,
        "warm_up_complete": warm_up_ok,
        "latency_last_ms": { "p50": percentile(&lasts, 50.0), "p99": percentile(&lasts, 99.0), "max": lasts.last() },
        "latency_first_ms": { "p50": percentile(&firsts, 50.0), "p99": percentile(&firsts, 99.0) },
        "write_ms": { "p50": percentile(&writes, 50.0), "max": writes.last() },
        "last_ms": lasts,
        "first_ms": firsts,
        "writes_ms": writes,
        "events_timed_out": timed_out,
        "burst_complete": burst_complete,
        "burst_messages": burst_messages,
        "burst_seconds": burst_seconds,
        "messages_per_second": messages_per_second,
        "rss_kib": { "before": rss_before, "idle": rss_idle, "after_one_event": rss_one_event, "after": rss_after },
        "idle_kib_per_subscription": per_subscription_kib,
        "kib_per_subscription_after_one_event": per_subscription(rss_one_event),
        "server_cpu_us_per_message": cpu_per_message_us,
        "client_cpu_us_per_message": client_cpu_per_message_us,
        "delivered_per_event": delivered,
        "missed": missed,
        "duplicates": duplicates,
        "unexpected_messages": unexpected,
        "first_unexpected": tally.first_unexpected.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        "failed_to_subscribe": failed.len(),
        "first_failure": first_failure,
        "closed_early": closed_early,
        "first_closed": first_closed,
        "write_errors": write_errors,
        "server_counters": counters(status_before.as_ref(), status_after.as_ref(), total - 1),
        "ok": ok,
    });
    let f = |v: Option<f64>| v.map_or("—".to_owned(), |v| format!("{v:.1}"));
    eprintln!(
        "subscriptions: {label}: {n} × {}: last subscriber p50 {} ms, p99 {} ms; burst {} messages/s; idle {} KiB per subscription; missed {missed}{}",
        args.events,
        f(percentile(&lasts, 50.0)),
        f(percentile(&lasts, 99.0)),
        messages_per_second.map_or("—".to_owned(), |v| format!("{v:.0}")),
        f(per_subscription_kib),
        if ok { "" } else { " (FAILED, see the result)" },
    );
    Ok(summary)
}

/// The end of a `--sockets-only` run: the resident memory per open, initialised socket with no
/// subscription.
async fn sockets_only(
    args: &RunArgs,
    rss_before: Option<u64>,
    tasks: Vec<tokio::task::JoinHandle<Outcome>>,
    stop: watch::Sender<bool>,
    connect_seconds: f64,
) -> Result<Value, String> {
    let rss_idle = rss_kib(args.pid);
    let _ = stop.send(true);
    let mut open = 0;
    let mut first_failure = None;
    for task in tasks {
        let outcome = task
            .await
            .map_err(|e| format!("a socket's task panicked: {e}"))?;
        if outcome.subscribed {
            open += 1;
        } else if first_failure.is_none() {
            first_failure = outcome.error;
        }
    }
    let per_socket = match (rss_before, rss_idle) {
        (Some(before), Some(idle)) if open > 0 => Some((idle as f64 - before as f64) / open as f64),
        _ => None,
    };
    eprintln!(
        "subscriptions: {}: {open} of {} sockets open (no subscription) in {connect_seconds:.1} s; {} KiB per socket",
        args.label,
        args.subscribers,
        per_socket.map_or("—".into(), |v| format!("{v:.1}")),
    );
    Ok(json!({
        "label": args.label,
        "sockets_only": true,
        "subscribers": args.subscribers,
        "subscribed": open,
        "connect_seconds": connect_seconds,
        "rss_kib": { "before": rss_before, "idle": rss_idle },
        "idle_kib_per_socket": per_socket,
        "first_failure": first_failure,
        "ok": open == args.subscribers,
    }))
}

// ---------------------------------------------------------------- the report

fn report_command(args: &[String]) -> Result<(), String> {
    let mut out = None;
    let mut notes = Vec::new();
    let mut files = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--out" => out = Some(PathBuf::from(value()?)),
            "--note" => notes.push(value()?.clone()),
            file => files.push(PathBuf::from(file)),
        }
    }
    let mut results = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not a result: {e}", file.display()))?;
        results.push(value);
    }
    // Rounds of one configuration on one server become one row.
    let mut groups: Vec<Vec<Value>> = Vec::new();
    for result in results {
        let key = |r: &Value| (r["label"].clone(), r["subscribers"].clone());
        match groups.iter_mut().find(|g| key(&g[0]) == key(&result)) {
            Some(group) => group.push(result),
            None => groups.push(vec![result]),
        }
    }
    let merged: Vec<Value> = groups.iter().map(|g| merge(g)).collect();
    let text = markdown(&merged, &notes);
    print!("{text}");
    if let Some(path) = out {
        std::fs::write(&path, &text)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

/// One row from the rounds of a configuration: latencies over all their events, messages/s over
/// all their bursts, memory and CPU as the rounds' mean, failures summed.
fn merge(rounds: &[Value]) -> Value {
    let pooled = |field: &str| {
        sorted(
            rounds
                .iter()
                .filter_map(|r| r[field].as_array())
                .flatten()
                .filter_map(Value::as_f64)
                .collect(),
        )
    };
    let mean = |path: &str| {
        let values: Vec<f64> = rounds
            .iter()
            .filter_map(|r| r.pointer(path).and_then(Value::as_f64))
            .collect();
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
    };
    let sum = |field: &str| rounds.iter().filter_map(|r| r[field].as_u64()).sum::<u64>();
    let first = |field: &str| {
        rounds
            .iter()
            .map(|r| r[field].clone())
            .find(|v| !v.is_null())
            .unwrap_or(Value::Null)
    };
    let rates = |field: &str| -> Vec<Value> { rounds.iter().map(|r| r[field].clone()).collect() };
    let lasts = pooled("last_ms");
    let firsts = pooled("first_ms");
    let writes = pooled("writes_ms");
    let burst_seconds: f64 = rounds
        .iter()
        .filter_map(|r| r["burst_seconds"].as_f64())
        .sum();
    let burst_messages = sum("burst_messages");
    let write_errors: Vec<Value> = rounds
        .iter()
        .filter_map(|r| r["write_errors"].as_array())
        .flatten()
        .cloned()
        .collect();
    json!({
        "label": rounds[0]["label"],
        "kind": rounds[0]["kind"],
        "subscribers": rounds[0]["subscribers"],
        "subscribed": rounds.iter().filter_map(|r| r["subscribed"].as_u64()).min(),
        "events": rounds[0]["events"],
        "burst": rounds[0]["burst"],
        "rounds": rounds.len(),
        "latency_last_ms": { "p50": percentile(&lasts, 50.0), "p99": percentile(&lasts, 99.0), "max": lasts.last() },
        "latency_first_ms": { "p50": percentile(&firsts, 50.0), "p99": percentile(&firsts, 99.0) },
        "write_ms": { "p50": percentile(&writes, 50.0), "max": writes.last() },
        "messages_per_second": (burst_seconds > 0.0 && burst_messages > 0).then(|| burst_messages as f64 / burst_seconds),
        "messages_per_second_rounds": rates("messages_per_second"),
        "server_cpu_us_per_message": mean("/server_cpu_us_per_message"),
        "client_cpu_us_per_message": mean("/client_cpu_us_per_message"),
        "rss_kib": {
            "before": mean("/rss_kib/before"),
            "idle": mean("/rss_kib/idle"),
            "after_one_event": mean("/rss_kib/after_one_event"),
        },
        "idle_kib_per_subscription": mean("/idle_kib_per_subscription"),
        "idle_kib_per_subscription_rounds": rates("idle_kib_per_subscription"),
        "kib_per_subscription_after_one_event": mean("/kib_per_subscription_after_one_event"),
        "missed": sum("missed"),
        "duplicates": sum("duplicates"),
        "unexpected_messages": sum("unexpected_messages"),
        "first_unexpected": first("first_unexpected"),
        "failed_to_subscribe": sum("failed_to_subscribe"),
        "first_failure": first("first_failure"),
        "closed_early": sum("closed_early"),
        "first_closed": first("first_closed"),
        "write_errors": write_errors,
        "distinct": rounds[0]["distinct"],
        "server_counters": rounds[rounds.len() - 1]["server_counters"],
        "ok": rounds.iter().all(|r| r["ok"].as_bool() == Some(true)),
    })
}

/// `value`, and the rounds' values in parentheses when there were several.
fn with_rounds(value: &Value, rounds: &Value, decimals: usize) -> String {
    let each: Vec<String> = rounds
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| number(v, decimals))
        .collect();
    if each.len() > 1 {
        format!("{} ({})", number(value, decimals), each.join(", "))
    } else {
        number(value, decimals)
    }
}

fn name(label: &str) -> String {
    match label {
        "svc-sqlite" => "svc (SQLite)".into(),
        "svc-postgres" => "svc (PostgreSQL)".into(),
        "svc-sqlite-baseline" => "svc baseline (SQLite)".into(),
        "svc-postgres-baseline" => "svc baseline (PostgreSQL)".into(),
        PEER => "PostGraphile 4".into(),
        other => other.into(),
    }
}

fn number(value: &Value, decimals: usize) -> String {
    match value.as_f64() {
        Some(v) => format!("{v:.decimals$}"),
        None => "—".into(),
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

fn times(r: Option<f64>) -> String {
    r.map_or("—".into(), |r| format!("{r:.2}×"))
}

/// The merged result of `label` at `size` subscribers.
fn find<'a>(results: &'a [Value], label: &str, size: u64) -> Option<&'a Value> {
    results
        .iter()
        .find(|r| r["label"] == label && r["subscribers"].as_u64() == Some(size))
}

/// The number at `path` of a result.
fn get(r: Option<&Value>, path: &str) -> Option<f64> {
    r.and_then(|r| r.pointer(path)).and_then(Value::as_f64)
}

/// The report's sections on svc's own counters (from `/status/subscriptions`) and, for each
/// `<label>-baseline` measured, `<label>` ÷ its baseline.
fn counters_and_baselines(out: &mut String, results: &[Value], sizes: &[u64], svcs: &[String]) {
    let find = |label: &str, size: u64| find(results, label, size);
    if results.iter().any(|r| r["server_counters"].is_object()) {
        out.push_str("\n## svc's counters per event\n\n");
        out.push_str("From `GET /status/subscriptions` before and after the measured events (docs/extensions.md), the last round's: the groups then (subscriptions sharing one evaluation), and per event the payloads resolved, the reads of the event's node and the statements that checked `node` filters. A counter the build does not have is \"—\".\n\n");
        out.push_str("| server | subscribers | groups | payloads resolved per event | node reads per event | filter statements per event |\n");
        out.push_str("|---|--:|--:|--:|--:|--:|\n");
        for size in sizes {
            for label in svcs {
                let Some(c) = find(label, *size).map(|r| &r["server_counters"]) else {
                    continue;
                };
                if !c.is_object() {
                    continue;
                }
                let _ = writeln!(
                    out,
                    "| {} | {size} | {} | {} | {} | {} |",
                    name(label),
                    number(&c["groups"], 0),
                    number(&c["evaluations_per_event"], 1),
                    number(&c["node_reads_per_event"], 1),
                    number(&c["check_statements_per_event"], 1),
                );
            }
        }
    }
    let pairs: Vec<(&String, String)> = svcs
        .iter()
        .filter(|l| !l.ends_with("-baseline"))
        .map(|l| (l, format!("{l}-baseline")))
        .filter(|(_, b)| svcs.contains(b))
        .collect();
    if pairs.is_empty() {
        return;
    }
    out.push_str("\n## svc ÷ its baseline\n\n");
    out.push_str("The build under test against the baseline build, measured in the same rounds on servers of their own. Messages/s: higher is better; latency and CPU per message: lower is better.\n\n");
    out.push_str(
        "| server | subscribers | messages/s | last subscriber p50 | server CPU per message |\n",
    );
    out.push_str("|---|--:|--:|--:|--:|\n");
    for size in sizes {
        for (label, baseline) in &pairs {
            let (r, b) = (find(label, *size), find(baseline, *size));
            if r.is_none() || b.is_none() {
                continue;
            }
            let _ = writeln!(
                out,
                "| {} | {size} | {} | {} | {} |",
                name(label),
                times(ratio(
                    get(r, "/messages_per_second"),
                    get(b, "/messages_per_second")
                )),
                times(ratio(
                    get(r, "/latency_last_ms/p50"),
                    get(b, "/latency_last_ms/p50")
                )),
                times(ratio(
                    get(r, "/server_cpu_us_per_message"),
                    get(b, "/server_cpu_us_per_message")
                )),
            );
        }
    }
}

fn markdown(results: &[Value], notes: &[String]) -> String {
    let mut out = String::from("# Benchmark: subscription fan-out, svc against PostGraphile 4\n\n");
    for note in notes {
        let _ = writeln!(out, "- {note}");
    }
    if !notes.is_empty() {
        out.push('\n');
    }
    let mut sizes: Vec<u64> = results
        .iter()
        .filter_map(|r| r["subscribers"].as_u64())
        .collect();
    sizes.sort_unstable();
    sizes.dedup();

    out.push_str("## Fan-out\n\n");
    out.push_str("Latency: from just before the write is sent until the first / the last subscriber has the event's message, over the events caused one at a time (each waits for every subscriber). Each row pools the events of every round (a round starts the server afresh): percentiles are nearest-rank over them, so under 100 events p99 is the slowest event. Messages/s: the bursts' messages ÷ the time from each burst's first write to its last delivery, summed over the rounds (each round's figure in parentheses). CPU per message: the process's user and system time over the measured events (the one-at-a-time and the burst) ÷ their messages; PostgreSQL's own CPU is not in it.\n\n");
    out.push_str("| server | subscribers × events | last subscriber p50 (ms) | p99 (ms) | first subscriber p50 (ms) | write round trip p50 (ms) | burst messages/s | server CPU per message (µs) | load client's CPU per message (µs) | missed | failed / closed sockets |\n");
    out.push_str("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for size in &sizes {
        for r in results
            .iter()
            .filter(|r| r["subscribers"].as_u64() == Some(*size))
        {
            let _ = writeln!(
                out,
                "| {} | {} × {} (+{} burst) | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} |",
                name(r["label"].as_str().unwrap_or("?")),
                size,
                r["events"],
                r["burst"],
                number(&r["latency_last_ms"]["p50"], 1),
                number(&r["latency_last_ms"]["p99"], 1),
                number(&r["latency_first_ms"]["p50"], 1),
                number(&r["write_ms"]["p50"], 1),
                with_rounds(
                    &r["messages_per_second"],
                    &r["messages_per_second_rounds"],
                    0
                ),
                number(&r["server_cpu_us_per_message"], 1),
                number(&r["client_cpu_us_per_message"], 1),
                r["missed"],
                r["failed_to_subscribe"],
                r["closed_early"],
            );
        }
    }

    out.push_str("\n## Memory\n\n");
    out.push_str("Resident memory (VmRSS) of the server's process before the sockets open, with every subscription idle before any event (the settle time after the last subscription started), and after the warm-up event (once every subscriber had it, and the settle time). Per subscription: the growth over `before` ÷ the subscriptions; MiB columns and the figure after one event are the rounds' mean, each round's idle figure in parentheses.\n\n");
    out.push_str(
        "| server | subscriptions | before (MiB) | idle, no event yet (MiB) | after one event (MiB) | per idle subscription (KiB) | per subscription after one event (KiB) |\n",
    );
    out.push_str("|---|--:|--:|--:|--:|--:|--:|\n");
    let mib = |v: &Value| {
        v.as_f64()
            .map_or("—".into(), |k| format!("{:.1}", k / 1024.0))
    };
    for size in &sizes {
        for r in results
            .iter()
            .filter(|r| r["subscribers"].as_u64() == Some(*size))
        {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} |",
                name(r["label"].as_str().unwrap_or("?")),
                r["subscribed"],
                mib(&r["rss_kib"]["before"]),
                mib(&r["rss_kib"]["idle"]),
                mib(&r["rss_kib"]["after_one_event"]),
                with_rounds(
                    &r["idle_kib_per_subscription"],
                    &r["idle_kib_per_subscription_rounds"],
                    1
                ),
                number(&r["kib_per_subscription_after_one_event"], 1),
            );
        }
    }

    // Ratios and goals, per size.
    out.push_str("\n## svc ÷ PostGraphile 4\n\n");
    out.push_str(
        "Messages/s: higher is better for svc; latency and memory: lower is better for svc.\n\n",
    );
    out.push_str("| server | subscribers | messages/s | last subscriber p50 | p99 | KiB per idle subscription |\n");
    out.push_str("|---|--:|--:|--:|--:|--:|\n");
    let find = |label: &str, size: u64| find(results, label, size);
    let mut goals = Vec::new();
    // svc's targets in the order they ran.
    let mut svcs: Vec<String> = Vec::new();
    for r in results.iter().filter(|r| r["kind"] == "svc") {
        if let Some(label) = r["label"].as_str()
            && !svcs.iter().any(|s| s == label)
        {
            svcs.push(label.to_owned());
        }
    }
    for size in &sizes {
        let peer = find(PEER, *size);
        for label in &svcs {
            let Some(r) = find(label, *size) else {
                continue;
            };
            let throughput = ratio(
                get(Some(r), "/messages_per_second"),
                get(peer, "/messages_per_second"),
            );
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                name(label),
                size,
                times(throughput),
                times(ratio(
                    get(Some(r), "/latency_last_ms/p50"),
                    get(peer, "/latency_last_ms/p50")
                )),
                times(ratio(
                    get(Some(r), "/latency_last_ms/p99"),
                    get(peer, "/latency_last_ms/p99")
                )),
                times(ratio(
                    get(Some(r), "/idle_kib_per_subscription"),
                    get(peer, "/idle_kib_per_subscription")
                )),
            );
            if let Some(t) = throughput {
                goals.push(format!(
                    "{} at {size} subscribers: {t:.2}× PostGraphile 4's messages/s (goal at least {GOAL_THROUGHPUT}×): {}",
                    name(label),
                    if t >= GOAL_THROUGHPUT { "met" } else { "not met" }
                ));
            }
            if *size == GOAL_P50_AT
                && let Some(p50) = get(Some(r), "/latency_last_ms/p50")
            {
                goals.push(format!(
                    "{} at {size} subscribers: last subscriber p50 {p50:.1} ms (goal under {GOAL_P50_MS} ms): {}",
                    name(label),
                    if p50 < GOAL_P50_MS { "met" } else { "not met" }
                ));
            }
            if *size == GOAL_KB_AT
                && let Some(kib) = get(Some(r), "/idle_kib_per_subscription")
            {
                goals.push(format!(
                    "{} at {size} subscriptions: {kib:.1} KiB per idle subscription (goal under {GOAL_KB} KB): {}",
                    name(label),
                    if kib * 1.024 < GOAL_KB { "met" } else { "not met" }
                ));
            }
        }
    }
    counters_and_baselines(&mut out, results, &sizes, &svcs);
    if !goals.is_empty() {
        out.push_str("\n## Goals\n\n");
        for goal in goals {
            let _ = writeln!(out, "- {goal}");
        }
    }
    let failures: Vec<String> = results
        .iter()
        .filter(|r| r["ok"].as_bool() != Some(true))
        .map(|r| {
            format!(
                "{} at {}: missed {}, duplicates {}, failed to subscribe {} (first: {}), closed early {} (first: {}), unexpected messages {} (first: {}), write errors {}",
                name(r["label"].as_str().unwrap_or("?")),
                r["subscribers"],
                r["missed"],
                r["duplicates"],
                r["failed_to_subscribe"],
                r["first_failure"],
                r["closed_early"],
                r["first_closed"],
                r["unexpected_messages"],
                r["first_unexpected"],
                r["write_errors"],
            )
        })
        .collect();
    if !failures.is_empty() {
        out.push_str("\n## Failures\n\n");
        for failure in failures {
            let _ = writeln!(out, "- {}", failure.replace(['\n', '|'], " "));
        }
    }
    out
}
