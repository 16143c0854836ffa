//! `@search` fields (docs/extensions.md): the example service's `Post.title` is one. Its substring
//! filters answer exactly what a scan answers whatever writes the rows, on both databases (on
//! SQLite, through its B-tree index where that serves), and on PostgreSQL the server's own
//! statements can and do go through the field's trigram index.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Db, SECRET, Server, TestDatabase, list_of};

/// `(slug, title)` of the posts the cases search.
const POSTS: [(&str, &str); 8] = [
    ("a", "GraphQL in Rust"),
    ("b", "graphql basics"),
    ("c", "Learning GRAPHQL"),
    ("d", "Rust only"),
    ("e", "50% off_sale"),
    ("f", "Straße und Ünïcode"),
    ("g", "a percent sign: 50 %"),
    ("h", "gr"),
];

/// Creates [`POSTS`]; their ids by slug.
async fn create_posts(srv: &Server) -> HashMap<&'static str, String> {
    let mut ids = HashMap::new();
    for (slug, title) in POSTS {
        let id = srv
            .create(
                "Post",
                &format!(r#"slug: "{slug}", title: {}"#, json!(title)),
            )
            .await;
        ids.insert(slug, id);
    }
    ids
}

/// The slugs of the posts whose title matches `filter`, in id order, and their count.
async fn matching(srv: &Server, filter: &str) -> (Value, Value) {
    let data = srv
        .data(&format!(
            "{{ allPosts(filter: {filter}) {{ slug }} _allPostsMeta(filter: {filter}) {{ count }} }}"
        ))
        .await;
    (
        json!({ "data": { "allPosts": data["allPosts"] } }),
        data["_allPostsMeta"]["count"].clone(),
    )
}

async fn check(srv: &Server, cases: &[(&str, &[&str])]) {
    for (filter, expected) in cases {
        let (posts, count) = matching(srv, filter).await;
        assert_eq!(
            posts,
            list_of("allPosts", "slug", expected),
            "filter: {filter}"
        );
        assert_eq!(count, json!(expected.len()), "count, filter: {filter}");
    }
}

