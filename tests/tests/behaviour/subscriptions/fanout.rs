//! The shared fan-out, slow clients, the sockets' timeouts and limits, and `Schema changed`: what
//! `GET /status/subscriptions` counts proves that identical subscriptions share one evaluation
//! and that `node` filters cost a bounded number of statements per event.

use std::time::Duration;

use serde_json::{Value, json};
use svc_runtime::ServiceDef;
use svc_runtime::migrate::{self, Hints, Outcome, Schema};
use svc_runtime::model::Kind;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;

use super::{
    WAIT, Ws, connect, data, legacy, mutate, next, next_raw, root, send, silent, start, sync,
};
use crate::support::{Db, Server};

/// `GET /status/subscriptions`.
async fn status(srv: &Server) -> Value {
    reqwest::get(srv.url("/status/subscriptions"))
        .await
        .expect("status")
        .json()
        .await
        .expect("JSON")
}

/// How much the counter `name` grew between two statuses.
fn grew(before: &Value, after: &Value, name: &str) -> u64 {
    after[name].as_u64().expect("a count") - before[name].as_u64().expect("a count")
}

/// The close frame the socket ends with, skipping the messages before it.
async fn close_frame(ws: &mut Ws) -> CloseFrame {
    loop {
        match next_raw(ws, WAIT).await {
            Some(Message::Close(Some(frame))) => return frame,
            Some(Message::Text(_) | Message::Ping(_) | Message::Pong(_)) => {}
            other => panic!("expected a close frame, got {other:?}"),
        }
    }
}

fn code_and_reason(frame: &CloseFrame) -> (u16, &str) {
    (u16::from(frame.code), frame.reason.as_str())
}

