//! The soak benchmark's load driver (`bench/soak` runs it): a mixed load against one example
//! service for a fixed time, sampled at a fixed interval into a CSV file, with a JSON summary.
//!
//! ```text
//! soak --base URL --pid PID --seconds S --csv FILE [--warmup S] [--sample S] [--window S]
//!      [--clients N] [--users N] [--posts-per-user N] [--pool N] [--files N] [--threads N]
//!      [--db-file FILE | --pg-url URL] [--label NAME]
//!      [--p99-tolerance PCT] [--rss-tolerance PCT] [--judge-drift true|false]
//! ```
//!
//! The server is an example-model server started with `--service-id bench`; the driver reads its
//! `admin` root token through the System API with the master token in `SVC_BENCH_MASTER_TOKEN`.
//!
//! 1. Seeds a fixed data set: `--users` users with `--posts-per-user` posts each (nested creates
//!    in `createUser`) and eight categories.
//! 2. Opens three subscribers: every `Post` event over `graphql-transport-ws` on
//!    `/subscriptions/v1/bench`, every `Post` event over `graphql-ws` on `/simple/v1/bench`, and
//!    `CREATED` events of posts whose slug starts with `soak-` (a `node` condition, checked
//!    against the database) over `graphql-transport-ws`. A probe post proves all three listen.
//! 3. Runs `--clients` closed-loop clients (each on its own keep-alive connection, no think time)
//!    for `--warmup` seconds unmeasured, then `--seconds` measured. Each request is drawn from a
//!    fixed mix: reads (filters, ordering, `skip` and `after` pagination, `_all…Meta` counts,
//!    to-one and to-many relations two levels deep, single nodes by id and by slug) 62 %,
//!    mutations 35 % (a post created with nested comments, tags, JSON metadata, an author and
//!    two categories connected; posts and users updated; comments created), file work 3 % (an
//!    upload of a PNG, a resized variant of it twice, the first computed and the second from
//!    the variant store, and a download).
//! 4. Keeps the data set bounded: each client keeps the posts it created in a queue of at most
//!    `--pool` and deletes the oldest (its comments go with it, by the cascade) as soon as a
//!    create takes the queue past that; likewise at most `--files` uploaded files per client,
//!    deleted through `deleteFile` (which removes the stored file and its variants). Updates
//!    only rewrite scalar fields of the seeded posts and users. So the number of posts,
//!    comments and files plateaus after the first `--pool` creates of each client; each sample
//!    records the counts (read through `_all…Meta`) to show it.
//! 5. Every `--sample` seconds writes a CSV row: requests, throughput, p50/p99/max latency (all
//!    requests; p99 per kind: read, write, file), errors, the server's VmRSS (from
//!    /proc/PID/status), the data set's counts, the database's size (the SQLite file with its WAL,
//!    or `pg_database_size` through psql) and the subscription messages received.
//! 6. Afterwards checks that every subscriber got exactly the events of the driver's post
//!    mutations, and that the counts of posts, comments and files are what the queues hold.
//!
//! The summary (stdout, one JSON object) compares the first `--window` seconds of the measured
//! time with the last: p50/p99 over all requests of each window, mean RSS of each window's
//! samples, the drift in %. `pass` is false on any error (transport, non-200 status, GraphQL
//! error, a subscriber closed or missing an event, a wrong count), and, unless `--judge-drift
//! false`, when the last window's p99 or RSS exceeds the first's by more than the tolerances.
//! The exit status is 0 when `pass`, 1 otherwise (2 when the run could not start).

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use svc_bench::http1::{Conn, Endpoint};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

/// The service id every server of the benchmarks is started with.
const SERVICE: &str = "bench";
/// Title words: `title_contains` of one of them selects about a twelfth of the posts.
const WORDS: [&str; 12] = [
    "graphql", "rust", "schema", "server", "query", "index", "async", "model", "table", "cache",
    "cursor", "filter",
];
const CATEGORIES: usize = 8;
/// Error messages printed and kept in the summary, at most.
const ERRORS_KEPT: usize = 20;

// ---------------------------------------------------------------- options

struct Opts {
    base: String,
    pid: u32,
    seconds: u64,
    warmup: u64,
    sample: u64,
    window: u64,
    clients: usize,
    users: usize,
    posts_per_user: usize,
    pool: usize,
    files: usize,
    threads: usize,
    csv: PathBuf,
    db_file: Option<PathBuf>,
    pg_url: Option<String>,
    label: String,
    p99_tolerance: f64,
    rss_tolerance: f64,
    judge_drift: bool,
}

fn opts() -> Result<Opts, String> {
    let mut values = HashMap::new();
    let mut argv = std::env::args().skip(1);
    while let Some(flag) = argv.next() {
        if flag == "-h" || flag == "--help" {
            return Err("see the header of bench/src/bin/soak.rs".into());
        }
        let name = flag
            .strip_prefix("--")
            .ok_or_else(|| format!("unexpected {flag}"))?
            .to_owned();
        let value = argv.next().ok_or_else(|| format!("{flag} needs a value"))?;
        values.insert(name, value);
    }
    let get = |name: &str| -> Result<String, String> {
        values
            .get(name)
            .cloned()
            .ok_or_else(|| format!("--{name} is required"))
    };
    fn num<T: std::str::FromStr>(
        values: &HashMap<String, String>,
        name: &str,
        default: T,
    ) -> Result<T, String> {
        match values.get(name) {
            Some(v) => v
                .parse()
                .map_err(|_| format!("--{name}: not a number: {v}")),
            None => Ok(default),
        }
    }
    let opts = Opts {
        base: get("base")?.trim_end_matches('/').to_owned(),
        pid: get("pid")?.parse().map_err(|_| "--pid: not a number")?,
        seconds: num(&values, "seconds", 600)?,
        warmup: num(&values, "warmup", 20)?,
        sample: num(&values, "sample", 5)?,
        window: num(&values, "window", 60)?,
        clients: num(&values, "clients", 4)?,
        users: num(&values, "users", 50)?,
        posts_per_user: num(&values, "posts-per-user", 10)?,
        pool: num(&values, "pool", 50)?,
        files: num(&values, "files", 4)?,
        threads: num(&values, "threads", 1)?,
        csv: PathBuf::from(get("csv")?),
        db_file: values.get("db-file").map(PathBuf::from),
        pg_url: values.get("pg-url").cloned(),
        label: values.get("label").cloned().unwrap_or_else(|| "svc".into()),
        p99_tolerance: num(&values, "p99-tolerance", 50.0)?,
        rss_tolerance: num(&values, "rss-tolerance", 30.0)?,
        judge_drift: num(&values, "judge-drift", true)?,
    };
    if opts.sample == 0 || opts.seconds < opts.sample {
        return Err("--sample must be at least 1 and at most --seconds".into());
    }
    if opts.clients == 0 || opts.pool == 0 || opts.files == 0 {
        return Err("--clients, --pool and --files must be at least 1".into());
    }
    Ok(opts)
}

