//! Function logs: one record per invocation in the server's log (`svc logs --function NAME`
//! reads them), `svc: function-log {json}`. Records go through a buffer that a thread of its own
//! writes to standard error, so an invocation costs a lock and a copy, not a write to the log
//! file: under load many records leave in one write (the thread pauses 2 ms after each), and
//! when idle each leaves at once.

use std::io::Write as _;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Instant;

use serde::Serialize;
use serde_json::Value as J;

use crate::model::{ApiResult, FunctionMeta, cuid, format_datetime};

/// How many bytes of records may wait; past it, records are dropped (and counted in the next
/// record written) rather than let memory grow.
const MAX_PENDING: usize = 8 << 20;
/// The longest `returnValue` logged whole; a longer one is cut and logged as text.
const MAX_RETURN_VALUE: usize = 1000;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Record<'a> {
    id: String,
    function_name: &'a str,
    request_id: &'a str,
    status: &'static str,
    duration: u64,
    timestamp: String,
    message: Message<'a>,
}

/// `{returnValue}` or `{error}`, with `logs` when the handler wrote any (JavaScript handlers).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Message<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    return_value: Option<Shown<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    logs: &'a [String],
}

#[derive(Serialize)]
#[serde(untagged)]
enum Shown<'a> {
    Whole(&'a J),
    Cut(String),
    Null,
}

struct Sink {
    pending: Mutex<Pending>,
    ready: Condvar,
}

#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    dropped: u64,
}

fn sink() -> &'static Sink {
    static SINK: OnceLock<&'static Sink> = OnceLock::new();
    SINK.get_or_init(|| {
        let sink: &'static Sink = Box::leak(Box::new(Sink {
            pending: Mutex::new(Pending::default()),
            ready: Condvar::new(),
        }));
        let spawned = std::thread::Builder::new()
            .name("svc-function-log".into())
            .spawn(move || {
                loop {
                    let out = {
                        let mut p = sink.pending.lock().unwrap_or_else(|e| e.into_inner());
                        while p.bytes.is_empty() {
                            p = sink.ready.wait(p).unwrap_or_else(|e| e.into_inner());
                        }
                        std::mem::take(&mut p.bytes)
                    };
                    let _ = std::io::stderr().write_all(&out);
                    // Records that arrive meanwhile leave together with the next write.
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
            });
        if let Err(e) = spawned {
            eprintln!("svc: the function log's thread did not start: {e}");
        }
        sink
    })
}

/// Logs one invocation of `f`, with what its handler wrote (`logs`).
pub(super) fn record(
    f: &FunctionMeta,
    request_id: &str,
    started: Instant,
    outcome: &ApiResult<Option<J>>,
    logs: &[String],
) {
    let duration = started.elapsed().as_millis() as u64;
    let (status, shown, error) = match outcome {
        Ok(None) => ("SUCCESS", Some(Shown::Null), None),
        Ok(Some(data)) => {
            let text = data.to_string();
            let shown = if text.len() > MAX_RETURN_VALUE {
                let cut = (0..=MAX_RETURN_VALUE)
                    .rev()
                    .find(|&i| text.is_char_boundary(i))
                    .unwrap_or(0);
                Shown::Cut(format!("{}…", &text[..cut]))
            } else {
                Shown::Whole(data)
            };
            ("SUCCESS", Some(shown), None)
        }
        Err(e) => ("FAILURE", None, Some(e.message())),
    };
    let message = Message {
        return_value: shown,
        error,
        logs,
    };
    // `yyyy-MM-dd HH:mm:ss.SSS`, UTC.
    let timestamp = format_datetime(&chrono::Utc::now())
        .replacen('T', " ", 1)
        .trim_end_matches('Z')
        .to_owned();
    let record = Record {
        id: cuid(),
        function_name: f.name,
        request_id,
        status,
        duration,
        timestamp,
        message,
    };
    let sink = sink();
    let mut p = sink.pending.lock().unwrap_or_else(|e| e.into_inner());
    if p.bytes.len() > MAX_PENDING {
        p.dropped += 1;
        return;
    }
    if p.dropped > 0 {
        let dropped = std::mem::take(&mut p.dropped);
        let _ = writeln!(
            p.bytes,
            "svc: {dropped} function-log records were dropped: the log could not keep up"
        );
    }
    // The thread waits only when nothing is pending: only the first record wakes it.
    let wake = p.bytes.is_empty();
    p.bytes.extend_from_slice(b"svc: function-log ");
    let _ = serde_json::to_writer(&mut p.bytes, &record);
    p.bytes.push(b'\n');
    drop(p);
    if wake {
        sink.ready.notify_one();
    }
}
