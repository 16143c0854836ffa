//! The benchmark suite's driver (`bench/run` calls it): loads the data set, measures the five
//! logical queries on every server, and writes the markdown report.
//!
//! ```text
//! suite peer-sql [--users N]                  SQL that loads the data set into bench/peer/schema.sql
//! suite seed --url BASE [--users N]           loads the data set into an svc example service
//! suite run [options] --target KIND=WHERE …   measures and reports
//! ```
//!
//! Targets: `svc-sqlite=BASE` and `svc-postgres=BASE` (an example-model server started with
//! `--service-id bench`; BASE is `http://host:port`), `svc-sqlite-baseline=BASE` and
//! `svc-postgres-baseline=BASE` (another build of it, to compare two builds in one run),
//! `svc-relay-sqlite=BASE` and `svc-relay-postgres=BASE` (an svc server's Relay API),
//! `postgraphile4=URL` and `postgraphile5=URL` (their GraphQL endpoint), `sql=CONNINFO` (pgbench runs
//! `<sql-dir>/q<N>.sql` there). svc servers are read with their `admin` root token, obtained
//! through the System API with the master token in `SVC_BENCH_MASTER_TOKEN`. `--pid KIND=PID`
//! names a server's process, whose CPU time per request is then reported (Linux `/proc`;
//! `SVC_BENCH_CLK_TCK` clock ticks per second, default 100).

mod data;
mod json;
mod load;
mod report;
mod targets;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use data::Dataset;
use load::{Cell, HttpTarget, Settings, send};
use report::Row;
use targets::{Expect, Ids, Kind, Query};

/// The service id every svc server of the benchmark is started with.
const SERVICE: &str = "bench";

#[tokio::main]
async fn main() {
    match run().await {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("suite: {e}");
            std::process::exit(2);
        }
    }
}

#[derive(Debug)]
struct Args {
    command: String,
    users: usize,
    url: Option<String>,
    targets: Vec<(Kind, String)>,
    settings: Settings,
    queries: Vec<Query>,
    out: Option<PathBuf>,
    notes: Vec<String>,
    sql_dir: PathBuf,
    log_dir: PathBuf,
    /// Server processes whose CPU time is measured per cell.
    pids: Vec<(Kind, u32)>,
}

fn args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let command = it
        .next()
        .ok_or("usage: suite peer-sql|seed|run [options]")?;
    let mut out = Args {
        command,
        users: 1000,
        url: None,
        targets: Vec::new(),
        settings: Settings {
            clients: 8,
            warmup: Duration::from_secs(2),
            measure: Duration::from_secs(8),
            rounds: 2,
        },
        queries: Query::ALL.to_vec(),
        out: None,
        notes: Vec::new(),
        sql_dir: PathBuf::from("bench/sql"),
        log_dir: std::env::temp_dir(),
        pids: Vec::new(),
    };
    let seconds = |v: String, name: &str| {
        v.parse::<f64>()
            .ok()
            .filter(|s| *s >= 0.0 && s.is_finite())
            .map(Duration::from_secs_f64)
            .ok_or_else(|| format!("{name}: not a number of seconds: {v}"))
    };
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--users" => {
                out.users = value()?.parse().map_err(|e| format!("--users: {e}"))?;
            }
            "--url" => out.url = Some(value()?),
            "--clients" => {
                out.settings.clients = value()?.parse().map_err(|e| format!("--clients: {e}"))?;
            }
            "--warmup" => out.settings.warmup = seconds(value()?, "--warmup")?,
            "--seconds" => out.settings.measure = seconds(value()?, "--seconds")?,
            "--rounds" => {
                out.settings.rounds = value()?.parse().map_err(|e| format!("--rounds: {e}"))?;
            }
            "--queries" => {
                let list = value()?;
                out.queries = Query::ALL
                    .into_iter()
                    .filter(|q| list.split(',').any(|n| n.trim() == q.number().to_string()))
                    .collect();
            }
            "--out" => out.out = Some(PathBuf::from(value()?)),
            "--note" => out.notes.push(value()?),
            "--sql-dir" => out.sql_dir = PathBuf::from(value()?),
            "--log-dir" => out.log_dir = PathBuf::from(value()?),
            "--pid" => {
                let spec = value()?;
                let parsed = spec
                    .split_once('=')
                    .and_then(|(kind, pid)| Some((Kind::parse(kind)?, pid.parse::<u32>().ok()?)));
                out.pids
                    .push(parsed.ok_or_else(|| format!("--pid {spec}: expected KIND=PID"))?);
            }
            "--target" => {
                let spec = value()?;
                let (kind, place) = spec
                    .split_once('=')
                    .ok_or_else(|| format!("--target {spec}: expected KIND=WHERE"))?;
                let kind = Kind::parse(kind)
                    .ok_or_else(|| format!("--target {spec}: unknown kind `{kind}`"))?;
                out.targets.push((kind, place.to_owned()));
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if out.settings.clients == 0 || out.settings.rounds == 0 {
        return Err("--clients and --rounds must be at least 1".into());
    }
    Ok(out)
}

