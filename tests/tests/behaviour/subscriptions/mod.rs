//! Subscriptions over WebSockets (reference §4): real sockets (tokio-tungstenite) speaking each of
//! the three sub-protocols to `/subscriptions/v1/<alias>` and to the Simple API's path, events
//! caused by mutations over HTTP, and the reference's messages, error texts, keep-alives, id
//! echo, filters, payloads and permissions.

mod fanout;

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::auth::secret::Served;
use crate::support::{
    ALIAS, Db, SECRET, Server, TestDatabase, admin_connection, mint, node_token, platform_claims,
};

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// How long a test waits for a message it expects.
const WAIT: Duration = Duration::from_secs(5);
/// How long a test waits to be sure a message does not come.
const QUIET: Duration = Duration::from_millis(700);

/// A socket to `path` offering `protocol`; the protocol the server chose.
async fn connect_to(srv: &Server, path: &str, protocol: &str) -> (Ws, Option<String>) {
    connect_to_port(srv.port, path, protocol).await
}

/// [`connect_to`] the server listening on `port`.
async fn connect_to_port(port: u16, path: &str, protocol: &str) -> (Ws, Option<String>) {
    let url = format!("ws://127.0.0.1:{port}{path}");
    let mut request = url.into_client_request().expect("a request");
    if !protocol.is_empty() {
        request.headers_mut().insert(
            "Sec-WebSocket-Protocol",
            HeaderValue::from_str(protocol).expect("a header"),
        );
    }
    let (ws, response) = tokio_tungstenite::connect_async(request)
        .await
        .expect("the socket opens");
    let chosen = response
        .headers()
        .get("Sec-WebSocket-Protocol")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (ws, chosen)
}

async fn connect(srv: &Server, protocol: &str) -> Ws {
    let path = format!("/subscriptions/v1/{ALIAS}");
    let (ws, chosen) = connect_to(srv, &path, protocol).await;
    assert_eq!(chosen.as_deref(), Some(protocol));
    ws
}

async fn send(ws: &mut Ws, message: Value) {
    ws.send(Message::text(message.to_string()))
        .await
        .expect("sent");
}

/// The next message that is not a keep-alive (`None` when the socket closed), within [`WAIT`].
async fn next(ws: &mut Ws) -> Option<Value> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match next_raw(ws, left).await? {
            Message::Text(text) => {
                let value: Value = serde_json::from_str(&text).expect("JSON");
                if !matches!(value["type"].as_str(), Some("ka" | "keepalive")) {
                    return Some(value);
                }
            }
            Message::Close(_) => return None,
            _ => {}
        }
    }
}

async fn next_raw(ws: &mut Ws, wait: Duration) -> Option<Message> {
    match tokio::time::timeout(wait, ws.next()).await {
        Ok(Some(Ok(message))) => Some(message),
        Ok(_) => None,
        Err(_) => panic!("no message within {wait:?}"),
    }
}

/// Asserts that nothing but keep-alives comes for [`QUIET`].
async fn silent(ws: &mut Ws) {
    let deadline = tokio::time::Instant::now() + QUIET;
    loop {
        match tokio::time::timeout_at(deadline, ws.next()).await {
            Err(_) => return,
            Ok(Some(Ok(Message::Text(text)))) => {
                let value: Value = serde_json::from_str(&text).expect("JSON");
                assert!(
                    matches!(value["type"].as_str(), Some("ka" | "keepalive")),
                    "unexpected {value}"
                );
            }
            Ok(other) => panic!("unexpected {other:?}"),
        }
    }
}

/// A `graphql-ws` socket, initialised with `payload`.
async fn legacy(srv: &Server, payload: Value) -> Ws {
    let mut ws = connect(srv, "graphql-ws").await;
    send(
        &mut ws,
        json!({ "type": "connection_init", "payload": payload }),
    )
    .await;
    assert_eq!(
        next(&mut ws).await,
        Some(json!({ "type": "connection_ack" }))
    );
    ws
}

/// Starts `query` as subscription `id` on a `graphql-ws` socket.
async fn start(ws: &mut Ws, id: Value, query: &str) {
    send(
        ws,
        json!({ "id": id, "type": "start", "payload": { "query": query } }),
    )
    .await;
}

/// Waits until a legacy socket has handled every message sent before: they are handled in order,
/// and a message of no known type gets an answer (so a subscription started before listens).
async fn sync(ws: &mut Ws) {
    send(ws, json!({ "type": "sync" })).await;
    let answer = next(ws).await.expect("an answer");
    assert_eq!(
        answer["payload"]["message"],
        json!("The message can't be parsed"),
        "{answer}"
    );
}

/// The `data` payload of the next message, which must be for subscription `id`.
async fn data(ws: &mut Ws, id: &Value) -> Value {
    let message = next(ws).await.expect("a message");
    assert_eq!(
        (&message["id"], &message["type"]),
        (id, &json!("data")),
        "{message}"
    );
    message["payload"].clone()
}

