//! Functions (reference §7) with webhook handlers: `operationBefore` hooks that change and that
//! refuse a write (nothing written), of nested creates too, `operationAfter` hooks that change
//! the payload only, resolvers on `Query` and `Mutation` with each payload shape, the error
//! contract (5000–5008, 2063, 3005, 3036) and the event object. A second generated service
//! (`service/`) declares the functions; its webhooks are the test's own HTTP receiver, and its
//! Rust handlers are `rust_handlers.rs`, compiled into it.

mod javascript;
mod receiver;
mod rust_handlers;
mod subscriptions;

use serde_json::{Value, json};

use crate::support::{Db, ScratchDir, TestDatabase, decode_claims};

/// The service of these tests.
mod service {
    svc_macros::service!(relative_to_file = "service/svc.yml");
}

const ID: &str = "functions-service";

/// The functions' service, running on a fresh database.
struct Functions {
    running: Option<svc_runtime::Running>,
    client: reqwest::Client,
    port: u16,
    options: svc_runtime::Options,
    database: TestDatabase,
    /// The service's file store; after the server (fields drop in order).
    _store: ScratchDir,
}

impl Functions {
    async fn start(db: Db) -> Option<Functions> {
        // The service has JavaScript handlers: it does not start without Node.js.
        let node = std::process::Command::new("node")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !node {
            assert!(
                !std::env::var("CI").is_ok_and(|v| v == "true"),
                "CI=true, but `node` is not on the PATH (the functions' service needs it)"
            );
            eprintln!(
                "notice: `node` is missing; skipping this functions test (its service has JavaScript handlers; install Node.js to run it)"
            );
            return None;
        }
        receiver::start();
        let database = TestDatabase::create(db).await?;
        let store = ScratchDir::new("svc-functions");
        let mut options = crate::support::options(&database.url, ID, "functions", store.location());
        // Failed server-side subscription deliveries are attempted again soon.
        options.function_backoff_ms = 200;
        // A JavaScript handler that allocates without bound reaches the limit soon.
        options.node_memory_mb = 64;
        let running = Self::spawn(options.clone()).await;
        Some(Functions {
            port: running.port,
            running: Some(running),
            client: reqwest::Client::new(),
            options,
            database,
            _store: store,
        })
    }

    async fn spawn(options: svc_runtime::Options) -> svc_runtime::Running {
        tokio::task::spawn_blocking(move || svc_runtime::spawn::<service::Service>(options))
            .await
            .expect("the spawning thread")
            .expect("the functions' service starts")
    }

    /// Stops the server and starts another on the same database.
    async fn restart(&mut self) {
        if let Some(running) = self.running.take() {
            tokio::task::spawn_blocking(move || running.stop())
                .await
                .expect("the stopping thread");
        }
        let running = Self::spawn(self.options.clone()).await;
        self.port = running.port;
        self.running = Some(running);
    }

