//! No N+1: reading relations costs a bounded number of SQL statements (at most one per level of
//! the selection), however many nodes there are, as reported by the `Svc-Sql-Statements`
//! response header.

use std::ops::Range;

use serde_json::{Value, json};

use crate::support::{Server, body_json, node_token};

/// Runs a query that must succeed (with the root token); returns the number of SQL statements
/// it ran and its body.
async fn counted(srv: &Server, query: &str) -> (u32, Value) {
    counted_as(srv, Some(srv.root_token()), query).await
}

/// [`counted`] with `token` (anonymous for `None`).
async fn counted_as(srv: &Server, token: Option<&str>, query: &str) -> (u32, Value) {
    let mut request = srv
        .anonymous()
        .post(srv.api())
        .json(&json!({ "query": query }));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let res = request.send().await.expect("the request failed");
    let header = res
        .headers()
        .get("Svc-Sql-Statements")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = body_json(res).await;
    assert!(
        body.get("errors").is_none() && body.get("error").is_none(),
        "{query}\n{body:#}"
    );
    let n = header
        .as_deref()
        .and_then(|h| h.parse().ok())
        .unwrap_or_else(|| panic!("no numeric Svc-Sql-Statements header ({header:?}) for {query}"));
    (n, body)
}

/// Creates users `U{i}` (`i` as three digits) for every `i` in `range`, each with posts `A{i}`
/// and `B{i}`, each with comments `u{i}-a-1`, `u{i}-a-2` (on `A{i}`) and `u{i}-b-1`, `u{i}-b-2`
/// (on `B{i}`), all with nested creates in one request.
async fn users_with_posts(srv: &Server, range: Range<usize>) {
    let creates: String = range
        .map(|i| {
            format!(
                r#"u{i}: createUser(email: "u{i:03}@example.com", name: "U{i:03}", posts: [{{ slug: "u{i:03}-a", title: "A{i:03}", comments: [{{ text: "u{i:03}-a-1" }}, {{ text: "u{i:03}-a-2" }}] }}, {{ slug: "u{i:03}-b", title: "B{i:03}", comments: [{{ text: "u{i:03}-b-1" }}, {{ text: "u{i:03}-b-2" }}] }}]) {{ id }}
"#
            )
        })
        .collect();
    srv.data(&format!("mutation {{\n{creates}}}")).await;
}

/// `{"text": …}` for each text.
fn texts(values: &[String]) -> Value {
    values.iter().map(|t| json!({ "text": t })).collect()
}

/// The expected `allUsers { name posts { title comments { text } } }` for the first `n` users.
fn tree(n: usize) -> Value {
    let users: Vec<Value> = (0..n)
        .map(|i| {
            let post = |p: char| {
                json!({
                    "title": format!("{}{i:03}", p.to_ascii_uppercase()),
                    "comments": texts(&[format!("u{i:03}-{p}-1"), format!("u{i:03}-{p}-2")]),
                })
            };
            json!({ "name": format!("U{i:03}"), "posts": [post('a'), post('b')] })
        })
        .collect();
    json!({ "data": { "allUsers": users } })
}

/// Sorts every user's posts by title and every post's comments by text, so that the order of
/// nested creates does not matter.
fn sorted(mut body: Value) -> Value {
    let by = |key: &'static str| move |a: &Value, b: &Value| a[key].as_str().cmp(&b[key].as_str());
    for user in body["data"]["allUsers"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        if let Some(posts) = user["posts"].as_array_mut() {
            posts.sort_by(by("title"));
            for post in posts {
                if let Some(comments) = post["comments"].as_array_mut() {
                    comments.sort_by(by("text"));
                }
            }
        }
    }
    body
}

