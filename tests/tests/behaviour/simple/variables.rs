//! Variables a request leaves out (`runtime/src/http/omitted.rs`): an argument or an input
//! object's field whose value is a variable the request does not give, with no default in its
//! definition, is not given at all, as GraphQL and the reference have it; a variable given as
//! `null` is `null`. Clients such as Apollo's leave out the variables whose value is
//! `undefined`.

use serde_json::{Value, json};

use crate::support::{ALIAS, Server};

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
}
