//! NDF export and import over HTTP (reference §8) on SQLite and PostgreSQL: a round trip through
//! many small pages into an empty service, cursors that resume exactly (inside a table and
//! inside a long list), imports that write everything or nothing, each bad input's failure, and
//! the admin-only rule.

use serde_json::{Value, json};

use crate::support::{SECRET, Server, TestDatabase, blog, with_ids};

/// The page limit of the exporting test server, in characters: small, so pages are many.
const LIMIT: usize = 400;

/// Exports every page of `file_type`: the pages' bodies, in order.
async fn pages(srv: &Server, file_type: &str) -> Vec<Value> {
    let url = srv.url("/simple/v1/example/export");
    let mut cursor = json!({ "table": 0, "row": 0, "field": 0, "array": 0 });
    let mut out = Vec::new();
    loop {
        let page = srv
            .post_url_as(
                &url,
                Some(srv.root_token()),
                &json!({ "fileType": file_type, "cursor": cursor }),
            )
            .await;
        assert!(page["out"]["jsonElements"].is_array(), "{page}");
        cursor = page["cursor"].clone();
        out.push(page);
        if cursor == json!({ "table": -1, "row": -1, "field": -1, "array": -1 }) {
            return out;
        }
        assert!(out.len() < 500, "the export does not end");
    }
}

/// POSTs an NDF document to `/import` as the root.
async fn import(srv: &Server, value_type: &str, values: Value) -> Value {
    let url = srv.url("/simple/v1/example/import");
    srv.post_url_as(
        &url,
        Some(srv.root_token()),
        &json!({ "valueType": value_type, "values": values }),
    )
    .await
}

/// POSTs an NDF document to `/import` as the root with a chunked body (no `Content-Length`),
/// in pieces of 64 KiB, over a raw connection; the answer's body. The pieces are written
/// beside the reading of the answer, which may come before the whole body was sent.
async fn import_chunked(srv: &Server, value_type: &str, values: Value) -> Value {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let document = json!({ "valueType": value_type, "values": values }).to_string();
    let stream = tokio::net::TcpStream::connect(("127.0.0.1", srv.port))
        .await
        .expect("connect");
    let (mut reader, mut writer) = stream.into_split();
    let head = format!(
        "POST /simple/v1/example/import HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        srv.port,
        srv.root_token()
    );
    let sending = tokio::spawn(async move {
        writer.write_all(head.as_bytes()).await?;
        for piece in document.as_bytes().chunks(64 * 1024) {
            writer
                .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
                .await?;
            writer.write_all(piece).await?;
            writer.write_all(b"\r\n").await?;
        }
        writer.write_all(b"0\r\n\r\n").await
    });
    let mut answer = Vec::new();
    let mut buf = vec![0; 64 * 1024];
    // Until the server closes the connection (or resets it, having stopped reading the body).
    while let Ok(n) = reader.read(&mut buf).await {
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&buf[..n]);
    }
    let _ = sending.await;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body)
        .unwrap_or_default();
    serde_json::from_str(body).unwrap_or_else(|e| panic!("the answer is not JSON ({e}): {answer}"))
}

/// Everything the model holds, ordered, for comparing two services.
const EVERYTHING: &str = r#"{
  allUsers(orderBy: id_ASC) { id email name role age verified nicknames createdAt updatedAt
    posts(orderBy: id_ASC) { id } friends(orderBy: id_ASC) { id }
    followers(orderBy: id_ASC) { id } following(orderBy: id_ASC) { id } profile { id } }
  allPosts(orderBy: id_ASC) { id createdAt slug title body votes rating published status
    publishedAt metadata tags scores externalId author { id } pinnedIn { id }
    categories(orderBy: id_ASC) { id } comments(orderBy: id_ASC) { id } }
  allCategories(orderBy: id_ASC) { id name position color pinnedPost { id } }
  allChildren(orderBy: id_ASC) { id name birthday weight moods settings twin { id } }
  allComments(orderBy: id_ASC) { id text post { id } }
}"#;

