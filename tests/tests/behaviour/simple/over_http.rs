//! GraphQL over HTTP: the specification's media types and statuses beside the reference's
//! (§2.11, §11.1). A client that accepts `application/graphql-response+json` gets that media
//! type, and HTTP 400 for a request refused before execution; a client of `application/json`
//! keeps HTTP 200 with the errors in the body, as the reference's clients expect. A body that
//! is not JSON is 400 for both, and a declared `Content-Type` that is not JSON is 415. The audit
//! of npm's `graphql-http`, and graphql-js's validation of the schema its introspection shows,
//! run against the Simple API and the Relay API when `node` is on the machine.

use serde_json::{Value, json};

use crate::node::run_script;
use crate::support::{ALIAS, REQUEST_ID, Server, redact_request_ids};

const GRAPHQL_RESPONSE: &str = "application/graphql-response+json";

/// POSTs `body` with the given `Accept` and `Content-Type` headers (none for `None`); the
/// status, the response's content type, and the body as JSON (request ids redacted).
async fn post(
    srv: &Server,
    accept: Option<&str>,
    content_type: Option<&str>,
    body: &str,
) -> (u16, String, Value) {
    let mut request = srv.client().post(srv.api()).body(body.to_owned());
    if let Some(accept) = accept {
        request = request.header("Accept", accept);
    }
    if let Some(content_type) = content_type {
        request = request.header("Content-Type", content_type);
    }
    let res = request.send().await.expect("the request failed");
    let status = res.status().as_u16();
    let media = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let text = res.text().await.expect("the response body");
    let value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("the response is not JSON ({e}): {text}"));
    (status, media, redact_request_ids(value))
}

fn query(text: &str) -> String {
    json!({ "query": text }).to_string()
}

/// Whether the response body is the reference's validation-error shape (errors, no data).
fn is_validation_error(body: &Value) -> bool {
    body.get("data").is_none() && body["errors"][0]["message"].is_string()
}

