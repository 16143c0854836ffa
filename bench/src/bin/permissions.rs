//! Read-permission cost: the same 100 published posts read under a permission query and with a
//! root token (no check at all), in alternating rounds on one server, in two scenarios:
//!
//! - `allPosts(first: 100)` read anonymously: `body`, `votes` and `createdAt` are granted only
//!   by the `Post.read` query of `example-model/svc.yml` (published, or one's own post);
//! - the same posts through the relation field `User.posts`, read by their author with a node
//!   token: the user's `posts` field is granted by the `User.read` query `Self`, every post by
//!   the `Post.read` query.
//!
//! The target of issue 4: the permission read costs at most 1.5× the root read.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

const FIELDS: &str = "id slug title body votes status createdAt";
const MASTER_TOKEN: &str = "svc-bench-master-token";

/// One comparison: a query, and who reads it under permissions.
struct Scenario {
    name: &'static str,
    query: String,
    /// The token of the permission side (`None`: anonymous).
    token: Option<String>,
    /// Where the 100 posts sit in the response.
    posts: &'static str,
}
struct Args {
    seconds: f64,
    rounds: usize,
    clients: usize,
    postgres: Option<String>,
}

fn args() -> Result<Args, String> {
    let mut out = Args {
        seconds: 3.0,
        rounds: 3,
        clients: 8,
        postgres: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--seconds" => {
                out.seconds = value("--seconds")?
                    .parse()
                    .map_err(|e| format!("--seconds: {e}"))?
            }
            "--rounds" => {
                out.rounds = value("--rounds")?
                    .parse()
                    .map_err(|e| format!("--rounds: {e}"))?
            }
            "--clients" => {
                out.clients = value("--clients")?
                    .parse()
                    .map_err(|e| format!("--clients: {e}"))?
            }
            "--postgres" => out.postgres = Some(value("--postgres")?),
            "--smoke" => {
                out.seconds = 0.5;
                out.rounds = 1;
                out.clients = 2;
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(out)
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
    let dir = std::env::temp_dir().join(format!("svc-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let database_url = match &args.postgres {
        Some(url) => url.clone(),
        None => format!("sqlite://{}", dir.join("data.db").display()),
    };
    let options = svc_runtime::Options {
        port: 0,
        database_url: Some(database_url.clone()),
        service_id: Some("bench".into()),
        alias: Some("bench".into()),
        secret: Some("svc-bench-secret-0123456789abcdef".into()),
        master_token: Some(MASTER_TOKEN.into()),
        file_store: Some(
            std::env::temp_dir()
                .join("svc-files-bench")
                .display()
                .to_string(),
        ),
        ..Default::default()
    };
    let running =
        tokio::task::spawn_blocking(move || svc_runtime::spawn::<example_model::Service>(options))
            .await
            .map_err(|e| format!("the server thread failed: {e}"))?
            .map_err(|e| format!("the server did not start: {e}"))?;
    let base = format!("http://127.0.0.1:{}", running.port);
    let client = reqwest::Client::new();
    let root = root_token(&client, &base).await?;
    let api = format!("{base}/simple/v1/bench");
    let author = seed(&client, &api, &root).await?;
    let author_token = node_token(&client, &base, &root, &author).await?;
    let scenarios = [
        Scenario {
            name: "allPosts(first: 100), anonymous",
            query: format!("{{ allPosts(first: 100) {{ {FIELDS} }} }}"),
            token: None,
            posts: "/data/allPosts",
        },
        Scenario {
            name: "User.posts(first: 100), the author",
            query: format!(
                r#"{{ User(email: "bench@example.com") {{ posts(first: 100) {{ {FIELDS} }} }} }}"#
            ),
            token: Some(author_token),
            posts: "/data/User/posts",
        },
    ];
    println!(
        "permission read benchmark: 100 posts, 7 fields, on {}, {} clients, {} rounds of {}s per side",
        if args.postgres.is_some() {
            "PostgreSQL"
        } else {
            "SQLite"
        },
        args.clients,
        args.rounds,
        args.seconds
    );
    let mut worst: f64 = 0.0;
    for scenario in &scenarios {
        worst = worst.max(compare(&client, &api, &root, scenario, &args).await?);
    }
    println!("worst cost ratio: {worst:.2}× (target ≤ 1.50×)");
    running.stop();
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Runs one scenario; returns its cost ratio (root req/s ÷ permission req/s).
async fn compare(
    client: &reqwest::Client,
    api: &str,
    root: &str,
    scenario: &Scenario,
    args: &Args,
) -> Result<f64, String> {
    // Both reads must return the same 100 complete posts.
    let token = scenario.token.as_deref();
    let as_root = post(client, api, Some(root), &scenario.query).await?;
    let checked = post(client, api, token, &scenario.query).await?;
    let posts = as_root.pointer(scenario.posts).and_then(Value::as_array);
    if as_root != checked || posts.map(Vec::len) != Some(100) {
        return Err(format!(
            "{}: the two reads differ or are incomplete: {checked}",
            scenario.name
        ));
    }
    let mut totals = [
        (0usize, Duration::ZERO, Vec::new()),
        (0, Duration::ZERO, Vec::new()),
    ];
    for _ in 0..args.rounds {
        for (side, token) in [Some(root), token].into_iter().enumerate() {
            let (n, elapsed, mut latencies) =
                load(client, api, &scenario.query, token, args).await?;
            totals[side].0 += n;
            totals[side].1 += elapsed;
            totals[side].2.append(&mut latencies);
        }
    }
    println!("{}", scenario.name);
    let mut rates = [0.0; 2];
    for (side, name) in ["root token (no checks)", "permission queries"]
        .iter()
        .enumerate()
    {
        let (n, elapsed, latencies) = &mut totals[side];
        latencies.sort();
        let pct = |p: f64| {
            latencies
                .get(((latencies.len() as f64 - 1.0) * p) as usize)
                .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
        };
        rates[side] = *n as f64 / elapsed.as_secs_f64();
        println!(
            "  {name:<30} {:>8.0} req/s   p50 {:>6.2} ms   p99 {:>6.2} ms   ({n} requests)",
            rates[side],
            pct(0.5),
            pct(0.99)
        );
    }
    let ratio = rates[0] / rates[1];
    println!("  cost ratio (root req/s ÷ permission req/s): {ratio:.2}× (target ≤ 1.50×)");
    Ok(ratio)
}

/// Sends requests from `clients` concurrent loops for `seconds`; returns the count, the wall
/// time and every latency.
async fn load(
    client: &reqwest::Client,
    api: &str,
    query: &str,
    token: Option<&str>,
    args: &Args,
) -> Result<(usize, Duration, Vec<Duration>), String> {
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(args.seconds);
    let mut tasks = Vec::new();
    for _ in 0..args.clients {
        let client = client.clone();
        let api = api.to_owned();
        let token = token.map(str::to_owned);
        let q = query.to_owned();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            while Instant::now() < deadline {
                let t = Instant::now();
                let body = post(&client, &api, token.as_deref(), &q).await?;
                if body.get("errors").is_some() {
                    return Err(format!("a benchmark request failed: {body}"));
                }
                latencies.push(t.elapsed());
            }
            Ok::<_, String>(latencies)
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.map_err(|e| format!("a client failed: {e}"))??);
    }
    Ok((all.len(), start.elapsed(), all))
}

async fn post(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    query: &str,
) -> Result<Value, String> {
    svc_bench::post(client, url, token, query, &json!({})).await
}

/// The `admin` root token, read through the System API the way the CLI reads it.
async fn root_token(client: &reqwest::Client, base: &str) -> Result<String, String> {
    svc_bench::admin_root_token(client, base, "bench", MASTER_TOKEN).await
}

/// A node token for the user `id`, asked the way a client library asks for one.
async fn node_token(
    client: &reqwest::Client,
    base: &str,
    root: &str,
    id: &str,
) -> Result<String, String> {
    let mutation = format!(
        r#"mutation {{ generateNodeToken(input: {{ rootToken: "{root}", serviceId: "bench", nodeId: "{id}", modelName: "User", clientMutationId: "bench" }}) {{ token }} }}"#
    );
    let res = post(client, &format!("{base}/system"), None, &mutation).await?;
    res["data"]["generateNodeToken"]["token"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("generateNodeToken failed: {res}"))
}

/// 100 published posts by one editor; returns the editor's id.
async fn seed(client: &reqwest::Client, api: &str, root: &str) -> Result<String, String> {
    let user = post(
        client,
        api,
        Some(root),
        r#"mutation { createUser(email: "bench@example.com", name: "bench", role: EDITOR) { id } }"#,
    )
    .await?;
    let author = user["data"]["createUser"]["id"]
        .as_str()
        .ok_or_else(|| format!("cannot create the author: {user}"))?
        .to_owned();
    let creates: String = (0..100)
        .map(|i| {
            format!(
                r#"p{i}: createPost(slug: "post-{i:03}", title: "Post {i}", body: "Body of post {i}", status: PUBLISHED, votes: {i}, authorId: "{author}") {{ id }}
"#
            )
        })
        .collect();
    let res = post(
        client,
        api,
        Some(root),
        &format!("mutation {{\n{creates}}}"),
    )
    .await?;
    match res.get("errors") {
        Some(errors) => Err(format!("seeding failed: {errors}")),
        None => Ok(author),
    }
}