db_cases! {
    /// Export through many small pages, import the pages as documents into an empty service:
    /// every node, list value and edge comes back, including self relations (one and two
    /// fields), n:m, 1:1, Json, DateTime, enums, and a list longer than a page.
    async fn round_trip(db) {
        let Some(database) = TestDatabase::create(db).await else { return };
        let source = Server::start_with_export_limit(database, LIMIT).await;
        let b = blog(&source).await;
        let scores: Vec<i32> = (0..300).collect();
        source.data(&with_ids(&format!(
            r#"mutation {{
  a: updatePost(id: "{{alpha}}", rating: 4.5, publishedAt: "2017-11-29T14:35:13.123Z", status: PUBLISHED,
       metadata: "{{\"k\": [1, 2, {{\"x\": null}}]}}", tags: ["a", "b"], scores: {scores:?}, externalId: "ext-1",
       body: "ünïcödé ✓") {{ id }}
  u: updateUser(id: "{{ann}}", nicknames: ["annie", "A"], friendsIds: ["{{bob}}", "{{cid}}"], followersIds: ["{{bob}}"]) {{ id }}
  c: updateCategory(id: "{{news}}", pinnedPostId: "{{beta}}") {{ id }}
}}"#), &b)).await;
        let kid = source.data(r#"mutation { a: createChild(name: "Ada", moods: [DRAFT, ARCHIVED]) { id } b: createChild(name: "Bo") { id } }"#).await;
        source.data(&format!(
            r#"mutation {{ updateChild(id: "{}", twinId: "{}") {{ id }} }}"#,
            kid["a"]["id"].as_str().expect("id"),
            kid["b"]["id"].as_str().expect("id")
        )).await;
        let before = source.data(EVERYTHING).await;

        let target = Server::start(db).await.expect("the second server");
        for file_type in ["nodes", "lists", "relations"] {
            let pages = pages(&source, file_type).await;
            if file_type != "relations" {
                assert!(pages.len() > 2, "{file_type}: a small limit makes many pages ({})", pages.len());
            }
            for page in &pages {
                let elements = page["out"]["jsonElements"].as_array().expect("elements");
                let sizes: usize = elements.iter().map(|e| e.to_string().chars().count()).sum();
                assert_eq!(page["out"]["size"], json!(sizes), "size is the elements' length");
                assert!(sizes <= LIMIT || elements.len() == 1, "{file_type}: {sizes} > {LIMIT}");
                if page["isFull"] == json!(false) {
                    assert_eq!(page["cursor"], json!({ "table": -1, "row": -1, "field": -1, "array": -1 }));
                }
                let failures = import(&target, file_type, page["out"]["jsonElements"].clone()).await;
                assert_eq!(failures, json!([]), "{file_type}");
            }
        }
        let after = target.data(EVERYTHING).await;
        assert_eq!(after, before);
        assert_eq!(after["allPosts"][0]["scores"].as_array().map(Vec::len), Some(300));
    }

    /// A cursor names a position: asking again from a page's cursor gives the same next page,
    /// inside a table and inside a long list; the long list is split into chunks that fit.
    async fn cursors_resume_exactly(db) {
        let Some(database) = TestDatabase::create(db).await else { return };
        let mut srv = Server::start_with_export_limit(database, LIMIT).await;
        let b = blog(&srv).await;
        let scores: Vec<i32> = (0..300).collect();
        srv.data(&with_ids(&format!(r#"mutation {{ updatePost(id: "{{beta}}", scores: {scores:?}) {{ id }} }}"#), &b)).await;
        let mut all = Vec::new();
        for file_type in ["nodes", "lists", "relations"] {
            all.push((file_type, pages(&srv, file_type).await));
        }
        // First from the server that handed the cursors out (it resumes at the rows' keys), then
        // from a restarted one that knows none of them (it reads them as row offsets).
        for round in ["same server", "restarted server"] {
            if round == "restarted server" {
                srv.restart(Some(SECRET)).await;
            }
            let url = srv.url("/simple/v1/example/export");
            for (file_type, pages) in &all {
                for pair in pages.windows(2) {
                    let again = srv
                        .post_url_as(&url, Some(srv.root_token()), &json!({ "fileType": file_type, "cursor": pair[0]["cursor"] }))
                        .await;
                    assert_eq!(again, pair[1], "{file_type}, {round}");
                }
            }
        }
        assert!(all[..2].iter().all(|(_, pages)| pages.len() > 1), "nodes and lists take several pages");
        let lists = pages(&srv, "lists").await;
        let chunks: Vec<&Value> = lists
            .iter()
            .flat_map(|p| p["out"]["jsonElements"].as_array().expect("elements"))
            .filter(|e| e["id"] == json!(b.posts.beta))
            .collect();
        assert!(chunks.len() > 2, "300 values over a {LIMIT}-character page: {chunks:?}");
        let joined: Vec<Value> = chunks
            .iter()
            .flat_map(|e| e["scores"].as_array().expect("scores").clone())
            .collect();
        assert_eq!(joined, scores.iter().map(|s| json!(s)).collect::<Vec<_>>());
        let mid = lists.iter().find(|p| p["cursor"]["array"].as_i64().unwrap_or(0) > 0);
        assert!(mid.is_some(), "a page ends inside the list: {lists:?}");
    }

    /// Every bad element is reported with its index and the reason, and nothing of the
    /// document is written; bodies that are not NDF documents are refused whole.
    async fn bad_imports_write_nothing(db) {
        let Some(srv) = Server::start(db).await else { return };
        let b = blog(&srv).await;
        let before = srv.data(EVERYTHING).await;
        let good = json!({ "_typeName": "User", "id": "fine-1", "email": "fine@x.io", "name": "Fine" });
        let cases: Vec<(&str, Value, &str)> = vec![
            ("nodes", json!({ "_typeName": "Nope", "id": "x1", "name": "X" }), "unknown `_typeName` `Nope`"),
            ("nodes", json!({ "_typeName": "User", "id": "not valid!", "email": "a@x.io", "name": "A" }), "is not a valid id"),
            ("nodes", json!({ "_typeName": "User", "id": 5, "email": "a@x.io", "name": "A" }), "`id` must be a string"),
            ("nodes", json!({ "_typeName": "User", "id": "u-2", "email": "a@x.io", "name": "A", "shoe": 4 }), "`User` has no field `shoe`"),
            ("nodes", json!({ "_typeName": "User", "id": "u-3", "email": "a@x.io", "name": "A", "age": "old" }), "`User.age` expects an integer"),
            ("nodes", json!({ "_typeName": "User", "id": "u-4", "email": "a@x.io", "name": "A", "role": "KING" }), "`User.role` expects one of ADMIN, EDITOR, READER"),
            ("nodes", json!({ "_typeName": "User", "id": "u-5", "email": "a@x.io" }), "`User.name` is required"),
            ("nodes", json!({ "_typeName": "User", "id": b.ann.clone(), "email": "a@x.io", "name": "A" }), "exists already"),
            ("nodes", json!({ "_typeName": "User", "id": "u-6", "email": "ANN@example.com", "name": "A" }), "`User.email` is unique"),
            // An id names one node of the service, whatever its model.
            ("nodes", json!({ "_typeName": "Post", "id": b.ann.clone(), "slug": "s-9", "title": "t" }), "exists already (a User)"),
            ("nodes", json!({ "_typeName": "Post", "id": "p-1", "slug": "s", "title": "t", "metadata": "{not json" }), "`Post.metadata` expects a JSON object or array"),
            ("nodes", json!({ "_typeName": "User", "id": "u-7", "email": "b@x.io", "name": "A", "nicknames": ["x"] }), "is a list"),
            ("nodes", json!({ "_typeName": "User", "id": "fine-1", "email": "other@x.io", "name": "Twice" }), "given twice"),
            ("lists", json!({ "_typeName": "User", "id": "ghost", "nicknames": ["x"] }), "there is no User with the id `ghost`"),
            ("lists", json!({ "_typeName": "User", "id": b.ann.clone(), "name": ["x"] }), "`User` has no list field `name`"),
            ("lists", json!({ "_typeName": "User", "id": b.ann.clone(), "nicknames": [1] }), "`User.nicknames` expects a string"),
            ("lists", json!({ "_typeName": "User", "id": b.ann.clone(), "nicknames": ["x".repeat(262_144)] }), "Value for field nicknames is too long"),
            ("relations", json!([{ "_typeName": "User", "id": b.ann.clone() }, { "_typeName": "Post", "id": b.posts.delta.clone() }]), "needs its `fieldName`"),
            ("relations", json!([{ "_typeName": "User", "id": "ghost", "fieldName": "posts" }, { "_typeName": "Post", "id": b.posts.delta.clone(), "fieldName": "author" }]), "there is no User with the id `ghost`"),
            ("relations", json!([{ "_typeName": "Post", "id": b.posts.alpha.clone(), "fieldName": "author" }, { "_typeName": "User", "id": b.cid.clone(), "fieldName": "posts" }]), "can have one partner"),
            ("relations", json!([{ "_typeName": "User", "id": b.ann.clone(), "fieldName": "posts" }, { "_typeName": "Category", "id": b.news.clone() }]), "relates to Post, not Category"),
        ];
        for (value_type, bad, needle) in cases {
            let good_one = match value_type {
                "nodes" => good.clone(),
                "lists" => json!({ "_typeName": "User", "id": b.bob.clone(), "nicknames": ["bobby"] }),
                _ => json!([{ "_typeName": "User", "id": b.cid.clone(), "fieldName": "friends" }, { "_typeName": "User", "id": b.bob.clone() }]),
            };
            let failures = import(&srv, value_type, json!([good_one, bad])).await;
            let failures = failures.as_array().unwrap_or_else(|| panic!("a list of failures: {failures}"));
            assert!(!failures.is_empty(), "{value_type} {needle}: accepted");
            assert!(failures.iter().all(|f| f["index"] == json!(1)), "{needle}: {failures:?}");
            assert!(
                failures.iter().any(|f| f["message"].as_str().unwrap_or_default().contains(needle)),
                "{needle}: {failures:?}"
            );
            assert_eq!(srv.data(EVERYTHING).await, before, "{needle}: nothing was written");
        }
        // Beside 40 posts the users' table (3 rows) is read whole instead of searched per id:
        // the id a user holds is found all the same.
        let posts: Vec<Value> = (0..40)
            .map(|i| {
                let id = if i == 17 { b.cid.clone() } else { format!("many-{i}") };
                json!({ "_typeName": "Post", "id": id, "slug": format!("many-{i}"), "title": "t" })
            })
            .collect();
        let failures = import(&srv, "nodes", Value::Array(posts)).await;
        assert_eq!(failures.as_array().map(Vec::len), Some(1), "{failures}");
        assert_eq!(failures[0]["index"], json!(17), "{failures}");
        assert!(failures[0]["message"].as_str().unwrap_or_default().contains("exists already (a User)"), "{failures}");
        assert_eq!(srv.data(EVERYTHING).await, before);
        let url = srv.url("/simple/v1/example/import");
        let res = srv.client().post(&url).bearer_auth(srv.root_token()).body("{not json").send().await.expect("sent");
        let body: Value = res.json().await.expect("JSON");
        assert!(body["error"].as_str().unwrap_or_default().contains("not a JSON document"), "{body}");
        let body = import(&srv, "people", json!([])).await;
        assert!(body["error"].as_str().unwrap_or_default().contains("unknown valueType `people`"), "{body}");
        let body = srv.post_url_as(&srv.url("/simple/v1/example/export"), Some(srv.root_token()), &json!({ "fileType": "people" })).await;
        assert!(body["error"].as_str().unwrap_or_default().contains("unknown fileType"), "{body}");
        assert_eq!(srv.data(EVERYTHING).await, before);
    }

    /// An edge imported twice is one edge; a body over 10 MB is refused whole, with a clear
    /// error.
    async fn repeats_and_limits(db) {
        let Some(srv) = Server::start(db).await else { return };
        let b = blog(&srv).await;
        let edge = json!([{ "_typeName": "User", "id": b.ann.clone(), "fieldName": "friends" }, { "_typeName": "User", "id": b.bob.clone(), "fieldName": null }]);
        for _ in 0..2 {
            assert_eq!(import(&srv, "relations", json!([edge.clone(), edge.clone()])).await, json!([]));
        }
        let friends = srv.data(&with_ids(r#"{ ann: User(id: "{ann}") { friends { id } } bob: User(id: "{bob}") { friends { id } } }"#, &b)).await;
        assert_eq!(friends, json!({ "ann": { "friends": [{ "id": b.bob.clone() }] }, "bob": { "friends": [{ "id": b.ann.clone() }] } }));
        // Lists are appended to what the node holds, request after request.
        let nicknames = || async { srv.data(&with_ids(r#"{ User(id: "{bob}") { nicknames } }"#, &b)).await["User"]["nicknames"].clone() };
        let mut expected: Vec<Value> = nicknames().await.as_array().cloned().unwrap_or_default();
        for chunk in [json!(["a"]), json!(["b", "c\"quoted\""]), json!([])] {
            let element = json!({ "_typeName": "User", "id": b.bob.clone(), "nicknames": chunk });
            assert_eq!(import(&srv, "lists", json!([element])).await, json!([]));
            expected.extend(chunk.as_array().cloned().unwrap_or_default());
            assert_eq!(nicknames().await, Value::Array(expected.clone()));
        }
        let before = srv.data(EVERYTHING).await;
        let big: Vec<Value> = (0..12)
            .map(|i| json!({ "_typeName": "Post", "id": format!("big-{i}"), "slug": format!("big-{i}"), "title": "t", "body": "x".repeat(1_000_000) }))
            .collect();
        // Refused by its announced length, and read chunk by chunk without one.
        let body = import(&srv, "nodes", Value::Array(big.clone())).await;
        assert!(body["error"].as_str().unwrap_or_default().contains("larger than 10 MB"), "{}", &body.to_string()[..200.min(body.to_string().len())]);
        let body = import_chunked(&srv, "nodes", Value::Array(big)).await;
        assert!(body["error"].as_str().unwrap_or_default().contains("larger than 10 MB"), "{}", &body.to_string()[..200.min(body.to_string().len())]);
        assert_eq!(srv.data(EVERYTHING).await, before);
        // A chunked body within the limit is read whole.
        let small: Vec<Value> = (0..3)
            .map(|i| json!({ "_typeName": "Post", "id": format!("chunked-{i}"), "slug": format!("chunked-{i}"), "title": "t", "body": "x".repeat(100_000) }))
            .collect();
        assert_eq!(import_chunked(&srv, "nodes", Value::Array(small)).await, json!([]));
        let posts = srv.data(r#"{ allPosts(filter: { id_starts_with: "chunked-" }, orderBy: id_ASC) { id } }"#).await;
        assert_eq!(posts, json!({ "allPosts": [{ "id": "chunked-0" }, { "id": "chunked-1" }, { "id": "chunked-2" }] }));
    }

    /// Tables of more rows than one read (1000) page exactly: every node and edge once, in
    /// order, across reads inside a page and across pages.
    async fn large_tables(db) {
        let Some(database) = TestDatabase::create(db).await else { return };
        let srv = Server::start_with_export_limit(database, 300_000).await;
        let users: Vec<Value> = (0..2500)
            .map(|i| json!({ "_typeName": "User", "id": format!("u{i:05}"), "email": format!("u{i}@x.io"), "name": format!("U{i}") }))
            .collect();
        assert_eq!(import(&srv, "nodes", Value::Array(users)).await, json!([]));
        let pairs_of = |step: usize| (0..2500 - step).map(move |i| (format!("u{i:05}"), format!("u{:05}", i + step)));
        let expected: Vec<(String, String)> = {
            let mut all: Vec<_> = pairs_of(1).chain(pairs_of(2)).collect();
            all.sort();
            all
        };
        let edges: Vec<Value> = expected
            .iter()
            .map(|(a, b)| json!([{ "_typeName": "User", "id": a, "fieldName": "friends" }, { "_typeName": "User", "id": b }]))
            .collect();
        assert_eq!(import(&srv, "relations", Value::Array(edges)).await, json!([]));
        let nodes: Vec<String> = pages(&srv, "nodes")
            .await
            .iter()
            .flat_map(|p| p["out"]["jsonElements"].as_array().expect("elements").clone())
            .filter(|e| e["_typeName"] == json!("User"))
            .map(|e| e["id"].as_str().expect("id").to_owned())
            .collect();
        assert_eq!(nodes, (0..2500).map(|i| format!("u{i:05}")).collect::<Vec<_>>());
        let relation_pages = pages(&srv, "relations").await;
        assert!(relation_pages.len() > 1, "{} pages", relation_pages.len());
        let mut pairs: Vec<(String, String)> = relation_pages
            .iter()
            .flat_map(|p| p["out"]["jsonElements"].as_array().expect("elements").clone())
            .filter(|e| e[1]["fieldName"] == json!("friends"))
            .map(|e| (e[1]["id"].as_str().expect("id").to_owned(), e[0]["id"].as_str().expect("id").to_owned()))
            .collect();
        pairs.sort();
        assert_eq!(pairs, expected);
    }

    /// Only admin tokens import and export; anyone else gets 3008 with the reference's text.
    async fn admins_only(db) {
        let Some(srv) = Server::start(db).await else { return };
        let user = srv.create("User", r#"email: "u@x.io", name: "U""#).await;
        let token = crate::support::node_token(&user, "User");
        for (path, body, text) in [
            ("export", json!({ "fileType": "nodes", "cursor": { "table": 0, "row": 0, "field": 0, "array": 0 } }), "Insufficient permissions for bulk export"),
            ("import", json!({ "valueType": "nodes", "values": [{ "_typeName": "User", "id": "x-1", "email": "x@x.io", "name": "X" }] }), "Insufficient permissions for bulk import"),
        ] {
            let url = srv.url(&format!("/simple/v1/example/{path}"));
            for token in [None, Some(token.as_str())] {
                let res = srv.post_url_as(&url, token, &body).await;
                assert_eq!((&res["code"], &res["error"]), (&json!(3008), &json!(text)), "{res}");
            }
        }
        assert_eq!(srv.data(r#"{ _allUsersMeta { count } }"#).await["_allUsersMeta"]["count"], json!(1));
    }
}
