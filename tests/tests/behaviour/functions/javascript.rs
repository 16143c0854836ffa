//! JavaScript handlers (`code:`) on a real Node.js: `legacy` (a CommonJS before-hook on
//! `Tag.update`, with an environment, `service/src/legacy.js`), `jsHello` (an ES module
//! resolver that calls back into the Simple API with the event's root token,
//! `service/src/jsHello.mjs`) and `jsOrders` (an async server-side subscription handler,
//! `service/src/jsOrders.js`). A handler that throws, never answers, exits its process or
//! allocates without bound fails the mutation with 5008 and writes nothing; the next invocation
//! gets a fresh worker.

use std::time::{Duration, Instant};

use serde_json::json;

use super::subscriptions::unique;
use super::{Functions, receiver};

db_cases! {
    /// A CommonJS before-hook changes and refuses input; its failures are 5008 with their text
    /// and write nothing; an ES module resolver calls back into the service.
    async fn javascript_handlers_run_on_node(db) {
        let Some(f) = Functions::start(db).await else { return };
        let out = f.gql(r#"mutation { createTag(name: "js") { id } }"#).await;
        let tag = out["data"]["createTag"]["id"].as_str().unwrap_or_else(|| panic!("{out}")).to_owned();
        let update = |name: &str| format!(r#"mutation {{ updateTag(id: "{tag}", name: "{name}") {{ name }} }}"#);
        let stored = async || {
            f.gql(&format!(r#"{{ Tag(id: "{tag}") {{ name }} }}"#)).await["data"]["Tag"]["name"].clone()
        };

        // The hook's data replaces the input, with the function's environment.
        let out = f.gql(&update("changed")).await;
        assert_eq!(out["data"]["updateTag"]["name"], "CHANGED (hello from the environment)", "{out}");
        assert_eq!(stored().await, "CHANGED (hello from the environment)");

        // An answered error refuses the write (5001), as a webhook's does.
        let out = f.gql(&update("refuse")).await;
        assert_eq!(out["errors"][0]["code"], 5001, "{out}");
        assert_eq!(out["errors"][0]["functionError"], "Tags may not be called that");
        // `undefined`: a null result, the input as given.
        let out = f.gql(&update("nothing")).await;
        assert_eq!(out["data"]["updateTag"]["name"], "nothing", "{out}");

        // Failures: 5008 with their text, nothing written; each later invocation still works.
        let failures = [
            ("throw", "legacy broke"),
            ("hang", "did not answer within 2000 ms"),
            ("exit", "exited with code 3"),
            ("grow", "heap"),
        ];
        for (name, text) in failures {
            let out = f.gql(&update(name)).await;
            assert_eq!(out["errors"][0]["code"], 5008, "{name}: {out}");
            let message = out["errors"][0]["message"].as_str().unwrap_or_default();
            assert!(message.contains(text), "{name}: {message}");
            assert_eq!(stored().await, "nothing", "{name} wrote nothing");
            let out = f.gql(&update("again")).await;
            assert_eq!(
                out["data"]["updateTag"]["name"],
                "AGAIN (hello from the environment)",
                "after {name}: {out}"
            );
            f.gql(&update("nothing")).await;
        }

        // An after-hook changes the payload, not the stored node.
        let out = f
            .gql(r#"mutation { createItem(sku: "js-item") { id } }"#)
            .await;
        let item = out["data"]["createItem"]["id"].as_str().unwrap_or_else(|| panic!("{out}")).to_owned();
        let out = f
            .gql(&format!(r#"mutation {{ updateItem(id: "{item}", sku: "js-item-2") {{ sku }} }}"#))
            .await;
        assert_eq!(out["data"]["updateItem"]["sku"], "js-item-2 (seen by node)", "{out}");
        let stored = f.gql(&format!(r#"{{ Item(id: "{item}") {{ sku }} }}"#)).await;
        assert_eq!(stored["data"]["Item"]["sku"], "js-item-2");

        // An ES module resolver, calling back with the temporary root token.
        f.gql(r#"mutation { createNote(text: "keep") { id } }"#).await;
        let out = f.gql(r#"{ jsHello(name: "Ada") { message notes } }"#).await;
        assert_eq!(out["data"]["jsHello"], json!({ "message": "Hello Ada", "notes": 1 }), "{out}");
    }
}

db_cases! {
    /// A server-side subscription with an async JavaScript handler (`jsOrders`, which passes
    /// events on to the receiver's `/subscription/js`): invoked after the commit with the
    /// query's result, only for the events its filter lets through; while it throws (the
    /// receiver refuses), the event is delivered again.
    async fn a_javascript_subscription_handler_is_invoked_until_it_succeeds(db) {
        let Some(f) = Functions::start(db).await else { return };
        let create = async |text: &str| {
            let out = f
                .gql_vars(
                    r#"mutation($text: String!) { createOrder(text: $text, status: "closed") { id } }"#,
                    json!({ "text": text }),
                )
                .await;
            out["data"]["createOrder"]["id"].as_str().unwrap_or_else(|| panic!("{out}")).to_owned()
        };
        let delivered = |text: &str| {
            receiver::received("/subscription/js", |d| d["Order"]["node"]["text"] == text)
        };
        let skipped = unique("plain", db);
        create(&skipped).await;
        let text = unique("js", db);
        receiver::down(&text, 2);
        let id = create(&text).await;
        let start = Instant::now();
        let got = loop {
            let got = delivered(&text);
            if got.iter().any(|r| r.status == 200) {
                break got;
            }
            assert!(start.elapsed() < Duration::from_secs(15), "not delivered: {got:#?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let statuses: Vec<u16> = got.iter().map(|r| r.status).collect();
        assert_eq!(statuses, vec![503, 503, 200]);
        let event = &got[2].event;
        assert_eq!(
            event["data"],
            json!({ "Order": { "mutation": "CREATED", "node": { "id": id, "text": text } } }),
            "{event}"
        );
        assert!(event["context"]["graphcool"]["rootToken"].is_string(), "{event}");
        assert_eq!(event["context"]["graphcool"]["serviceId"], super::ID);
        // Delivered once; the order its filter does not let through, never.
        tokio::time::sleep(Duration::from_millis(700)).await;
        assert_eq!(delivered(&text).len(), 3);
        assert!(delivered(&skipped).is_empty());
    }
}

db_cases! {
    /// A service with JavaScript handlers does not start without Node.js, and says which
    /// functions need it and how to name the binary.
    async fn without_node_the_server_does_not_start(db) {
        let Some(database) = crate::support::TestDatabase::create(db).await else { return };
        let store = crate::support::ScratchDir::new("svc-no-node");
        let mut options =
            crate::support::options(&database.url, super::ID, "functions", store.location());
        options.node = "/nonexistent/bin/node".to_owned();
        let started = tokio::task::spawn_blocking(move || {
            svc_runtime::spawn::<super::service::Service>(options)
        })
        .await
        .expect("the spawning thread");
        let Err(e) = started else { panic!("the server started without Node.js") };
        let message = e.to_string();
        assert!(
            message.contains("`legacy`, `jsHello`, `jsOrders`, `itemAfter`, `libHello`"),
            "{message}"
        );
        assert!(message.contains("/nonexistent/bin/node"), "{message}");
        assert!(message.contains("--node / SVC_NODE"), "{message}");
    }
}

/// The original's client library, installed once under `~/.cache/svc-npm/graphcool-lib/`;
/// `false` outside CI when `npm` is missing (after a notice).
fn install_graphcool_lib() -> bool {
    static INSTALL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    let home = std::env::var_os("HOME")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let dir = home.join(".cache/svc-npm/graphcool-lib");
    let marker = dir.join(".installed");
    if std::fs::read_to_string(&marker).ok().as_deref() == Some(GRAPHCOOL_LIB) {
        return true;
    }
    let npm = std::process::Command::new("npm").arg("--version").output();
    if !npm.is_ok_and(|o| o.status.success()) {
        assert!(
            !std::env::var("CI").is_ok_and(|v| v == "true"),
            "CI=true, but `npm` is not on the PATH"
        );
        eprintln!("notice: `npm` is missing; skipping the test of graphcool-lib");
        return false;
    }
    std::fs::create_dir_all(&dir).expect("the npm cache directory");
    let out = std::process::Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--prefix"])
        .arg(&dir)
        .arg(GRAPHCOOL_LIB)
        .output()
        .expect("npm runs");
    assert!(
        out.status.success(),
        "npm install {GRAPHCOOL_LIB} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(&marker, GRAPHCOOL_LIB).expect("the marker is written");
    true
}

/// The original's client library, as functions written for it depend on it.
const GRAPHCOOL_LIB: &str = "graphcool-lib@0.1.4";

db_cases! {
    /// A resolver written against the original's client library calls back into the service:
    /// `fromEvent(event).api('simple/v1')` reaches the Simple API with the event's root token,
    /// and `generateNodeToken` issues a node token through the System API.
    async fn the_original_client_library_calls_back(db) {
        if !tokio::task::spawn_blocking(install_graphcool_lib).await.expect("the install") {
            return;
        }
        let Some(f) = Functions::start(db).await else { return };
        let out = f.gql(r#"mutation { createNote(text: "keep") { id } }"#).await;
        let note = out["data"]["createNote"]["id"].as_str().unwrap_or_else(|| panic!("{out}")).to_owned();
        let out = f
            .gql(&format!(r#"{{ libHello(noteId: "{note}") {{ notes token }} }}"#))
            .await;
        assert_eq!(out["data"]["libHello"]["notes"], 1, "{out}");
        let token = out["data"]["libHello"]["token"].as_str().unwrap_or_else(|| panic!("{out}"));
        let claims = crate::support::decode_claims(token);
        assert_eq!(claims["userId"], note.as_str(), "{claims}");
        assert_eq!(claims["modelName"], "Note", "{claims}");
    }
}