fn main() {
    let opts = match opts() {
        Ok(opts) => opts,
        Err(e) => {
            eprintln!("soak: {e}");
            std::process::exit(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(opts.threads.max(1))
        .enable_all()
        .build();
    let result = match runtime {
        Ok(rt) => rt.block_on(run(Arc::new(opts))),
        Err(e) => Err(e.to_string()),
    };
    match result {
        Ok(summary) => {
            println!("{summary}");
            std::process::exit(if summary["pass"] == true { 0 } else { 1 });
        }
        Err(e) => {
            eprintln!("soak: {e}");
            std::process::exit(2);
        }
    }
}

// ---------------------------------------------------------------- randomness

/// splitmix64: small, fast, fully determined by its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn word(&mut self) -> &'static str {
        WORDS[self.below(WORDS.len())]
    }

    fn words(&mut self, n: usize) -> String {
        (0..n).map(|_| self.word()).collect::<Vec<_>>().join(" ")
    }

    fn pick<'a>(&mut self, items: &'a [String]) -> &'a str {
        &items[self.below(items.len())]
    }
}

// ---------------------------------------------------------------- measurements

#[derive(Clone, Copy)]
enum Kind {
    Read = 0,
    Write = 1,
    File = 2,
}

/// What completed since the last sample: latencies in microseconds per kind.
#[derive(Default)]
struct Window {
    latencies: [Vec<u32>; 3],
    errors: u64,
}

#[derive(Default)]
struct Stats {
    /// Whether completed requests count (false during the warm-up).
    measuring: AtomicBool,
    window: Mutex<Window>,
    errors: AtomicU64,
    errors_5xx: AtomicU64,
    error_log: Mutex<Vec<String>>,
    requests: AtomicU64,
    /// The driver's successful post mutations: the events the subscribers must get.
    posts_created: AtomicU64,
    posts_updated: AtomicU64,
    posts_deleted: AtomicU64,
}

impl Stats {
    fn record(&self, kind: Kind, elapsed: Duration) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        if self.measuring.load(Ordering::Relaxed) {
            let micros = elapsed.as_micros().min(u32::MAX as u128) as u32;
            lock(&self.window).latencies[kind as usize].push(micros);
        }
    }

    fn error(&self, what: String) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        lock(&self.window).errors += 1;
        let mut log = lock(&self.error_log);
        if log.len() < ERRORS_KEPT {
            eprintln!("soak: error: {what}");
            log.push(what);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The value at quantile `q` of sorted `values`, in milliseconds.
fn quantile_ms(sorted: &[u32], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    f64::from(sorted[rank - 1]) / 1000.0
}

/// A field of /proc/PID/status in KiB (`VmRSS:`, `VmHWM:`).
/// CPU time (user and system) `pid` has used so far, in seconds, from /proc/PID/stat.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name (in parentheses, which may hold spaces) come the state (field 3)
    // and so on: utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    let per_second: f64 = std::env::var("SVC_BENCH_CLK_TCK")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100.0);
    Some(ticks / per_second)
}

/// The machine's load average over the last minute (it is shared with other work).
fn load1() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_default()
}

fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

// ---------------------------------------------------------------- requests

/// What every task shares.
struct Ctx {
    opts: Arc<Opts>,
    api: Endpoint,
    token: String,
    stats: Stats,
    stop: AtomicBool,
    users: Vec<String>,
    posts: Vec<String>,
    slugs: Vec<String>,
    categories: Vec<String>,
    /// A PNG to upload.
    picture: Vec<u8>,
}

/// Sends a GraphQL request on `conn`; the response's `data`, or `None` after counting an error.
async fn gql(
    conn: &mut Conn<'_>,
    stats: &Stats,
    kind: Kind,
    name: &str,
    query: &str,
    variables: Value,
) -> Option<Value> {
    let body = json!({ "query": query, "variables": variables }).to_string();
    let started = Instant::now();
    let result = conn.post(body.as_bytes(), "request-id").await;
    stats.record(kind, started.elapsed());
    let response = match result {
        Ok(response) => response,
        Err(e) => {
            stats.error(format!("{name}: {e}"));
            return None;
        }
    };
    let text = String::from_utf8_lossy(&response.body);
    let request_id = response.header.as_deref().unwrap_or("?");
    if response.status >= 500 {
        stats.errors_5xx.fetch_add(1, Ordering::Relaxed);
    }
    if response.status != 200 {
        stats.error(format!(
            "{name}: HTTP {} (request {request_id}): {}; request {}",
            response.status,
            cut(&text),
            cut(&body)
        ));
        return None;
    }
    let value: Value = match serde_json::from_slice(&response.body) {
        Ok(v) => v,
        Err(e) => {
            stats.error(format!("{name}: not JSON ({e}): {}", cut(&text)));
            return None;
        }
    };
    if value.get("errors").is_some() || value["data"].is_null() {
        stats.error(format!(
            "{name}: (request {request_id}) {}; request {}",
            cut(&text),
            cut(&body)
        ));
        return None;
    }
    Some(value["data"].clone())
}

fn cut(text: &str) -> String {
    if text.len() <= 600 {
        text.to_owned()
    } else {
        let mut end = 600;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &text[..end])
    }
}

