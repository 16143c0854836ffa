//! Validation in full once per text (`runtime/src/http/validated.rs`): a text the executor
//! answers is validated in full the first time, and later requests with the same text whose
//! variables pass its checks skip the document's other rules. Their answers must be what a
//! full validation gives, with the same errors whenever the variables are wrong.
//!
//! Each case sends a text with a trailing comment that makes it new (validated in full: the
//! reference), then the text as written, which the server learned before; the `Svc-Checked`
//! header says which requests skipped the full validation.

use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::{Value, json};

use super::direct::send_to;
use crate::support::{ALIAS, Server, redact_request_ids};

/// The answer to `body` sent with the root token (request ids redacted) and its `Svc-Checked`.
async fn checked(srv: &Server, url: &str, body: &Value) -> (Value, String) {
    let answer = send_to(srv, url, Some(srv.root_token()), body).await;
    let value: Value = serde_json::from_str(&answer.text).expect("a JSON body");
    (redact_request_ids(value), answer.checked)
}

/// `variables` with every `"<slug>"` string made unique, so that creates do not collide.
fn unique(variables: &Value) -> Value {
    static N: AtomicU32 = AtomicU32::new(0);
    match variables {
        Value::String(s) if s == "<slug>" => {
            Value::String(format!("slug-{}", N.fetch_add(1, Ordering::Relaxed)))
        }
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), unique(v))).collect())
        }
        other => other.clone(),
    }
}

/// The names of the nullable variables `query` defines (`$name: Type` without `!`).
fn nullable_variables(query: &str) -> Vec<String> {
    let definitions = query.split('{').next().unwrap_or_default();
    definitions
        .split('$')
        .skip(1)
        .filter_map(|part| {
            let (name, ty) = part.split_once(':')?;
            let ty = ty.split([',', ')']).next()?.trim();
            (!ty.ends_with('!')).then(|| name.trim().to_owned())
        })
        .collect()
}

/// Sends `query` with `learn` (valid variables) until the server knows it, then each case:
/// first as a new text (the reference), then as the known text, which must answer the same
/// and skip the full validation exactly when the variables are valid.
async fn compare(srv: &Server, url: &str, query: &str, learn: &Value, cases: &[Value]) {
    static FRESH: AtomicU32 = AtomicU32::new(0);
    let body = |vars: &Value| json!({ "query": query, "variables": unique(vars) });
    let (first, header) = checked(srv, url, &body(learn)).await;
    assert_eq!(header, "0", "a new text is validated in full: {first}");
    assert!(first.get("errors").is_none(), "learning {query}: {first}");
    let (second, header) = checked(srv, url, &body(learn)).await;
    assert_eq!(header, "1", "a known text with valid variables: {second}");
    assert_eq!(second, first, "{query}");
    // The sets of variables left out whose pruned documents the server has learned: the text
    // was validated in full with them once (`omitted.rs`).
    let mut learned: Vec<Vec<String>> = Vec::new();
    for vars in cases {
        let fresh = FRESH.fetch_add(1, Ordering::Relaxed);
        let reference = json!({
            "query": format!("{query}\n# reference {fresh}"),
            "variables": unique(vars),
        });
        let (expected, header) = checked(srv, url, &reference).await;
        assert_eq!(header, "0", "a new text is validated in full");
        let left_out: Vec<String> = nullable_variables(query)
            .into_iter()
            .filter(|name| vars.get(name.as_str()).is_none())
            .collect();
        // Requests that leave out a set not learned yet are validated in full.
        let sends = if left_out.is_empty() { 1 } else { 2 };
        for _ in 0..sends {
            let (answer, header) = checked(srv, url, &body(vars)).await;
            assert_eq!(answer, expected, "{query} {vars}");
            // Errors without a path are the document's: validation refused the variables.
            let refused = answer["errors"]
                .as_array()
                .is_some_and(|errors| errors.iter().any(|e| e.get("path").is_none()));
            let known = left_out.is_empty() || learned.contains(&left_out);
            assert_eq!(
                header,
                if !refused && known { "1" } else { "0" },
                "{query} {vars}: {answer}"
            );
            if !refused && !known {
                learned.push(left_out.clone());
            }
        }
    }
}

