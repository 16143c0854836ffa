//! The Relay API's queries (reference §3.1), on the same data as the Simple API.

use serde_json::{Value, json};

use crate::support::{
    ALIAS, MISSING, REQUEST_ID, Server, body_json, column_of, field_error, node_token,
};

/// The Relay API's path.
fn relay(srv: &Server) -> String {
    srv.url(&format!("/relay/v1/{ALIAS}"))
}

/// Runs `query` on the Relay API with the root token; the whole response body.
async fn gql(srv: &Server, query: &str) -> Value {
    srv.post_url_as(
        &relay(srv),
        Some(srv.root_token()),
        &json!({ "query": query }),
    )
    .await
}

/// Runs `query` on the Relay API as `token` (anonymous for `None`); the response body and the
/// number of SQL statements it ran.
async fn counted_as(srv: &Server, token: Option<&str>, query: &str) -> (u32, Value) {
    let mut request = srv
        .anonymous()
        .post(relay(srv))
        .json(&json!({ "query": query }));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let res = request.send().await.expect("the request failed");
    let statements = res
        .headers()
        .get("Svc-Sql-Statements")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("a numeric Svc-Sql-Statements header");
    (statements, body_json(res).await)
}

/// `data` of a query that must not fail.
async fn data(srv: &Server, query: &str) -> Value {
    let res = gql(srv, query).await;
    assert!(
        res.get("errors").is_none() && res.get("error").is_none(),
        "{query}\n{res:#}"
    );
    res["data"].clone()
}

/// Posts `p1`…`p5` (created in that order, so their ids ascend); their ids.
async fn five_posts(srv: &Server) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 1..=5 {
        ids.push(
            srv.create(
                "Post",
                &format!(r#"slug: "p{i}", title: "Post {i}", votes: {i}"#),
            )
            .await,
        );
    }
    ids
}

/// The page facts and the cursors of the edges of a connection.
fn page(connection: &Value) -> (Value, Vec<String>) {
    let cursors = connection["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| {
            assert_eq!(e["cursor"], e["node"]["id"], "the cursor is the node's id");
            e["cursor"].as_str().expect("cursor").to_owned()
        })
        .collect();
    (connection["pageInfo"].clone(), cursors)
}

fn info(next: bool, previous: bool, start: Option<&str>, end: Option<&str>) -> Value {
    json!({ "hasNextPage": next, "hasPreviousPage": previous, "startCursor": start, "endCursor": end })
}

