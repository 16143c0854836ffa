//! Multipart upload bodies: a fuzzed body POSTed to the example service's File API
//! (`/file/v1/<id>`, the multipart parser and the upload into the store) over HTTP. The first
//! line of the input is the request's `Content-Type` (its boundary); the rest is the body.
//!
//! No answer may be a 5xx or the internal error; every answer is JSON; an upload that succeeded
//! is downloaded again by its secret, and must come back with the size it was given.

use crate::{SERVICE, server};

/// Runs one input (the module's header says what it is and what must hold).
pub fn run(data: &[u8]) {
    let Some(end) = data.iter().position(|&b| b == b'\n') else {
        return;
    };
    let Ok(content_type) = std::str::from_utf8(&data[..end]) else {
        return;
    };
    let content_type = content_type.trim_end_matches('\r');
    // A header value must not break the request's framing (the HTTP client is ours).
    if content_type.bytes().any(|b| b.is_ascii_control()) {
        return;
    }
    let body = &data[end + 1..];
    let server = server();
    let path = format!("/file/v1/{SERVICE}");
    let response = server.request("POST", &path, &[("Content-Type", content_type)], body);
    let answer = response.json();
    if response.status != 200 {
        return;
    }
    let secret = answer["secret"]
        .as_str()
        .unwrap_or_else(|| panic!("an upload answer without a secret: {answer}"));
    let size = answer["size"]
        .as_u64()
        .unwrap_or_else(|| panic!("an upload answer without a size: {answer}"));
    let download = server.request("GET", &format!("/files/v1/{SERVICE}/{secret}"), &[], b"");
    assert_eq!(
        download.status,
        200,
        "the uploaded file {answer} is not served: {}",
        download.text()
    );
    assert_eq!(
        download.body.len() as u64,
        size,
        "the uploaded file {answer} comes back with {} bytes",
        download.body.len()
    );
    assert!(
        body.windows(download.body.len().max(1))
            .any(|w| w == download.body.as_slice())
            || download.body.is_empty(),
        "the uploaded file {answer} is not a part of the body"
    );
}