db_cases! {
    /// Every substring filter on an indexed field answers as the scan would: case-insensitive
    /// matches of three characters and more (served by the index), shorter ones and ones with
    /// `%`, `_` or non-ASCII text, the negated forms, inside `AND`/`OR`; and they keep answering
    /// so after updates, `updateMany`, nested creates and deletes.
    async fn substring_filters_answer_as_a_scan_does(db) {
        let Some(srv) = Server::start(db).await else { return };
        let ids = create_posts(&srv).await;
        check(&srv, &[
            (r#"{ title_contains: "graphql" }"#, &["a", "b", "c"]),
            (r#"{ title_contains: "GraphQL" }"#, &["a", "b", "c"]),
            (r#"{ title_contains: "aphq" }"#, &["a", "b", "c"]),
            (r#"{ title_starts_with: "graphql" }"#, &["a", "b"]),
            // A range of SQLite's index: the prefix in any case, `%` and `_` literally.
            (r#"{ title_starts_with: "GR" }"#, &["a", "b", "h"]),
            (r#"{ title_starts_with: "50% off_" }"#, &["e"]),
            (r#"{ title_starts_with: "50%_" }"#, &[]),
            (r#"{ title_starts_with: "straße" }"#, &["f"]),
            (r#"{ title_ends_with: "GRAPHQL" }"#, &["c"]),
            (r#"{ title_ends_with: "rust" }"#, &["a"]),
            (r#"{ title_contains: "rust" }"#, &["a", "d"]),
            (r#"{ title_contains: "gr" }"#, &["a", "b", "c", "h"]),
            (r#"{ title_contains: "gr", title_starts_with: "gr" }"#, &["a", "b", "h"]),
            (r#"{ title_contains: "% off" }"#, &["e"]),
            (r#"{ title_contains: "off_s" }"#, &["e"]),
            (r#"{ title_contains: "50 %" }"#, &["g"]),
            (r#"{ title_contains: "Straße" }"#, &["f"]),
            (r#"{ title_contains: "Ünïcode" }"#, &["f"]),
            (r#"{ title_contains: "zzz" }"#, &[]),
            (r#"{ title_not_contains: "graphql" }"#, &["d", "e", "f", "g", "h"]),
            (r#"{ title_not_starts_with: "graphql" }"#, &["c", "d", "e", "f", "g", "h"]),
            (r#"{ OR: [{ title_contains: "basics" }, { title_contains: "only" }] }"#, &["b", "d"]),
            (r#"{ AND: [{ title_contains: "graphql" }, { title_contains: "rust" }] }"#, &["a"]),
            (r#"{ title_contains: "graphql", slug_in: ["a", "c", "d"] }"#, &["a", "c"]),
        ]).await;

        // Writes of every kind keep the index in step.
        srv.data(&format!(r#"mutation {{ updatePost(id: "{}", title: "nothing here") {{ id }} }}"#, ids["b"])).await;
        srv.data(&format!(r#"mutation {{ updatePost(id: "{}", title: "GraphQL later") {{ id }} }}"#, ids["d"])).await;
        srv.data(r#"mutation { updateManyPosts(filter: { slug: "c" }, data: { title: "no longer" }) { count } }"#).await;
        srv.data(r#"mutation { createUser(email: "s@example.com", name: "S", posts: [{ slug: "n", title: "nested GraphQL" }]) { id } }"#).await;
        srv.data(&format!(r#"mutation {{ deletePost(id: "{}") {{ id }} }}"#, ids["a"])).await;
        check(&srv, &[
            (r#"{ title_contains: "graphql" }"#, &["d", "n"]),
            (r#"{ title_contains: "nothing" }"#, &["b"]),
            (r#"{ title_contains: "longer" }"#, &["c"]),
            (r#"{ title_contains: "basics" }"#, &[]),
        ]).await;
    }
}

/// The server's own statements go through the trigram index: with sequential and plain index
/// scans disabled on the server's connections (what is left is a bitmap scan of an index whose
/// expression is the filter's, or a disabled and so dearer scan of the whole table), a match
/// counts a scan of the index in PostgreSQL's statistics.
#[tokio::test]
async fn postgresql_substring_filters_use_the_trigram_index() {
    let Some(mut database) = TestDatabase::create(Db::Postgres).await else {
        return;
    };
    database.url = database.url.replace(
        ",public&",
        ",public%20-c%20enable_seqscan%3Doff%20-c%20enable_indexscan%3Doff&",
    );
    assert!(database.url.contains("enable_seqscan"), "{}", database.url);
    let srv = Server::start_on(database, Some(SECRET)).await;
    create_posts(&srv).await;
    let before = index_scans(&srv).await;
    check(
        &srv,
        &[(r#"{ title_contains: "graphql" }"#, &["a", "b", "c"])],
    )
    .await;
    let start = Instant::now();
    loop {
        // Counters reach the statistics views within seconds of the scan.
        let now = index_scans(&srv).await;
        if now > before {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no scan of the trigram index counted (still {now})"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// PostgreSQL: how many scans of `Post.title`'s trigram index the statistics have counted.
async fn index_scans(srv: &Server) -> i64 {
    use sea_orm::ConnectionTrait;
    let schema = srv
        .database()
        .postgres_schema()
        .expect("a PostgreSQL schema");
    let db = svc_runtime::storage::Db::connect(&srv.database().url)
        .await
        .expect("connect");
    let sql = format!(
        "SELECT idx_scan FROM pg_stat_user_indexes WHERE schemaname = '{schema}' \
         AND indexrelname = '_svc_search_Post_title'"
    );
    let row = db
        .reader()
        .query_one_raw(sea_orm::Statement::from_string(
            db.reader().get_database_backend(),
            sql.clone(),
        ))
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .unwrap_or_else(|| panic!("no trigram index on Post.title: {sql}"));
    row.try_get_by_index::<i64>(0)
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}