db_tests! {
    /// `Accept: application/graphql-response+json` gets that media type (also among others, in
    /// any order; not when refused with `q=0`); a query that runs is 200 with its data.
    async fn graphql_response_media_type(srv) {
        let ok = query("{ _allPostsMeta { count } }");
        let data = json!({ "data": { "_allPostsMeta": { "count": 0 } } });
        for accept in [GRAPHQL_RESPONSE, "application/json, application/graphql-response+json;q=0.9"] {
            let (status, media, body) = post(srv, Some(accept), Some("application/json"), &ok).await;
            assert_eq!((status, body), (200, data.clone()), "{accept}");
            assert_eq!(media, "application/graphql-response+json; charset=utf-8", "{accept}");
        }
        for accept in [None, Some("application/json"), Some("*/*"), Some("application/graphql-response+json;q=0, application/json")] {
            let (status, media, body) = post(srv, accept, Some("application/json"), &ok).await;
            assert_eq!((status, media.as_str(), body), (200, "application/json", data.clone()), "{accept:?}");
        }
        // A field error is an executed request: 200 with data, for both media types.
        let failing = query(r#"mutation { deletePost(id: "cnotthere000000000000000x") { id } }"#);
        for accept in [GRAPHQL_RESPONSE, "application/json"] {
            let (status, _, body) = post(srv, Some(accept), Some("application/json"), &failing).await;
            assert_eq!(status, 200, "{accept}: {body}");
            assert_eq!(body["data"], json!({ "deletePost": null }), "{accept}");
            assert_eq!(body["errors"][0]["code"], json!(3002), "{accept}");
        }
    }

    /// Requests refused before execution (a document that does not parse or validate, variables
    /// that do not coerce or parse, a request object without a query) are 400 without `data` for
    /// clients of the GraphQL response media type, and keep the reference's 200 for clients of
    /// `application/json`, with the same bodies.
    async fn refused_requests(srv) {
        let cases = [
            query("{ allPosts { id "),
            query("{ allPosts { nope } }"),
            json!({ "query": "query ($n: Int) { allPosts(first: $n) { id } }", "variables": { "n": "two" } }).to_string(),
            json!({ "query": "{ allPosts { id } }", "variables": "{nope" }).to_string(),
            json!({ "variables": {} }).to_string(),
        ];
        for case in &cases {
            let (status, _, json_body) = post(srv, Some("application/json"), Some("application/json"), case).await;
            assert_eq!(status, 200, "{case}: {json_body}");
            let (status, media, body) = post(srv, Some(GRAPHQL_RESPONSE), Some("application/json"), case).await;
            assert_eq!((status, media.as_str()), (400, "application/graphql-response+json; charset=utf-8"), "{case}: {body}");
            assert_eq!(body, json_body, "{case}: the same body for both media types");
            assert!(body.get("data").is_none(), "{case}: {body}");
        }
        let (_, _, body) = post(srv, Some(GRAPHQL_RESPONSE), Some("application/json"), &cases[1]).await;
        assert!(is_validation_error(&body), "{body}");
        let (_, _, body) = post(srv, Some(GRAPHQL_RESPONSE), Some("application/json"), &cases[3]).await;
        assert_eq!(body, json!({ "code": 3024, "requestId": REQUEST_ID, "error": "Variables could not be parsed as json: {nope" }));
        // A batch is executed as a whole: 200, whatever became of its requests.
        let batch = format!("[{}, {}]", cases[1], query("{ _allPostsMeta { count } }"));
        let (status, _, body) = post(srv, Some(GRAPHQL_RESPONSE), Some("application/json"), &batch).await;
        assert_eq!(status, 200, "{body}");
        assert!(is_validation_error(&body[0]), "{body}");
        assert_eq!(body[1], json!({ "data": { "_allPostsMeta": { "count": 0 } } }));
    }

    /// A body that is not JSON is 400 for every client, with the reference's body; JSON that is
    /// neither an object nor an array keeps the reference's 200 for `application/json`.
    async fn unparsable_bodies(srv) {
        for accept in ["application/json", GRAPHQL_RESPONSE] {
            let (status, _, body) = post(srv, Some(accept), Some("application/json"), "{ nope").await;
            assert_eq!((status, body), (400, json!({ "error": "input could not be parsed: '{ nope'" })), "{accept}");
        }
        let (status, _, body) = post(srv, Some("application/json"), Some("application/json"), "42").await;
        assert_eq!((status, body), (200, json!({ "error": "input could not be parsed: '42'" })));
        let (status, _, _) = post(srv, Some(GRAPHQL_RESPONSE), Some("application/json"), "42").await;
        assert_eq!(status, 400);
    }

    /// The body is read as JSON when its `Content-Type` says JSON (`application/json` with any
    /// parameters, `application/…+json`); another declared type is 415. A request without
    /// one is read as JSON for `application/json` clients, and 415 for clients of the GraphQL
    /// response media type.
    async fn content_types(srv) {
        let ok = query("{ _allPostsMeta { count } }");
        let data = json!({ "data": { "_allPostsMeta": { "count": 0 } } });
        for content_type in ["application/json", "application/json; charset=utf-8", "Application/JSON", "application/graphql+json"] {
            let (status, _, body) = post(srv, None, Some(content_type), &ok).await;
            assert_eq!((status, body), (200, data.clone()), "{content_type}");
        }
        let refused = json!({ "error": "the request's Content-Type must be `application/json`" });
        for content_type in ["text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"] {
            for accept in [None, Some(GRAPHQL_RESPONSE)] {
                let (status, _, body) = post(srv, accept, Some(content_type), &ok).await;
                assert_eq!((status, body), (415, refused.clone()), "{content_type}, {accept:?}");
            }
        }
        let (status, _, body) = post(srv, None, None, &ok).await;
        assert_eq!((status, body), (200, data));
        let (status, _, body) = post(srv, Some(GRAPHQL_RESPONSE), None, &ok).await;
        assert_eq!((status, body), (415, refused));
    }

    /// The audit suite of npm's `graphql-http` finds no error and no warning on the Simple API
    /// and on the Relay API (notices are the specification's optional behaviours). Needs `node`
    /// and `npm`: outside CI the test says so and passes without them; in CI (`CI=true`) their
    /// absence fails it.
    async fn graphql_http_audit(srv) {
        for api in ["simple", "relay"] {
            let url = srv.url(&format!("/{api}/v1/{ALIAS}"));
            let Some(stdout) = run_script("graphql-http-audit.mjs", &[&url], &[]).await else {
                return;
            };
            assert_audit_passed(api, &stdout);
        }
    }

    /// graphql-js builds a client schema from the introspection of the Simple API and of the
    /// Relay API (as clients and code generators do) and finds nothing wrong with either
    /// (`validateSchema`).
    async fn graphql_js_validates_the_schema(srv) {
        for api in ["simple", "relay"] {
            let url = srv.url(&format!("/{api}/v1/{ALIAS}"));
            let Some(stdout) = run_script("graphql-js-schema.mjs", &[&url], &[]).await else {
                return;
            };
            let errors: Vec<&str> = stdout.lines().filter(|l| l.starts_with("error ")).collect();
            assert!(errors.is_empty(), "graphql-js finds the {api} schema invalid:\n{}", errors.join("\n"));
            let types: usize = stdout
                .lines()
                .find_map(|l| l.strip_prefix("types "))
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("no types line: {stdout}"));
            assert!(types > 50, "{api}: {stdout}");
        }
    }
}

/// Asserts that the audit's output (of the API at `/<api>/v1`) has no error and no warning.
fn assert_audit_passed(api: &str, stdout: &str) {
    let counts = stdout
        .lines()
        .find_map(|l| l.strip_prefix("counts "))
        .unwrap_or_else(|| panic!("no counts line: {stdout}"));
    let counts: Value = serde_json::from_str(counts).expect("the counts are JSON");
    let findings: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("warn ") || l.starts_with("error "))
        .collect();
    assert!(
        findings.is_empty(),
        "the audit's errors and warnings on /{api}/v1:\n{}",
        findings.join("\n")
    );
    assert_eq!(
        (counts["warn"].as_u64(), counts["error"].as_u64()),
        (Some(0), Some(0)),
        "{api}: {stdout}"
    );
    assert!(counts["ok"].as_u64().unwrap_or(0) >= 40, "{api}: {stdout}");
}
