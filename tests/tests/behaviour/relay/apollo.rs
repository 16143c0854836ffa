//! Apollo Client's normalised cache on the Relay API: it adds `__typename` to every selection
//! (connection, edge and page-info types included), which the API answers, and keeps each node
//! under `<Type>:<id>` (the viewer under `Viewer:viewer-fixed`). Needs `node` and `npm` (see
//! `crate::node`).

use serde_json::{Value, json};

use crate::node::run_script;
use crate::support::ALIAS;

db_tests! {
    async fn apollo_cache(srv) {
        let ann = srv.create("User", r#"email: "ann@x.io", name: "Ann""#).await;
        let mut posts = Vec::new();
        for i in 1..=3 {
            posts.push(srv.create("Post", &format!(r#"slug: "p{i}", title: "Post {i}", authorId: "{ann}""#)).await);
        }
        let url = srv.url(&format!("/relay/v1/{ALIAS}"));
        let Some(stdout) = run_script("apollo-cache.mjs", &[&url], &[("SVC_TOKEN", srv.root_token())]).await else {
            return;
        };
        let line = |prefix: &str| -> Value {
            let text = stdout
                .lines()
                .find_map(|l| l.strip_prefix(prefix))
                .unwrap_or_else(|| panic!("no `{prefix}` line: {stdout}"));
            serde_json::from_str(text).expect("JSON")
        };
        let node = |i: usize| json!({ "__typename": "Post", "id": posts[i], "title": format!("Post {}", i + 1), "author": { "__typename": "User", "id": ann, "name": "Ann" } });
        assert_eq!(
            line("data "),
            json!({ "viewer": { "__typename": "Viewer", "id": "viewer-fixed", "allPosts": {
                "__typename": "PostConnection",
                "count": 3,
                "pageInfo": { "__typename": "PageInfo", "hasNextPage": true, "endCursor": posts[1] },
                "edges": [
                    { "__typename": "PostEdge", "cursor": posts[0], "node": node(0) },
                    { "__typename": "PostEdge", "cursor": posts[1], "node": node(1) },
                ],
            } } })
        );
        let cache = line("cache ");
        assert_eq!(cache["ROOT_QUERY"]["viewer"], json!({ "__ref": "Viewer:viewer-fixed" }));
        assert_eq!(cache[format!("Post:{}", posts[0])]["title"], json!("Post 1"));
        assert_eq!(cache[format!("User:{ann}")]["name"], json!("Ann"));
    }
}