    async fn post(&self, path: &str, token: Option<&str>, body: &Value) -> Value {
        let mut req = self
            .client
            .post(format!("http://127.0.0.1:{}{path}", self.port))
            .json(body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let res = req.send().await.expect("the request");
        res.json().await.expect("a JSON answer")
    }

    async fn gql(&self, query: &str) -> Value {
        self.post(
            &format!("/simple/v1/{ID}"),
            None,
            &json!({ "query": query }),
        )
        .await
    }

    async fn gql_vars(&self, query: &str, variables: Value) -> Value {
        let body = json!({ "query": query, "variables": variables });
        self.post(&format!("/simple/v1/{ID}"), None, &body).await
    }

    async fn post_count(&self) -> u64 {
        let out = self.gql("{ _allPostsMeta { count } }").await;
        out["data"]["_allPostsMeta"]["count"]
            .as_u64()
            .unwrap_or_else(|| panic!("{out}"))
    }
}

impl Drop for Functions {
    fn drop(&mut self) {
        if let Some(r) = self.running.take() {
            r.stop();
        }
    }
}

/// The one error of a response, without its request id.
fn error(out: &Value) -> Value {
    let mut e = out["errors"][0].clone();
    assert!(e["requestId"].is_string(), "{out}");
    if let Some(o) = e.as_object_mut() {
        o.remove("requestId");
        o.remove("locations");
    }
    e
}

db_cases! {
    /// A before-hook's data replaces the write's values; the hook sees the arguments (keys
    /// sorted), the new node's id, and the event's context.
    async fn a_before_hook_changes_the_input(db) {
        let Some(f) = Functions::start(db).await else { return };
        let out = f
            .gql(r#"mutation { createPost(title: "shout hello", votes: 1) { id title votes } }"#)
            .await;
        let post = &out["data"]["createPost"];
        assert_eq!(post["title"], "SHOUT HELLO", "{out}");
        assert_eq!(post["votes"], 42);
        let id = post["id"].as_str().unwrap().to_owned();
        // Stored as the hook said.
        let stored = f.gql(&format!(r#"{{ Post(id: "{id}") {{ title votes }} }}"#)).await;
        assert_eq!(stored["data"]["Post"], json!({ "title": "SHOUT HELLO", "votes": 42 }));
        // What the hook received.
        let got = receiver::received("/before/post", |d| d["id"] == id.as_str());
        assert_eq!(got.len(), 1);
        let event = &got[0].event;
        assert_eq!(event["data"], json!({ "id": id, "title": "shout hello", "votes": 1 }));
        let keys: Vec<&String> = event["data"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["id", "title", "votes"]);
        // Headers written with variables (`${self:custom.hookSecret}`, `${env:CARGO_PKG_NAME}`):
        // substituted when the service was built.
        assert!(got[0].headers.contains(&("x-hook-secret".to_owned(), "s3cret".to_owned())));
        let built_by = ("x-built-by".to_owned(), env!("CARGO_PKG_NAME").to_owned());
        assert!(got[0].headers.contains(&built_by), "{:?}", got[0].headers);
        assert!(got[0].headers.contains(&("content-type".to_owned(), "application/json".to_owned())));
        let context = &event["context"];
        assert_eq!(context["request"], json!({ "sourceIp": "", "headers": {}, "httpMethod": "post" }));
        assert_eq!(context["auth"], Value::Null);
        assert_eq!(context["environment"], json!({}));
        assert_eq!(context["graphcool"], context["svc"]);
        let svc = &context["svc"];
        assert_eq!(svc["serviceId"], ID);
        assert_eq!(svc["projectId"], ID);
        assert_eq!(svc["alias"], "functions");
        assert_eq!(svc["pat"], svc["rootToken"]);
        let base = format!("localhost:{}", f.port);
        assert_eq!(
            svc["endpoints"],
            json!({
                "simple": format!("http://{base}/simple/v1/{ID}"),
                "relay": format!("http://{base}/relay/v1/{ID}"),
                "system": format!("http://{base}/system"),
                "subscriptions": format!("ws://{base}/subscriptions/v1/{ID}"),
            })
        );
        // The temporary root token is an admin's for 5 minutes.
        let token = svc["rootToken"].as_str().unwrap();
        let claims = decode_claims(token);
        assert_eq!(claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(), 300);
        let path = format!("/simple/v1/{ID}/permissions");
        let query = json!({ "query": "{ SomePostExists(filter: { title: \"SHOUT HELLO\" }) }" });
        let as_admin = f.post(&path, Some(token), &query).await;
        assert_eq!(as_admin["data"]["SomePostExists"], true, "{as_admin}");
        let anonymous = f.post(&path, None, &query).await;
        assert_eq!(anonymous["code"], 3008, "{anonymous}");
    }

    /// Each way a before-hook can refuse or fail: the mutation fails with the reference's code
    /// and text, and nothing is written.
    async fn a_before_hook_error_writes_nothing(db) {
        let Some(f) = Functions::start(db).await else { return };
        let create = |title: &str| format!(r#"mutation {{ createPost(title: "{title}") {{ id }} }}"#);
        let out = f.gql(&create("reject me")).await;
        assert_eq!(out["data"]["createPost"], Value::Null);
        assert_eq!(
            error(&out),
            json!({
                "path": ["createPost"],
                "code": 5001,
                "message": "function execution error: Title rejected",
                "functionError": "Title rejected",
            })
        );
        let out = f.gql(&create("reject object")).await;
        assert_eq!(
            error(&out),
            json!({
                "path": ["createPost"],
                "code": 5002,
                "message": "function execution error",
                "functionError": { "reason": "no", "code": 7 },
            })
        );
        let cases = [
            ("status 500", 5000, "A function returned an unhandled error. Please check the logs for executionId '"),
            ("not json", 5003, "A function returned an invalid body. You can refer to the docs for the expected shape. Please check the logs for executionId '"),
            ("error number", 5003, "A function returned an invalid body."),
            ("slow", 5008, "The function `checkPost` did not answer within 1000 ms"),
            ("data not object", 5006, "The return value should include a 'data' field of type object"),
            ("extra field", 3005, "The parameters List(bogus) were present in the argument list, but are not present in the model Post."),
            ("bad type", 3036, "The input value 5 was not valid for field title of type Post."),
            ("drop title", 3020, "You are trying to set a required field to null."),
        ];
        for (title, code, text) in cases {
            let out = f.gql(&create(title)).await;
            let e = &out["errors"][0];
            assert_eq!(e["code"], code, "{title}: {out}");
            let message = e["message"].as_str().unwrap();
            assert!(message.starts_with(text), "{title}: {message}");
            if code == 5000 || code == 5003 && title == "not json" {
                let request_id = e["requestId"].as_str().unwrap();
                assert!(message.ends_with(&format!("executionId '{request_id}'")), "{message}");
            }
        }
        // An unreachable webhook.
        let out = f.gql(r#"mutation { createComment(text: "a") { id } }"#).await;
        assert_eq!(out["errors"][0]["code"], 5005, "{out}");
        assert!(out["errors"][0]["message"].as_str().unwrap().starts_with("A function webhook url was not valid."));
        assert_eq!(f.gql("{ _allCommentsMeta { count } }").await["data"]["_allCommentsMeta"]["count"], 0);
        assert_eq!(f.post_count().await, 0);
        // A null result keeps the values as given.
        let out = f.gql(r#"mutation { createPost(title: "null result") { title } }"#).await;
        assert_eq!(out["data"]["createPost"]["title"], "null result", "{out}");
        assert_eq!(f.post_count().await, 1);
    }

    /// Nested creates run the hook of their own model, and a refusal in the nested write
    /// writes nothing at all.
    async fn nested_creates_run_their_hooks(db) {
        let Some(f) = Functions::start(db).await else { return };
        let out = f
            .gql(r#"mutation { createPost(title: "nested", tags: [{ name: "rust" }, { name: "sql" }]) { id tags(orderBy: name_ASC) { id name } } }"#)
            .await;
        let post = &out["data"]["createPost"];
        let names: Vec<&str> = post["tags"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["RUST", "SQL"], "{out}");
        // The tag's hook saw its own id and its arguments.
        let tag_id = post["tags"][0]["id"].as_str().unwrap();
        let got = receiver::received("/before/tag", |d| d["id"] == tag_id);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].event["data"], json!({ "id": tag_id, "name": "rust" }));
        // The post's hook saw the nested objects as given.
        let post_id = post["id"].as_str().unwrap();
        let got = receiver::received("/before/post", |d| d["id"] == post_id);
        assert_eq!(got[0].event["data"]["tags"], json!([{ "name": "rust" }, { "name": "sql" }]));
        // The post's own hook refuses: neither the post nor its tags are written.
        let out = f
            .gql(r#"mutation { createPost(title: "reject me", tags: [{ name: "x" }]) { id } }"#)
            .await;
        assert_eq!(out["errors"][0]["code"], 5001);
        assert_eq!(f.post_count().await, 1);
        assert_eq!(f.gql("{ _allTagsMeta { count } }").await["data"]["_allTagsMeta"]["count"], 2);
    }

    /// An after-hook's data replaces the payload's values, not the stored ones; a delete's
    /// before-hook can refuse it.
    async fn after_hooks_change_the_payload_and_deletes_can_be_refused(db) {
        let Some(f) = Functions::start(db).await else { return };
        let out = f.gql(r#"mutation { createPost(title: "plain") { id } }"#).await;
        let id = out["data"]["createPost"]["id"].as_str().unwrap().to_owned();
        let out = f
            .gql(&format!(r#"mutation {{ updatePost(id: "{id}", title: "changed") {{ id title }} }}"#))
            .await;
        assert_eq!(out["data"]["updatePost"], json!({ "id": id, "title": "after: changed" }), "{out}");
        let stored = f.gql(&format!(r#"{{ Post(id: "{id}") {{ title }} }}"#)).await;
        assert_eq!(stored["data"]["Post"]["title"], "changed");
        let got = receiver::received("/after/post", |d| d["id"] == id.as_str());
        assert_eq!(got.len(), 1);
        let data = &got[0].event["data"];
        assert_eq!(data["title"], "changed");
        assert!(data["createdAt"].is_string() && data["updatedAt"].is_string(), "{data}");
        // A delete the hook refuses leaves the node; one it answers with 204 goes ahead.
        receiver::protect(&id);
        let out = f.gql(&format!(r#"mutation {{ deletePost(id: "{id}") {{ id }} }}"#)).await;
        assert_eq!(error(&out)["functionError"], "This post is protected", "{out}");
        assert_eq!(f.post_count().await, 1);
        let out = f.gql(r#"mutation { createPost(title: "free") { id } }"#).await;
        let free = out["data"]["createPost"]["id"].as_str().unwrap().to_owned();
        let out = f.gql(&format!(r#"mutation {{ deletePost(id: "{free}") {{ title }} }}"#)).await;
        assert_eq!(out["data"]["deletePost"]["title"], "free", "{out}");
        assert_eq!(f.post_count().await, 1);
        assert_eq!(receiver::received("/before/delete", |d| d == &json!({ "id": free })).len(), 1);
    }

    /// Resolvers on `Query` and `Mutation`: arguments in, each payload shape out, and the
    /// errors of a payload that does not fit.
    async fn resolvers_answer_with_their_payloads(db) {
        let Some(f) = Functions::start(db).await else { return };
        let out = f.gql(r#"{ hello(name: "Ada") { message } anonymous: hello { message } }"#).await;
        assert_eq!(out, json!({ "data": { "hello": { "message": "Hello Ada" }, "anonymous": { "message": "Hello World" } } }));
        let out = f.gql(r#"{ hello(name: "time") { message at extra __typename } }"#).await;
        assert_eq!(
            out["data"]["hello"],
            json!({ "message": "t", "at": "2020-01-02T03:04:05.000Z", "extra": { "a": [1, "b"] }, "__typename": "HelloPayload" })
        );
        // A null result of a nullable payload is null; of a required one, 2063.
        assert_eq!(f.gql(r#"{ hello(name: "null") { message } }"#).await, json!({ "data": { "hello": null } }));
        let out = f.gql(r#"{ strictHello(name: "null") { message } }"#).await;
        assert_eq!(out["errors"][0]["code"], 2063, "{out}");
        assert_eq!(
            out["errors"][0]["message"],
            "The payloadType for the resolver `strictHello` is not nullable, but the resolver returned null."
        );
        let out = f.gql(r#"{ hello(name: "bad") { message } }"#).await;
        assert_eq!(out["errors"][0]["code"], 5004, "{out}");
        assert_eq!(
            out["errors"][0]["message"],
            "Returned Json Object does not match the GraphQL type. The field 'message' should be of type String!"
        );
        for name in ["extra", "list"] {
            let out = f.gql(&format!(r#"{{ hello(name: "{name}") {{ message }} }}"#)).await;
            assert_eq!(out["errors"][0]["code"], 5007, "{out}");
            assert_eq!(
                out["errors"][0]["message"],
                "The value of the data object did not match the specified payloadType for function: hello"
            );
        }
        // A list payload on Mutation, with variables; the resolver's caller is in `auth`.
        let token = crate::support::mint(&crate::support::platform_claims());
        let body = json!({
            "query": "mutation($v: [Int!]!) { sums(values: $v, scale: 0.5) { id total parts } }",
            "variables": { "v": [1, 2, 3] },
        });
        let out = f.post(&format!("/simple/v1/{ID}"), Some(&token), &body).await;
        assert_eq!(
            out,
            json!({ "data": { "sums": [
                { "id": "sum", "total": 3.0, "parts": [1, 2, 3] },
                { "id": null, "total": 3.0, "parts": null },
            ] } })
        );
        let got = receiver::received("/resolver/sums", |d| d["values"] == json!([1, 2, 3]));
        let context = &got.last().unwrap().event["context"];
        assert_eq!(got.last().unwrap().event["data"], json!({ "values": [1, 2, 3], "scale": 0.5 }));
        assert_eq!(context["auth"]["typeName"], "Customer");
        assert_eq!(context["auth"]["token"], token.as_str());
        assert_eq!(context["request"]["sourceIp"], "127.0.0.1");
        // Arguments are checked against the extension's types before the function runs.
        let out = f.gql_vars("query($n: Int) { hello(name: $n) { message } }", json!({ "n": 1 })).await;
        assert!(out["errors"][0]["message"].is_string() && out.get("data").is_none(), "{out}");
        // The Relay API has them too: query resolvers on `Viewer`, mutation resolvers on
        // `Mutation` with their arguments as they are (not wrapped in `input`).
        let relay = format!("/relay/v1/{ID}");
        let out = f.post(&relay, None, &json!({ "query": r#"{ viewer { hello(name: "Relay") { message } } }"# })).await;
        assert_eq!(out, json!({ "data": { "viewer": { "hello": { "message": "Hello Relay" } } } }));
        let out = f.post(&relay, None, &json!({ "query": "mutation { sums(values: [4]) { total } }" })).await;
        assert_eq!(out, json!({ "data": { "sums": [{ "total": 4.0 }, { "total": 1.0 }] } }));
        // The fields are in the schema.
        let out = f.gql(r#"{ __type(name: "Query") { fields { name } } }"#).await;
        let names: Vec<&str> = out["data"]["__type"]["fields"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
        assert!(names.contains(&"hello") && names.contains(&"strictHello"), "{names:?}");
    }
}

db_cases! {
    /// Rust handlers: a before-hook that changes and refuses a write, an after-hook that changes
    /// the payload, a resolver that reads the event's context and uses its root token, and a
    /// resolver's timeout.
    async fn rust_handlers_run_in_the_service(db) {
        let Some(f) = Functions::start(db).await else { return };
        let out = f.gql(r#"mutation { createNote(text: "quiet", score: 1) { id text score } }"#).await;
        let note = &out["data"]["createNote"];
        assert_eq!((note["text"].as_str(), note["score"].as_i64()), (Some("QUIET"), Some(5)), "{out}");
        let id = note["id"].as_str().unwrap().to_owned();
        let out = f.gql(r#"mutation { createNote(text: "keep") { text score } }"#).await;
        assert_eq!(out["data"]["createNote"], json!({ "text": "keep", "score": null }));
        let out = f.gql(r#"mutation { createNote(text: "forbidden") { id } }"#).await;
        assert_eq!(
            error(&out),
            json!({
                "path": ["createNote"], "code": 5001,
                "message": "function execution error: Notes may not say that",
                "functionError": "Notes may not say that",
            })
        );
        let out = f.gql(r#"mutation { createNote(text: "object") { id } }"#).await;
        assert_eq!(error(&out)["functionError"], json!({ "field": "text" }));
        assert_eq!(f.gql("{ _allNotesMeta { count } }").await["data"]["_allNotesMeta"]["count"], 2);
        // The after-hook changes the payload, not the stored note.
        let out = f.gql(&format!(r#"mutation {{ updateNote(id: "{id}", text: "loud") {{ text }} }}"#)).await;
        assert_eq!(out["data"]["updateNote"]["text"], "loud!", "{out}");
        let stored = f.gql(&format!(r#"{{ Note(id: "{id}") {{ text }} }}"#)).await;
        assert_eq!(stored["data"]["Note"]["text"], "loud");
        // The resolver.
        let out = f.gql(r#"{ rustHello(name: "Ada", times: 2) { message caller serviceId tokenWorks } }"#).await;
        assert_eq!(
            out["data"]["rustHello"],
            json!({ "message": "Hello AdaHello Ada", "caller": null, "serviceId": ID, "tokenWorks": null })
        );
        let token = crate::support::mint(&crate::support::platform_claims());
        let body = json!({ "query": r#"{ rustHello(name: "check token") { caller tokenWorks } }"# });
        let out = f.post(&format!("/simple/v1/{ID}"), Some(&token), &body).await;
        assert_eq!(out["data"]["rustHello"], json!({ "caller": "Customer", "tokenWorks": true }), "{out}");
        let out = f.gql(r#"{ rustHello(name: "sleepy") { message } }"#).await;
        assert_eq!(out["errors"][0]["code"], 5008, "{out}");
        assert!(out["errors"][0]["message"].as_str().unwrap().starts_with("The function `rustHello` did not answer within 500 ms"));
    }
}

db_tests! {
    /// `svc-lib` against a running service: a client from an event (both spellings of its
    /// context), GraphQL requests with the event's token, and node tokens issued through the
    /// System API that the service then accepts.
    async fn svc_lib_talks_to_a_running_service(srv) {
        let base = format!("http://127.0.0.1:{}", srv.port);
        let endpoints = svc_lib::Endpoints::local(&base, crate::support::SERVICE_ID);
        let context = json!({
            "serviceId": crate::support::SERVICE_ID,
            "rootToken": srv.root_token(),
            "endpoints": endpoints,
        });
        let svc = svc_lib::from_event(&json!({ "data": {}, "context": { "graphcool": context } }))
            .expect("a client from the event");
        let created = svc
            .simple(
                "mutation ($e: String!) { createUser(email: $e, name: \"Ada\") { id } }",
                json!({ "e": "ada@example.com" }),
            )
            .await
            .expect("a create with the root token");
        let id = created["createUser"]["id"].as_str().unwrap().to_owned();
        let token = svc
            .generate_node_token(&id, "User", Some(600))
            .await
            .expect("a node token");
        let claims = decode_claims(&token);
        assert_eq!(claims["userId"], id.as_str());
        assert_eq!(claims["modelName"], "User");
        assert_eq!(claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(), 600);
        let me = svc
            .with_token(Some(token))
            .simple("{ user { id name } }", json!({}))
            .await
            .expect("a request with the node token");
        assert_eq!(me["user"], json!({ "id": id, "name": "Ada" }));
        // The Relay API through the same client.
        let viewer = svc.relay("{ viewer { id } }", json!({})).await.expect("a Relay request");
        assert!(viewer["viewer"]["id"].is_string(), "{viewer}");
        // A token the service does not accept: the System API's error comes back.
        let denied = svc
            .with_token(Some("not-a-token".into()))
            .generate_node_token(&id, "User", None)
            .await;
        match denied {
            Err(svc_lib::Error::GraphQL(errors)) => assert_eq!(errors[0]["code"], 4028, "{errors}"),
            other => panic!("expected 4028, got {other:?}"),
        }
    }
}
