//! The NDF import/export benchmark's client (`bench/ndf`): imports a generated data set into a
//! running example service through `POST /simple/v1/<id>/import` (documents of at most 10 MB,
//! one after the other, as `svc import` sends them), exports it again page by page through
//! `/export`, and prints the rates and the server's peak resident memory as one JSON line.
//!
//! The data set: `--users` users and `--posts` posts (slug, title, votes, status, createdAt;
//! `tags`, a list of three strings, as `lists` documents), and one `author` edge per post (as
//! `relations` documents). `--csv DIR` instead writes the same posts as `posts.csv` (the columns
//! of `Post` that the import fills) for the raw bulk peers (`sqlite3 .import`, `COPY`).
//!
//! `--dir DIR` with `archive` writes the documents as `DIR/data.zip` in the layout `svc import`
//! reads (`nodes/000001.json`, …), and `platform-token --base URL` prints a platform token (what
//! `svc` uses as a cluster's secret), for the runs through the CLI.
//!
//!   ndf run --base URL --service ID --pid PID [--users U] [--posts P]
//!   ndf csv --dir DIR [--posts P]
//!   ndf archive --dir DIR [--users U] [--posts P]
//!   ndf platform-token --base URL

use std::time::Instant;

use serde_json::{Value, json};

/// Documents stay under the server's 10 MB limit.
const DOCUMENT_BYTES: usize = 9_500_000;

struct Args {
    command: String,
    base: String,
    service: String,
    pid: u32,
    users: usize,
    posts: usize,
    dir: String,
}