db_tests! {
    /// The viewer's id is `viewer-fixed`, and `node(id: "viewer-fixed")` is the viewer; `node`
    /// finds a node of any model by its id (its fields by inline fragment), and is null for an
    /// unknown id.
    async fn viewer_and_node(srv) {
        let post = srv.create("Post", r#"slug: "p", title: "Hello""#).await;
        let user = srv.create("User", r#"email: "ann@x.io", name: "Ann""#).await;
        let query = format!(
            r#"{{ viewer {{ id }} v: node(id: "viewer-fixed") {{ __typename id ... on Viewer {{ allPosts {{ count }} }} }} p: node(id: "{post}") {{ __typename id ... on Post {{ title }} }} u: node(id: "{user}") {{ ... on User {{ name }} }} none: node(id: "{MISSING}") {{ id }} }}"#
        );
        assert_eq!(
            data(srv, &query).await,
            json!({
                "viewer": { "id": "viewer-fixed" },
                "v": { "__typename": "Viewer", "id": "viewer-fixed", "allPosts": { "count": 1 } },
                "p": { "__typename": "Post", "id": post, "title": "Hello" },
                "u": { "name": "Ann" },
                "none": null,
            })
        );
    }

    /// The viewer's single-node fields take the model's unique fields; `user` is the node of
    /// the request's node token (null for a root token).
    async fn single_nodes(srv) {
        let post = srv.create("Post", r#"slug: "unique", title: "One""#).await;
        let query = format!(r#"{{ viewer {{ byId: Post(id: "{post}") {{ title }} bySlug: Post(slug: "unique") {{ id }} none: Post(slug: "nope") {{ id }} user {{ id }} }} }}"#);
        assert_eq!(
            data(srv, &query).await,
            json!({ "viewer": { "byId": { "title": "One" }, "bySlug": { "id": post }, "none": null, "user": null } })
        );
    }

    /// `viewer.user` is the node of the request's node token, read with its read permissions.
    async fn user_of_a_node_token(srv) {
        let ann = srv.create("User", r#"email: "ann@x.io", name: "Ann""#).await;
        let token = node_token(&ann, "User");
        let (_, res) = counted_as(srv, Some(&token), "{ viewer { user { id name } } }").await;
        assert_eq!(res, json!({ "data": { "viewer": { "user": { "id": ann, "name": "Ann" } } } }));
        let (_, res) = counted_as(srv, None, "{ viewer { user { id } } }").await;
        assert_eq!(res, json!({ "data": { "viewer": { "user": null } } }));
    }

    /// `first` tells `hasNextPage`, `last` tells `hasPreviousPage`; the other is false, as are
    /// both without `first` and `last`; cursors are the first and last node's ids, null on an
    /// empty page; `after` and `before` take cursors.
    async fn page_info(srv) {
        let p = five_posts(srv).await;
        let conn = |args: &str| {
            let args = if args.is_empty() { String::new() } else { format!("({args})") };
            format!("{{ viewer {{ allPosts{args} {{ pageInfo {{ hasNextPage hasPreviousPage startCursor endCursor }} edges {{ cursor node {{ id }} }} }} }} }}")
        };
        let cases: Vec<(String, Value, Vec<&String>)> = vec![
            ("first: 2".into(), info(true, false, Some(&p[0]), Some(&p[1])), vec![&p[0], &p[1]]),
            ("first: 5".into(), info(false, false, Some(&p[0]), Some(&p[4])), p.iter().collect()),
            ("first: 9".into(), info(false, false, Some(&p[0]), Some(&p[4])), p.iter().collect()),
            ("last: 2".into(), info(false, true, Some(&p[3]), Some(&p[4])), vec![&p[3], &p[4]]),
            ("last: 5".into(), info(false, false, Some(&p[0]), Some(&p[4])), p.iter().collect()),
            ("".into(), info(false, false, Some(&p[0]), Some(&p[4])), p.iter().collect()),
            (format!(r#"first: 2, after: "{}""#, p[1]), info(true, false, Some(&p[2]), Some(&p[3])), vec![&p[2], &p[3]]),
            (format!(r#"first: 2, after: "{}""#, p[2]), info(false, false, Some(&p[3]), Some(&p[4])), vec![&p[3], &p[4]]),
            (format!(r#"last: 2, before: "{}""#, p[3]), info(false, true, Some(&p[1]), Some(&p[2])), vec![&p[1], &p[2]]),
            (format!(r#"last: 3, before: "{}""#, p[3]), info(false, false, Some(&p[0]), Some(&p[2])), vec![&p[0], &p[1], &p[2]]),
            ("skip: 1, first: 2".into(), info(true, false, Some(&p[1]), Some(&p[2])), vec![&p[1], &p[2]]),
            ("orderBy: votes_DESC, first: 2".into(), info(true, false, Some(&p[4]), Some(&p[3])), vec![&p[4], &p[3]]),
            (r#"filter: { votes_gt: 9 }, first: 2"#.into(), info(false, false, None, None), vec![]),
            ("first: 0".into(), info(true, false, None, None), vec![]),
        ];
        for (args, expected, ids) in cases {
            let res = data(srv, &conn(&args)).await;
            let (facts, cursors) = page(&res["viewer"]["allPosts"]);
            assert_eq!(facts, expected, "{args}");
            assert_eq!(cursors.iter().collect::<Vec<_>>(), ids, "{args}");
        }
    }

    /// `count` counts what the filter matches, whatever the page; the page arguments are
    /// checked as in the Simple API (more than 1000 nodes asked is 2041; the connection and the
    /// viewer are non-null, so `data` is null).
    async fn count_and_arguments(srv) {
        five_posts(srv).await;
        let res = data(srv, "{ viewer { all: allPosts(first: 1) { count } some: allPosts(filter: { votes_gte: 4 }, last: 1) { count edges { node { slug } } } } }").await;
        assert_eq!(
            res,
            json!({ "viewer": { "all": { "count": 5 }, "some": { "count": 2, "edges": [{ "node": { "slug": "p5" } }] } } })
        );
        let res = gql(srv, "{ viewer { allPosts(first: 1001) { count } } }").await;
        assert_eq!(res["data"], json!(null), "{res:#}");
        assert_eq!(res["errors"][0]["code"], json!(2041), "{res:#}");
        assert_eq!(res["errors"][0]["path"], json!(["viewer", "allPosts"]), "{res:#}");
        let res = gql(srv, "{ viewer { allPosts(first: 2, last: 2) { count } } }").await;
        assert_eq!(res["errors"][0]["code"], json!(3014), "both `first` and `last`: {res:#}");
        let res = data(srv, "{ viewer { allPosts(first: 1000) { pageInfo { hasNextPage } } } }").await;
        assert_eq!(res, json!({ "viewer": { "allPosts": { "pageInfo": { "hasNextPage": false } } } }));
    }

    /// To-many relation fields are connections with the list arguments and a count; to-one
    /// fields are nodes; model types have no `_<field>Meta` fields here.
    async fn relation_connections(srv) {
        let ann = srv.create("User", r#"email: "ann@x.io", name: "Ann""#).await;
        let mut posts = Vec::new();
        for i in 1..=3 {
            posts.push(srv.create("Post", &format!(r#"slug: "a{i}", title: "A{i}", votes: {i}, authorId: "{ann}""#)).await);
        }
        srv.create("User", r#"email: "bo@x.io", name: "Bo""#).await;
        let query = format!(r#"{{ viewer {{ User(id: "{ann}") {{ posts(first: 2, orderBy: votes_DESC) {{ count pageInfo {{ hasNextPage hasPreviousPage startCursor endCursor }} edges {{ node {{ slug author {{ name }} }} }} }} }} allUsers(orderBy: name_ASC) {{ edges {{ node {{ name posts(last: 1, filter: {{ votes_lt: 3 }}) {{ count edges {{ node {{ slug }} }} }} }} }} }} }} }}"#);
        assert_eq!(
            data(srv, &query).await,
            json!({ "viewer": {
                "User": { "posts": {
                    "count": 3,
                    "pageInfo": info(true, false, Some(&posts[2]), Some(&posts[1])),
                    "edges": [{ "node": { "slug": "a3", "author": { "name": "Ann" } } }, { "node": { "slug": "a2", "author": { "name": "Ann" } } }],
                } },
                "allUsers": { "edges": [
                    { "node": { "name": "Ann", "posts": { "count": 2, "edges": [{ "node": { "slug": "a2" } }] } } },
                    { "node": { "name": "Bo", "posts": { "count": 0, "edges": [] } } },
                ] },
            } })
        );
        let res = gql(srv, "{ viewer { allUsers { edges { node { _postsMeta { count } } } } } }").await;
        assert!(res["errors"][0]["message"].as_str().is_some_and(|m| m.contains("_postsMeta")), "{res:#}");
    }

    /// A nested connection read costs one statement per connection and level (and one per
    /// count), however many nodes there are.
    async fn nested_connections_are_batched(srv) {
        for u in 0..6 {
            let user = srv.create("User", &format!(r#"email: "u{u}@x.io", name: "U{u}""#)).await;
            for p in 0..3 {
                srv.create("Post", &format!(r#"slug: "u{u}p{p}", title: "T", authorId: "{user}""#)).await;
            }
        }
        let root = Some(srv.root_token().to_owned());
        let (n, body) = counted_as(srv, root.as_deref(), "{ viewer { allUsers(first: 5) { edges { node { name posts(first: 2) { edges { node { slug author { name } } } } } } } } }").await;
        assert!(body.get("errors").is_none(), "{body:#}");
        assert_eq!(body["data"]["viewer"]["allUsers"]["edges"].as_array().map(Vec::len), Some(5));
        assert_eq!(n, 3, "users, their posts, the posts' authors");
        let (n, _) = counted_as(srv, root.as_deref(), "{ viewer { allUsers(first: 5) { count edges { node { posts(first: 2) { count } } } } } }").await;
        assert_eq!(n, 4, "users, their count, their posts, the posts' counts");
    }

    /// Read permissions hold on Relay paths: a field the requester may not read is 3008 at its
    /// path (the node stays), and a model the requester may not read at all shows no field.
    async fn read_permissions(srv) {
        srv.create("Post", r#"slug: "draft", title: "Draft", body: "secret""#).await;
        srv.create("User", r#"email: "ann@x.io", name: "Ann""#).await;
        let query = "{ viewer { allPosts { count edges { node { title body } } } } }";
        let (_, res) = counted_as(srv, None, query).await;
        assert_eq!(res["data"]["viewer"]["allPosts"]["count"], json!(1), "{res:#}");
        assert_eq!(res["data"]["viewer"]["allPosts"]["edges"][0]["node"]["title"], json!("Draft"), "{res:#}");
        assert_eq!(res["data"]["viewer"]["allPosts"]["edges"][0]["node"]["body"], json!(null), "{res:#}");
        assert_eq!(
            res["errors"],
            json!([field_error(json!(["viewer", "allPosts", "edges", 0, "node", "body"]), 1, column_of(query, "body"), 3008, "Insufficient Permissions")])
        );
        let (_, res) = counted_as(srv, None, "{ viewer { allUsers { edges { node { name } } } } }").await;
        assert_eq!(res["errors"][0]["code"], json!(3008), "{res:#}");
        assert_eq!(res["errors"][0]["requestId"], json!(REQUEST_ID), "{res:#}");
    }

    /// `GET /relay/v1/{id}/schema.json` serves the Relay API's introspection result; the
    /// playground page on GET posts to the Relay API.
    async fn schema_json_and_playground(srv) {
        let res = srv.client().get(format!("{}/schema.json", relay(srv))).send().await.expect("request");
        let body = body_json(res).await;
        let types = body["data"]["__schema"]["types"].as_array().expect("types");
        let kind = |name: &str| types.iter().find(|t| t["name"] == name).map(|t| t["kind"].clone());
        assert_eq!(kind("Viewer"), Some(json!("OBJECT")));
        assert_eq!(kind("PostConnection"), Some(json!("OBJECT")));
        assert_eq!(kind("_QueryMeta"), None, "no `_…Meta` types in the Relay API");
        let page = srv.client().get(relay(srv)).send().await.expect("request");
        assert_eq!(page.status().as_u16(), 200);
        let html = page.text().await.expect("the page");
        assert!(html.contains(&format!("/relay/v1/{ALIAS}")), "the page posts to the Relay API");
    }
}