/// A GET of `path`; the response when it is 200 (and `expect_cache`, when given, is the
/// `X-Cache` header), else `None` after counting an error.
async fn get(
    conn: &mut Conn<'_>,
    stats: &Stats,
    name: &str,
    path: &str,
    expect_cache: Option<&str>,
) -> Option<bytes::Bytes> {
    let started = Instant::now();
    let result = conn.get(path, "x-cache").await;
    stats.record(Kind::File, started.elapsed());
    match result {
        Err(e) => {
            stats.error(format!("{name} {path}: {e}"));
            None
        }
        Ok(response) => {
            if response.status >= 500 {
                stats.errors_5xx.fetch_add(1, Ordering::Relaxed);
            }
            if response.status != 200 {
                stats.error(format!(
                    "{name} {path}: HTTP {}: {}",
                    response.status,
                    cut(&String::from_utf8_lossy(&response.body))
                ));
                return None;
            }
            if let Some(expected) = expect_cache
                && response.header.as_deref() != Some(expected)
            {
                stats.error(format!(
                    "{name} {path}: X-Cache {:?}, expected {expected}",
                    response.header
                ));
            }
            Some(response.body)
        }
    }
}

/// Uploads `bytes` as `name` through the File API (one connection, closed after); the answer.
async fn upload(ctx: &Ctx, name: &str, bytes: &[u8]) -> Option<Value> {
    let started = Instant::now();
    let result = upload_once(&ctx.opts.base, name, bytes).await;
    ctx.stats.record(Kind::File, started.elapsed());
    match result {
        Ok((200, body)) => match serde_json::from_str::<Value>(&body) {
            Ok(v) if v["secret"].is_string() && v["id"].is_string() => Some(v),
            _ => {
                ctx.stats
                    .error(format!("upload: unexpected answer {}", cut(&body)));
                None
            }
        },
        Ok((status, body)) => {
            if status >= 500 {
                ctx.stats.errors_5xx.fetch_add(1, Ordering::Relaxed);
            }
            ctx.stats
                .error(format!("upload: HTTP {status}: {}", cut(&body)));
            None
        }
        Err(e) => {
            ctx.stats.error(format!("upload: {e}"));
            None
        }
    }
}

async fn upload_once(base: &str, name: &str, bytes: &[u8]) -> Result<(u16, String), String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let authority = base.strip_prefix("http://").ok_or("--base: not http://")?;
    let boundary = "svc-soak-boundary-5c2e";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"data\"; filename=\"{name}\"\r\nContent-Type: image/png\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let head = format!(
        "POST /file/v1/{SERVICE} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(authority)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        stream
            .write_all(head.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        stream.write_all(&body).await.map_err(|e| e.to_string())?;
        let mut answer = Vec::new();
        stream
            .read_to_end(&mut answer)
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, String>(answer)
    };
    let answer = tokio::time::timeout(Duration::from_secs(60), exchange)
        .await
        .map_err(|_| "no answer within 60 s".to_owned())??;
    let text = String::from_utf8_lossy(&answer);
    let status = text
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("not an HTTP response: {}", cut(&text)))?;
    let body = match text.find("\r\n\r\n") {
        Some(at) => text[at + 4..].to_owned(),
        None => String::new(),
    };
    // A chunked answer: the body is the chunks' data; the answer is small JSON, so take the
    // text from the first `{` to the last `}`.
    let body = match (body.find('{'), body.rfind('}')) {
        (Some(a), Some(b)) if a <= b => body[a..=b].to_owned(),
        _ => body,
    };
    Ok((status, body))
}

// ---------------------------------------------------------------- the load

const READ_FILTERED: &str = "query ($t: String!, $v: Int!, $skip: Int!) { allPosts(filter: {title_contains: $t, votes_gt: $v}, orderBy: votes_DESC, first: 10, skip: $skip) { id slug title votes tags author { id name } categories(orderBy: name_ASC) { name } } _allPostsMeta(filter: {title_contains: $t, votes_gt: $v}) { count } }";
const READ_USERS: &str = "query ($skip: Int!) { allUsers(orderBy: email_ASC, first: 5, skip: $skip) { id email age posts(first: 3, orderBy: votes_DESC) { id title votes comments(first: 2) { id text } } } }";
const READ_CURSOR: &str = "query ($after: String!) { allPosts(orderBy: slug_ASC, first: 20, after: $after) { id slug status } }";
const READ_ONE: &str = "query ($id: ID!) { Post(id: $id) { id title votes status metadata author { id name } comments(orderBy: text_ASC) { id text } categories { id name } } }";
const READ_SLUG: &str = "query ($slug: String!) { Post(slug: $slug) { id slug title votes } }";
const READ_CATEGORIES: &str = "{ allCategories(orderBy: position_ASC) { id name posts(first: 5, filter: {status: PUBLISHED}, orderBy: votes_DESC) { id title } _postsMeta { count } } }";
const CREATE_POST: &str = "mutation ($slug: String!, $title: String!, $body: String!, $votes: Int!, $tags: [String!], $meta: Json, $author: ID!, $categories: [ID!], $c1: String!, $c2: String!) { createPost(slug: $slug, title: $title, body: $body, votes: $votes, status: PUBLISHED, published: true, tags: $tags, scores: [1, 2, 3], metadata: $meta, authorId: $author, categoriesIds: $categories, comments: [{text: $c1}, {text: $c2}]) { id comments { id } } }";
const DELETE_POST: &str = "mutation ($id: ID!) { deletePost(id: $id) { id } }";
const UPDATE_POST: &str = "mutation ($id: ID!, $votes: Int!, $title: String!) { updatePost(id: $id, votes: $votes, title: $title) { id votes } }";
const UPDATE_USER: &str = "mutation ($id: ID!, $age: Int!, $nick: String!) { updateUser(id: $id, age: $age, nicknames: [$nick]) { id age } }";
const CREATE_COMMENT: &str =
    "mutation ($text: String!, $post: ID!) { createComment(text: $text, postId: $post) { id } }";
const DELETE_FILE: &str = "mutation ($id: ID!) { deleteFile(id: $id) { id } }";
const COUNTS: &str = "{ _allPostsMeta { count } _allCommentsMeta { count } _allFilesMeta { count } _allUsersMeta { count } _allCategoriesMeta { count } }";

/// What a client leaves in the database: its queues' lengths and its posts' comments.
#[derive(Default)]
struct Left {
    posts: usize,
    comments: usize,
    files: usize,
}