async fn run() -> Result<bool, String> {
    let args = args()?;
    let data = Dataset::generate(args.users);
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(args.settings.clients * 2)
        .timeout(Duration::from_secs(60))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    match args.command.as_str() {
        "peer-sql" => {
            print!("{}", data.peer_sql());
            Ok(true)
        }
        "seed" => {
            let base = args.url.as_deref().ok_or("seed needs --url")?;
            let started = Instant::now();
            let token = root_token(&client, base).await?;
            seed(&client, base, &token, &data).await?;
            eprintln!(
                "suite: loaded {} users and {} posts into {base} in {:.1} s",
                data.users.len(),
                data.posts.len(),
                started.elapsed().as_secs_f64()
            );
            Ok(true)
        }
        "run" => measure(&args, &client, &data).await,
        other => Err(format!("unknown command `{other}`")),
    }
}

/// Measures every query on every target, writes the report; `false` when a cell failed.
async fn measure(args: &Args, client: &reqwest::Client, data: &Dataset) -> Result<bool, String> {
    if args.targets.is_empty() {
        return Err("run needs at least one --target".into());
    }
    let expect = Arc::new(Expect {
        users: data.users.len(),
        posts: data.posts.len(),
        filtered: data.filter_count(),
        searched: data.search_count(),
    });
    let load_before = loadavg();
    // Prepare every GraphQL target: its token and the ids of the loaded rows.
    let mut http: Vec<Result<Arc<HttpTarget>, String>> = Vec::new();
    for (kind, place) in &args.targets {
        if *kind == Kind::Sql {
            http.push(Err(String::new()));
            continue;
        }
        http.push(prepare(client, *kind, place, &expect).await.map(Arc::new));
    }
    let run_id: Arc<str> = format!(
        "{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis())
    )
    .into();
    let counter = Arc::new(AtomicU64::new(0));
    let ticks: u64 = std::env::var("SVC_BENCH_CLK_TCK")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let mut rows = Vec::new();
    for &query in &args.queries {
        let mut rounds: Vec<Vec<Cell>> = vec![Vec::new(); args.targets.len()];
        for round in 0..args.settings.rounds {
            let settings = Settings {
                warmup: if round == 0 {
                    args.settings.warmup
                } else {
                    Duration::ZERO
                },
                measure: args.settings.measure / args.settings.rounds as u32,
                ..args.settings.clone()
            };
            for (t, ((kind, place), target)) in args.targets.iter().zip(&http).enumerate() {
                if rounds[t].iter().any(|c| c.failure.is_some()) {
                    continue;
                }
                let cell = match (kind, target) {
                    (Kind::Sql, _) => {
                        let script = args.sql_dir.join(format!("q{}.sql", query.script()));
                        let tag = format!("svc-bench-pgbench-{run_id}-q{}-{round}", query.number());
                        let defines = [
                            format!("users={}", expect.users),
                            format!("posts={}", expect.posts),
                        ];
                        load::pgbench(place, &script, &settings, &args.log_dir, &tag, &defines)
                            .await
                    }
                    (_, Ok(target)) => {
                        let pid = args.pids.iter().find(|(k, _)| k == kind).map(|(_, p)| *p);
                        let cpu = || pid.and_then(|p| load::process_cpu(p, ticks));
                        let own = || load::process_cpu(std::process::id(), ticks);
                        let (before, own_before) = (cpu(), own());
                        let mut cell =
                            load::http(target, query, &expect, &settings, &run_id, &counter).await;
                        cell.cpu = before.zip(cpu()).map(|(a, b)| b.saturating_sub(a));
                        cell.client_cpu = own_before.zip(own()).map(|(a, b)| b.saturating_sub(a));
                        cell
                    }
                    (_, Err(e)) => Cell::failed(e.clone()),
                };
                rounds[t].push(cell);
            }
        }
        for ((kind, _), cells) in args.targets.iter().zip(rounds) {
            let cell = Cell::merge(cells);
            progress(query, *kind, &cell);
            rows.push(Row {
                query,
                kind: *kind,
                cell,
            });
        }
    }
    let kinds: Vec<Kind> = args.targets.iter().map(|(k, _)| *k).collect();
    let mut notes = args.notes.clone();
    notes.push(format!(
        "Load average (1 min) when the measurements started: {load_before}, when they ended: {} (anything else running on the machine shows here).",
        loadavg()
    ));
    let text = report::markdown(&rows, &kinds, &args.settings, &expect, &notes);
    if let Some(path) = &args.out {
        std::fs::write(path, &text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    println!("{text}");
    Ok(rows.iter().all(|r| r.cell.failure.is_none()))
}

/// The 1-minute load average, when the system tells it.
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "unknown".into())
}