db_tests! {
    /// Subscriptions to one node by id are decided without a statement; identical subscriptions
    /// (query, variables, principal) share one evaluation and one serialised payload, whatever
    /// their ids and sockets; subscriptions that differ are evaluated apart; 70 different
    /// `node` filters cost two statements per event (64 conditions per statement), not 70; the
    /// node is read once for all the groups an event passed.
    async fn shared_fanout_and_bounded_checks(srv) {
        let mut ids = Vec::new();
        for slug in ["a", "b", "c"] {
            let post = mutate(srv, &format!(r#"mutation {{ createPost(slug: "{slug}", title: "T") {{ id }} }}"#)).await;
            ids.push(post["createPost"]["id"].as_str().expect("id").to_owned());
        }
        let mut by_id = legacy(srv, json!({})).await;
        for (i, id) in ids.iter().enumerate() {
            let query = format!(r#"subscription {{ Post(filter: {{ mutation_in: [UPDATED], node: {{ id: "{id}" }} }}) {{ node {{ slug }} }} }}"#);
            start(&mut by_id, json!(i), &query).await;
        }
        let query = format!(r#"subscription {{ Post(filter: {{ node: {{ id: "{}", title_starts_with: "X" }} }}) {{ node {{ slug }} }} }}"#, ids[0]);
        start(&mut by_id, json!("x"), &query).await;
        sync(&mut by_id).await;
        let before = status(srv).await;
        mutate(srv, &format!(r#"mutation {{ updatePost(id: "{}", votes: 1) {{ id }} }}"#, ids[1])).await;
        assert_eq!(data(&mut by_id, &json!(1)).await, json!({ "data": { "Post": { "node": { "slug": "b" } } } }));
        silent(&mut by_id).await;
        let after = status(srv).await;
        assert_eq!(grew(&before, &after, "checkStatements"), 0, "decided by id: {after}");
        assert_eq!(grew(&before, &after, "deliveries"), 1, "{after}");
        mutate(srv, &format!(r#"mutation {{ updatePost(id: "{}", title: "Xa") {{ id }} }}"#, ids[0])).await;
        let mut got = Vec::new();
        for _ in 0..2 {
            got.push(next(&mut by_id).await.expect("a message")["id"].clone());
        }
        got.sort_by_key(Value::is_number);
        assert_eq!(got, [json!("x"), json!(0)]);
        silent(&mut by_id).await;
        let later = status(srv).await;
        assert_eq!(grew(&after, &later, "checkStatements"), 1, "one statement for `title_starts_with`: {later}");
        drop(by_id);

        // 12 sockets with two identical subscriptions each, one more as the root.
        let query = "subscription { Post(filter: { mutation_in: [CREATED] }) { mutation node { slug } } }";
        let mut sockets = Vec::new();
        for i in 0..12 {
            let mut ws = legacy(srv, json!({})).await;
            start(&mut ws, json!(i), query).await;
            start(&mut ws, json!(format!("s{i}")), query).await;
            sync(&mut ws).await;
            sockets.push(ws);
        }
        let mut admin = legacy(srv, json!({ "Authorization": root(srv) })).await;
        start(&mut admin, json!("root"), query).await;
        sync(&mut admin).await;
        // 70 different `node` filters.
        let mut filters = legacy(srv, json!({})).await;
        for i in 0..70 {
            let query = format!(r#"subscription {{ Post(filter: {{ node: {{ slug: "f{i}" }} }}) {{ node {{ slug }} }} }}"#);
            start(&mut filters, json!(i), &query).await;
        }
        sync(&mut filters).await;
        let mut before = status(srv).await;
        for _ in 0..50 {
            if before["streams"] == json!(72) {
                break;
            }
            // The `by_id` socket's subscriptions are let go when the server sees it closed.
            tokio::time::sleep(Duration::from_millis(20)).await;
            before = status(srv).await;
        }
        assert_eq!(
            (&before["subscriptions"], &before["groups"], &before["streams"]),
            (&json!(12 * 2 + 1 + 70), &json!(1 + 1 + 70), &json!(72)),
            "{before}"
        );
        mutate(srv, r#"mutation { createPost(slug: "f5", title: "Five") { id } }"#).await;
        let expected = json!({ "data": { "Post": { "mutation": "CREATED", "node": { "slug": "f5" } } } });
        for (i, ws) in sockets.iter_mut().enumerate() {
            let mut got = Vec::new();
            for _ in 0..2 {
                let message = next(ws).await.expect("a message");
                assert_eq!((&message["type"], &message["payload"]), (&json!("data"), &expected), "{message}");
                got.push(message["id"].clone());
            }
            got.sort_by_key(Value::is_string);
            assert_eq!(got, [json!(i), json!(format!("s{i}"))]);
        }
        assert_eq!(data(&mut admin, &json!("root")).await, expected);
        assert_eq!(data(&mut filters, &json!(5)).await, json!({ "data": { "Post": { "node": { "slug": "f5" } } } }));
        silent(&mut filters).await;
        let after = status(srv).await;
        assert_eq!(grew(&before, &after, "evaluations"), 3, "one per group the event passed: {after}");
        assert_eq!(grew(&before, &after, "messages"), 12 * 2 + 1 + 1, "{after}");
        assert_eq!(grew(&before, &after, "checkStatements"), 2, "70 conditions in two statements: {after}");
        assert_eq!(grew(&before, &after, "nodeReads"), 1, "one read of the node for three groups: {after}");

        // A member that leaves does not end its group for the others.
        send(&mut sockets[0], json!({ "id": 0, "type": "stop" })).await;
        sync(&mut sockets[0]).await;
        drop(filters);
        mutate(srv, r#"mutation { createPost(slug: "g", title: "G") { id } }"#).await;
        assert_eq!(data(&mut sockets[0], &json!("s0")).await["data"]["Post"]["node"]["slug"], json!("g"));
        silent(&mut sockets[0]).await;
        for ws in &mut sockets[1..] {
            for _ in 0..2 {
                assert_eq!(next(ws).await.expect("a message")["payload"]["data"]["Post"]["node"]["slug"], json!("g"));
            }
        }
    }

    /// A client that stops reading is disconnected when its send queue fills (1008, with a
    /// reason), and a client of the same subscription keeps getting every event at once.
    async fn slow_client_is_disconnected(srv) {
        let body = "x".repeat(20_000);
        let query = "subscription { Post(filter: { mutation_in: [CREATED] }) { node { body } } }";
        let admin = json!({ "Authorization": root(srv) });
        let mut slow = legacy(srv, admin.clone()).await;
        // 90 subscriptions: within the 100 a socket may run and the 100 messages a second
        // its client may send.
        for i in 0..90 {
            start(&mut slow, json!(i), query).await;
        }
        sync(&mut slow).await;
        let mut fast = legacy(srv, admin).await;
        start(&mut fast, json!("f"), query).await;
        sync(&mut fast).await;
        let mut events = 0;
        loop {
            srv.gql_vars(
                "mutation ($slug: String!, $body: String) { createPost(slug: $slug, title: \"T\", body: $body) { id } }",
                json!({ "slug": format!("p{events}"), "body": body }),
            )
            .await;
            events += 1;
            let payload = data(&mut fast, &json!("f")).await;
            assert_eq!(payload["data"]["Post"]["node"]["body"].as_str().map(str::len), Some(20_000));
            if status(srv).await["subscriptions"] == json!(1) {
                break;
            }
            assert!(events < 200, "the slow client was never disconnected");
        }
        // The slow client reads now: what was sent before, then the close frame.
        let frame = close_frame(&mut slow).await;
        assert_eq!(
            code_and_reason(&frame),
            (1008, "The client did not read its messages fast enough")
        );
        mutate(srv, r#"mutation { createPost(slug: "last", title: "T") { id } }"#).await;
        assert_eq!(data(&mut fast, &json!("f")).await["data"]["Post"]["node"]["body"], Value::Null);
    }
}

/// A `graphql-transport-ws` socket that does not send `connection_init` in time is closed with
/// 4408; a socket whose client says nothing for the idle timeout is closed (1000), one that
/// talks stays open.
#[tokio::test]
async fn idle_and_initialisation_timeouts() {
    let srv = Server::start_with_socket_timeouts(Db::Sqlite, 1_500, 400)
        .await
        .expect("SQLite is always available");
    let mut uninitialised = connect(&srv, "graphql-transport-ws").await;
    let frame = close_frame(&mut uninitialised).await;
    assert_eq!(
        code_and_reason(&frame),
        (4408, "Connection initialisation timeout")
    );

    let mut talking = connect(&srv, "graphql-transport-ws").await;
    send(&mut talking, json!({ "type": "connection_init" })).await;
    assert_eq!(
        next(&mut talking).await,
        Some(json!({ "type": "connection_ack" }))
    );
    let mut idle = legacy(&srv, json!({})).await;
    start(&mut idle, json!(1), "subscription { Post { mutation } }").await;
    let started = tokio::time::Instant::now();
    // The talking client pings for 2.5 s, past the idle timeout.
    while started.elapsed() < Duration::from_millis(2_500) {
        send(&mut talking, json!({ "type": "ping" })).await;
        assert_eq!(next(&mut talking).await, Some(json!({ "type": "pong" })));
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let frame = close_frame(&mut idle).await;
    assert_eq!(
        code_and_reason(&frame),
        (1000, "The connection was idle for too long")
    );
    send(&mut talking, json!({ "type": "ping" })).await;
    assert_eq!(
        next(&mut talking).await,
        Some(json!({ "type": "pong" })),
        "still open"
    );
}

/// A deploy that changes the model ends every subscription with `Schema changed`, in each
/// protocol's error message: on PostgreSQL at once (the migration notifies the running
/// servers), on SQLite when the old server stops (it finds the stored model changed).
async fn deploy_changes_schema(kind: Db) {
    let Some(mut srv) = Server::start(kind).await else {
        return;
    };
    let query = "subscription { Post { mutation } }";
    let mut v07 = legacy(&srv, json!({})).await;
    start(&mut v07, json!("a"), query).await;
    sync(&mut v07).await;
    let mut v05 = connect(&srv, "graphql-subscriptions").await;
    send(&mut v05, json!({ "type": "init", "payload": {} })).await;
    assert_eq!(
        next(&mut v05).await,
        Some(json!({ "type": "init_success" }))
    );
    send(
        &mut v05,
        json!({ "id": 5, "type": "subscription_start", "query": query }),
    )
    .await;
    assert_eq!(
        next(&mut v05).await,
        Some(json!({ "id": 5, "type": "subscription_success" }))
    );
    let mut modern = connect(&srv, "graphql-transport-ws").await;
    send(&mut modern, json!({ "type": "connection_init" })).await;
    assert_eq!(
        next(&mut modern).await,
        Some(json!({ "type": "connection_ack" }))
    );
    send(
        &mut modern,
        json!({ "type": "subscribe", "id": "m", "payload": { "query": query } }),
    )
    .await;
    send(&mut modern, json!({ "type": "ping" })).await;
    assert_eq!(next(&mut modern).await, Some(json!({ "type": "pong" })));

    // The deploy's migration: the model gains a field.
    let meta = <example_model::Service as ServiceDef>::META;
    let mut target = Schema::of(meta);
    let post = target
        .models
        .iter_mut()
        .find(|m| m.name == "Post")
        .expect("Post");
    post.fields
        .push(crate::migrations::field("subtitle", Kind::String));
    let db = svc_runtime::storage::Db::connect(&srv.database().url)
        .await
        .expect("connect");
    let outcome = migrate::migrate(&db, &target, &Hints::of(meta), migrate::Options::default())
        .await
        .expect("migrated");
    assert!(matches!(outcome, Outcome::Applied(_)), "{outcome:?}");

    if kind == Db::Postgres {
        schema_changed(&mut v07, &mut v05, &mut modern).await;
        // The subscriptions ended; the sockets stay open and take new ones.
        let _ = srv
            .gql(r#"mutation { createPost(slug: "x", title: "X") { id } }"#)
            .await;
        silent(&mut v07).await;
        start(&mut v07, json!("b"), query).await;
        sync(&mut v07).await;
        mutate(
            &srv,
            r#"mutation { createPost(slug: "y", title: "Y") { id } }"#,
        )
        .await;
        assert_eq!(
            data(&mut v07, &json!("b")).await,
            json!({ "data": { "Post": { "mutation": "CREATED" } } })
        );
    } else {
        silent(&mut v07).await;
        let stopping = tokio::task::spawn_blocking(move || {
            srv.stop();
            srv
        });
        schema_changed(&mut v07, &mut v05, &mut modern).await;
        for ws in [&mut v07, &mut v05, &mut modern] {
            let frame = close_frame(ws).await;
            assert_eq!(
                code_and_reason(&frame),
                (1001, "The server is shutting down")
            );
        }
        drop((v07, v05, modern));
        stopping.await.expect("stopped");
    }
}

/// Each socket's subscription ends with `Schema changed`, in its protocol.
async fn schema_changed(v07: &mut Ws, v05: &mut Ws, modern: &mut Ws) {
    assert_eq!(
        next(v07).await,
        Some(json!({ "id": "a", "type": "error", "payload": { "message": "Schema changed" } }))
    );
    assert_eq!(
        next(v05).await,
        Some(
            json!({ "id": 5, "type": "subscription_fail", "payload": { "errors": [{ "message": "Schema changed" }] } })
        )
    );
    assert_eq!(
        next(modern).await,
        Some(json!({ "id": "m", "type": "error", "payload": [{ "message": "Schema changed" }] }))
    );
}

#[tokio::test]
async fn deploy_changes_schema_sqlite() {
    deploy_changes_schema(Db::Sqlite).await;
}

#[tokio::test]
async fn deploy_changes_schema_postgres() {
    deploy_changes_schema(Db::Postgres).await;
}

/// A message a client sends in several frames (continuations) is assembled; one larger than
/// 1 MiB ends the socket.
#[tokio::test]
async fn fragmented_and_oversized_messages() {
    use futures_util::SinkExt;
    use tokio_tungstenite::tungstenite::protocol::frame::Frame;
    use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};

    let srv = Server::start(Db::Sqlite)
        .await
        .expect("SQLite is always available");
    let mut ws = connect(&srv, "graphql-ws").await;
    let text = json!({ "type": "connection_init", "payload": {} }).to_string();
    let (head, tail) = text.split_at(10);
    let frames = [
        Frame::message(head.as_bytes().to_vec(), OpCode::Data(Data::Text), false),
        Frame::message(tail.as_bytes().to_vec(), OpCode::Data(Data::Continue), true),
    ];
    for frame in frames {
        ws.send(Message::Frame(frame)).await.expect("sent");
    }
    assert_eq!(
        next(&mut ws).await,
        Some(json!({ "type": "connection_ack" }))
    );
    let query = format!(
        "subscription {{ Post {{ mutation }} }} #{}",
        "x".repeat(2 << 20)
    );
    // The server may close before the whole message is written.
    let _ = ws
        .send(Message::text(
            json!({ "id": "1", "type": "start", "payload": { "query": query } }).to_string(),
        ))
        .await;
    let frame = close_frame(&mut ws).await;
    assert_eq!(code_and_reason(&frame), (1009, "The message is too large"));
}

/// The bounds on what one client does with subscription sockets: the sockets open from one
/// address (past it the upgrade is refused with 429, and a closed socket frees its place), the
/// subscriptions one socket runs (past it the start gets an error; replacing or stopping one
/// makes room), and the messages a socket's client sends per second (past it the socket is
/// closed with 1008).
#[tokio::test]
async fn socket_limits() {
    use futures_util::SinkExt;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;

    let limits = svc_runtime::http::Limits {
        max_sockets_per_address: 2,
        max_socket_subscriptions: 3,
        max_socket_messages: 20,
        ..Default::default()
    };
    let srv = Server::start_with_limits(Db::Sqlite, limits)
        .await
        .expect("SQLite is always available");
    let try_connect = async || {
        let url = format!(
            "ws://127.0.0.1:{}/subscriptions/v1/{}",
            srv.port,
            crate::support::ALIAS
        );
        let request = url.into_client_request().expect("a request");
        tokio_tungstenite::connect_async(request).await
    };
    let mut first = legacy(&srv, json!({})).await;
    let second = legacy(&srv, json!({})).await;
    match try_connect().await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status().as_u16(), 429);
            let body = String::from_utf8_lossy(response.body().as_deref().unwrap_or_default())
                .into_owned();
            assert!(
                body.contains(
                    "Too many subscription sockets are open from this address (at most 2)"
                ),
                "{body}"
            );
        }
        other => panic!("a third socket from one address: {other:?}"),
    }
    // Closing one frees its place (once the server has seen the close).
    drop(second);
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut third = loop {
        match try_connect().await {
            Ok((ws, _)) => break ws,
            Err(_) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("the closed socket's place was not freed: {e}"),
        }
    };

    // Three subscriptions run; a fourth is refused with an error for its id.
    let query = "subscription { Post { mutation } }";
    for id in ["1", "2", "3"] {
        start(&mut first, json!(id), query).await;
    }
    start(&mut first, json!("4"), query).await;
    assert_eq!(
        next(&mut first).await,
        Some(json!({
            "id": "4",
            "type": "error",
            "payload": { "message": "A socket may run at most 3 subscriptions at once; stop one before starting another." },
        }))
    );
    // Starting a running id again replaces it; stopping one makes room.
    start(&mut first, json!("1"), query).await;
    send(&mut first, json!({ "id": "2", "type": "stop" })).await;
    start(&mut first, json!("4"), query).await;
    sync(&mut first).await;
    let created = mutate(
        &srv,
        r#"mutation { createPost(slug: "limits", title: "T") { id } }"#,
    )
    .await;
    assert!(created["createPost"]["id"].is_string(), "{created}");
    let mut heard = Vec::new();
    for _ in 0..3 {
        let message = next(&mut first).await.expect("an event");
        assert_eq!(
            message["payload"]["data"]["Post"]["mutation"], "CREATED",
            "{message}"
        );
        heard.push(message["id"].as_str().expect("an id").to_owned());
    }
    heard.sort();
    assert_eq!(heard, ["1", "3", "4"]);

    // 40 messages at once: past the 20 a second, the socket is closed with 1008.
    send(
        &mut third,
        json!({ "type": "connection_init", "payload": {} }),
    )
    .await;
    for _ in 0..40 {
        // The server may close before every message is written.
        let _ = third
            .send(Message::text(json!({ "type": "sync" }).to_string()))
            .await;
    }
    let frame = close_frame(&mut third).await;
    assert_eq!(
        code_and_reason(&frame),
        (1008, "Too many messages: at most 20 a second")
    );
    // Messages at the rate pass: a socket that sent 10 in half a second is still answered.
    drop(third);
    let mut fourth = loop {
        match try_connect().await {
            Ok((ws, _)) => break ws,
            Err(_) if tokio::time::Instant::now() < deadline + WAIT => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("the closed socket's place was not freed: {e}"),
        }
    };
    send(
        &mut fourth,
        json!({ "type": "connection_init", "payload": {} }),
    )
    .await;
    assert_eq!(
        next(&mut fourth).await,
        Some(json!({ "type": "connection_ack" }))
    );
    for _ in 0..10 {
        sync(&mut fourth).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