db_tests! {
    /// Creates through the Simple API with variables of every kind of argument: the known
    /// text answers each right or wrong value exactly as a full validation does.
    async fn known_texts_answer_as_if_validated_in_full(srv) {
        let author = srv.create("User", r#"email: "a@example.com", name: "A""#).await;
        let query = "mutation ($slug: String!, $title: String!, $votes: Int, $status: PostStatus, \
                     $tags: [String!], $meta: Json, $at: DateTime, $authorId: ID, $rating: Float) { \
                     createPost(slug: $slug, title: $title, votes: $votes, status: $status, \
                     tags: $tags, metadata: $meta, publishedAt: $at, authorId: $authorId, \
                     rating: $rating) { title votes status tags metadata publishedAt rating \
                     author { email } } }";
        let good = json!({
            "slug": "<slug>", "title": "t", "votes": 3, "status": "PUBLISHED",
            "tags": ["x", "y"], "meta": {"a": [1, null]}, "at": "2020-01-02T03:04:05.000Z",
            "authorId": author, "rating": 1.5,
        });
        let with = |key: &str, value: Value| {
            let mut vars = good.clone();
            vars[key] = value;
            vars
        };
        let mut without_votes = good.clone();
        without_votes.as_object_mut().expect("an object").remove("votes");
        let cases = [
            good.clone(),
            without_votes,
            with("votes", json!("3")),
            with("votes", json!(2.5)),
            with("votes", json!(4_000_000_000_i64)),
            with("votes", Value::Null),
            with("title", Value::Null),
            with("title", json!(7)),
            with("status", json!("LOST")),
            with("status", json!(1)),
            with("tags", json!("one")),
            with("tags", json!(["a", null])),
            with("tags", json!([1])),
            with("meta", json!("{not json")),
            with("at", json!("yesterday")),
            with("at", json!(5)),
            with("authorId", json!(12)),
            with("authorId", json!("nobody")),
            with("rating", json!("high")),
        ];
        compare(srv, &srv.api(), query, &good, &cases).await;
    }

    /// The Relay API's input objects, with variables inside a literal object.
    async fn known_relay_texts_answer_as_if_validated_in_full(srv) {
        let url = srv.url(&format!("/relay/v1/{ALIAS}"));
        let query = "mutation ($slug: String!, $title: String!, $votes: Int, $status: PostStatus) { \
                     createPost(input: { slug: $slug, title: $title, votes: $votes, status: $status, \
                     clientMutationId: \"c\" }) { clientMutationId post { title votes status } } }";
        let good = json!({ "slug": "<slug>", "title": "t", "votes": 2, "status": "DRAFT" });
        let cases = [
            good.clone(),
            json!({ "slug": "<slug>", "title": "t" }),
            json!({ "slug": "<slug>", "title": null }),
            json!({ "slug": "<slug>", "title": "t", "votes": "2" }),
            json!({ "slug": "<slug>", "title": "t", "status": "GONE" }),
            json!({ "title": "t", "votes": "2" }),
        ];
        compare(srv, &url, query, &good, &cases).await;
    }

    /// A text refused the first time is learned when it is first answered; a text with a
    /// fragment is validated in full every time.
    async fn texts_are_learned_once_answered(srv) {
        let url = srv.api();
        let query = "mutation ($slug: String!, $title: String!) { createPost(slug: $slug, title: $title) { title } }";
        let bad = json!({ "query": query, "variables": { "slug": "a", "title": 1 } });
        let (answer, header) = checked(srv, &url, &bad).await;
        assert_eq!(header, "0");
        assert!(answer["errors"][0]["message"].as_str().is_some_and(|m| m.contains("title")), "{answer}");
        let good = |slug: &str| json!({ "query": query, "variables": { "slug": slug, "title": "t" } });
        assert_eq!(checked(srv, &url, &good("b")).await.1, "0", "learned now");
        assert_eq!(checked(srv, &url, &good("c")).await.1, "1");

        let fragment = "mutation ($slug: String!) { createPost(slug: $slug, title: \"t\") { ...P } } fragment P on Post { title }";
        for slug in ["d", "e", "f"] {
            let body = json!({ "query": fragment, "variables": { "slug": slug } });
            let (answer, header) = checked(srv, &url, &body).await;
            assert_eq!(answer["data"]["createPost"]["title"], "t", "{answer}");
            assert_eq!(header, "0", "a fragment: validated in full");
        }
        // Plans answer read queries; their requests are not counted.
        let read = json!({ "query": "{ allPosts(first: 1) { title } }" });
        for _ in 0..3 {
            let answer = send_to(srv, &url, Some(srv.root_token()), &read).await;
            assert_eq!(answer.text, r#"{"data":{"allPosts":[{"title":"t"}]}}"#);
        }
        assert_eq!(checked(srv, &url, &read).await.1, "0");
    }
}
