//! Server-side subscriptions (reference §7.1, §7.2): `openOrders` (a webhook on the receiver's
//! `/subscription/order`, filtered to open orders' creates and updates) and `deletedOrders` (a
//! Rust handler, deletes). Each is invoked once after the commit of every event its query lets
//! through, never for a mutation that rolled back; a delivery the receiver refuses is attempted
//! again, also by the next server on the same database.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::receiver::{self, Received};
use super::rust_handlers::{DELETED_ORDERS, SEEN_NOTES};
use super::{Functions, ID};

const PATH: &str = "/subscription/order";

/// A text no other test (or the other database's run of this one) uses.
pub(super) fn unique(what: &str, db: crate::support::Db) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    format!("{what}-{db:?}-{nanos}")
}

/// The deliveries of the order whose text is `text`, so far.
fn deliveries(text: &str) -> Vec<Received> {
    receiver::received(PATH, |d| d["Order"]["node"]["text"] == text)
}

/// Waits (at most `limit`) until `done` holds of the deliveries of `text`; they are returned.
async fn wait_for(
    text: &str,
    limit: Duration,
    done: impl Fn(&[Received]) -> bool,
) -> Vec<Received> {
    let start = Instant::now();
    loop {
        let got = deliveries(text);
        if done(&got) {
            return got;
        }
        assert!(
            start.elapsed() < limit,
            "no such deliveries of `{text}` within {limit:?}: {got:#?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Whether a delivery was accepted by the receiver.
fn accepted(got: &[Received]) -> usize {
    got.iter().filter(|r| r.status == 200).count()
}

async fn create_order(f: &Functions, text: &str, status: &str, skus: &[&str]) -> Value {
    let items: Vec<Value> = skus.iter().map(|s| json!({ "sku": s })).collect();
    f.gql_vars(
        "mutation($text: String!, $status: String!, $items: [OrderitemsItem!]) { \
         createOrder(text: $text, status: $status, items: $items) { id } }",
        json!({ "text": text, "status": status, "items": items }),
    )
    .await
}

db_cases! {
    /// Events the filter lets through are delivered once each, after the commit, with the
    /// query's result as `data` and the context of a server-side subscription; others are not;
    /// a rolled-back mutation delivers nothing; a Rust handler is invoked the same way.
    async fn subscriptions_are_delivered_once_after_the_commit(db) {
        let Some(f) = Functions::start(db).await else { return };
        let open = unique("open", db);
        let sku = unique("sku", db);
        let out = create_order(&f, &open, "open", &[&sku]).await;
        let id = out["data"]["createOrder"]["id"].as_str().unwrap_or_else(|| panic!("{out}")).to_owned();
        let got = wait_for(&open, Duration::from_secs(10), |g| !g.is_empty()).await;
        let event = &got[0].event;
        assert_eq!(
            event["data"],
            json!({ "Order": {
                "mutation": "CREATED",
                "node": { "id": id, "text": open, "status": "open", "items": [{ "sku": sku }] },
                "previousValues": null,
                "updatedFields": null,
            } }),
            "{event}"
        );
        // In the query's order, though `node` is read after the others are known.
        let keys: Vec<&String> = event["data"]["Order"]
            .as_object()
            .map(|o| o.keys().collect())
            .unwrap_or_default();
        assert_eq!(keys, ["mutation", "node", "previousValues", "updatedFields"], "{event}");
        let context = &event["context"];
        assert_eq!(context["auth"], Value::Null, "{context}");
        assert_eq!(context["request"]["sourceIp"], "");
        assert!(context["graphcool"]["rootToken"].is_string(), "{context}");
        assert_eq!(context["graphcool"]["serviceId"], ID);

        // An update the filter lets through, with what the node held before.
        let moved = unique("moved", db);
        let out = f
            .gql_vars(
                "mutation($id: ID!, $text: String) { updateOrder(id: $id, text: $text) { id } }",
                json!({ "id": id, "text": moved }),
            )
            .await;
        assert!(out["errors"].is_null(), "{out}");
        let got = wait_for(&moved, Duration::from_secs(10), |g| !g.is_empty()).await;
        assert_eq!(got[0].event["data"]["Order"]["mutation"], "UPDATED");
        assert_eq!(
            got[0].event["data"]["Order"]["previousValues"],
            json!({ "text": open, "status": "open" })
        );
        assert_eq!(got[0].event["data"]["Order"]["updatedFields"], json!(["text"]));

        // What the filter does not let through: a closed order, and an update that closes one.
        let closed = unique("closed", db);
        let out = create_order(&f, &closed, "closed", &[]).await;
        assert!(out["errors"].is_null(), "{out}");
        // A mutation that rolls back: the order is written, then its second item breaks the
        // unique `sku`.
        let rolled = unique("rolled-back", db);
        let dup = unique("dup", db);
        let out = create_order(&f, &rolled, "open", &[&dup, &dup]).await;
        assert!(out["errors"].is_array(), "{out}");
        assert!(out["data"]["createOrder"].is_null(), "{out}");
        // Later events are delivered: by then, none of the above was.
        let fence = unique("fence", db);
        create_order(&f, &fence, "open", &[]).await;
        wait_for(&fence, Duration::from_secs(10), |g| !g.is_empty()).await;
        tokio::time::sleep(Duration::from_millis(700)).await;
        assert!(deliveries(&closed).is_empty());
        assert!(deliveries(&rolled).is_empty(), "{:?}", deliveries(&rolled));
        // Each event once.
        assert_eq!(deliveries(&open).len(), 1);
        assert_eq!(deliveries(&moved).len(), 1);
        assert_eq!(deliveries(&fence).len(), 1);

        // A delete reaches the Rust handler, with the values the order held.
        let out = f
            .gql_vars("mutation($id: ID!) { deleteOrder(id: $id) { id } }", json!({ "id": id }))
            .await;
        assert!(out["errors"].is_null(), "{out}");
        let start = Instant::now();
        let seen = loop {
            let seen: Vec<Value> = DELETED_ORDERS
                .lock()
                .unwrap()
                .iter()
                .filter(|e| e["data"]["Order"]["previousValues"]["id"] == id.as_str())
                .cloned()
                .collect();
            if !seen.is_empty() || start.elapsed() > Duration::from_secs(10) {
                break seen;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(seen.len(), 1, "the Rust handler was invoked once");
        assert_eq!(
            seen[0]["data"],
            json!({ "Order": { "mutation": "DELETED", "previousValues": { "id": id, "text": moved } } })
        );
        assert_eq!(
            seen[0]["typed"],
            json!({ "mutation": "DELETED", "id": id, "text": moved })
        );
        assert!(seen[0]["auth"].is_null());
        // The webhook's filter takes no deletes.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(deliveries(&moved).len(), 1);
    }

    /// A delivery the receiver refuses is attempted again, after a back-off, until it is
    /// accepted; then never again.
    async fn a_refused_delivery_is_attempted_again(db) {
        let Some(f) = Functions::start(db).await else { return };
        let text = unique("flaky", db);
        receiver::down(&text, 2);
        let started = Instant::now();
        create_order(&f, &text, "open", &[]).await;
        let got = wait_for(&text, Duration::from_secs(15), |g| accepted(g) == 1).await;
        let statuses: Vec<u16> = got.iter().map(|r| r.status).collect();
        assert_eq!(statuses, vec![503, 503, 200]);
        // The test's back-off: 200 ms, then 400 ms.
        assert!(started.elapsed() >= Duration::from_millis(600), "{:?}", started.elapsed());
        // Every attempt carried the same event.
        assert!(got.iter().all(|r| r.event["data"] == got[0].event["data"]));
        tokio::time::sleep(Duration::from_millis(1000)).await;
        assert_eq!(deliveries(&text).len(), 3);
    }

    /// Events a server could not deliver before it stopped are delivered by the next server
    /// on the same database.
    async fn undelivered_events_survive_a_restart(db) {
        let Some(mut f) = Functions::start(db).await else { return };
        let text = unique("restart", db);
        receiver::down(&text, u32::MAX);
        create_order(&f, &text, "open", &[]).await;
        // The first server tries and is refused.
        wait_for(&text, Duration::from_secs(10), |g| !g.is_empty()).await;
        f.restart().await;
        let refused = deliveries(&text).len();
        assert_eq!(accepted(&deliveries(&text)), 0);
        receiver::up(&text);
        // A server stopped in the middle of an attempt leaves the row leased for the
        // function's timeout and 15 s.
        let got = wait_for(&text, Duration::from_secs(40), |g| accepted(g) == 1).await;
        assert!(got.len() > refused);
        assert_eq!(got.last().map(|r| r.status), Some(200));
        tokio::time::sleep(Duration::from_millis(1000)).await;
        assert_eq!(accepted(&deliveries(&text)), 1);
    }
}

/// The data `notesSeen` received for the note `id`, waiting (at most `limit`) until there are
/// `count` of them.
async fn seen_notes(id: &str, count: usize, limit: Duration) -> Vec<Value> {
    let start = Instant::now();
    loop {
        let seen: Vec<Value> = SEEN_NOTES
            .lock()
            .unwrap()
            .iter()
            .filter(|d| d["Note"]["node"]["id"] == id)
            .cloned()
            .collect();
        if seen.len() >= count || start.elapsed() > limit {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

db_cases! {
    /// An event whose node is gone by the time its delivery reads it (deleted since: here the
    /// event waited in the outbox, as it does while no server runs) invokes nothing, as the
    /// original sends nothing when the node it re-reads is null; the row is done with, not kept
    /// as failed. The function's query has no `node` condition, so only the payload reads the
    /// node.
    async fn an_event_whose_node_is_gone_invokes_nothing(db) {
        let Some(f) = Functions::start(db).await else { return };
        let create = "mutation($text: String!) { createNote(text: $text) { id } }";
        let out = f.gql_vars(create, json!({ "text": unique("gone", db) })).await;
        let gone = out["data"]["createNote"]["id"].as_str().unwrap_or_else(|| panic!("{out}")).to_owned();
        assert_eq!(seen_notes(&gone, 1, Duration::from_secs(10)).await.len(), 1, "the create was delivered");
        let out = f.gql_vars("mutation($id: ID!) { deleteNote(id: $id) { id } }", json!({ "id": gone })).await;
        assert!(out["errors"].is_null(), "{out}");
        // The events of the note, still waiting when it was deleted.
        let mut statements = Vec::new();
        for (kind, fields) in [("CREATED", "[]"), ("UPDATED", "[\"text\"]")] {
            let event = format!(
                r#"{{"model":"Note","id":"{gone}","kind":"{kind}","fields":{fields},"previous":null}}"#
            );
            statements.push(format!(
                "INSERT INTO \"_svc_outbox\" (\"function\", \"event\", \"request\", \"due\") \
                 VALUES ('notesSeen', '{event}', 'test', 0)"
            ));
        }
        f.database.execute(&statements).await;
        // A note created after them is delivered; by then they were taken (rows are taken in
        // order).
        let out = f.gql_vars(create, json!({ "text": unique("after", db) })).await;
        let after = out["data"]["createNote"]["id"].as_str().unwrap_or_else(|| panic!("{out}")).to_owned();
        assert_eq!(seen_notes(&after, 1, Duration::from_secs(10)).await.len(), 1, "the later create was delivered");
        let db = svc_runtime::storage::Db::connect(&f.database.url).await.expect("connect");
        let start = Instant::now();
        loop {
            let left = crate::migrations::texts(&db, "SELECT \"event\" FROM \"_svc_outbox\"").await;
            if left.is_empty() {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(10), "rows left in the outbox: {left:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let seen = seen_notes(&gone, 2, Duration::from_millis(300)).await;
        assert_eq!(seen.len(), 1, "only the create before the delete was delivered: {seen:?}");
        // Nothing was delivered with a null node either.
        let nulls: Vec<Value> = SEEN_NOTES.lock().unwrap().iter().filter(|d| d["Note"]["node"].is_null()).cloned().collect();
        assert!(nulls.is_empty(), "{nulls:?}");
    }
}

/// A service whose subscription query selects a field its model lacks.
mod bad_query {
    svc_macros::service!(relative_to_file = "bad_query/svc.yml");
}

db_cases! {
    /// A subscription query that does not fit the API stops the server from starting, with a
    /// message naming the function and the problem.
    async fn a_subscription_query_that_does_not_fit_stops_the_start(db) {
        let Some(database) = crate::support::TestDatabase::create(db).await else { return };
        let store = crate::support::ScratchDir::new("svc-bad-query");
        let options = crate::support::options(&database.url, "bad-query", "bad", store.location());
        let started =
            tokio::task::spawn_blocking(move || svc_runtime::spawn::<bad_query::Service>(options))
                .await
                .expect("the spawning thread");
        let Err(e) = started else { panic!("the server started") };
        let message = e.to_string();
        assert!(message.contains("`watchTodos`"), "{message}");
        assert!(message.contains("./watch.graphql"), "{message}");
        assert!(message.contains("done"), "{message}");
    }
}
