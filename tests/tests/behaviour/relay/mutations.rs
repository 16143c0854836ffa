//! The Relay API's model mutations (reference §3.2): one `input` argument with the Simple API's
//! arguments and `clientMutationId`, echoed in the payload with `viewer`, the node, its `edge`,
//! its to-one relations and, for deletes, `deletedId`; the same errors and permissions as the
//! Simple API, and the payload whitelist wherever the payload shows the node.

use serde_json::{Value, json};

use crate::support::{ALIAS, MISSING, Server, assert_validation_error, column_of, field_error};

fn relay(srv: &Server) -> String {
    srv.url(&format!("/relay/v1/{ALIAS}"))
}

/// Runs `query` on the Relay API as `token` (anonymous for `None`); the whole response body.
async fn gql_as(srv: &Server, token: Option<&str>, query: &str) -> Value {
    srv.post_url_as(&relay(srv), token, &json!({ "query": query }))
        .await
}

/// `data` of a mutation that must not fail, run with the root token.
async fn data(srv: &Server, query: &str) -> Value {
    let res = gql_as(srv, Some(srv.root_token()), query).await;
    assert!(
        res.get("errors").is_none() && res.get("error").is_none(),
        "{query}\n{res:#}"
    );
    res["data"].clone()
}

db_tests! {
    /// create, update, updateOrCreate (both ways) and delete, each with its payload.
    async fn model_mutations(srv) {
        let ann = srv.create("User", r#"email: "ann@x.io", name: "Ann""#).await;
        let res = data(srv, &format!(r#"mutation {{ createPost(input: {{ slug: "p1", title: "One", authorId: "{ann}", clientMutationId: "c1" }}) {{ clientMutationId viewer {{ id }} post {{ id title votes }} edge {{ cursor node {{ id }} }} author {{ name }} }} }}"#)).await;
        let post = res["createPost"]["post"]["id"].as_str().expect("id").to_owned();
        assert_eq!(
            res,
            json!({ "createPost": {
                "clientMutationId": "c1",
                "viewer": { "id": "viewer-fixed" },
                "post": { "id": post, "title": "One", "votes": 0 },
                "edge": { "cursor": post, "node": { "id": post } },
                "author": { "name": "Ann" },
            } })
        );
        let res = data(srv, &format!(r#"mutation {{ updatePost(input: {{ id: "{post}", title: "Two", clientMutationId: "c2" }}) {{ clientMutationId post {{ title }} }} }}"#)).await;
        assert_eq!(res, json!({ "updatePost": { "clientMutationId": "c2", "post": { "title": "Two" } } }));
        let res = data(srv, &format!(r#"mutation {{ a: updateOrCreatePost(input: {{ update: {{ id: "{post}", votes: 3 }}, create: {{ slug: "x", title: "X" }}, clientMutationId: "c3" }}) {{ post {{ slug votes }} }} b: updateOrCreatePost(input: {{ update: {{ id: "{MISSING}", votes: 3 }}, create: {{ slug: "new", title: "New" }}, clientMutationId: "c4" }}) {{ post {{ slug votes }} }} }}"#)).await;
        assert_eq!(res, json!({ "a": { "post": { "slug": "p1", "votes": 3 } }, "b": { "post": { "slug": "new", "votes": 0 } } }));
        let res = data(srv, &format!(r#"mutation {{ deletePost(input: {{ id: "{post}", clientMutationId: "c5" }}) {{ clientMutationId deletedId post {{ id title }} author {{ name }} }} }}"#)).await;
        assert_eq!(
            res,
            json!({ "deletePost": { "clientMutationId": "c5", "deletedId": post, "post": { "id": post, "title": "Two" }, "author": null } })
        );
        let all = data(srv, "{ viewer { allPosts { count } } }").await;
        assert_eq!(all, json!({ "viewer": { "allPosts": { "count": 1 } } }));
    }

    /// The Simple API's errors at the mutation's path (a missing node is 3002), nothing written;
    /// an `input` without `clientMutationId`, or with an unknown field, does not validate.
    async fn errors(srv) {
        let query = format!(r#"mutation {{ updatePost(input: {{ id: "{MISSING}", title: "X", clientMutationId: "c" }}) {{ post {{ id }} }} }}"#);
        let res = gql_as(srv, Some(srv.root_token()), &query).await;
        assert_eq!(
            res,
            json!({
                "data": { "updatePost": null },
                "errors": [field_error(json!(["updatePost"]), 1, column_of(&query, "updatePost"), 3002, &format!("'Post' has no item with id '{MISSING}'"))],
            })
        );
        let res = gql_as(srv, Some(srv.root_token()), r#"mutation { createPost(input: { slug: "s", title: "T" }) { post { id } } }"#).await;
        assert_validation_error(&res, "clientMutationId");
        let res = gql_as(srv, Some(srv.root_token()), r#"mutation { createPost(input: { slug: "s", title: "T", nope: 1, clientMutationId: "c" }) { post { id } } }"#).await;
        assert_validation_error(&res, "nope");
        assert_eq!(data(srv, "{ viewer { allPosts { count } } }").await, json!({ "viewer": { "allPosts": { "count": 0 } } }));
    }

    /// Write permissions hold (an anonymous post is 3008); the payload shows the fields the
    /// mutation wrote (and `id`) whatever the read permissions, in `<node>` and in `edge`, but
    /// not the node's other fields.
    async fn permissions_and_whitelist(srv) {
        let query = r#"mutation { createPost(input: { slug: "s", title: "T", clientMutationId: "c" }) { post { id } } }"#;
        let res = gql_as(srv, None, query).await;
        assert_eq!(res["data"], json!({ "createPost": null }), "{res:#}");
        assert_eq!(res["errors"][0]["code"], json!(3008), "{res:#}");
        let query = r#"mutation { createUser(input: { email: "bo@x.io", name: "Bo", clientMutationId: "c" }) { user { email name age } edge { node { email } } } }"#;
        let res = gql_as(srv, None, query).await;
        assert_eq!(
            res["data"],
            json!({ "createUser": { "user": { "email": "bo@x.io", "name": "Bo", "age": null }, "edge": { "node": { "email": "bo@x.io" } } } }),
            "{res:#}"
        );
        let errors = res["errors"].as_array().expect("errors");
        assert_eq!(errors.len(), 1, "{res:#}");
        assert_eq!(errors[0]["path"], json!(["createUser", "user", "age"]));
        assert_eq!(errors[0]["code"], json!(3008));
    }
}
