//! The HTTP surface and request envelope (§0.1, §2.11, §11.1): batching, variables as object or
//! JSON text, 3024, syntax and validation error shapes, 3016, id and alias, the playground,
//! `/status`, `Request-Id`, CORS.

use serde_json::{Value, json};

use crate::support::{
    ALIAS, REQUEST_ID, SERVICE_ID, Server, assert_validation_error, body_json, four_posts,
    is_request_id, list_of,
};

db_tests! {
    /// Abusive queries are refused before they run: nesting deeper than the limit, and selections
    /// larger than the complexity limit, are validation errors; a normal introspection depth passes.
    async fn depth_and_complexity_limits(srv) {
        let nested = |depth: usize| {
            let mut q = String::from("{ __schema { types { fields { type ");
            for _ in 0..depth {
                q.push_str("{ ofType ");
            }
            q.push_str("{ name }");
            for _ in 0..depth {
                q.push_str(" }");
            }
            q.push_str(" } } } }");
            q
        };
        let ok = srv.gql(&nested(6)).await;
        assert!(ok["data"]["__schema"]["types"].is_array(), "{ok:#}");
        let deep = srv.gql(&nested(40)).await;
        assert_validation_error(&deep, "");
        let wide: String = (0..11_000).map(|i| format!("a{i}: _allPostsMeta {{ count }} ")).collect();
        let res = srv.gql(&format!("{{ {wide} }}")).await;
        assert_eq!(
            res,
            json!({ "errors": [{ "message": "Query is too complex.", "locations": [] }] })
        );
    }

    /// Every object's entries come in the order in which the query selects them (GraphQL
    /// §7.2.2), however the executor's fields complete: relation fields read through the
    /// dataloader after a `__typename` selected below them, a root list after a root
    /// `__typename`, a failed field's `null`, fragments spread in the middle, and `node(id)`'s
    /// type conditions (with and without `__typename`). The compiled plans answer in the same
    /// order.
    async fn response_keys_follow_the_query(srv) {
        let posts = four_posts(srv).await;
        srv.data(&format!(
            r#"mutation {{ createComment(text: "c", postId: "{}") {{ id }} }}"#,
            posts.alpha
        ))
        .await;
        let keys = |v: &Value| -> Vec<String> {
            v.as_object()
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default()
        };
        // `@include` keeps these queries on the executor: plans take no directives.
        let nested = "{ allPosts(first: 2) @include(if: true) { id title _categoriesMeta { count } \
                      comments(first: 1) { id } __typename ...Tail } \
                      __typename _allPostsMeta { count } } \
                      fragment Tail on Post { categories { id } slug }";
        for _ in 0..3 {
            let res = srv.gql(nested).await;
            assert_eq!(
                keys(&res["data"]),
                ["allPosts", "__typename", "_allPostsMeta"],
                "{res}"
            );
            for post in res["data"]["allPosts"].as_array().expect("a list") {
                assert_eq!(
                    keys(post),
                    ["id", "title", "_categoriesMeta", "comments", "__typename", "categories", "slug"],
                    "{res}"
                );
            }
        }

        // The executor leaves a failed field out; its `null` goes back in its place.
        let failed = srv.gql("{ Post { id } allPosts(first: 1) { slug } }").await;
        assert_eq!(failed["errors"][0]["code"], 3000, "{failed}");
        assert_eq!(keys(&failed["data"]), ["Post", "allPosts"], "{failed}");

        // An interface: the fragments that apply to the node's own type, whether or not the
        // query asks for `__typename`.
        for typename in ["", "__typename"] {
            let q = format!(
                "{{ node(id: {:?}) {{ ... on Category {{ id name }} {typename} \
                 ... on Post {{ comments(first: 1) {{ text }} title id }} }} }}",
                posts.alpha
            );
            let res = srv.gql(&q).await;
            let mut want = vec!["comments", "title", "id"];
            if !typename.is_empty() {
                want.insert(0, "__typename");
            }
            assert_eq!(keys(&res["data"]["node"]), want, "{res}");
        }

        // The same selections through a compiled plan (the second request of a text).
        let plain = "{ allPosts(first: 2) { id title _categoriesMeta { count } comments(first: 1) { id } \
                     __typename } __typename _allPostsMeta { count } }";
        for _ in 0..2 {
            let res = srv.gql(plain).await;
            assert_eq!(
                keys(&res["data"]),
                ["allPosts", "__typename", "_allPostsMeta"],
                "{res}"
            );
            assert_eq!(
                keys(&res["data"]["allPosts"][0]),
                ["id", "title", "_categoriesMeta", "comments", "__typename"],
                "{res}"
            );
        }
    }

    /// An array of requests is run as a batch and answered with an array, in order.
    async fn batch_in_batch_out(srv) {
        four_posts(srv).await;
        let res = srv
            .post_json(&json!([
                { "query": "{ allPosts(first: 1) { slug } }" },
                { "query": "query Q($v: Int) { _allPostsMeta(filter: { votes: $v }) { count } }", "variables": { "v": 5 } },
                { "query": "mutation { createCategory(name: \"b\") { name } }" },
                { "query": "{ Post { id } }" },
                { "query": "{ allPosts {" },
            ]))
            .await;
        assert_eq!(
            res[3],
            json!({ "data": { "Post": null }, "errors": [{
                "locations": [{ "line": 1, "column": 3 }], "path": ["Post"], "code": 3000,
                "message": "None of the following arguments provided: List(id, slug, externalId)",
                "requestId": REQUEST_ID,
            }] })
        );
        let syntax = res[4]["error"].as_str().unwrap_or_default();
        assert!(syntax.starts_with("Syntax error while parsing GraphQL query. "), "{res:#}");
        assert_eq!(
            res,
            json!([
                { "data": { "allPosts": [{ "slug": "alpha" }] } },
                { "data": { "_allPostsMeta": { "count": 2 } } },
                { "data": { "createCategory": { "name": "b" } } },
                res[3],
                { "error": syntax },
            ])
        );
        assert_eq!(srv.post_json(&json!([])).await, json!([]));
    }

    /// A batch holds at most `--max-batch` requests (100 by default): a longer one is refused
    /// whole with a clear error, and none of its requests runs.
    async fn batch_length_is_limited(srv) {
        let creates = |n: usize| {
            let all = (0..n).map(|i| {
                json!({ "query": format!("mutation {{ createCategory(name: \"batched-{i}\") {{ name }} }}") })
            });
            Value::Array(all.collect())
        };
        let count = async || {
            srv.gql(r#"{ _allCategoriesMeta(filter: { name_starts_with: "batched" }) { count } }"#).await
                ["data"]["_allCategoriesMeta"]["count"].clone()
        };
        let refused = srv.post_json(&creates(101)).await;
        assert_eq!(
            refused,
            json!({ "error": "A batch may hold at most 100 requests; this one holds 101. Send them in several batches." })
        );
        assert_eq!(count().await, 0, "nothing of the refused batch ran");
        let res = srv.post_json(&creates(100)).await;
        assert_eq!(res.as_array().map(Vec::len), Some(100), "{res}");
        assert_eq!(count().await, 100);
        // 5 000 requests in one body, as a hostile client sends them.
        let many = Value::Array(vec![json!({ "query": "{ allPosts(first: 1000) { id } }" }); 5000]);
        let refused = srv.post_json(&many).await;
        assert!(refused["error"].as_str().is_some_and(|e| e.contains("this one holds 5000")), "{refused}");
    }

    /// A body over `--max-body-bytes` (10 MiB by default) is refused with HTTP 413, and
    /// nothing of it runs.
    async fn body_size_is_limited(srv) {
        let padding = " ".repeat(10 * 1024 * 1024);
        let body = format!(r#"{{"query": "mutation {{ createCategory(name: \"too-big\") {{ name }} }}"{padding}}}"#);
        let res = srv
            .client()
            .post(srv.api())
            .header("Content-Type", "application/json")
            .body(body)
            .send()
            .await
            .expect("an answer");
        assert_eq!(res.status().as_u16(), 413);
        let count = srv.gql(r#"{ _allCategoriesMeta(filter: { name: "too-big" }) { count } }"#).await;
        assert_eq!(count["data"]["_allCategoriesMeta"]["count"], 0, "{count}");
    }

    /// `variables` may be an object or a string holding JSON; `operationName` picks the
    /// operation.
    async fn variables_object_or_json_text(srv) {
        four_posts(srv).await;
        let query = "query ($slug: String) { allPosts(filter: { slug: $slug }) { slug } }";
        let expected = list_of("allPosts", "slug", &["gamma"]);
        assert_eq!(srv.post_json(&json!({ "query": query, "variables": { "slug": "gamma" } })).await, expected);
        assert_eq!(srv.post_json(&json!({ "query": query, "variables": "{\"slug\": \"gamma\"}" })).await, expected);
        // No variables: `$slug` is left out, so the filter's field is not given (GraphQL's
        // input coercion, `omitted.rs`).
        assert_eq!(
            srv.post_json(&json!({ "query": query, "variables": null })).await,
            list_of("allPosts", "slug", &["alpha", "beta", "gamma", "delta"])
        );
        let two = "query A { allPosts(first: 1) { slug } } query B { allPosts(last: 1) { slug } }";
        assert_eq!(
            srv.post_json(&json!({ "query": two, "operationName": "B" })).await,
            list_of("allPosts", "slug", &["delta"])
        );
        assert_eq!(
            srv.post_json(&json!({ "query": two, "operationName": "A", "variables": "{}" })).await,
            list_of("allPosts", "slug", &["alpha"])
        );
    }

    /// `variables` that is a string but not JSON → 3024 outside GraphQL execution.
    async fn unparsable_variables_is_3024(srv) {
        let res = srv
            .post_json(&json!({ "query": "{ allPosts { id } }", "variables": "{nope" }))
            .await;
        assert_eq!(
            res,
            json!({ "code": 3024, "requestId": REQUEST_ID, "error": "Variables could not be parsed as json: {nope" })
        );
    }

    /// A query that does not parse → only `error`, starting with the reference's text.
    async fn syntax_error_shape(srv) {
        let res = srv.gql("{ allPosts { id ").await;
        let obj = res.as_object().expect("an object");
        assert_eq!(obj.keys().collect::<Vec<_>>(), ["error"], "{res:#}");
        let message = res["error"].as_str().unwrap_or_default();
        assert!(
            message.starts_with("Syntax error while parsing GraphQL query. ") && message.len() > 43,
            "{res:#}"
        );
        // A body that is neither an object nor an array.
        assert_eq!(srv.post_json(&json!(42)).await, json!({ "error": "input could not be parsed: '42'" }));
    }

    /// A query that parses but does not validate → `errors` with `message` and `locations`
    /// only, no `data`, no `code`.
    async fn validation_error_shape(srv) {
        let res = srv.gql("{ allPosts { nope } }").await;
        assert_validation_error(&res, "nope");
        assert_eq!(res["errors"][0]["locations"], json!([{ "line": 1, "column": 14 }]));
        let res = srv.gql(r#"{ allPosts(first: "two") { id } }"#).await;
        assert_validation_error(&res, "");
        let res = srv.gql("mutation { createPost(title: \"no slug\") { id } }").await;
        assert_validation_error(&res, "slug");
    }

    /// Unknown service id → 3016; the service answers under its id and under its alias.
    async fn service_id_alias_and_3016(srv) {
        let body = json!({ "query": "{ _allPostsMeta { count } }" });
        for name in [SERVICE_ID, ALIAS] {
            let res = srv.client().post(srv.url(&format!("/simple/v1/{name}"))).json(&body).send().await.expect("request");
            assert_eq!(body_json(res).await, json!({ "data": { "_allPostsMeta": { "count": 0 } } }), "{name}");
        }
        let res = srv.client().post(srv.url("/simple/v1/nope")).json(&body).send().await.expect("request");
        assert_eq!(
            body_json(res).await,
            json!({ "code": 3016, "requestId": REQUEST_ID, "error": "Project not found: 'nope'" })
        );
    }

    /// The service's own ids are routed as fixed paths, other ids through a `{id}` pattern: every
    /// route answers the same under the id, the alias and (with 3016) an unknown id.
    async fn every_route_under_id_alias_and_unknown_id(srv) {
        let not_found = |id: &str| json!({ "code": 3016, "requestId": REQUEST_ID, "error": format!("Project not found: '{id}'") });
        let token = srv.root_token().to_owned();
        let meta = json!({ "query": "{ _allPostsMeta { count } }" });
        let exists = json!({ "query": "{ SomePostExists }" });
        for id in [SERVICE_ID, ALIAS, "nope"] {
            let known = id != "nope";
            // The playground page names the path it was asked for.
            let res = srv.client().get(srv.url(&format!("/simple/v1/{id}"))).send().await.expect("request");
            assert_eq!(res.status(), 200, "{id}");
            assert_eq!(res.headers().get("access-control-allow-origin").and_then(|v| v.to_str().ok()), Some("*"), "{id}");
            if known {
                let html = res.text().await.expect("body");
                assert!(html.contains(&format!("/simple/v1/{id}")), "{id}: {html}");
            } else {
                assert_eq!(body_json(res).await, not_found(id));
            }
            // The permission schema: admins only (3008), and only for the service's ids (3016).
            let url = srv.url(&format!("/simple/v1/{id}/permissions"));
            let res = srv.anonymous().post(&url).bearer_auth(&token).json(&exists).send().await.expect("request");
            let expected = if known { json!({ "data": { "SomePostExists": false } }) } else { not_found(id) };
            assert_eq!(body_json(res).await, expected, "{id}");
            let res = srv.anonymous().post(&url).json(&exists).send().await.expect("request");
            let expected = if known {
                json!({ "code": 3008, "requestId": REQUEST_ID, "error": "Insufficient permissions for this query" })
            } else {
                not_found(id)
            };
            assert_eq!(body_json(res).await, expected, "{id}");
            // A preflight request, and a method no route takes.
            let res = srv.client().request(reqwest::Method::OPTIONS, srv.url(&format!("/simple/v1/{id}"))).send().await.expect("request");
            assert_eq!(res.status(), 204, "{id}");
            let res = srv.client().put(srv.url(&format!("/simple/v1/{id}"))).json(&meta).send().await.expect("request");
            assert_eq!(res.status(), 404, "{id}");
        }
    }

    /// GET on the API path serves the playground page; `/status` answers `OK`.
    async fn playground_and_status(srv) {
        let res = srv.client().get(srv.api()).send().await.expect("request");
        assert_eq!(res.status(), 200);
        let content_type = res.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        assert!(content_type.starts_with("text/html"), "content-type {content_type}");
        let html = res.text().await.expect("body");
        assert!(html.to_lowercase().contains("<html"), "not a page: {html}");

        let res = srv.client().get(srv.url("/status")).send().await.expect("request");
        assert_eq!(res.status(), 200);
        assert_eq!(res.text().await.expect("body"), "OK");
    }

    /// Every response has a `Request-Id` header (`local:simple:<cuid>`), the same id as in the
    /// body's errors, and new for every request.
    async fn request_id_header(srv) {
        let header = |res: &reqwest::Response| {
            res.headers().get("Request-Id").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
        };
        let res = srv.post(&json!({ "query": "{ Post { id } }" })).await;
        let id = header(&res);
        assert!(is_request_id(&id), "Request-Id {id:?}");
        let body: serde_json::Value = res.json().await.expect("json");
        assert_eq!(body["errors"][0]["requestId"], json!(id));

        let res = srv.post(&json!({ "query": "{ allPosts { id } }" })).await;
        let other = header(&res);
        assert!(is_request_id(&other) && other != id, "{other:?} after {id:?}");

        let res = srv.client().post(srv.url("/simple/v1/nope")).json(&json!({ "query": "{ allPosts { id } }" })).send().await.expect("request");
        let id = header(&res);
        let body: serde_json::Value = res.json().await.expect("json");
        assert!(is_request_id(&id));
        assert_eq!(body["requestId"], json!(id));
    }

    /// CORS is open to every origin, including the preflight.
    async fn cors(srv) {
        let res = srv
            .client()
            .post(srv.api())
            .header("Origin", "https://app.example.org")
            .json(&json!({ "query": "{ allPosts { id } }" }))
            .send()
            .await
            .expect("request");
        assert_eq!(res.status(), 200);
        assert_eq!(res.headers().get("access-control-allow-origin").and_then(|v| v.to_str().ok()), Some("*"));

        let res = srv
            .client()
            .request(reqwest::Method::OPTIONS, srv.api())
            .header("Origin", "https://app.example.org")
            .header("Access-Control-Request-Method", "POST")
            .header("Access-Control-Request-Headers", "content-type, authorization")
            .send()
            .await
            .expect("request");
        assert!(res.status().is_success(), "preflight status {}", res.status());
        let get = |name: &str| res.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_lowercase();
        assert_eq!(get("access-control-allow-origin"), "*");
        assert!(get("access-control-allow-methods").contains("post"), "methods: {}", get("access-control-allow-methods"));
        let headers = get("access-control-allow-headers");
        assert!(headers == "*" || (headers.contains("content-type") && headers.contains("authorization")), "headers: {headers}");
    }
}

db_cases! {
    /// The service id given at the first start on a database is stored with it: a start without
    /// `--service-id` serves under it (files keep their addresses), and one with another id
    /// serves under that id alone.
    async fn the_first_service_id_is_kept(db) {
        let Some(mut srv) = Server::start(db).await else { return };
        srv.stop();
        let body = json!({ "query": "{ _allPostsMeta { count } }" });
        let client = reqwest::Client::new();
        let answers = |port: u16, id: &'static str| {
            let (client, body) = (client.clone(), body.clone());
            async move {
                let url = format!("http://127.0.0.1:{port}/simple/v1/{id}");
                let res = client.post(url).json(&body).send().await.expect("request");
                body_json(res).await
            }
        };
        let not_found = |id: &str| json!({ "code": 3016, "requestId": REQUEST_ID, "error": format!("Project not found: '{id}'") });
        let count = json!({ "data": { "_allPostsMeta": { "count": 0 } } });
        for (given, served, refused) in [(None, SERVICE_ID, "another-id"), (Some("another-id"), "another-id", SERVICE_ID)] {
            let options = svc_runtime::Options {
                port: 0,
                database_url: Some(srv.database().url.clone()),
                service_id: given.map(str::to_owned),
                secret: Some(crate::support::SECRET.into()),
                file_store: Some(srv.store.location.clone()),
                ..Default::default()
            };
            let running = tokio::task::spawn_blocking(move || svc_runtime::spawn::<example_model::Service>(options))
                .await
                .expect("the spawning thread panicked")
                .expect("the server starts");
            let port = running.port;
            assert_eq!(answers(port, served).await, count, "started with {given:?}");
            assert_eq!(answers(port, refused).await, not_found(refused), "started with {given:?}");
            running.stop();
        }
    }

    /// The list fields of one request, a batch counting as one, read at most `--max-nodes`
    /// nodes in all (the aliases of one list field and the nested lists of a relation count
    /// alike): past it, error 2041 with our text, whichever engine answers.
    async fn node_budget_per_request(db) {
        let limits = svc_runtime::http::Limits { max_nodes: 250, ..Default::default() };
        let Some(srv) = Server::start_with_limits(db, limits).await else { return };
        let user = srv.create("User", r#"email: "budget@example.com", name: "Budget""#).await;
        let creates: String = (0..100)
            .map(|i| format!(r#"p{i}: createPost(slug: "budget-{i}", title: "t{i}", authorId: "{user}") {{ id }} "#))
            .collect();
        srv.data(&format!("mutation {{ {creates}}}")).await;
        let aliases = |n: usize| -> String {
            (0..n).map(|i| format!("a{i}: allPosts(first: 100) {{ id }} ")).collect()
        };
        let refused = |res: &Value| {
            res["errors"].as_array().is_some_and(|errors| {
                errors.iter().any(|e| {
                    e["code"] == 2041
                        && e["message"] == "This request reads more than 250 nodes, the most one request may read. Ask for fewer nodes, or split the request."
                })
            })
        };
        // 200 nodes: within the budget.
        let two = srv.gql(&format!("{{ {} }}", aliases(2))).await;
        assert!(two["errors"].is_null(), "{two}");
        assert_eq!(two["data"]["a1"].as_array().map(Vec::len), Some(100));
        // 300 nodes: refused.
        let three = srv.gql(&format!("{{ {} }}", aliases(3))).await;
        assert!(refused(&three), "{three}");
        // A relation's nodes count: 1 user + 100 posts, three times.
        let nested: String = (0..3)
            .map(|i| format!("u{i}: allUsers {{ posts(first: 100) {{ id }} }} "))
            .collect();
        let res = srv.gql(&format!("{{ {nested} }}")).await;
        assert!(refused(&res), "{res}");
        let one = srv.gql("{ allUsers { posts(first: 100) { id } } }").await;
        assert!(one["errors"].is_null(), "{one}");
        // A batch is one request: 200 + 200 nodes.
        let query = json!({ "query": format!("{{ {} }}", aliases(2)) });
        let batch = srv.post_json(&json!([query.clone(), query])).await;
        assert!(batch[0]["errors"].is_null(), "{batch}");
        assert!(refused(&batch[1]), "{batch}");
        // The budget is per request: the next one starts again.
        let again = srv.gql(&format!("{{ {} }}", aliases(2))).await;
        assert!(again["errors"].is_null(), "{again}");
    }
}