fn args() -> Result<Args, String> {
    let mut argv = std::env::args().skip(1);
    let mut args = Args {
        command: argv.next().ok_or("usage: ndf run|csv …")?,
        base: String::new(),
        service: "bench".to_owned(),
        pid: 0,
        users: 1000,
        posts: 1_000_000,
        dir: ".".to_owned(),
    };
    while let Some(flag) = argv.next() {
        let value = argv.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = || value.parse::<usize>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--base" => args.base = value.clone(),
            "--service" => args.service = value.clone(),
            "--pid" => args.pid = value.parse().map_err(|e| format!("--pid: {e}"))?,
            "--users" => args.users = number()?,
            "--posts" => args.posts = number()?,
            "--dir" => args.dir = value.clone(),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

fn user_id(i: usize) -> String {
    format!("u{i:07}")
}

fn post_id(i: usize) -> String {
    format!("p{i:08}")
}

const STATUSES: [&str; 3] = ["DRAFT", "PUBLISHED", "ARCHIVED"];

fn created_at(i: usize) -> String {
    format!(
        "2020-01-{:02}T{:02}:{:02}:{:02}.000Z",
        1 + i % 28,
        i / 3600 % 24,
        i / 60 % 60,
        i % 60
    )
}

/// The NDF documents of the data set, in import order: (valueType, body, elements).
fn documents(users: usize, posts: usize) -> Vec<(&'static str, String, usize)> {
    let mut out = Vec::new();
    let mut batch = Batch::new("nodes");
    for i in 0..users {
        let element = json!({ "_typeName": "User", "id": user_id(i), "email": format!("user{i}@bench.io"), "name": format!("User {i}") });
        batch.push(&element.to_string(), &mut out);
    }
    for i in 0..posts {
        let element = json!({
            "_typeName": "Post", "id": post_id(i), "slug": format!("post-{i}"), "title": format!("Post number {i}"),
            "votes": i % 100, "status": STATUSES[i % 3], "createdAt": created_at(i), "updatedAt": created_at(i),
        });
        batch.push(&element.to_string(), &mut out);
    }
    batch.finish(&mut out);
    let mut batch = Batch::new("lists");
    for i in 0..posts {
        let element = json!({ "_typeName": "Post", "id": post_id(i), "tags": [format!("t{}", i % 10), "bench", format!("n{}", i % 7)] });
        batch.push(&element.to_string(), &mut out);
    }
    batch.finish(&mut out);
    let mut batch = Batch::new("relations");
    for i in 0..posts {
        let element = json!([
            { "_typeName": "Post", "id": post_id(i), "fieldName": "author" },
            { "_typeName": "User", "id": user_id(i % users.max(1)), "fieldName": "posts" },
        ]);
        batch.push(&element.to_string(), &mut out);
    }
    batch.finish(&mut out);
    out
}

/// One document being filled.
struct Batch {
    kind: &'static str,
    body: String,
    count: usize,
}

impl Batch {
    fn new(kind: &'static str) -> Batch {
        Batch {
            kind,
            body: String::new(),
            count: 0,
        }
    }

    fn push(&mut self, element: &str, out: &mut Vec<(&'static str, String, usize)>) {
        if self.body.len() + element.len() + 64 > DOCUMENT_BYTES {
            self.finish(out);
        }
        if self.count == 0 {
            self.body = format!("{{\"valueType\":\"{}\",\"values\":[", self.kind);
        } else {
            self.body.push(',');
        }
        self.body.push_str(element);
        self.count += 1;
    }

    fn finish(&mut self, out: &mut Vec<(&'static str, String, usize)>) {
        if self.count > 0 {
            self.body.push_str("]}");
            out.push((self.kind, std::mem::take(&mut self.body), self.count));
            self.count = 0;
        }
    }
}

/// The server's peak resident memory (`VmHWM`), in KiB.
fn peak_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

async fn run(args: &Args) -> Result<Value, String> {
    let client = reqwest::Client::new();
    let master = std::env::var("SVC_BENCH_MASTER_TOKEN").map_err(|_| "SVC_BENCH_MASTER_TOKEN")?;
    // The documents first: building a million posts' takes longer than the server keeps an idle
    // connection open, and a POST on the connection the token came over, closed meanwhile,
    // failed ("error sending request").
    let documents = documents(args.users, args.posts);
    let token = svc_bench::admin_root_token(&client, &args.base, &args.service, &master).await?;
    let bytes: usize = documents.iter().map(|d| d.1.len()).sum();
    let import_url = format!("{}/simple/v1/{}/import", args.base, args.service);
    let mut phases = serde_json::Map::new();
    let started = Instant::now();
    for kind in ["nodes", "lists", "relations"] {
        let begun = Instant::now();
        let mut elements = 0;
        for (_, body, count) in documents.iter().filter(|d| d.0 == kind) {
            let res = client
                .post(&import_url)
                .bearer_auth(&token)
                .header("Content-Type", "application/json")
                .body(body.clone())
                .send()
                .await
                .map_err(|e| format!("import: {e}"))?;
            let answer: Value = res
                .json()
                .await
                .map_err(|e| format!("import answer: {e}"))?;
            if answer != json!([]) {
                let text = answer.to_string();
                return Err(format!(
                    "import of {kind} failed: {}",
                    &text[..text.len().min(500)]
                ));
            }
            elements += count;
        }
        let seconds = begun.elapsed().as_secs_f64();
        phases.insert(
            format!("import_{kind}"),
            json!({ "elements": elements, "seconds": seconds, "per_second": elements as f64 / seconds }),
        );
    }
    let import_seconds = started.elapsed().as_secs_f64();
    let import_peak = peak_kib(args.pid);
    let export_url = format!("{}/simple/v1/{}/export", args.base, args.service);
    let started = Instant::now();
    let mut exported_bytes = 0;
    for kind in ["nodes", "lists", "relations"] {
        let begun = Instant::now();
        let mut cursor = json!({ "table": 0, "row": 0, "field": 0, "array": 0 });
        let mut elements = 0;
        loop {
            let res = client
                .post(&export_url)
                .bearer_auth(&token)
                .json(&json!({ "fileType": kind, "cursor": cursor }))
                .send()
                .await
                .map_err(|e| format!("export: {e}"))?;
            let text = res
                .text()
                .await
                .map_err(|e| format!("export answer: {e}"))?;
            exported_bytes += text.len();
            let page: Value =
                serde_json::from_str(&text).map_err(|e| format!("export page: {e}"))?;
            elements += page["out"]["jsonElements"]
                .as_array()
                .ok_or_else(|| format!("export of {kind}: {}", &text[..text.len().min(300)]))?
                .len();
            cursor = page["cursor"].clone();
            if cursor["table"] == json!(-1) {
                break;
            }
        }
        let seconds = begun.elapsed().as_secs_f64();
        phases.insert(
            format!("export_{kind}"),
            json!({ "elements": elements, "seconds": seconds, "per_second": elements as f64 / seconds }),
        );
    }
    let export_seconds = started.elapsed().as_secs_f64();
    let nodes = args.users + args.posts;
    Ok(json!({
        "nodes": nodes,
        "edges": args.posts,
        "list_values": args.posts * 3,
        "documents": documents.len(),
        "import_bytes": bytes,
        "import_seconds": import_seconds,
        "import_nodes_per_second": nodes as f64 / import_seconds,
        "export_bytes": exported_bytes,
        "export_seconds": export_seconds,
        "export_nodes_per_second": nodes as f64 / export_seconds,
        "peak_rss_kib_after_import": import_peak,
        "peak_rss_kib": peak_kib(args.pid),
        "phases": phases,
    }))
}

/// `posts.csv` and `users.csv` for the raw bulk peers: the columns the import fills.
fn csv(args: &Args) -> Result<(), String> {
    use std::io::Write;
    let write = |name: &str, rows: &mut dyn Iterator<Item = String>| -> Result<(), String> {
        let path = format!("{}/{name}", args.dir);
        let file = std::fs::File::create(&path).map_err(|e| format!("{path}: {e}"))?;
        let mut out = std::io::BufWriter::new(file);
        for row in rows {
            writeln!(out, "{row}").map_err(|e| format!("{path}: {e}"))?;
        }
        out.flush().map_err(|e| format!("{path}: {e}"))
    };
    let users = args.users;
    write(
        "users.csv",
        &mut (0..users).map(|i| {
            format!(
                "{},user{i}@bench.io,User {i},READER,false,2020-01-01T00:00:00.000Z,2020-01-01T00:00:00.000Z",
                user_id(i)
            )
        }),
    )?;
    write(
        "posts.csv",
        &mut (0..args.posts).map(|i| {
            format!(
                "{},post-{i},Post number {i},{},{},\"[\"\"t{}\"\",\"\"bench\"\",\"\"n{}\"\"]\",{},{},{}",
                post_id(i),
                i % 100,
                STATUSES[i % 3],
                i % 10,
                i % 7,
                user_id(i % users.max(1)),
                created_at(i),
                created_at(i)
            )
        }),
    )
}

/// `DIR/data.zip`: the documents in the archive layout of `svc export` (deflated, level 1).
fn archive(args: &Args) -> Result<(), String> {
    use std::io::Write;
    let path = format!("{}/data.zip", args.dir);
    let file = std::fs::File::create(&path).map_err(|e| format!("{path}: {e}"))?;
    let mut zip = zip::ZipWriter::new(std::io::BufWriter::new(file));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .compression_level(Some(1));
    let mut numbers = std::collections::HashMap::new();
    for (kind, body, _) in documents(args.users, args.posts) {
        let n = numbers.entry(kind).or_insert(0);
        *n += 1;
        zip.start_file(format!("{kind}/{n:06}.json"), options)
            .map_err(|e| format!("{path}: {e}"))?;
        zip.write_all(body.as_bytes())
            .map_err(|e| format!("{path}: {e}"))?;
    }
    zip.finish().map_err(|e| format!("{path}: {e}"))?;
    Ok(())
}

/// A platform token from `authenticateCustomer` with the master token.
async fn platform_token(args: &Args) -> Result<Value, String> {
    let client = reqwest::Client::new();
    let master = std::env::var("SVC_BENCH_MASTER_TOKEN").map_err(|_| "SVC_BENCH_MASTER_TOKEN")?;
    let res: Value = client
        .post(format!("{}/system", args.base))
        .json(&json!({ "query": "mutation ($t: String!) { authenticateCustomer(input: { auth0IdToken: $t }) { token } }", "variables": { "t": master } }))
        .send()
        .await
        .map_err(|e| format!("authenticateCustomer: {e}"))?
        .json()
        .await
        .map_err(|e| format!("authenticateCustomer: {e}"))?;
    res["data"]["authenticateCustomer"]["token"]
        .as_str()
        .map(|t| Value::String(t.to_owned()))
        .ok_or_else(|| format!("authenticateCustomer gave no token: {res}"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let result = match args() {
        Ok(args) if args.command == "csv" => csv(&args).map(|()| Value::Null),
        Ok(args) if args.command == "archive" => archive(&args).map(|()| Value::Null),
        Ok(args) if args.command == "platform-token" => platform_token(&args).await,
        Ok(args) if args.command == "run" => run(&args).await,
        Ok(args) => Err(format!("unknown command {}", args.command)),
        Err(e) => Err(e),
    };
    match result {
        Ok(Value::Null) => {}
        Ok(Value::String(text)) => println!("{text}"),
        Ok(report) => println!("{report}"),
        Err(e) => {
            eprintln!("ndf: {e}");
            std::process::exit(1);
        }
    }
}