async fn load_client(ctx: Arc<Ctx>, number: usize) -> Left {
    let mut conn = Conn::new(&ctx.api);
    let mut rng = Rng(0x50A4_0000 + number as u64 * 7919);
    // Posts this client created (id, comments), oldest first; files (id).
    let mut posts: VecDeque<(String, usize)> = VecDeque::new();
    let mut files: VecDeque<String> = VecDeque::new();
    let stats = &ctx.stats;
    let mut made = 0u64;
    let users_skip = ctx.users.len().saturating_sub(5).max(1);
    while !ctx.stop.load(Ordering::Relaxed) {
        let roll = rng.below(100);
        match roll {
            0..20 => {
                let v = json!({ "t": rng.word(), "v": rng.below(900), "skip": rng.below(20) });
                gql(
                    &mut conn,
                    stats,
                    Kind::Read,
                    "filtered posts",
                    READ_FILTERED,
                    v,
                )
                .await;
            }
            20..30 => {
                let v = json!({ "skip": rng.below(users_skip) });
                gql(
                    &mut conn,
                    stats,
                    Kind::Read,
                    "users with posts",
                    READ_USERS,
                    v,
                )
                .await;
            }
            30..38 => {
                let v = json!({ "after": rng.pick(&ctx.posts) });
                gql(&mut conn, stats, Kind::Read, "cursor page", READ_CURSOR, v).await;
            }
            38..50 => {
                // A post of its own when it has some, half the time.
                let id = match posts.get(rng.below(posts.len() * 2)) {
                    Some((id, _)) => id.clone(),
                    None => rng.pick(&ctx.posts).to_owned(),
                };
                let data = gql(
                    &mut conn,
                    stats,
                    Kind::Read,
                    "post",
                    READ_ONE,
                    json!({ "id": id }),
                )
                .await;
                if let Some(data) = data
                    && data["Post"]["id"] != id.as_str()
                {
                    stats.error(format!("post {id}: got {}", cut(&data.to_string())));
                }
            }
            50..57 => {
                let v = json!({ "slug": rng.pick(&ctx.slugs) });
                gql(&mut conn, stats, Kind::Read, "post by slug", READ_SLUG, v).await;
            }
            57..62 => {
                gql(
                    &mut conn,
                    stats,
                    Kind::Read,
                    "categories",
                    READ_CATEGORIES,
                    json!({}),
                )
                .await;
            }
            62..74 => {
                made += 1;
                let a = rng.below(ctx.categories.len());
                let b = (a + 1 + rng.below(ctx.categories.len() - 1)) % ctx.categories.len();
                let v = json!({
                    "slug": format!("soak-{number}-{made}"),
                    "title": format!("soak {}", rng.words(3)),
                    "body": rng.words(30),
                    "votes": rng.below(1000),
                    "tags": [rng.word(), rng.word()],
                    "meta": { "client": number, "n": made, "words": [rng.word()] },
                    "author": rng.pick(&ctx.users),
                    "categories": [ctx.categories[a], ctx.categories[b]],
                    "c1": rng.words(6),
                    "c2": rng.words(6),
                });
                let data = gql(&mut conn, stats, Kind::Write, "create post", CREATE_POST, v).await;
                if let Some(data) = data {
                    stats.posts_created.fetch_add(1, Ordering::Relaxed);
                    let id = data["createPost"]["id"].as_str().unwrap_or("").to_owned();
                    let comments = data["createPost"]["comments"]
                        .as_array()
                        .map_or(0, Vec::len);
                    if id.is_empty() || comments != 2 {
                        stats.error(format!("create post: answer {}", cut(&data.to_string())));
                    } else {
                        posts.push_back((id, comments));
                    }
                }
                if posts.len() > ctx.opts.pool
                    && let Some((id, _)) = posts.pop_front()
                {
                    let v = json!({ "id": id });
                    if gql(&mut conn, stats, Kind::Write, "delete post", DELETE_POST, v)
                        .await
                        .is_some()
                    {
                        stats.posts_deleted.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            74..86 => {
                let id = rng.pick(&ctx.posts).to_owned();
                let v = json!({ "id": id, "votes": rng.below(1000), "title": rng.words(4) });
                if gql(&mut conn, stats, Kind::Write, "update post", UPDATE_POST, v)
                    .await
                    .is_some()
                {
                    stats.posts_updated.fetch_add(1, Ordering::Relaxed);
                }
            }
            86..91 => {
                let v = json!({ "id": rng.pick(&ctx.users), "age": 18 + rng.below(60), "nick": rng.word() });
                gql(&mut conn, stats, Kind::Write, "update user", UPDATE_USER, v).await;
            }
            91..97 => {
                if posts.is_empty() {
                    continue;
                }
                let at = rng.below(posts.len());
                let v = json!({ "text": rng.words(8), "post": posts[at].0 });
                if gql(
                    &mut conn,
                    stats,
                    Kind::Write,
                    "create comment",
                    CREATE_COMMENT,
                    v,
                )
                .await
                .is_some()
                {
                    posts[at].1 += 1;
                }
            }
            _ => {
                made += 1;
                file_cycle(&ctx, &mut conn, &mut files, number, made).await;
            }
        }
    }
    Left {
        posts: posts.len(),
        comments: posts.iter().map(|(_, c)| c).sum(),
        files: files.len(),
    }
}

/// An upload, its resized variant twice (computed, then stored), its download; the oldest file
/// deleted when the client holds more than `--files`.
async fn file_cycle(
    ctx: &Ctx,
    conn: &mut Conn<'_>,
    files: &mut VecDeque<String>,
    number: usize,
    made: u64,
) {
    let stats = &ctx.stats;
    if let Some(file) = upload(ctx, &format!("soak-{number}-{made}.png"), &ctx.picture).await {
        let secret = file["secret"].as_str().unwrap_or_default();
        files.push_back(file["id"].as_str().unwrap_or_default().to_owned());
        let variant = format!("/images/v1/{SERVICE}/{secret}/160x120");
        if let Some(image) = get(conn, stats, "image", &variant, Some("MISS")).await {
            match image::load_from_memory(&image) {
                Ok(i) if i.width() == 160 && i.height() == 120 => {}
                Ok(i) => stats.error(format!("image {variant}: {}x{}", i.width(), i.height())),
                Err(e) => stats.error(format!("image {variant}: {e}")),
            }
        }
        get(conn, stats, "image again", &variant, Some("HIT")).await;
        let download = format!("/files/v1/{SERVICE}/{secret}");
        if let Some(bytes) = get(conn, stats, "download", &download, None).await
            && bytes.as_ref() != ctx.picture.as_slice()
        {
            stats.error(format!(
                "download {download}: {} bytes differ from the upload",
                bytes.len()
            ));
        }
    }
    if files.len() > ctx.opts.files
        && let Some(id) = files.pop_front()
    {
        gql(
            conn,
            stats,
            Kind::File,
            "delete file",
            DELETE_FILE,
            json!({ "id": id }),
        )
        .await;
    }
}

// ---------------------------------------------------------------- subscribers

struct Subscriber {
    name: &'static str,
    path: &'static str,
    protocol: &'static str,
    query: &'static str,
    /// Whether it gets every post event (else only creates of `soak-` posts).
    every: bool,
    received: AtomicU64,
}

const SUB_EVERY: &str =
    "subscription { Post { mutation node { id slug votes } previousValues { id } } }";
const SUB_CREATED: &str = "subscription { Post(filter: {mutation_in: [CREATED], node: {slug_starts_with: \"soak-\"}}) { mutation node { id slug author { id } } } }";

async fn subscribe(ctx: Arc<Ctx>, sub: Arc<Subscriber>) {
    let stats = &ctx.stats;
    let ws_base = ctx.opts.base.replacen("http://", "ws://", 1);
    let url = format!("{ws_base}{}", sub.path);
    let mut request = match url.as_str().into_client_request() {
        Ok(r) => r,
        Err(e) => return stats.error(format!("subscriber {}: bad URL {url}: {e}", sub.name)),
    };
    request.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        HeaderValue::from_static(sub.protocol),
    );
    let mut ws = match tokio_tungstenite::connect_async(request).await {
        Ok((ws, _)) => ws,
        Err(e) => return stats.error(format!("subscriber {}: connect: {e}", sub.name)),
    };
    let transport = sub.protocol == "graphql-transport-ws";
    let init = json!({ "type": "connection_init", "payload": { "Authorization": format!("Bearer {}", ctx.token) } });
    let start = json!({
        "id": "1",
        "type": if transport { "subscribe" } else { "start" },
        "payload": { "query": sub.query },
    });
    for message in [init, start] {
        if let Err(e) = ws.send(Message::text(message.to_string())).await {
            return stats.error(format!("subscriber {}: send: {e}", sub.name));
        }
    }
    let data_type = if transport { "next" } else { "data" };
    loop {
        let message = tokio::select! {
            message = ws.next() => message,
            () = tokio::time::sleep(Duration::from_millis(200)) => {
                if ctx.stop.load(Ordering::Relaxed) {
                    let _ = tokio::time::timeout(Duration::from_secs(2), ws.close(None)).await;
                    return;
                }
                continue;
            }
        };
        let text = match message {
            Some(Ok(Message::Text(text))) => text,
            Some(Ok(Message::Close(frame))) => {
                return stats.error(format!(
                    "subscriber {}: closed by the server: {frame:?}",
                    sub.name
                ));
            }
            Some(Ok(_)) => continue,
            Some(Err(e)) => return stats.error(format!("subscriber {}: {e}", sub.name)),
            None => return stats.error(format!("subscriber {}: the socket ended", sub.name)),
        };
        let Ok(value) = serde_json::from_str::<Value>(text.as_str()) else {
            stats.error(format!(
                "subscriber {}: not JSON: {}",
                sub.name,
                cut(text.as_str())
            ));
            continue;
        };
        match value["type"].as_str().unwrap_or("") {
            t if t == data_type => {
                let post = &value["payload"]["data"]["Post"];
                if value["payload"].get("errors").is_some() || !post.is_object() {
                    stats.error(format!("subscriber {}: {}", sub.name, cut(text.as_str())));
                } else {
                    let slug_ok = post["node"]["slug"]
                        .as_str()
                        .is_some_and(|s| s.starts_with("soak-"));
                    if !sub.every && (post["mutation"] != "CREATED" || !slug_ok) {
                        stats.error(format!(
                            "subscriber {}: not its filter's: {}",
                            sub.name,
                            text.as_str()
                        ));
                    }
                    sub.received.fetch_add(1, Ordering::Relaxed);
                }
            }
            "ping" => {
                let _ = ws.send(Message::text(r#"{"type":"pong"}"#)).await;
            }
            "connection_ack" | "ka" | "keepalive" | "pong" => {}
            _ => stats.error(format!(
                "subscriber {}: unexpected {}",
                sub.name,
                cut(text.as_str())
            )),
        }
    }
}

// ---------------------------------------------------------------- set-up

/// A photo-like PNG (smooth colour with noise), 640×480.
fn picture() -> Vec<u8> {
    let (width, height) = (640u32, 480u32);
    let mut rng = Rng(0x1234_5678);
    let image = image::RgbImage::from_fn(width, height, |x, y| {
        let noise = (rng.next() % 16) as f32;
        let (fx, fy) = (x as f32 / width as f32, y as f32 / height as f32);
        image::Rgb([
            (40.0 + 180.0 * fx + noise) as u8,
            (60.0 + 150.0 * fy + noise) as u8,
            (200.0 - 120.0 * fx * fy + noise) as u8,
        ])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    image
        .write_to(&mut out, image::ImageFormat::Png)
        .expect("a PNG encodes into memory");
    out.into_inner()
}

/// The seeded ids: users, posts, the posts' slugs, categories.
type Seeded = (Vec<String>, Vec<String>, Vec<String>, Vec<String>);

async fn seed(opts: &Opts, api: &Endpoint) -> Result<Seeded, String> {
    let stats = Stats::default();
    let mut conn = Conn::new(api);
    let mut rng = Rng(0x5EED);
    let fail = |what: &str, stats: &Stats| {
        format!("seeding ({what}) failed: {:?}", lock(&stats.error_log))
    };
    let mut doc = String::from("mutation {");
    for i in 0..CATEGORIES {
        let _ = write!(
            doc,
            " c{i}: createCategory(name: \"category {i}\", position: {i}) {{ id }}"
        );
    }
    doc.push('}');
    gql(
        &mut conn,
        &stats,
        Kind::Write,
        "seed categories",
        &doc,
        json!({}),
    )
    .await
    .ok_or_else(|| fail("categories", &stats))?;
    let mut n = 0;
    for chunk in (0..opts.users).collect::<Vec<_>>().chunks(10) {
        let mut doc = String::from("mutation {");
        for &u in chunk {
            let posts: Vec<String> = (0..opts.posts_per_user)
                .map(|_| {
                    n += 1;
                    format!(
                        "{{slug: \"base-{n:06}\", title: \"{}\", body: \"{}\", votes: {}, status: {}, tags: [\"{}\"]}}",
                        rng.words(4),
                        rng.words(20),
                        rng.below(1000),
                        ["DRAFT", "PUBLISHED", "ARCHIVED"][rng.below(3)],
                        rng.word()
                    )
                })
                .collect();
            let _ = write!(
                doc,
                " u{u}: createUser(email: \"user{u:04}@example.com\", name: \"user {u}\", age: {}, posts: [{}]) {{ id }}",
                18 + rng.below(60),
                posts.join(", ")
            );
        }
        doc.push('}');
        gql(
            &mut conn,
            &stats,
            Kind::Write,
            "seed users",
            &doc,
            json!({}),
        )
        .await
        .ok_or_else(|| fail("users and posts", &stats))?;
    }
    let ids = "{ allUsers { id } allPosts(orderBy: slug_ASC) { id slug } allCategories { id } }";
    let data = gql(&mut conn, &stats, Kind::Read, "seeded ids", ids, json!({}))
        .await
        .ok_or_else(|| fail("reading the ids", &stats))?;
    let list = |field: &str, key: &str| -> Vec<String> {
        data[field]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|n| n[key].as_str().map(str::to_owned))
            .collect()
    };
    let (users, posts, slugs, categories) = (
        list("allUsers", "id"),
        list("allPosts", "id"),
        list("allPosts", "slug"),
        list("allCategories", "id"),
    );
    if users.len() != opts.users
        || posts.len() != opts.users * opts.posts_per_user
        || categories.len() != CATEGORIES
    {
        return Err(format!(
            "seeding gave {} users, {} posts, {} categories",
            users.len(),
            posts.len(),
            categories.len()
        ));
    }
    Ok((users, posts, slugs, categories))
}

/// The size of the database in KiB: the SQLite file with its WAL, or PostgreSQL's
/// `pg_database_size` through psql.
async fn db_kib(opts: &Opts) -> Option<u64> {
    if let Some(file) = &opts.db_file {
        let size = |p: PathBuf| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let mut wal = file.clone().into_os_string();
        wal.push("-wal");
        return Some((size(file.clone()) + size(PathBuf::from(wal))) / 1024);
    }
    let url = opts.pg_url.clone()?;
    let output = tokio::process::Command::new("psql")
        .args([
            url.as_str(),
            "-qAtXc",
            "SELECT pg_database_size(current_database())",
        ])
        .output()
        .await
        .ok()?;
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse::<u64>()
        .ok()
        .map(|b| b / 1024)
}

// ---------------------------------------------------------------- the run

struct Sample {
    t: u64,
    latencies: Vec<u32>,
    rss_kib: u64,
    /// The server's CPU seconds in the sample.
    cpu_s: f64,
}

async fn run(opts: Arc<Opts>) -> Result<Value, String> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .map_err(|e| e.to_string())?;
    let master =
        std::env::var("SVC_BENCH_MASTER_TOKEN").map_err(|_| "SVC_BENCH_MASTER_TOKEN is not set")?;
    let token = svc_bench::admin_root_token(&client, &opts.base, SERVICE, &master).await?;
    let api = Endpoint::post_json(&format!("{}/simple/v1/{SERVICE}", opts.base), Some(&token))?;
    eprintln!(
        "soak: {}: seeding {} users, {} posts, {CATEGORIES} categories",
        opts.label,
        opts.users,
        opts.users * opts.posts_per_user
    );
    let (users, posts, slugs, categories) = seed(&opts, &api).await?;
    let ctx = Arc::new(Ctx {
        opts: opts.clone(),
        api,
        token,
        stats: Stats::default(),
        stop: AtomicBool::new(false),
        users,
        posts,
        slugs,
        categories,
        picture: picture(),
    });

    // Subscribers, and a probe post they must all see before the load starts.
    let subs: Vec<Arc<Subscriber>> = vec![
        Arc::new(Subscriber {
            name: "every post event (graphql-transport-ws)",
            path: "/subscriptions/v1/bench",
            protocol: "graphql-transport-ws",
            query: SUB_EVERY,
            every: true,
            received: AtomicU64::new(0),
        }),
        Arc::new(Subscriber {
            name: "every post event (graphql-ws)",
            path: "/simple/v1/bench",
            protocol: "graphql-ws",
            query: SUB_EVERY,
            every: true,
            received: AtomicU64::new(0),
        }),
        Arc::new(Subscriber {
            name: "created soak- posts (graphql-transport-ws, node filter)",
            path: "/subscriptions/v1/bench",
            protocol: "graphql-transport-ws",
            query: SUB_CREATED,
            every: false,
            received: AtomicU64::new(0),
        }),
    ];
    let sub_tasks: Vec<_> = subs
        .iter()
        .map(|s| tokio::spawn(subscribe(ctx.clone(), s.clone())))
        .collect();
    let mut probe_conn = Conn::new(&ctx.api);
    let probe_started = Instant::now();
    let mut probes = 0;
    loop {
        // A subscription may register a moment after its `subscribe`: probe until all have one.
        probes += 1;
        let v = json!({
            "slug": format!("soak-probe-{probes}"), "title": "soak probe", "body": "probe", "votes": 0,
            "tags": [], "meta": {}, "author": ctx.users[0], "categories": [], "c1": "a", "c2": "b",
        });
        let data = gql(
            &mut probe_conn,
            &ctx.stats,
            Kind::Write,
            "probe",
            CREATE_POST,
            v,
        )
        .await
        .ok_or("the probe post could not be created")?;
        let id = data["createPost"]["id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let waited = Instant::now();
        while waited.elapsed() < Duration::from_secs(2)
            && subs.iter().any(|s| s.received.load(Ordering::Relaxed) == 0)
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        gql(
            &mut probe_conn,
            &ctx.stats,
            Kind::Write,
            "probe delete",
            DELETE_POST,
            json!({ "id": id }),
        )
        .await
        .ok_or("the probe post could not be deleted")?;
        if subs.iter().all(|s| s.received.load(Ordering::Relaxed) > 0) {
            break;
        }
        if probe_started.elapsed() > Duration::from_secs(30) {
            return Err(format!(
                "the subscribers did not all get a probe event within 30 s: {:?}; {:?}",
                subs.iter()
                    .map(|s| s.received.load(Ordering::Relaxed))
                    .collect::<Vec<_>>(),
                lock(&ctx.stats.error_log)
            ));
        }
    }
    // Let the probes' events arrive, then count from zero.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let sub_base: Vec<u64> = subs
        .iter()
        .map(|s| s.received.load(Ordering::Relaxed))
        .collect();
    let warmup_errors = ctx.stats.errors.load(Ordering::Relaxed);

    eprintln!(
        "soak: {}: {} clients, {} s warm-up, then {} s measured, a sample every {} s",
        opts.label, opts.clients, opts.warmup, opts.seconds, opts.sample
    );
    let clients: Vec<_> = (0..opts.clients)
        .map(|i| tokio::spawn(load_client(ctx.clone(), i)))
        .collect();
    tokio::time::sleep(Duration::from_secs(opts.warmup)).await;

    let mut csv = String::from(
        "t_s,requests,rps,p50_ms,p99_ms,max_ms,read_p99_ms,write_p99_ms,file_p99_ms,errors,rss_mib,posts,comments,files,db_mib,sub_messages,server_cpu_pct,load1\n",
    );
    let mut samples: Vec<Sample> = Vec::new();
    let mut counts_conn = Conn::new(&ctx.api);
    let counts_stats = Stats::default();
    lock(&ctx.stats.window)
        .latencies
        .iter_mut()
        .for_each(Vec::clear);
    ctx.stats.measuring.store(true, Ordering::Relaxed);
    let started = Instant::now();
    let rounds = opts.seconds / opts.sample;
    let sub_total = |subs: &[Arc<Subscriber>]| -> u64 {
        subs.iter()
            .map(|s| s.received.load(Ordering::Relaxed))
            .sum()
    };
    let mut last_sub = sub_total(&subs);
    let mut last_cpu = cpu_seconds(opts.pid).unwrap_or(f64::NAN);
    for round in 1..=rounds {
        let t = round * opts.sample;
        tokio::time::sleep_until((started + Duration::from_secs(t)).into()).await;
        let window = std::mem::take(&mut *lock(&ctx.stats.window));
        let rss_kib = status_kib(opts.pid, "VmRSS:").unwrap_or(0);
        let cpu_now = cpu_seconds(opts.pid).unwrap_or(f64::NAN);
        let cpu_s = cpu_now - last_cpu;
        last_cpu = cpu_now;
        let per_kind: Vec<Vec<u32>> = window
            .latencies
            .iter()
            .map(|l| {
                let mut l = l.clone();
                l.sort_unstable();
                l
            })
            .collect();
        let mut all: Vec<u32> = window.latencies.concat();
        all.sort_unstable();
        let counts = gql(
            &mut counts_conn,
            &counts_stats,
            Kind::Read,
            "counts",
            COUNTS,
            json!({}),
        )
        .await;
        let count = |field: &str| -> String {
            counts
                .as_ref()
                .and_then(|c| c[field]["count"].as_u64())
                .map_or(String::new(), |n| n.to_string())
        };
        let db = db_kib(&opts)
            .await
            .map_or(String::new(), |k| format!("{:.2}", k as f64 / 1024.0));
        let subs_now = sub_total(&subs);
        let fmt = |v: f64| {
            if v.is_nan() {
                String::new()
            } else {
                format!("{v:.2}")
            }
        };
        let _ = writeln!(
            csv,
            "{t},{},{:.1},{},{},{},{},{},{},{},{:.1},{},{},{},{},{},{},{}",
            all.len(),
            all.len() as f64 / opts.sample as f64,
            fmt(quantile_ms(&all, 0.5)),
            fmt(quantile_ms(&all, 0.99)),
            fmt(quantile_ms(&all, 1.0)),
            fmt(quantile_ms(&per_kind[0], 0.99)),
            fmt(quantile_ms(&per_kind[1], 0.99)),
            fmt(quantile_ms(&per_kind[2], 0.99)),
            window.errors,
            rss_kib as f64 / 1024.0,
            count("_allPostsMeta"),
            count("_allCommentsMeta"),
            count("_allFilesMeta"),
            db,
            subs_now - last_sub,
            fmt(cpu_s / opts.sample as f64 * 100.0),
            load1(),
        );
        last_sub = subs_now;
        if t.is_multiple_of(60) || round == rounds {
            eprintln!(
                "soak: {}: {t:>4} s  {:>7.1} req/s  p50 {:>7.2} ms  p99 {:>8.2} ms  RSS {:>6.1} MiB  posts {}  errors {}",
                opts.label,
                all.len() as f64 / opts.sample as f64,
                quantile_ms(&all, 0.5),
                quantile_ms(&all, 0.99),
                rss_kib as f64 / 1024.0,
                count("_allPostsMeta"),
                ctx.stats.errors.load(Ordering::Relaxed)
            );
        }
        samples.push(Sample {
            t,
            latencies: all,
            rss_kib,
            cpu_s,
        });
        std::fs::write(&opts.csv, &csv).map_err(|e| format!("{}: {e}", opts.csv.display()))?;
    }
    let measured = started.elapsed().as_secs_f64();
    ctx.stats.measuring.store(false, Ordering::Relaxed);
    ctx.stop.store(true, Ordering::Relaxed);
    let mut left = Left::default();
    for task in clients {
        let l = task.await.map_err(|e| format!("a client failed: {e}"))?;
        left.posts += l.posts;
        left.comments += l.comments;
        left.files += l.files;
    }
    let hwm_kib = status_kib(opts.pid, "VmHWM:").unwrap_or(0);

    // Every subscriber got exactly its events (waiting up to 15 s for the last ones).
    let created = ctx.stats.posts_created.load(Ordering::Relaxed);
    let every = created
        + ctx.stats.posts_updated.load(Ordering::Relaxed)
        + ctx.stats.posts_deleted.load(Ordering::Relaxed);
    let expected: Vec<u64> = subs
        .iter()
        .map(|s| if s.every { every } else { created })
        .collect();
    let got = |i: usize| subs[i].received.load(Ordering::Relaxed) - sub_base[i];
    let waited = Instant::now();
    while (0..subs.len()).any(|i| got(i) < expected[i])
        && waited.elapsed() < Duration::from_secs(15)
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Events past the expected ones would come at once after the last; give them a moment.
    tokio::time::sleep(Duration::from_millis(300)).await;
    // `stop` is set: the subscribers close their sockets.
    for task in sub_tasks {
        let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
    }
    let mut checks = Vec::new();
    for (i, sub) in subs.iter().enumerate() {
        let ok = got(i) == expected[i];
        if !ok {
            ctx.stats.error(format!(
                "subscriber {}: received {} events, expected {}",
                sub.name,
                got(i),
                expected[i]
            ));
        }
        checks.push(json!({ "check": format!("subscriber {}", sub.name), "got": got(i), "expected": expected[i], "ok": ok }));
    }
    // The data set holds what the clients' queues say.
    let base_posts = (opts.users * opts.posts_per_user) as u64;
    let counts = gql(
        &mut counts_conn,
        &counts_stats,
        Kind::Read,
        "counts",
        COUNTS,
        json!({}),
    )
    .await;
    for (field, want) in [
        ("_allPostsMeta", base_posts + left.posts as u64),
        ("_allCommentsMeta", left.comments as u64),
        ("_allFilesMeta", left.files as u64),
        ("_allUsersMeta", opts.users as u64),
        ("_allCategoriesMeta", CATEGORIES as u64),
    ] {
        let have = counts.as_ref().and_then(|c| c[field]["count"].as_u64());
        let ok = have == Some(want);
        if !ok {
            ctx.stats
                .error(format!("{field}: count {have:?}, expected {want}"));
        }
        checks.push(json!({ "check": field, "got": have, "expected": want, "ok": ok }));
    }
    let counts_errors = lock(&counts_stats.error_log).clone();
    for e in &counts_errors {
        ctx.stats.error(format!("reading the counts: {e}"));
    }

    // First and last window.
    let per_window = (opts.window / opts.sample).max(1) as usize;
    let per_window = per_window.min(samples.len());
    let summarize = |part: &[Sample]| -> Value {
        let mut all: Vec<u32> = part
            .iter()
            .flat_map(|s| s.latencies.iter().copied())
            .collect();
        all.sort_unstable();
        let seconds = (part.len() as u64 * opts.sample) as f64;
        let rss =
            part.iter().map(|s| s.rss_kib as f64).sum::<f64>() / part.len().max(1) as f64 / 1024.0;
        json!({
            "from_s": part.first().map_or(0, |s| s.t - opts.sample),
            "to_s": part.last().map_or(0, |s| s.t),
            "requests": all.len(),
            "rps": all.len() as f64 / seconds,
            "p50_ms": quantile_ms(&all, 0.5),
            "p99_ms": quantile_ms(&all, 0.99),
            "rss_mib": rss,
            "server_cpu_ms_per_request": part.iter().map(|s| s.cpu_s).sum::<f64>() * 1000.0 / all.len().max(1) as f64,
        })
    };
    let first = summarize(&samples[..per_window]);
    let last = summarize(&samples[samples.len() - per_window..]);
    let drift = |key: &str| -> f64 {
        let (a, b) = (
            first[key].as_f64().unwrap_or(f64::NAN),
            last[key].as_f64().unwrap_or(f64::NAN),
        );
        (b / a - 1.0) * 100.0
    };
    let (p99_drift, rss_drift, p50_drift, rps_drift, cpu_drift) = (
        drift("p99_ms"),
        drift("rss_mib"),
        drift("p50_ms"),
        drift("rps"),
        drift("server_cpu_ms_per_request"),
    );
    let errors = ctx.stats.errors.load(Ordering::Relaxed);
    let p99_ok = !p99_drift.is_nan() && p99_drift <= opts.p99_tolerance;
    let rss_ok = !rss_drift.is_nan() && rss_drift <= opts.rss_tolerance;
    let pass = errors == 0 && (!opts.judge_drift || (p99_ok && rss_ok));
    let rss_max = samples.iter().map(|s| s.rss_kib).max().unwrap_or(0) as f64 / 1024.0;
    Ok(json!({
        "label": opts.label,
        "measured_s": measured,
        "warmup_s": opts.warmup,
        "clients": opts.clients,
        "requests": samples.iter().map(|s| s.latencies.len()).sum::<usize>(),
        "requests_with_warmup": ctx.stats.requests.load(Ordering::Relaxed),
        "posts_created": created,
        "posts_updated": ctx.stats.posts_updated.load(Ordering::Relaxed),
        "posts_deleted": ctx.stats.posts_deleted.load(Ordering::Relaxed),
        "errors": errors,
        "errors_before_load": warmup_errors,
        "errors_5xx": ctx.stats.errors_5xx.load(Ordering::Relaxed),
        "error_messages": *lock(&ctx.stats.error_log),
        "window_s": per_window as u64 * opts.sample,
        "first": first,
        "last": last,
        "drift_pct": { "p50": p50_drift, "p99": p99_drift, "rss": rss_drift, "rps": rps_drift, "cpu_per_request": cpu_drift },
        "tolerance_pct": { "p99": opts.p99_tolerance, "rss": opts.rss_tolerance },
        "drift_judged": opts.judge_drift,
        "p99_ok": p99_ok,
        "rss_ok": rss_ok,
        "rss_max_mib": rss_max,
        "rss_peak_mib": hwm_kib as f64 / 1024.0,
        "checks": checks,
        "pass": pass,
    }))
}
