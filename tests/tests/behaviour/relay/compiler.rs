//! A Relay app's documents (`tests/relay-app/`) compile with relay-compiler against the Relay
//! API's schema (fragments on `Viewer` and on `Post` with `@refetchable` and `@connection`, on
//! the root list and on a to-many relation field, and a create whose `edge` is appended to a
//! connection with `@appendEdge`), and the queries the compiler generates run
//! on the Relay API as the Relay runtime sends them (with the `pageInfo`, `cursor` and
//! `__typename` selections the compiler adds). Needs `node` and `npm` (see `crate::node`).

use std::path::Path;

use serde_json::{Value, json};

use crate::node::run_script;
use crate::support::ALIAS;

/// Copies `from` (a folder of files and folders) to `to`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the copy's folder");
    for entry in std::fs::read_dir(from)
        .expect("read the app's folder")
        .flatten()
    {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a file of the app");
        }
    }
}

/// The data of the generated query `name` in the script's output (`ok NAME {data}`).
fn answer(stdout: &str, name: &str) -> Value {
    let line = stdout
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(name))
        .unwrap_or_else(|| panic!("no answer to {name}: {stdout}"));
    let rest = line
        .strip_prefix(&format!("ok {name} "))
        .unwrap_or_else(|| panic!("{name} failed: {line}"));
    serde_json::from_str(rest).expect("the answer is JSON")
}

db_tests! {
    async fn compiler(srv) {
        let ann = srv.create("User", r#"email: "ann@x.io", name: "Ann""#).await;
        let mut posts = Vec::new();
        for i in 1..=3 {
            posts.push(srv.create("Post", &format!(r#"slug: "p{i}", title: "Post {i}", authorId: "{ann}""#)).await);
        }
        for i in 1..=3 {
            srv.create("Comment", &format!(r#"text: "c{i}", postId: "{}""#, posts[0])).await;
        }
        let app = std::env::temp_dir().join(format!("svc-relay-app-{}", posts[0]));
        copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("relay-app"), &app);
        let url = srv.url(&format!("/relay/v1/{ALIAS}"));
        let variables = json!({
            "PostsItemRefetchQuery": { "id": posts[0], "count": 2 },
            "PostsListPaginationQuery": { "count": 2, "cursor": posts[2] },
        })
        .to_string();
        let app_path = app.to_string_lossy().into_owned();
        let out = run_script(
            "relay-compile.mjs",
            &[&app_path, &url, &variables],
            &[("SVC_TOKEN", srv.root_token())],
        )
        .await;
        std::fs::remove_dir_all(&app).ok();
        let Some(stdout) = out else { return };
        assert!(stdout.lines().any(|l| l == "compiled 6"), "{stdout}");

        // The app's query: the first page of 10 posts, the newest (the greatest id) first.
        let first = answer(&stdout, "PostsAppQuery");
        let list = &first["viewer"]["allPosts"];
        assert_eq!(list["count"], json!(3));
        assert_eq!(list["pageInfo"], json!({ "endCursor": posts[0], "hasNextPage": false }));
        assert_eq!(list["edges"][0]["cursor"], json!(posts[2]));
        assert_eq!(list["edges"][0]["node"]["__typename"], json!("Post"));
        // The next page after the newest post, two at a time.
        let next = answer(&stdout, "PostsListPaginationQuery");
        let list = &next["viewer"]["allPosts"];
        let ids: Vec<&Value> = list["edges"].as_array().expect("edges").iter().map(|e| &e["node"]["id"]).collect();
        assert_eq!(ids, [&json!(posts[1]), &json!(posts[0])]);
        assert_eq!(list["pageInfo"], json!({ "endCursor": posts[0], "hasNextPage": false }));
        // The refetch of one post through `node(id:)`, with its first two comments.
        let post = &answer(&stdout, "PostsItemRefetchQuery")["node"];
        assert_eq!(post["__typename"], json!("Post"));
        assert_eq!(post["title"], json!("Post 1"));
        assert_eq!(post["author"]["name"], json!("Ann"));
        assert_eq!(post["comments"]["edges"].as_array().map(Vec::len), Some(2));
        assert_eq!(post["comments"]["pageInfo"]["hasNextPage"], json!(true));
    }
}