fn progress(query: Query, kind: Kind, cell: &Cell) {
    let name = format!("q{} {}", query.number(), kind.label());
    match &cell.failure {
        Some(e) => eprintln!("  {name:<28} FAILED: {e}"),
        None => eprintln!(
            "  {name:<28} {:>7.0} req/s  p50 {:>6} ms  p99 {:>6} ms  statements {:<3}  server CPU {:>12}  load generator CPU {:>12}  ({} requests)",
            cell.rate,
            report::ms(cell.p50),
            report::ms(cell.p99),
            report::statements(cell),
            cell.cpu_per_request()
                .map_or("—".into(), |d| format!("{} ms/req", report::ms(d))),
            cell.client_cpu_per_request()
                .map_or("—".into(), |d| format!("{} ms/req", report::ms(d))),
            cell.requests
        ),
    }
}

/// A GraphQL target ready to measure: its endpoint, its token, and the ids of the data set's
/// rows, whose numbers must match the data set.
async fn prepare(
    client: &reqwest::Client,
    kind: Kind,
    place: &str,
    expect: &Expect,
) -> Result<HttpTarget, String> {
    // The ids are read through the Simple API, also for a Relay API target (the same rows).
    let (ids_url, token) = if kind.is_svc() {
        let token = root_token(client, place).await?;
        (format!("{place}/simple/v1/{SERVICE}"), Some(token))
    } else {
        (place.to_owned(), None)
    };
    let url = if kind.is_relay() {
        format!("{place}/relay/v1/{SERVICE}")
    } else {
        ids_url.clone()
    };
    let id_kind = if kind.is_relay() {
        Kind::SvcSqlite
    } else {
        kind
    };
    let mut ids = Ids::default();
    for (model, list, want) in [
        ("Post", &mut ids.posts, expect.posts),
        ("User", &mut ids.users, expect.users),
    ] {
        const PAGE: usize = 1000;
        loop {
            let (query, ptr) = id_kind.id_page(model, list.len(), PAGE);
            let (data, _) = send(client, &ids_url, token.as_deref(), &query, &json!({}))
                .await
                .map_err(|e| format!("reading the {model} ids failed: {e}"))?;
            let page = data.pointer(&ptr).and_then(Value::as_array).cloned();
            let page = page.ok_or_else(|| format!("no {model} ids at {ptr}: {data}"))?;
            let n = page.len();
            for row in page {
                list.push(
                    id_kind
                        .row_id(&row)
                        .ok_or_else(|| format!("a row without id: {row}"))?,
                );
            }
            if n < PAGE {
                break;
            }
        }
        if list.len() != want {
            return Err(format!(
                "{} holds {} {model} rows, the data set has {want} (load it afresh)",
                kind.label(),
                list.len()
            ));
        }
    }
    Ok(HttpTarget {
        kind,
        url,
        token,
        ids,
    })
}

/// Loads the data set through the Simple API: each user is created with its posts in one nested
/// `createUser` (one transaction), twenty users per request, two requests at a time.
async fn seed(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    data: &Dataset,
) -> Result<(), String> {
    let api: Arc<str> = format!("{base}/simple/v1/{SERVICE}").into();
    let s = |v: &str| Value::String(v.to_owned()).to_string();
    let documents: Vec<String> = data
        .users
        .chunks(20)
        .enumerate()
        .map(|(chunk, users)| {
            let mut doc = String::from("mutation {\n");
            for (k, user) in users.iter().enumerate() {
                let i = chunk * 20 + k;
                let posts: Vec<String> = data
                    .posts
                    .iter()
                    .filter(|p| p.author == i)
                    .map(|p| {
                        format!(
                            "{{slug: {}, title: {}, body: {}, votes: {}}}",
                            s(&p.slug),
                            s(&p.title),
                            s(&p.body),
                            p.votes
                        )
                    })
                    .collect();
                doc.push_str(&format!(
                    "u{k}: createUser(email: {}, name: {}, posts: [{}]) {{ id }}\n",
                    s(&user.email),
                    s(&user.name),
                    posts.join(", ")
                ));
            }
            doc.push('}');
            doc
        })
        .collect();
    let mut pending = documents.into_iter();
    loop {
        let mut batch = tokio::task::JoinSet::new();
        for doc in pending.by_ref().take(2) {
            let (client, api, token) = (client.clone(), api.clone(), token.to_owned());
            batch.spawn(async move { send(&client, &api, Some(&token), &doc, &json!({})).await });
        }
        if batch.is_empty() {
            return Ok(());
        }
        while let Some(result) = batch.join_next().await {
            result
                .map_err(|e| format!("a load task failed: {e}"))?
                .map_err(|e| format!("loading the data set failed: {e}"))?;
        }
    }
}

/// The service's `admin` root token, read through the System API with a platform token from
/// the master token (what `svc root-token admin` does).
async fn root_token(client: &reqwest::Client, base: &str) -> Result<String, String> {
    let master =
        std::env::var("SVC_BENCH_MASTER_TOKEN").map_err(|_| "SVC_BENCH_MASTER_TOKEN is not set")?;
    svc_bench::admin_root_token(client, base, SERVICE, &master).await
}
