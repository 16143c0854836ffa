//! The webhook receiver of the functions' tests: a real HTTP server on 127.0.0.1:47611 (the
//! address `service/svc.yml` names), started once per test process on its own thread. It answers
//! by the path and the data it is sent, so tests running side by side do not disturb each other,
//! and it keeps every event it receives for the tests to read.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub const PORT: u16 = 47611;

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    /// The request's headers, names in lower case.
    pub headers: Vec<(String, String)>,
    pub event: Value,
    /// The status the receiver answered with.
    pub status: u16,
}

static EVENTS: Mutex<Vec<Received>> = Mutex::new(Vec::new());
/// How many more deliveries of the order with each text `/subscription/order` and
/// `/subscription/js` refuse (with a 503): the receiver is "down" for them.
static DOWN: Mutex<Option<HashMap<String, u32>>> = Mutex::new(None);
/// Ids of posts whose delete the `guardDelete` hook refuses.
static PROTECTED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// Starts the receiver once; every later call returns at once.
pub fn start() {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("the receiver's runtime");
            rt.block_on(async move {
                // The port lies in Linux's range of ephemeral ports: a connection that used it
                // as its local port may hold it in TIME-WAIT for up to a minute.
                let start = std::time::Instant::now();
                let listener = loop {
                    match TcpListener::bind(("127.0.0.1", PORT)).await {
                        Ok(listener) => break listener,
                        Err(e)
                            if e.kind() == std::io::ErrorKind::AddrInUse
                                && start.elapsed() < Duration::from_secs(90) =>
                        {
                            tokio::time::sleep(Duration::from_millis(500)).await;
                        }
                        Err(e) => panic!("the webhook receiver cannot listen on {PORT}: {e}"),
                    }
                };
                ready_tx.send(()).expect("the test waits");
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        continue;
                    };
                    tokio::spawn(serve(stream));
                }
            });
        });
        ready_rx.recv().expect("the receiver starts");
    });
}

/// Makes the `guardDelete` hook refuse deleting the post `id`.
pub fn protect(id: &str) {
    PROTECTED
        .lock()
        .unwrap()
        .get_or_insert_with(HashSet::new)
        .insert(id.to_owned());
}

/// Makes `/subscription/order` and `/subscription/js` refuse the next `times` deliveries of the
/// order whose text is `text` (`u32::MAX`: until [`up`]).
pub fn down(text: &str, times: u32) {
    DOWN.lock()
        .unwrap()
        .get_or_insert_with(HashMap::new)
        .insert(text.to_owned(), times);
}

/// Makes `/subscription/order` accept the deliveries of the order whose text is `text`.
pub fn up(text: &str) {
    if let Some(down) = DOWN.lock().unwrap().as_mut() {
        down.remove(text);
    }
}

/// The requests received at `path` whose event's data satisfies `pick`.
pub fn received(path: &str, pick: impl Fn(&Value) -> bool) -> Vec<Received> {
    EVENTS
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.path == path && pick(&r.event["data"]))
        .cloned()
        .collect()
}

async fn serve(mut stream: TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let Ok(n) = stream.read(&mut chunk).await else {
            return;
        };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let path = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .unwrap_or_default()
        .to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let Ok(n) = stream.read(&mut chunk).await else {
            return;
        };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let event: Value =
        serde_json::from_slice(&buf[head_end..head_end + length]).unwrap_or(Value::Null);
    let (status, body) = answer(&path, &event["data"]).await;
    EVENTS.lock().unwrap().push(Received {
        path: path.clone(),
        headers,
        event: event.clone(),
        status,
    });
    let reason = match status {
        200 => "OK",
        204 => "No Content",
        _ => "Error",
    };
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// What each function answers.
async fn answer(path: &str, data: &Value) -> (u16, String) {
    let ok = |v: Value| (200, v.to_string());
    match path {
        "/before/post" => {
            let title = data["title"].as_str().unwrap_or_default();
            match title {
                "reject me" => ok(json!({ "error": "Title rejected" })),
                "reject object" => ok(json!({ "error": { "reason": "no", "code": 7 } })),
                "status 500" => (500, "oops".to_owned()),
                "not json" => (200, "nope".to_owned()),
                "error number" => ok(json!({ "error": 3 })),
                "slow" => {
                    tokio::time::sleep(Duration::from_millis(2500)).await;
                    ok(json!({}))
                }
                "extra field" => {
                    let mut d = data.clone();
                    d["bogus"] = json!(1);
                    ok(json!({ "data": d }))
                }
                "bad type" => ok(json!({ "data": { "title": 5 } })),
                "drop title" => ok(json!({ "data": { "votes": 1 } })),
                "data not object" => ok(json!({ "data": [1] })),
                "null result" => ok(json!({})),
                t if t.starts_with("shout ") => {
                    let mut d = data.clone();
                    d["title"] = json!(t.to_uppercase());
                    d["votes"] = json!(42);
                    ok(json!({ "data": d }))
                }
                _ => ok(json!({ "data": data })),
            }
        }
        "/before/tag" => {
            let mut d = data.clone();
            d["name"] = json!(data["name"].as_str().unwrap_or_default().to_uppercase());
            ok(json!({ "data": d }))
        }
        "/before/delete" => {
            let id = data["id"].as_str().unwrap_or_default();
            let protected = PROTECTED
                .lock()
                .unwrap()
                .as_ref()
                .is_some_and(|p| p.contains(id));
            if protected {
                ok(json!({ "error": "This post is protected" }))
            } else {
                (204, String::new())
            }
        }
        "/after/post" => {
            let mut d = data.clone();
            let title = data["title"].as_str().unwrap_or_default();
            d["title"] = json!(format!("after: {title}"));
            ok(json!({ "data": d }))
        }
        "/resolver/hello" => match data["name"].as_str() {
            None => ok(json!({ "data": { "message": "Hello World" } })),
            Some("null") => ok(json!({ "data": null })),
            Some("bad") => ok(json!({ "data": { "message": 5 } })),
            Some("extra") => ok(json!({ "data": { "message": "x", "nope": 1 } })),
            Some("list") => ok(json!({ "data": [{ "message": "x" }] })),
            Some("time") => ok(json!({ "data": {
                "message": "t", "at": "2020-01-02T03:04:05Z", "extra": { "a": [1, "b"] }
            } })),
            Some(name) => ok(json!({ "data": { "message": format!("Hello {name}") } })),
        },
        "/resolver/sums" => {
            let values: Vec<i64> = data["values"]
                .as_array()
                .map(|v| v.iter().filter_map(Value::as_i64).collect())
                .unwrap_or_default();
            let scale = data["scale"].as_f64().unwrap_or(1.0);
            let total: i64 = values.iter().sum();
            ok(json!({ "data": [
                { "id": "sum", "total": total as f64 * scale, "parts": values },
                { "total": values.len() },
            ] }))
        }
        "/subscription/order" | "/subscription/js" => {
            let text = data["Order"]["node"]["text"].as_str().unwrap_or_default();
            let refused = DOWN
                .lock()
                .unwrap()
                .as_mut()
                .and_then(|down| down.get_mut(text))
                .is_some_and(|left| {
                    let refuse = *left > 0;
                    if *left != u32::MAX {
                        *left = left.saturating_sub(1);
                    }
                    refuse
                });
            if refused {
                (503, "down".to_owned())
            } else {
                ok(json!({}))
            }
        }
        _ => (404, "{}".to_owned()),
    }
}
