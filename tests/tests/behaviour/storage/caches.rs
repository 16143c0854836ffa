//! `--sqlite-cache-mib` (`SVC_SQLITE_CACHE_MIB`): the page cache each SQLite connection keeps
//! of what it read, which is most of what a server on a large SQLite file holds once its reads
//! have scanned it (docs/operations.md, "Memory"). The server is the real binary, its resident
//! memory read from `/proc`.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::auth::secret::Served;
use crate::files::memory;
use crate::support::{ALIAS, Db, SECRET, TestDatabase, mint, platform_claims};

/// Posts of about 500 bytes each: a table of about 20 MiB, every value in its B-tree page (with
/// bodies of 4 000 characters, in overflow pages, the setting made almost no difference).
const POSTS: usize = 40_000;

/// Requests in flight at once, so that several connections scan the table.
const CLIENTS: usize = 8;

/// Sends `query` as a platform token to the server on `port`.
async fn post(client: &reqwest::Client, port: u16, query: String) -> Value {
    client
        .post(format!("http://127.0.0.1:{port}/simple/v1/{ALIAS}"))
        .bearer_auth(mint(&platform_claims()))
        .json(&json!({ "query": query }))
        .send()
        .await
        .expect("the request")
        .json::<Value>()
        .await
        .expect("JSON")
}

/// Starts the server with `env`, counts the posts whose body holds a text none holds
/// (`_allPostsMeta` scans every body) from `CLIENTS` clients at once, a few times each, and
/// returns how much the server's peak resident memory grew over it, in bytes.
async fn growth_of_scans(database: &TestDatabase, env: &[(&str, &str)]) -> u64 {
    let mut served = Served::start_with(&database.url, Some(SECRET), env);
    let client = reqwest::Client::new();
    let count = "{ _allPostsMeta(filter: { body_contains: \"not in any body\" }) { count } }";
    // What every request allocates once is resident before the measure.
    let warm = post(&client, served.port, "{ allPosts(first: 1) { id } }".into()).await;
    assert!(warm.get("errors").is_none(), "{warm:#}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = memory(served.pid(), "VmRSS");
    let scans = (0..CLIENTS).map(|_| {
        let client = client.clone();
        let port = served.port;
        async move {
            for _ in 0..4 {
                let answer = post(&client, port, count.into()).await;
                assert_eq!(answer["data"]["_allPostsMeta"]["count"], 0, "{answer:#}");
            }
        }
    });
    futures_util::future::join_all(scans).await;
    let peak = memory(served.pid(), "VmHWM");
    served.stop();
    peak.saturating_sub(before)
}

/// With the default 32 MiB per connection, scans of a 20 MiB table from several clients grow
/// the server by the table once for each connection that scanned it; with
/// `SVC_SQLITE_CACHE_MIB=1` by little more than what the requests themselves allocate, and the
/// answers are the same.
#[tokio::test]
async fn the_sqlite_page_caches_are_bounded_by_the_setting() {
    let database = TestDatabase::create(Db::Sqlite)
        .await
        .expect("a SQLite file");
    // The server makes its tables; the posts are written beside it, all at once.
    Served::start(&database.url, Some(SECRET)).stop();
    database
        .execute(&[format!(
            r#"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {POSTS})
               INSERT INTO "Post" ("id", "createdAt", "updatedAt", "slug", "title", "body", "votes", "status")
               SELECT printf('c%024d', i), '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z',
                      'post-' || i, 'Post ' || i, printf('%.400c', 'x'), 0, 'DRAFT' FROM n"#
        )])
        .await;

    let default = growth_of_scans(&database, &[]).await;
    let small = growth_of_scans(&database, &[("SVC_SQLITE_CACHE_MIB", "1")]).await;
    eprintln!(
        "the scans grew the server by {} MiB with the default caches, {} MiB with 1 MiB ones",
        default >> 20,
        small >> 20
    );
    // The scans must have filled caches for the comparison to mean anything: each connection
    // that scanned keeps the whole table with the default (on the machine this was written on,
    // 153 MiB in all against 15 MiB with 1 MiB caches, what the requests allocate included).
    assert!(
        default > 48 << 20,
        "the default caches grew by only {} KiB",
        default >> 10
    );
    assert!(
        small * 3 < default,
        "1 MiB caches grew the server by {} KiB, the default ones by {} KiB",
        small >> 10,
        default >> 10
    );
}

/// A cache of 0 MiB, or one that is not a number, is refused at start with the flag's name.
#[tokio::test]
async fn a_cache_setting_out_of_range_is_refused() {
    let database = TestDatabase::create(Db::Sqlite)
        .await
        .expect("a SQLite file");
    for value in ["0", "lots", "524289"] {
        let out = Command::new(env!("CARGO_BIN_EXE_example-server"))
            .args(["serve", "--port", "0", "--database-url", &database.url])
            .env("SVC_SQLITE_CACHE_MIB", value)
            .env("SVC_SECRET", SECRET)
            .stdin(Stdio::null())
            .output()
            .expect("cannot run the example-server binary");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{value}: {stderr}");
        assert!(stderr.contains("--sqlite-cache-mib"), "{value}: {stderr}");
    }
}
