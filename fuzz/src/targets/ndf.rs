//! NDF documents (docs/api/ndf.md): a fuzzed body POSTed as an admin to the example service's
//! `/import` (or, with a first line `#export`, to `/export`) over HTTP, on a SQLite database
//! that keeps what earlier inputs imported. No answer may be a 5xx or the internal error, and
//! every answer must be JSON: `[]`, the failing elements, or the request's error.

use crate::{server, simple_path};
use serde_json::Value;

/// Runs one input (the module's header says what it is and what must hold).
pub fn run(data: &[u8]) {
    let (way, body) = match data.strip_prefix(b"#export\n") {
        Some(body) => ("export", body),
        None => ("import", data),
    };
    let server = server();
    let path = format!("{}/{way}", simple_path());
    let headers = [
        ("Content-Type", "application/json"),
        ("Authorization", server.admin.as_str()),
    ];
    let response = server.request("POST", &path, &headers, body);
    assert_eq!(response.status, 200, "{way}: {}", response.text());
    let answer = response.json();
    if way == "import" {
        // `[]`, `[{index, message}]`, or `{requestId, error}`.
        let well_formed = match &answer {
            Value::Array(failures) => failures
                .iter()
                .all(|f| f["index"].is_u64() && f["message"].is_string()),
            Value::Object(o) => o.get("error").is_some_and(Value::is_string),
            _ => false,
        };
        assert!(
            well_formed,
            "an import answer of an unknown shape: {answer}"
        );
    }
}