/// The root token as an init payload's `Authorization`.
fn root(srv: &Server) -> String {
    format!("Bearer {}", srv.root_token())
}

/// Runs a mutation that must not fail, as the root.
async fn mutate(srv: &Server, query: &str) -> Value {
    srv.data(query).await
}

db_tests! {
    /// `graphql-ws`: `connection_ack`, a first `ka` and then one per interval, events as `data`
    /// with the id echoed with its JSON type, `stop`, and `connection_terminate`.
    async fn graphql_ws_protocol(srv) {
        let mut ws = connect(srv, "graphql-ws").await;
        send(&mut ws, json!({ "type": "connection_init", "payload": {} })).await;
        let mut kinds = Vec::new();
        for _ in 0..3 {
            match next_raw(&mut ws, WAIT).await {
                Some(Message::Text(text)) => {
                    let value: Value = serde_json::from_str(&text).expect("JSON");
                    kinds.push(value["type"].as_str().unwrap_or_default().to_owned());
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(kinds, ["connection_ack", "ka", "ka"]);
        let query = "subscription { Post(filter: { mutation_in: [CREATED] }) { mutation node { slug title } updatedFields previousValues { slug } } }";
        start(&mut ws, json!("s1"), query).await;
        start(&mut ws, json!(7), query).await;
        sync(&mut ws).await;
        mutate(srv, r#"mutation { createPost(slug: "p1", title: "One") { id } }"#).await;
        let expected = json!({ "data": { "Post": { "mutation": "CREATED", "node": { "slug": "p1", "title": "One" }, "updatedFields": null, "previousValues": null } } });
        let mut seen = Vec::new();
        for _ in 0..2 {
            let message = next(&mut ws).await.expect("a message");
            assert_eq!(message["type"], json!("data"));
            assert_eq!(message["payload"], expected);
            seen.push(message["id"].clone());
        }
        seen.sort_by_key(|id| id.is_number());
        assert_eq!(seen, [json!("s1"), json!(7)], "ids keep their JSON type");
        send(&mut ws, json!({ "id": 7, "type": "stop" })).await;
        sync(&mut ws).await;
        mutate(srv, r#"mutation { createPost(slug: "p2", title: "Two") { id } }"#).await;
        let payload = data(&mut ws, &json!("s1")).await;
        assert_eq!(payload["data"]["Post"]["node"]["slug"], json!("p2"));
        silent(&mut ws).await;
        send(&mut ws, json!({ "type": "connection_terminate" })).await;
        assert_eq!(next(&mut ws).await, None, "the socket closes");
    }

    /// A payload's entries come in the order in which the subscription selects them, though
    /// `node` and its relation fields are read after `mutation` is known.
    async fn payload_keys_follow_the_query(srv) {
        let mut ws = legacy(srv, json!({})).await;
        let query = "subscription { Post(filter: { mutation_in: [CREATED] }) { node { slug comments { text } __typename } mutation previousValues { slug } } }";
        start(&mut ws, json!("s1"), query).await;
        sync(&mut ws).await;
        mutate(srv, r#"mutation { createPost(slug: "p1", title: "One") { id } }"#).await;
        let payload = data(&mut ws, &json!("s1")).await;
        let keys = |v: &Value| -> Vec<String> {
            v.as_object()
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default()
        };
        let post = &payload["data"]["Post"];
        assert_eq!(keys(post), ["node", "mutation", "previousValues"], "{payload}");
        assert_eq!(keys(&post["node"]), ["slug", "comments", "__typename"], "{payload}");
    }

    /// `graphql-subscriptions` (v0.5): `init_success`, `subscription_success`, events as
    /// `subscription_data`, `subscription_end`, `keepalive`; its failures.
    async fn graphql_subscriptions_protocol(srv) {
        let mut ws = connect(srv, "graphql-subscriptions").await;
        send(&mut ws, json!({ "type": "init", "payload": { "Authorization": root(srv) } })).await;
        assert_eq!(next(&mut ws).await, Some(json!({ "type": "init_success" })));
        match next_raw(&mut ws, WAIT).await {
            Some(Message::Text(text)) => assert_eq!(serde_json::from_str::<Value>(&text).expect("JSON"), json!({ "type": "keepalive" })),
            other => panic!("unexpected {other:?}"),
        }
        let query = "subscription { Post { mutation updatedFields previousValues { title votes } node { title } } }";
        send(&mut ws, json!({ "id": 3, "type": "subscription_start", "query": query })).await;
        assert_eq!(next(&mut ws).await, Some(json!({ "id": 3, "type": "subscription_success" })));
        let post = mutate(srv, r#"mutation { createPost(slug: "p1", title: "One") { id } }"#).await;
        let id = post["createPost"]["id"].as_str().expect("id").to_owned();
        let created = next(&mut ws).await.expect("created");
        assert_eq!(created["type"], json!("subscription_data"));
        assert_eq!(created["payload"]["data"]["Post"]["mutation"], json!("CREATED"));
        mutate(srv, &format!(r#"mutation {{ updatePost(id: "{id}", title: "Uno", votes: 0) {{ id }} }}"#)).await;
        let updated = next(&mut ws).await.expect("updated");
        assert_eq!(
            updated,
            json!({ "id": 3, "type": "subscription_data", "payload": { "data": { "Post": {
                "mutation": "UPDATED",
                "updatedFields": ["title", "votes"],
                "previousValues": { "title": "One", "votes": 0 },
                "node": { "title": "Uno" },
            } } } })
        );
        send(&mut ws, json!({ "id": 3, "type": "subscription_end" })).await;
        sync(&mut ws).await;
        mutate(srv, &format!(r#"mutation {{ deletePost(id: "{id}") {{ id }} }}"#)).await;
        silent(&mut ws).await;
        send(&mut ws, json!({ "id": 4, "type": "subscription_start", "query": "subscription { Post { nope } }" })).await;
        assert_eq!(
            next(&mut ws).await,
            Some(json!({ "id": 4, "type": "subscription_fail", "payload": { "errors": [{ "message": "Unknown field \"nope\" on type \"PostSubscriptionPayload\". Did you mean \"node\"?" }] } }))
        );
    }

    /// A variable a subscription's payload leaves out takes out the filter field it fills; a
    /// text wrong where such a variable is gets the error a full validation of it gives.
    async fn subscriptions_leave_out_the_fields_of_left_out_variables(srv) {
        let mut ws = connect(srv, "graphql-transport-ws").await;
        send(&mut ws, json!({ "type": "connection_init" })).await;
        assert_eq!(next(&mut ws).await, Some(json!({ "type": "connection_ack" })));
        send(&mut ws, json!({ "type": "subscribe", "id": "a", "payload": { "query": "subscription ($s: String) { Post(filter: { node: { slug: $s } }) { node { slug } } }" } })).await;
        send(&mut ws, json!({ "type": "subscribe", "id": "b", "payload": { "query": "subscription ($s: String) { Post(filter: { node: { bogus: $s } }) { node { slug } } }" } })).await;
        match next(&mut ws).await {
            Some(message) => {
                assert_eq!((&message["id"], &message["type"]), (&json!("b"), &json!("error")), "{message}");
                let text = message["payload"][0]["message"].as_str().unwrap_or_default();
                assert!(text.contains("bogus"), "{message}");
            }
            None => panic!("no error for the wrong text"),
        }
        mutate(srv, r#"mutation { createPost(slug: "p1", title: "One") { id } }"#).await;
        assert_eq!(
            next(&mut ws).await,
            Some(json!({ "id": "a", "type": "next", "payload": { "data": { "Post": { "node": { "slug": "p1" } } } } }))
        );
        silent(&mut ws).await;
    }

    /// A subscription whose variable is used where its type does not fit is refused with that
    /// validation error; one whose variables fit runs beside it.
    async fn subscriptions_with_misplaced_variables_are_refused(srv) {
        let mut ws = connect(srv, "graphql-transport-ws").await;
        send(&mut ws, json!({ "type": "connection_init" })).await;
        assert_eq!(next(&mut ws).await, Some(json!({ "type": "connection_ack" })));
        send(&mut ws, json!({ "type": "subscribe", "id": "a", "payload": { "query": "subscription ($v: Int) { Post(filter: { node: { votes_gte: $v } }) { node { slug } } }", "variables": { "v": 1 } } })).await;
        send(&mut ws, json!({ "type": "subscribe", "id": "b", "payload": { "query": "subscription ($v: String) { Post(filter: { node: { votes_gte: $v } }) { node { slug } } }", "variables": { "v": null } } })).await;
        assert_eq!(
            next(&mut ws).await,
            Some(json!({ "id": "b", "type": "error", "payload": [{ "message": "Variable \"$v\" of type \"String\" used in position expecting type \"Int\"." }] }))
        );
        mutate(srv, r#"mutation { createPost(slug: "p1", title: "One", votes: 3) { id } }"#).await;
        assert_eq!(
            next(&mut ws).await,
            Some(json!({ "id": "a", "type": "next", "payload": { "data": { "Post": { "node": { "slug": "p1" } } } } }))
        );
        silent(&mut ws).await;
    }

    /// `graphql-transport-ws`: `connection_ack`, `ping`/`pong`, `subscribe` answered by `next`,
    /// `complete` from the client, errors as `error`, and its close codes.
    async fn graphql_transport_ws_protocol(srv) {
        let mut ws = connect(srv, "graphql-transport-ws").await;
        send(&mut ws, json!({ "type": "subscribe", "id": "1", "payload": { "query": "subscription { Post { mutation } }" } })).await;
        match next_raw(&mut ws, WAIT).await {
            Some(Message::Close(Some(frame))) => assert_eq!((u16::from(frame.code), frame.reason.as_str()), (4401, "Unauthorized")),
            other => panic!("expected a close, got {other:?}"),
        }
        let mut ws = connect(srv, "graphql-transport-ws").await;
        send(&mut ws, json!({ "type": "connection_init" })).await;
        assert_eq!(next(&mut ws).await, Some(json!({ "type": "connection_ack" })));
        send(&mut ws, json!({ "type": "ping" })).await;
        assert_eq!(next(&mut ws).await, Some(json!({ "type": "pong" })));
        send(&mut ws, json!({ "type": "subscribe", "id": "a", "payload": { "query": "subscription ($s: String) { Post(filter: { node: { slug: $s } }) { node { slug } } }", "variables": { "s": "p2" } } })).await;
        send(&mut ws, json!({ "type": "subscribe", "id": "b", "payload": { "query": "subscription { Post { nope } }" } })).await;
        assert_eq!(
            next(&mut ws).await,
            Some(json!({ "id": "b", "type": "error", "payload": [{ "message": "Unknown field \"nope\" on type \"PostSubscriptionPayload\". Did you mean \"node\"?" }] }))
        );
        mutate(srv, r#"mutation { a: createPost(slug: "p1", title: "One") { id } b: createPost(slug: "p2", title: "Two") { id } }"#).await;
        assert_eq!(
            next(&mut ws).await,
            Some(json!({ "id": "a", "type": "next", "payload": { "data": { "Post": { "node": { "slug": "p2" } } } } }))
        );
        send(&mut ws, json!({ "type": "complete", "id": "a" })).await;
        send(&mut ws, json!({ "type": "ping" })).await;
        assert_eq!(next(&mut ws).await, Some(json!({ "type": "pong" })), "`complete` was handled");
        mutate(srv, r#"mutation { createPost(slug: "p3", title: "Three") { id } }"#).await;
        silent(&mut ws).await;
        send(&mut ws, json!({ "type": "connection_init" })).await;
        match next_raw(&mut ws, WAIT).await {
            Some(Message::Close(Some(frame))) => assert_eq!(u16::from(frame.code), 4429),
            other => panic!("expected a close, got {other:?}"),
        }
    }

    /// The reference's error texts: an unparsable message, a query that does not parse, one
    /// without a model, validation errors (the first only), an `Authorization` that is not a
    /// string; messages before init are ignored; the Simple API's path takes the upgrade too.
    async fn errors_and_one_url(srv) {
        let (mut ws, chosen) = connect_to(srv, &format!("/simple/v1/{ALIAS}"), "graphql-ws").await;
        assert_eq!(chosen.as_deref(), Some("graphql-ws"));
        start(&mut ws, json!("early"), "subscription { Post { mutation } }").await;
        silent(&mut ws).await;
        send(&mut ws, json!({ "type": "connection_init", "payload": { "Authorization": 5 } })).await;
        assert_eq!(next(&mut ws).await, Some(json!({ "type": "connection_error", "payload": { "message": "No Authorization field was provided in payload." } })));
        send(&mut ws, json!({ "type": "connection_init", "payload": { "Authorization": "Bearer not-a-token" } })).await;
        assert_eq!(next(&mut ws).await, Some(json!({ "type": "connection_ack" })), "an invalid token is no token");
        ws.send(Message::text("{not json")).await.expect("sent");
        let unparsable = json!({ "id": "", "type": "error", "payload": { "message": "The message can't be parsed" } });
        assert_eq!(next(&mut ws).await, Some(unparsable.clone()));
        send(&mut ws, json!({ "type": "what" })).await;
        assert_eq!(next(&mut ws).await, Some(unparsable));
        let error = |id: &str, message: &str| json!({ "id": id, "type": "error", "payload": { "message": message } });
        start(&mut ws, json!("1"), "subscription { Post { ").await;
        assert_eq!(next(&mut ws).await, Some(error("1", "the GraphQL Query was not valid")));
        start(&mut ws, json!("2"), "subscription { Nope { mutation } }").await;
        assert_eq!(next(&mut ws).await, Some(error("2", "The provided query doesn't include any known model name. Please check for the latest subscriptions API.")));
        start(&mut ws, json!("3"), "subscription { Post(filter: { mutation_in: [GONE] }) { nope } }").await;
        let message = next(&mut ws).await.expect("an error");
        assert_eq!((&message["id"], &message["type"]), (&json!("3"), &json!("error")), "{message}");
        assert!(message["payload"]["message"].as_str().is_some_and(|m| m.contains("GONE") || m.contains("nope")), "{message}");
        assert!(message["payload"].get("errors").is_none(), "one error only: {message}");
    }

    /// Filters: `mutation_in`, `updatedFields_contains(_every|_some)` (also inside `OR`), `node`
    /// on the node as it is after the commit; relation-only updates fire nothing; DELETED
    /// payloads come from the previous values; nested creates fire for their model.
    async fn filters_and_firing_rules(srv) {
        let mut ws = legacy(srv, json!({ "authorization": root(srv) })).await;
        start(&mut ws, json!("title"), r#"subscription { Post(filter: { OR: [{ mutation_in: [UPDATED], updatedFields_contains: "title" }, { mutation_in: [DELETED] }] }) { mutation previousValues { title } node { title } } }"#).await;
        // The kinds listened to are the union of every `mutation_in`: this one hears deletes only,
        // whatever its `OR` says of updates.
        start(&mut ws, json!("union"), r#"subscription { Post(filter: { OR: [{ updatedFields_contains: "title" }, { mutation_in: [DELETED] }] }) { mutation } }"#).await;
        start(&mut ws, json!("every"), r#"subscription { Post(filter: { mutation_in: [UPDATED], updatedFields_contains_every: ["title", "votes"] }) { updatedFields } }"#).await;
        start(&mut ws, json!("some"), r#"subscription { Post(filter: { updatedFields_contains_some: ["votes", "body"], node: { votes_gt: 5 } }) { node { votes } } }"#).await;
        start(&mut ws, json!("comments"), "subscription { Comment(filter: { mutation_in: [CREATED] }) { node { text post { slug } } } }").await;
        sync(&mut ws).await;
        // A create with a nested create: only the comment subscription hears it (the post
        // subscriptions listen to updates and deletes).
        let post = mutate(srv, r#"mutation { createPost(slug: "p1", title: "One", comments: [{ text: "hi" }]) { id } }"#).await;
        let id = post["createPost"]["id"].as_str().expect("id").to_owned();
        let payload = data(&mut ws, &json!("comments")).await;
        assert_eq!(payload, json!({ "data": { "Comment": { "node": { "text": "hi", "post": { "slug": "p1" } } } } }));
        silent(&mut ws).await;
        // votes only: `some` checks the node (3 is not > 5): nothing; then 9: `some` fires.
        mutate(srv, &format!(r#"mutation {{ updatePost(id: "{id}", votes: 3) {{ id }} }}"#)).await;
        silent(&mut ws).await;
        mutate(srv, &format!(r#"mutation {{ updatePost(id: "{id}", votes: 9) {{ id }} }}"#)).await;
        assert_eq!(data(&mut ws, &json!("some")).await, json!({ "data": { "Post": { "node": { "votes": 9 } } } }));
        silent(&mut ws).await;
        // title and votes: `title` and `every` fire, `some` too (votes, and 10 > 5).
        mutate(srv, &format!(r#"mutation {{ updatePost(id: "{id}", title: "Uno", votes: 10) {{ id }} }}"#)).await;
        let mut got = Vec::new();
        for _ in 0..3 {
            let message = next(&mut ws).await.unwrap_or_else(|| panic!("a message after {got:?}"));
            got.push((message["id"].as_str().unwrap_or_default().to_owned(), message["payload"]["data"]["Post"].clone()));
        }
        got.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            got,
            vec![
                ("every".to_owned(), json!({ "updatedFields": ["title", "votes"] })),
                ("some".to_owned(), json!({ "node": { "votes": 10 } })),
                ("title".to_owned(), json!({ "mutation": "UPDATED", "previousValues": { "title": "One" }, "node": { "title": "Uno" } })),
            ]
        );
        silent(&mut ws).await;
        // A relation-only update fires nothing.
        let cat = mutate(srv, r#"mutation { createCategory(name: "News") { id } }"#).await;
        let cat = cat["createCategory"]["id"].as_str().expect("id").to_owned();
        mutate(srv, &format!(r#"mutation {{ updatePost(id: "{id}", categoriesIds: ["{cat}"]) {{ id }} }}"#)).await;
        silent(&mut ws).await;
        // A mutation that fails writes nothing and fires nothing (a unique slug taken twice).
        let res = srv.gql(r#"mutation { createPost(slug: "p1", title: "Dup") { id } }"#).await;
        assert!(res.get("errors").is_some(), "{res:#}");
        silent(&mut ws).await;
        // DELETED: from the previous values, `node` null; the node filter is not applied.
        mutate(srv, &format!(r#"mutation {{ deletePost(id: "{id}") {{ id }} }}"#)).await;
        let mut got = Vec::new();
        for _ in 0..2 {
            let message = next(&mut ws).await.expect("a message");
            got.push((message["id"].as_str().unwrap_or_default().to_owned(), message["payload"]["data"]["Post"].clone()));
        }
        got.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            got,
            vec![
                ("title".to_owned(), json!({ "mutation": "DELETED", "previousValues": { "title": "Uno" }, "node": null })),
                ("union".to_owned(), json!({ "mutation": "DELETED" })),
            ]
        );
        silent(&mut ws).await;
    }

    /// The socket's token decides what payloads show, with the read permissions of queries:
    /// fields the subscriber may not read are errors inside the payload.
    async fn permissions_inside_payloads(srv) {
        let mut anonymous = legacy(srv, json!({})).await;
        let query = "subscription { User(filter: { mutation_in: [CREATED] }) { node { name email } } }";
        start(&mut anonymous, json!(1), query).await;
        sync(&mut anonymous).await;
        let bo = srv.data(r#"mutation { createUser(email: "bo@x.io", name: "Bo") { id } }"#).await;
        let bo = bo["createUser"]["id"].as_str().expect("id").to_owned();
        let payload = data(&mut anonymous, &json!(1)).await;
        assert_eq!(payload["data"], json!({ "User": { "node": { "name": null, "email": null } } }), "{payload}");
        let errors = payload["errors"].as_array().expect("errors");
        assert!(errors.iter().all(|e| e["code"] == json!(3008) && e["message"] == json!("Insufficient Permissions")), "{payload}");
        let mut bo_socket = legacy(srv, json!({ "Authorization": format!("Bearer {}", node_token(&bo, "User")) })).await;
        start(&mut bo_socket, json!(2), query).await;
        sync(&mut bo_socket).await;
        srv.data(r#"mutation { createUser(email: "cy@x.io", name: "Cy") { id } }"#).await;
        let payload = data(&mut bo_socket, &json!(2)).await;
        // Signed-in users read each other's names, not their emails.
        assert_eq!(payload["data"], json!({ "User": { "node": { "name": "Cy", "email": null } } }), "{payload}");
        assert_eq!(payload["errors"][0]["path"], json!(["User", "node", "email"]), "{payload}");
    }
}

/// Stopping the server closes its subscription sockets with a close frame (1001, going away),
/// so clients learn it at once.
#[tokio::test]
async fn stopping_the_server_closes_sockets() {
    let mut srv = Server::start(Db::Sqlite)
        .await
        .expect("SQLite is always available");
    let mut ws = legacy(&srv, json!({})).await;
    start(&mut ws, json!(1), "subscription { Post { mutation } }").await;
    sync(&mut ws).await;
    let stopping = tokio::task::spawn_blocking(move || {
        srv.stop();
        srv
    });
    let frame = loop {
        match next_raw(&mut ws, WAIT).await {
            Some(Message::Close(frame)) => break frame,
            Some(Message::Text(_)) => {}
            other => panic!("expected a close frame, got {other:?}"),
        }
    };
    let frame = frame.expect("a close frame with a reason");
    assert_eq!(
        (u16::from(frame.code), frame.reason.as_str()),
        (1001, "The server is shutting down")
    );
    drop(ws);
    stopping.await.expect("the server stopped");
}

/// Two server processes on one PostgreSQL database: a subscription on one hears the mutations
/// sent to the other (through `LISTEN/NOTIFY`), exactly once, in commit order, and still its own
/// server's mutations exactly once.
#[tokio::test]
async fn two_processes_on_one_postgres_database() {
    let Some(database) = TestDatabase::create(Db::Postgres).await else {
        return;
    };
    let writer = Served::start(&database.url, Some(SECRET));
    let listener = Served::start(&database.url, Some(SECRET));
    let query =
        "subscription { User(filter: { mutation_in: [CREATED] }) { mutation updatedFields } }";
    let mut ws = subscribed(listener.port, json!({}), "u", query).await;
    // The other process records its changes once it heard that this one has a subscription
    // (one notification's trip); give it that moment.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let event = json!({ "id": "u", "type": "next", "payload": { "data": { "User": { "mutation": "CREATED", "updatedFields": null } } } });
    // Three users through the other process, then one through this one.
    for name in ["ann", "bob", "cid"] {
        create_user(writer.port, name).await;
    }
    create_user(listener.port, "dan").await;
    for _ in 0..4 {
        assert_eq!(next(&mut ws).await, Some(event.clone()));
    }
    silent(&mut ws).await;
    // The listening connections ended by the database are opened again, and events flow again.
    let schema = database
        .postgres_schema()
        .expect("a PostgreSQL schema")
        .to_owned();
    let listeners = format!("{schema} (events)");
    let mut admin = admin_connection().await.expect("PostgreSQL");
    assert_eq!(
        listening(&mut admin, &listeners).await,
        2,
        "one listening connection per process"
    );
    sqlx::query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
    )
    .bind(&listeners)
    .execute(&mut admin)
    .await
    .expect("pg_terminate_backend");
    let mut back = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if listening(&mut admin, &listeners).await == 2 {
            back = true;
            break;
        }
    }
    assert!(back, "the listening connections were not opened again");
    create_user(writer.port, "eve").await;
    assert_eq!(next(&mut ws).await, Some(event.clone()));
    silent(&mut ws).await;

    // An event too large for a notification (kilobytes of previous values) reaches the other
    // process whole: it is kept in the event table, and the notification names it.
    let id = create_user(writer.port, "big").await;
    let token = node_token(&id, "User");
    let query =
        "subscription { User(filter: { mutation_in: [UPDATED] }) { previousValues { name } } }";
    let init = json!({ "Authorization": format!("Bearer {token}") });
    let mut big = subscribed(listener.port, init, "big", query).await;
    let long = "x".repeat(9000);
    for name in [long.as_str(), "short"] {
        let query = format!(r#"mutation {{ updateUser(id: "{id}", name: "{name}") {{ id }} }}"#);
        mutate_at(writer.port, Some(&token), &query).await;
    }
    for previous in ["big", long.as_str()] {
        let message = next(&mut big).await.expect("an event");
        assert_eq!(
            message["payload"]["data"]["User"]["previousValues"]["name"].as_str(),
            Some(previous),
            "{}",
            &message.to_string()[..200.min(message.to_string().len())]
        );
    }
    drop(writer);
    drop(listener);
}

/// An event whose node is gone by the time the payload reads it (deleted since the commit)
/// sends nothing, as in the original (which sends nothing when the node it re-reads is null),
/// also to a subscription whose selection and filter do not need the node:
/// here another instance's notifications of a user's create and update arrive after the user
/// was deleted. On PostgreSQL, where a test can send an instance's notification itself; the
/// race it stands for (a delete committed between an event's commit and its payload's read) is
/// the same on SQLite, where no test can hold it open.
#[tokio::test]
async fn an_event_whose_node_is_gone_sends_nothing() {
    let Some(database) = TestDatabase::create(Db::Postgres).await else {
        return;
    };
    let server = Served::start(&database.url, Some(SECRET));
    let query = "subscription { User(filter: { mutation_in: [CREATED, UPDATED] }) { mutation node { __typename } } }";
    let mut ws = subscribed(server.port, json!({}), "u", query).await;
    // A payload that does not need the node, and no condition on it: the node is read all the
    // same, as the original re-reads it for every event.
    let bare = "subscription { User(filter: { mutation_in: [CREATED, UPDATED] }) { mutation } }";
    let mut bare_ws = subscribed(server.port, json!({}), "b", bare).await;
    let gone = create_user(server.port, "gone").await;
    let created = json!({ "id": "u", "type": "next", "payload": { "data": { "User": { "mutation": "CREATED", "node": { "__typename": "User" } } } } });
    let bare_created = json!({ "id": "b", "type": "next", "payload": { "data": { "User": { "mutation": "CREATED" } } } });
    assert_eq!(next(&mut ws).await, Some(created.clone()));
    assert_eq!(next(&mut bare_ws).await, Some(bare_created.clone()));
    let platform = mint(&platform_claims());
    mutate_at(
        server.port,
        Some(&platform),
        &format!(r#"mutation {{ deleteUser(id: "{gone}") {{ id }} }}"#),
    )
    .await;
    // Another instance's events of the user, late.
    let schema = database
        .postgres_schema()
        .expect("a PostgreSQL schema")
        .to_owned();
    let channel = svc_runtime::storage::events_channel(&schema);
    let late = json!({ "instance": "another-instance", "events": [
        { "model": "User", "id": gone, "kind": "CREATED", "fields": [], "previous": null },
        { "model": "User", "id": gone, "kind": "UPDATED", "fields": ["name"], "previous": null },
    ] });
    let mut admin = admin_connection().await.expect("PostgreSQL");
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(&channel)
        .bind(late.to_string())
        .execute(&mut admin)
        .await
        .expect("pg_notify");
    // The next message is the next user's create: nothing came of the late events.
    create_user(server.port, "next").await;
    assert_eq!(next(&mut ws).await, Some(created));
    assert_eq!(next(&mut bare_ws).await, Some(bare_created));
    silent(&mut ws).await;
    silent(&mut bare_ws).await;
    drop(server);
}

/// A server process killed while mutations run on it costs no event of a mutation it committed:
/// a subscription on another process on the same database hears of every user in the database
/// exactly once, also of those whose commit the killed process never acknowledged (their events
/// go out in the mutation's transaction, not after it). Three kills, each amid 16 clients
/// creating users on a writer just started (which sends its events before it has heard of the
/// other's subscription).
#[tokio::test]
async fn killed_process_loses_no_committed_event() {
    let Some(database) = TestDatabase::create(Db::Postgres).await else {
        return;
    };
    let listener = Served::start(&database.url, Some(SECRET));
    let init = json!({ "Authorization": format!("Bearer {}", mint(&platform_claims())) });
    let query = "subscription { User(filter: { mutation_in: [CREATED] }) { node { id } } }";
    let mut ws = subscribed(listener.port, init, "u", query).await;
    let mut acknowledged = Vec::new();
    for round in 0..3u64 {
        let mut writer = Served::start(&database.url, Some(SECRET));
        let url = format!("http://127.0.0.1:{}/simple/v1/{ALIAS}", writer.port);
        let clients: Vec<_> = (0..16)
            .map(|c| {
                let url = url.clone();
                tokio::spawn(async move {
                    let client = reqwest::Client::new();
                    let mut ids = Vec::new();
                    for n in 0.. {
                        let query = format!(
                            r#"mutation {{ createUser(email: "r{round}c{c}n{n}@x.io", name: "n") {{ id }} }}"#
                        );
                        let sent = client.post(&url).json(&json!({ "query": query })).send();
                        let Ok(res) = sent.await else { break };
                        let Ok(body) = res.json::<Value>().await else { break };
                        let id = body["data"]["createUser"]["id"].as_str();
                        ids.push(id.expect("an acknowledged create").to_owned());
                    }
                    ids
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(400 + 170 * round)).await;
        writer.stop();
        for client in clients {
            acknowledged.extend(client.await.expect("a client"));
        }
    }
    let schema = database.postgres_schema().expect("a PostgreSQL schema");
    let mut admin = admin_connection().await.expect("PostgreSQL");
    let committed: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT id FROM \"{schema}\".\"User\""
    )))
    .fetch_all(&mut admin)
    .await
    .expect("the users");
    let committed: std::collections::BTreeSet<String> = committed.into_iter().collect();
    assert!(
        acknowledged.len() > 50,
        "{} creates acknowledged",
        acknowledged.len()
    );
    assert!(acknowledged.iter().all(|id| committed.contains(id)));
    // The events, until none has come for two seconds.
    let mut heard = std::collections::BTreeMap::<String, usize>::new();
    while let Ok(Some(Ok(message))) = tokio::time::timeout(Duration::from_secs(2), ws.next()).await
    {
        let Message::Text(text) = message else {
            continue;
        };
        let value: Value = serde_json::from_str(&text).expect("JSON");
        if let Some(id) = value["payload"]["data"]["User"]["node"]["id"].as_str() {
            *heard.entry(id.to_owned()).or_default() += 1;
        }
    }
    let twice: Vec<_> = heard.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "events heard twice: {twice:?}");
    let missing: Vec<_> = committed
        .iter()
        .filter(|id| !heard.contains_key(*id))
        .collect();
    let unacknowledged = committed.len() - acknowledged.len();
    assert!(
        missing.is_empty(),
        "{} of {} committed users ({unacknowledged} never acknowledged) were not heard of: {:?}",
        missing.len(),
        committed.len(),
        &missing[..missing.len().min(5)]
    );
    assert_eq!(
        heard.len(),
        committed.len(),
        "an event of a user not in the database"
    );
    drop(listener);
}

/// A `graphql-transport-ws` socket to the server on `port`, initialised with `init` and running
/// `query` as subscription `id` (a `ping` answered proves the server took it).
async fn subscribed(port: u16, init: Value, id: &str, query: &str) -> Ws {
    let path = format!("/subscriptions/v1/{ALIAS}");
    let (mut ws, _) = connect_to_port(port, &path, "graphql-transport-ws").await;
    send(
        &mut ws,
        json!({ "type": "connection_init", "payload": init }),
    )
    .await;
    assert_eq!(
        next(&mut ws).await,
        Some(json!({ "type": "connection_ack" }))
    );
    send(
        &mut ws,
        json!({ "type": "subscribe", "id": id, "payload": { "query": query } }),
    )
    .await;
    send(&mut ws, json!({ "type": "ping" })).await;
    assert_eq!(next(&mut ws).await, Some(json!({ "type": "pong" })));
    ws
}

/// Runs a mutation that must not fail on the Simple API of the server on `port`, with `token`.
async fn mutate_at(port: u16, token: Option<&str>, query: &str) -> Value {
    let mut request = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/simple/v1/{ALIAS}"))
        .json(&json!({ "query": query }));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let res: Value = request
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("JSON");
    assert!(res.get("errors").is_none(), "{res:#}");
    res
}

/// Creates the user `name` (`name@x.io`) on the server on `port`, anonymously; its id.
async fn create_user(port: u16, name: &str) -> String {
    let query =
        format!(r#"mutation {{ createUser(email: "{name}@x.io", name: "{name}") {{ id }} }}"#);
    let res = mutate_at(port, None, &query).await;
    res["data"]["createUser"]["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

/// How many connections named `name` the database serves.
async fn listening(admin: &mut sqlx::PgConnection, name: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1")
        .bind(name)
        .fetch_one(admin)
        .await
        .expect("pg_stat_activity")
}
