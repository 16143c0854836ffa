//! The GraphQL request envelope: a fuzzed HTTP body (a JSON object or a batch array with
//! `query`, `variables`, `operationName`, or anything else) POSTed to the example service's
//! real request handling over HTTP. An optional first line starting with `#` picks the endpoint
//! and headers: words `relay`, `permissions`, `system` (the endpoint; default the Simple API),
//! `admin` (a platform token), `graphql-response` (`Accept: application/graphql-response+json`),
//! `text` (`Content-Type: text/plain`).
//!
//! No answer may be a 5xx or the internal error, and every answer of the GraphQL endpoints
//! must be JSON (a body that is not JSON is refused with a JSON body too).

use crate::{SERVICE, server, simple_path};

/// Runs one input (the module's header says what it is and what must hold).
pub fn run(data: &[u8]) {
    let (directives, body) = match data.strip_prefix(b"#") {
        Some(rest) => match rest.iter().position(|&b| b == b'\n') {
            Some(end) => (
                String::from_utf8_lossy(&rest[..end]).into_owned(),
                &rest[end + 1..],
            ),
            None => (String::from_utf8_lossy(rest).into_owned(), &[][..]),
        },
        None => (String::new(), data),
    };
    let words: Vec<&str> = directives.split_whitespace().collect();
    let has = |w: &str| words.contains(&w);
    let server = server();
    let path = if has("relay") {
        format!("/relay/v1/{SERVICE}")
    } else if has("permissions") {
        format!("{}/permissions", simple_path())
    } else if has("system") {
        "/system".to_owned()
    } else {
        simple_path()
    };
    let mut headers = vec![(
        "Content-Type",
        if has("text") {
            "text/plain"
        } else {
            "application/json"
        },
    )];
    if has("admin") {
        headers.push(("Authorization", server.admin.as_str()));
    }
    if has("graphql-response") {
        headers.push(("Accept", "application/graphql-response+json"));
    }
    let response = server.request("POST", &path, &headers, body);
    if !response.body.is_empty() && response.status != 413 {
        response.json();
    }
}
