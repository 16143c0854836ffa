//! The memory of a large response goes back to the system once the server is idle
//! (docs/operations.md, "Memory after a large response"): the allocator keeps freed memory for
//! reuse for a second, and each HTTP worker returns what its heap holds freed on a timer. The
//! server is the real binary, whose resident memory is read from `/proc`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::auth::secret::Served;
use crate::files::{memory, settles};
use crate::support::{ALIAS, SECRET, TestDatabase, mint, platform_claims};

db_cases! {
    /// A response of 100 000 nodes (100 aliased lists of 1 000 posts) grows the server by tens
    /// of MiB; within a few seconds of idleness most of that is resident no more.
    async fn an_idle_server_returns_the_memory_of_a_large_response(db) {
        let Some(database) = TestDatabase::create(db).await else { return };
        let mut served = Served::start(&database.url, Some(SECRET));
        let url = format!("http://127.0.0.1:{}/simple/v1/{ALIAS}", served.port);
        let token = mint(&platform_claims());
        let client = reqwest::Client::new();
        let post = |query: String| {
            let request = client.post(&url).bearer_auth(&token).json(&json!({ "query": query }));
            async move {
                request.send().await.expect("the request").json::<Value>().await.expect("JSON")
            }
        };
        for start in (0..1000).step_by(100) {
            let creates: String = (start..start + 100)
                .map(|i| format!(r#"p{i}: createPost(slug: "post-{i:04}", title: "Title of post {i}") {{ id }} "#))
                .collect();
            let created = post(format!("mutation {{ {creates} }}")).await;
            assert!(created.get("errors").is_none(), "{created:#}");
        }
        // What every request allocates once is resident before the measure.
        post("{ allPosts(first: 1000) { id title } }".into()).await;
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let before = memory(served.pid(), "VmRSS");
        let lists: String = (0..100).map(|i| format!("a{i}: allPosts(first: 1000) {{ id title }} ")).collect();
        let answer = post(format!("{{ {lists} }}")).await;
        assert_eq!(answer["data"]["a99"].as_array().map(Vec::len), Some(1000));
        drop(answer);
        let peak = memory(served.pid(), "VmHWM");
        let grown = peak.saturating_sub(before);
        // Without a large response this test would prove nothing.
        assert!(grown > 40 << 20, "the response grew the server by only {} KiB", grown >> 10);
        let (now, took) = settles(&mut served, before, peak, Duration::from_secs(10)).await;
        eprintln!(
            "{} MiB before, {} MiB at the peak, {} MiB after {} ms idle",
            before >> 20,
            peak >> 20,
            now >> 20,
            took.as_millis()
        );
    }
}