db_tests! {
    /// Read permissions with queries are evaluated for all nodes of a level at once: reading
    /// published posts anonymously (granted by a permission query) costs exactly one statement
    /// more than reading them with the root token, for 20 posts as for 200; a nested selection
    /// under a node token costs one more per checked level.
    async fn read_permissions_are_batched(srv) {
        let posts = "{ allPosts(first: 1000) { slug body } }";
        let nested = "{ allUsers(first: 100) { name posts { body comments { text } } } }";
        let publish = "mutation { updateManyPosts(data: { status: PUBLISHED }) { count } }";
        users_with_posts(srv, 0..10).await;
        srv.data(publish).await;
        let user = srv.data(r#"{ User(email: "u000@example.com") { id } }"#).await;
        let token = node_token(user["User"]["id"].as_str().unwrap_or_default(), "User");
        let (root_small, _) = counted(srv, posts).await;
        let (anon_small, body) = counted_as(srv, None, posts).await;
        assert_eq!(body["data"]["allPosts"].as_array().map(Vec::len), Some(20));
        let (nested_small, _) = counted_as(srv, Some(&token), nested).await;
        users_with_posts(srv, 10..100).await;
        srv.data(publish).await;
        let (root_large, _) = counted(srv, posts).await;
        let (anon_large, body) = counted_as(srv, None, posts).await;
        assert_eq!(body["data"]["allPosts"].as_array().map(Vec::len), Some(200));
        assert!(body["data"]["allPosts"][199]["body"].is_null() && body.get("errors").is_none());
        let (nested_large, body) = counted_as(srv, Some(&token), nested).await;
        assert_eq!(body["data"]["allUsers"].as_array().map(Vec::len), Some(100));
        assert_eq!((root_small, root_large), (1, 1));
        assert_eq!((anon_small, anon_large), (1, 1), "the read checks ride on the list statement");
        assert_eq!(nested_large, nested_small, "the statement count grows with the number of nodes");
        assert!(nested_large <= 4, "{nested_large}: token, users, posts with their checks, comments");
    }

    /// Three levels of to-many fields (users → posts → comments) cost at most one statement per
    /// level, the same for 10 and for 100 users.
    async fn nested_lists_cost_one_statement_per_level(srv) {
        let bare = "{ allUsers(first: 100) { posts { comments { text } } } }";
        let named = "{ allUsers(first: 100) { name posts { title comments { text } } } }";
        users_with_posts(srv, 0..10).await;
        let (small, _) = counted(srv, bare).await;
        let (small_named, body) = counted(srv, named).await;
        assert_eq!(sorted(body), tree(10));
        users_with_posts(srv, 10..100).await;
        let (large, body) = counted(srv, bare).await;
        let users = body["data"]["allUsers"].as_array().map(Vec::len);
        let comments: usize = body["data"]["allUsers"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|u| u["posts"].as_array().into_iter().flatten())
            .map(|p| p["comments"].as_array().map_or(0, Vec::len))
            .sum();
        assert_eq!((users, comments), (Some(100), 400), "{body:#}");
        let (large_named, body) = counted(srv, named).await;
        assert_eq!(sorted(body), tree(100));
        assert!(large <= 3, "{large} statements for three levels");
        assert_eq!(large, small, "the statement count grows with the number of nodes");
        assert_eq!((small_named, large_named), (small, large), "scalar fields cost no statements");
    }

    /// Relation fields with pagination, ordering and filter arguments and a `_{f}Meta` next to
    /// them stay bounded (one statement per relation field and level).
    async fn arguments_and_meta_stay_bounded(srv) {
        let query = r#"{ allUsers(first: 100, orderBy: name_DESC) { name posts(first: 1, orderBy: title_DESC) { title comments(first: 1, orderBy: text_DESC, filter: { text_contains: "-" }) { text } } _postsMeta(filter: { title_starts_with: "a" }) { count } } }"#;
        let expected = |n: usize| {
            let users: Vec<Value> = (0..n)
                .rev()
                .map(|i| json!({
                    "name": format!("U{i:03}"),
                    "posts": [{ "title": format!("B{i:03}"), "comments": [{ "text": format!("u{i:03}-b-2") }] }],
                    "_postsMeta": { "count": 1 },
                }))
                .collect();
            json!({ "data": { "allUsers": users } })
        };
        users_with_posts(srv, 0..10).await;
        let (small, body) = counted(srv, query).await;
        assert_eq!(body, expected(10));
        users_with_posts(srv, 10..100).await;
        let (large, body) = counted(srv, query).await;
        assert_eq!(body, expected(100));
        assert!(large <= 4, "{large} statements for three list levels and one meta field");
        assert_eq!(large, small, "the statement count grows with the number of nodes");
    }

    /// To-one fields (comment → post → author) and every other relation kind (n:m, self
    /// relations, 1:1, metas) stay bounded too, also when the related lists are empty.
    async fn every_relation_kind_stays_bounded(srv) {
        let to_one = "{ allComments(first: 1000) { text post { title author { name } } } }";
        let users = "{ allUsers(first: 100) { name friends { name } followers { name } following { name } profile { bio } _friendsMeta { count } } }";
        let posts = "{ allPosts(first: 1000) { title author { name } categories { name } pinnedIn { name } _categoriesMeta { count } } }";
        let check_to_one = |body: &Value, n: usize| {
            let mut rows: Vec<(String, String, String)> = body["data"]["allComments"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    let s = |v: &Value| v.as_str().unwrap_or("?").to_owned();
                    (s(&c["text"]), s(&c["post"]["title"]), s(&c["post"]["author"]["name"]))
                })
                .collect();
            rows.sort();
            let mut expected = Vec::new();
            for i in 0..n {
                for p in ['a', 'b'] {
                    for k in 1..=2 {
                        expected.push((format!("u{i:03}-{p}-{k}"), format!("{}{i:03}", p.to_ascii_uppercase()), format!("U{i:03}")));
                    }
                }
            }
            assert_eq!(rows, expected, "{body:#}");
        };
        let check_empty = |body: &Value, list: &str, n: usize, empty: Value| {
            let items = body["data"][list].as_array().cloned().unwrap_or_default();
            assert_eq!(items.len(), n, "{body:#}");
            for mut item in items {
                let obj = item.as_object_mut().expect("an object");
                obj.remove("name");
                obj.remove("title");
                obj.remove("author");
                assert_eq!(item, empty, "{body:#}");
            }
        };
        let no_user_edges = json!({ "friends": [], "followers": [], "following": [], "profile": null, "_friendsMeta": { "count": 0 } });
        let no_post_edges = json!({ "categories": [], "pinnedIn": null, "_categoriesMeta": { "count": 0 } });

        users_with_posts(srv, 0..10).await;
        let (to_one_small, body) = counted(srv, to_one).await;
        check_to_one(&body, 10);
        let (users_small, body) = counted(srv, users).await;
        check_empty(&body, "allUsers", 10, no_user_edges.clone());
        let (posts_small, body) = counted(srv, posts).await;
        check_empty(&body, "allPosts", 20, no_post_edges.clone());

        users_with_posts(srv, 10..100).await;
        let (to_one_large, body) = counted(srv, to_one).await;
        check_to_one(&body, 100);
        let (users_large, body) = counted(srv, users).await;
        check_empty(&body, "allUsers", 100, no_user_edges);
        let (posts_large, body) = counted(srv, posts).await;
        check_empty(&body, "allPosts", 200, no_post_edges);

        assert!(to_one_large <= 3, "{to_one_large} statements for comment → post → author");
        assert!(users_large <= 6, "{users_large} statements for users and five relation fields");
        assert!(posts_large <= 5, "{posts_large} statements for posts and four relation fields");
        assert_eq!(
            (to_one_large, users_large, posts_large),
            (to_one_small, users_small, posts_small),
            "the statement count grows with the number of nodes"
        );
    }

    /// The same relation field several times under aliases, with different arguments, gives each
    /// alias its own result and costs one statement per alias, however many parents there are.
    async fn aliases_with_different_arguments(srv) {
        let query = r#"{ allUsers(first: 100) { name a: posts(first: 1) { title } b: posts(orderBy: title_DESC) { title } c: posts(filter: { title_starts_with: "b" }) { title } d: _postsMeta { count } e: _postsMeta(filter: { title_starts_with: "x" }) { count } } }"#;
        let expected = |n: usize| {
            let users: Vec<Value> = (0..n)
                .map(|i| {
                    let a = json!({ "title": format!("A{i:03}") });
                    let b = json!({ "title": format!("B{i:03}") });
                    json!({
                        "name": format!("U{i:03}"),
                        "a": [a.clone()],
                        "b": [b.clone(), a],
                        "c": [b],
                        "d": { "count": 2 },
                        "e": { "count": 0 },
                    })
                })
                .collect();
            json!({ "data": { "allUsers": users } })
        };
        users_with_posts(srv, 0..10).await;
        let (small, body) = counted(srv, query).await;
        assert_eq!(body, expected(10));
        users_with_posts(srv, 10..100).await;
        let (large, body) = counted(srv, query).await;
        assert_eq!(body, expected(100));
        assert!(large <= 6, "{large} statements for users and five aliased relation fields");
        assert_eq!(large, small, "the statement count grows with the number of nodes");
    }

    /// Requests running at the same time each get their own nodes' relations with their own
    /// arguments (relation reads are batched per request).
    async fn concurrent_requests_are_not_mixed(srv) {
        users_with_posts(srv, 0..8).await;
        let ids = srv.data("{ allUsers { id } }").await;
        let ids: Vec<String> = ids["allUsers"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|u| u["id"].as_str().expect("an id").to_owned())
            .collect();
        assert_eq!(ids.len(), 8);
        let mut tasks = tokio::task::JoinSet::new();
        for round in 0..4 {
            for (i, id) in ids.iter().enumerate() {
                let (first, order) = if (i + round) % 2 == 0 { (1, "title_DESC") } else { (2, "title_ASC") };
                let query = format!(r#"{{ User(id: "{id}") {{ name posts(first: {first}, orderBy: {order}) {{ title comments(first: 1, orderBy: text_DESC) {{ text }} }} }} }}"#);
                let titles: Vec<char> = if first == 1 { vec!['b'] } else { vec!['a', 'b'] };
                let posts: Vec<Value> = titles
                    .iter()
                    .map(|p| json!({
                        "title": format!("{}{i:03}", p.to_ascii_uppercase()),
                        "comments": [{ "text": format!("u{i:03}-{p}-2") }],
                    }))
                    .collect();
                let expected = json!({ "data": { "User": { "name": format!("U{i:03}"), "posts": posts } } });
                let request = srv.client().post(srv.api()).json(&json!({ "query": query }));
                tasks.spawn(async move {
                    let res = request.send().await.expect("the request failed");
                    (body_json(res).await, expected, query)
                });
            }
        }
        let mut done = 0;
        while let Some(joined) = tasks.join_next().await {
            let (body, expected, query) = joined.expect("a request task panicked");
            assert_eq!(body, expected, "{query}");
            done += 1;
        }
        assert_eq!(done, 32);
    }

    /// A create connected to an existing node costs two statements on SQLite (the insert, and
    /// the edge, inserted only if the other node exists; a node the mutation has just inserted
    /// has no edge to unlink first) and one on PostgreSQL (both inserts in one `WITH`, the join
    /// table's foreign key standing for the existence check). Errors are those of the
    /// transaction path and leave nothing behind. Connecting an existing post to another
    /// author still moves it, and connecting a post to a category it is already in keeps the
    /// one edge (the statement inserts nothing, and the existence check that follows passes).
    async fn create_with_a_connection_costs_two_statements(srv) {
        users_with_posts(srv, 0..2).await;
        let users = srv.data(r#"{ a: User(email: "u000@example.com") { id } b: User(email: "u001@example.com") { id } }"#).await;
        let (a, b) = (users["a"]["id"].as_str().unwrap_or_default(), users["b"]["id"].as_str().unwrap_or_default());
        let create = format!(r#"mutation {{ createPost(slug: "new", title: "New", authorId: "{a}") {{ id }} }}"#);
        let (n, body) = counted(srv, &create).await;
        let postgres = srv.database().url.starts_with("postgres");
        assert_eq!(n, if postgres { 1 } else { 2 }, "{body:#}");
        let created = body["data"]["createPost"]["id"].as_str().unwrap_or_default().to_owned();
        let linked = srv.data(&format!(r#"{{ Post(id: "{created}") {{ author {{ email }} }} a: User(id: "{a}") {{ _postsMeta {{ count }} }} }}"#)).await;
        assert_eq!(linked, json!({ "Post": { "author": { "email": "u000@example.com" } }, "a": { "_postsMeta": { "count": 3 } } }));
        let missing = "cnotthere0000000000000000";
        let errors = [
            // The unique slug is reported before the missing author, as in a transaction.
            (format!(r#"mutation {{ createPost(slug: "new", title: "Again", authorId: "{missing}") {{ id }} }}"#), 3010),
            (format!(r#"mutation {{ createPost(slug: "newer", title: "Lost", authorId: "{missing}") {{ id }} }}"#), 3011),
            (format!(r#"mutation {{ createPost(slug: "newest", title: "Lost", authorId: "{a}", categoriesIds: ["{missing}"]) {{ id }} }}"#), 3011),
            (r#"mutation { createPost(slug: "bad", title: "Bad", authorId: "not an id") { id } }"#.to_owned(), 3001),
        ];
        for (mutation, code) in errors {
            let body = srv.gql(&mutation).await;
            assert_eq!(body["errors"][0]["code"], json!(code), "{mutation}\n{body:#}");
            assert_eq!(body["data"], json!({ "createPost": null }), "{mutation}");
        }
        let posts = srv.data(r#"{ _allPostsMeta { count } _allCategoriesMeta { count } }"#).await;
        assert_eq!(posts, json!({ "_allPostsMeta": { "count": 5 }, "_allCategoriesMeta": { "count": 0 } }));
        let category = srv.create("Category", r#"name: "Kept""#).await;
        let post_a = srv.data(r#"{ Post(slug: "u000-a") { id } }"#).await;
        let post_a = post_a["Post"]["id"].as_str().unwrap_or_default().to_owned();
        let connect = format!(r#"mutation {{ updatePost(id: "{post_a}", categoriesIds: ["{category}"]) {{ id }} }}"#);
        srv.data(&connect).await;
        srv.data(&connect).await;
        let kept = srv.data(&format!(r#"{{ Category(id: "{category}") {{ posts {{ slug }} }} }}"#)).await;
        assert_eq!(kept, json!({ "Category": { "posts": [{ "slug": "u000-a" }] } }));
        let post = body["data"]["createPost"]["id"].as_str().unwrap_or_default().to_owned();
        srv.data(&format!(r#"mutation {{ updatePost(id: "{post}", authorId: "{b}") {{ id }} }}"#)).await;
        let authors = srv.data(&format!(r#"{{ Post(id: "{post}") {{ author {{ email }} }} a: User(id: "{a}") {{ _postsMeta {{ count }} }} }}"#)).await;
        assert_eq!(authors, json!({ "Post": { "author": { "email": "u001@example.com" } }, "a": { "_postsMeta": { "count": 2 } } }));
    }
}
