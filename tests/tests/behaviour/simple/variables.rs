//! Variables a request leaves out (`runtime/src/http/omitted.rs`): an argument or an input
//! object's field whose value is a variable the request does not give, with no default in its
//! definition, is not given at all, as GraphQL and the reference have it; a variable given as
//! `null` is `null`. Clients such as Apollo's leave out the variables whose value is
//! `undefined`.

use serde_json::{Value, json};

use super::direct::send_to;
use crate::support::{ALIAS, Server, redact_request_ids};

/// The answer to `query` with `variables`, asked three times (a text is learned on its first
/// answer, so later ones may run another way): the three must be equal.
async fn thrice(srv: &Server, url: &str, query: &str, variables: Value) -> Value {
    let mut answers = Vec::new();
    for _ in 0..3 {
        answers.push(
            srv.post_url_as(
                url,
                Some(srv.root_token()),
                &json!({ "query": query, "variables": variables }),
            )
            .await,
        );
    }
    assert_eq!(answers[0], answers[1], "{query} {variables}");
    assert_eq!(answers[1], answers[2], "{query} {variables}");
    answers.remove(0)
}

db_tests! {
    /// An update whose optional variables are left out changes nothing they would fill; given
    /// as `null`, they set `null`.
    async fn left_out_variables_leave_fields_as_they_are(srv) {
        let id = srv.create("Post", r#"slug: "p", title: "T", body: "B", votes: 4"#).await;
        let update = "mutation ($id: ID!, $title: String, $body: String, $votes: Int) { \
                      updatePost(id: $id, title: $title, body: $body, votes: $votes) { title body votes } }";
        let answer = thrice(srv, &srv.api(), update, json!({ "id": id })).await;
        assert_eq!(answer, json!({ "data": { "updatePost": { "title": "T", "body": "B", "votes": 4 } } }));
        let answer = thrice(srv, &srv.api(), update, json!({ "id": id, "votes": 5 })).await;
        assert_eq!(answer, json!({ "data": { "updatePost": { "title": "T", "body": "B", "votes": 5 } } }));
        let answer = thrice(srv, &srv.api(), update, json!({ "id": id, "body": null })).await;
        assert_eq!(answer, json!({ "data": { "updatePost": { "title": "T", "body": null, "votes": 5 } } }));

        // The Relay API's input object.
        let url = srv.url(&format!("/relay/v1/{ALIAS}"));
        let update = "mutation ($id: ID!, $title: String, $body: String) { updatePost(input: \
                      { id: $id, title: $title, body: $body, clientMutationId: \"c\" }) { post { title body } } }";
        let answer = thrice(srv, &url, update, json!({ "id": id, "body": "again" })).await;
        assert_eq!(answer, json!({ "data": { "updatePost": { "post": { "title": "T", "body": "again" } } } }));
    }

    /// A filter field filled by a left-out variable filters on nothing; given as `null`, it
    /// matches the nodes whose field is null. A wrong value beside a left-out variable is
    /// refused by validation, with its error.
    async fn left_out_variables_filter_on_nothing(srv) {
        srv.create("Post", r#"slug: "a", title: "A", votes: 1, status: PUBLISHED"#).await;
        srv.create("Post", r#"slug: "b", title: "B", votes: 5"#).await;
        srv.create("Post", r#"slug: "c", title: "C", votes: 9, body: "x""#).await;
        let query = "query ($v: Int, $s: PostStatus, $b: String) { allPosts(filter: \
                     { votes_gte: $v, status: $s, body: $b }, orderBy: slug_ASC) { slug } }";
        let slugs = |answer: &Value| -> Vec<String> {
            answer["data"]["allPosts"]
                .as_array()
                .unwrap_or_else(|| panic!("a list: {answer}"))
                .iter()
                .map(|p| p["slug"].as_str().unwrap_or_default().to_owned())
                .collect()
        };
        assert_eq!(slugs(&thrice(srv, &srv.api(), query, json!({ "v": 2 })).await), ["b", "c"]);
        assert_eq!(slugs(&thrice(srv, &srv.api(), query, json!({})).await), ["a", "b", "c"]);
        assert_eq!(slugs(&thrice(srv, &srv.api(), query, json!({ "s": "PUBLISHED" })).await), ["a"]);
        assert_eq!(slugs(&thrice(srv, &srv.api(), query, json!({ "b": null })).await), ["a", "b"]);
        let answer = thrice(srv, &srv.api(), query, json!({ "v": "many" })).await;
        assert_eq!(
            answer["errors"][0]["message"],
            "Invalid value for argument \"filter.votes_gte\", expected type \"Int\"",
            "{answer}"
        );
        assert!(answer.get("data").is_none(), "{answer}");
        // The same on a relation field's filter, and in a count.
        let query = "query ($v: Int) { _allPostsMeta(filter: { votes_lt: $v }) { count } }";
        assert_eq!(thrice(srv, &srv.api(), query, json!({})).await["data"]["_allPostsMeta"]["count"], 3);
    }

    /// A text that is wrong where a left-out variable is (an argument or an input field that
    /// does not exist, a variable of a type that does not exist) is refused as a full validation of the
    /// text refuses it with the variable given, and nothing is written.
    async fn texts_wrong_where_a_variable_is_left_out_are_refused(srv) {
        let count = "{ _allPostsMeta { count } }";
        let cases = [
            "mutation ($x: String) { createPost(slug: \"s\", title: \"t\", bogus: $x) { id } }",
            "mutation ($x: Nope) { createPost(slug: \"s\", title: \"t\", body: $x) { id } }",
            "query ($x: String, $f: Int) { allPosts(first: $f, filter: { bogus: $x }) { id } }",
        ];
        for query in cases {
            let given = srv
                .post_as(Some(srv.root_token()), &json!({ "query": query, "variables": { "x": null, "f": 1 } }))
                .await;
            assert!(given["errors"][0]["locations"].is_array(), "refused by validation: {given}");
            assert!(given.get("data").is_none(), "{given}");
            let given = redact_request_ids(given);
            for _ in 0..2 {
                let left_out = srv
                    .post_as(Some(srv.root_token()), &json!({ "query": query, "variables": { "f": 1 } }))
                    .await;
                assert_eq!(redact_request_ids(left_out), given, "{query}");
            }
        }
        let counted = srv.gql_as(Some(srv.root_token()), count).await;
        assert_eq!(counted["data"]["_allPostsMeta"]["count"], 0, "nothing written: {counted}");
    }

    /// A variable used where its type does not fit (GraphQL's "All Variable Usages Are
    /// Allowed") is refused by validation, with the locations of its definition and its use,
    /// whatever its value, on both APIs, every time; nothing is written. A text it does not
    /// concern still runs and is learned.
    async fn variables_used_where_their_types_do_not_fit_are_refused(srv) {
        let root = Some(srv.root_token());
        let relay = srv.url(&format!("/relay/v1/{ALIAS}"));
        let cases = [
            (
                srv.api(),
                "mutation ($slug: String, $title: String!) { createPost(slug: $slug, title: $title) { id } }",
                json!({ "slug": "s", "title": "t" }),
                "Variable \"$slug\" of type \"String\" used in position expecting type \"String!\".",
                json!([{ "line": 1, "column": 11 }, { "line": 1, "column": 62 }]),
            ),
            (
                srv.api(),
                "query ($n: String) { allPosts(first: $n) { id } }",
                json!({ "n": null }),
                "Variable \"$n\" of type \"String\" used in position expecting type \"Int\".",
                json!([{ "line": 1, "column": 8 }, { "line": 1, "column": 38 }]),
            ),
            (
                srv.api(),
                "query ($v: Float) { allPosts(filter: { votes_gt: $v }) { id } }",
                json!({}),
                "Variable \"$v\" of type \"Float\" used in position expecting type \"Int\".",
                json!([{ "line": 1, "column": 8 }, { "line": 1, "column": 38 }]),
            ),
            (
                relay,
                "mutation ($slug: String) { createPost(input: { slug: $slug, title: \"t\", clientMutationId: \"c\" }) { post { id } } }",
                json!({ "slug": "s" }),
                "Variable \"$slug\" of type \"String\" used in position expecting type \"String!\".",
                json!([{ "line": 1, "column": 11 }, { "line": 1, "column": 46 }]),
            ),
        ];
        for (url, query, variables, message, locations) in cases {
            for _ in 0..2 {
                let body = json!({ "query": query, "variables": variables });
                let answer = srv.post_url_as(&url, root, &body).await;
                assert_eq!(
                    answer,
                    json!({ "errors": [{ "message": message, "locations": locations }] }),
                    "{query}"
                );
            }
        }
        // Its other validation errors come with it.
        let query = "query ($n: String) { allPosts(first: $n) { nope } }";
        let answer = srv.post_as(root, &json!({ "query": query })).await;
        let messages: Vec<&str> = answer["errors"].as_array().expect("errors").iter().filter_map(|e| e["message"].as_str()).collect();
        assert_eq!(messages.len(), 2, "{answer}");
        assert!(messages[0].starts_with("Unknown field \"nope\""), "{answer}");
        assert!(messages[1].starts_with("Variable \"$n\""), "{answer}");
        // The permission schema and the System API apply the rule too.
        let answer = srv.permissions_as(root, "query ($v: String) { SomePostExists(filter: { votes_gt: $v }) }").await;
        assert_eq!(
            answer["errors"][0]["message"],
            "Variable \"$v\" of type \"String\" used in position expecting type \"Int\".",
            "{answer}"
        );
        assert!(answer.get("data").is_none(), "{answer}");
        let query = "mutation ($s: Int) { generateNodeToken(input: { rootToken: \"r\", \
                     serviceId: $s, nodeId: \"n\", modelName: \"User\" }) { token } }";
        let answer = srv.system_as(None, &json!({ "query": query })).await;
        let message = answer["errors"][0]["message"].as_str().unwrap_or_default();
        assert!(message.starts_with("Variable \"$s\" of type \"Int\" used in position expecting type"), "{answer}");
        assert!(answer.get("data").is_none(), "{answer}");
        let counted = srv.gql_as(root, "{ _allPostsMeta { count } }").await;
        assert_eq!(counted["data"]["_allPostsMeta"]["count"], 0, "nothing written: {counted}");
        // A non-null variable where a nullable one is expected, and a nullable one with a
        // default where a non-null one is, fit.
        let query = "mutation ($slug: String = \"d\", $title: String!, $votes: Int!) { \
                     createPost(slug: $slug, title: $title, votes: $votes) { slug votes } }";
        let answer = srv.post_as(root, &json!({ "query": query, "variables": { "title": "t", "votes": 2 } })).await;
        assert_eq!(answer, json!({ "data": { "createPost": { "slug": "d", "votes": 2 } } }));
    }

    /// Requests of one text that leave out the same variables are learned once: later ones
    /// run the text's plan without those arguments, or skip the full validation, and answer
    /// the same.
    async fn texts_with_variables_left_out_are_learned(srv) {
        let url = srv.api();
        for (slug, status) in [("a", "PUBLISHED"), ("b", "DRAFT"), ("c", "PUBLISHED")] {
            srv.create("Post", &format!("slug: \"{slug}\", title: \"T\", status: {status}")).await;
        }
        let root = Some(srv.root_token());
        let query = "query ($f: Int, $s: PostStatus) { allPosts(first: $f, filter: { status: $s }, \
                     orderBy: slug_ASC) { slug } }";
        for (variables, slugs) in [
            (json!({ "f": 2 }), json!(["a", "b"])),
            (json!({}), json!(["a", "b", "c"])),
            (json!({ "s": "PUBLISHED" }), json!(["a", "c"])),
        ] {
            let body = json!({ "query": query, "variables": variables });
            let first = send_to(srv, &url, root, &body).await;
            let second = send_to(srv, &url, root, &body).await;
            assert_eq!((first.direct.as_str(), second.direct.as_str()), ("0", "1"), "{variables}");
            assert_eq!(first.text, second.text);
            let answer: Value = serde_json::from_str(&second.text).expect("JSON");
            let got: Vec<&Value> = answer["data"]["allPosts"].as_array().expect("a list").iter().map(|p| &p["slug"]).collect();
            assert_eq!(json!(got), slugs, "{variables}");
        }
        let id = srv.create("Post", r#"slug: "d", title: "T", votes: 1"#).await;
        let update = "mutation ($id: ID!, $title: String, $votes: Int) { \
                      updatePost(id: $id, title: $title, votes: $votes) { title votes } }";
        let mut headers = Vec::new();
        for votes in [2, 3, 4] {
            let body = json!({ "query": update, "variables": { "id": id, "votes": votes } });
            let answer = send_to(srv, &url, root, &body).await;
            assert_eq!(answer.text, format!(r#"{{"data":{{"updatePost":{{"title":"T","votes":{votes}}}}}}}"#));
            headers.push(answer.checked);
        }
        assert_eq!(headers, ["0", "1", "1"]);
    }
}
