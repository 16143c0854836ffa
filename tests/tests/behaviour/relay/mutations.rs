//! The Relay API's model mutations (reference §3.2): one `input` argument with the Simple API's
//! arguments and `clientMutationId`, echoed in the payload with `viewer`, the node, its `edge`,
//! its to-one relations and, for deletes, `deletedId`; the same errors and permissions as the
//! Simple API, and the payload whitelist wherever the payload shows the node. The relation
//! mutations take `{aName}Id`, `{bName}Id` and `clientMutationId` in `<Op><R><ModelA>Input`
//! (`set<R>` in `AddTo<R><ModelA>Input`) and answer both nodes and both edges; `deleteMany` and
//! `updateMany` take their filter and data in `input` and answer `count`.

use serde_json::{Value, json};

use crate::simple::introspection::{find, signatures, type_info_at};
use crate::support::{
    ALIAS, MISSING, Server, assert_validation_error, blog, column_of, field_error, node_token,
    with_ids,
};

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

    /// The relation mutations' fields, input types and payload types, and the batch mutations'.
    async fn relation_mutation_schema(srv) {
        let url = relay(srv);
        let mutation = type_info_at(srv, &url, "Mutation").await;
        let cases: &[(&str, &str, &str)] = &[
            ("setUserProfile", "AddToUserProfileUserInput", "SetUserProfilePayload"),
            ("setPinnedPost", "AddToPinnedPostPostInput", "SetPinnedPostPayload"),
            ("unsetPinnedPost", "UnsetPinnedPostPostInput", "UnsetPinnedPostPayload"),
            ("addToUserPosts", "AddToUserPostsUserInput", "AddToUserPostsPayload"),
            ("removeFromUserPosts", "RemoveFromUserPostsUserInput", "RemoveFromUserPostsPayload"),
            ("addToFriends", "AddToFriendsUserInput", "AddToFriendsPayload"),
            ("deleteManyPosts", "DeleteManyPostsInput", "DeleteManyPostsPayload"),
            ("updateManyPosts", "UpdateManyPostsInput", "UpdateManyPostsPayload"),
        ];
        for (field, input, payload) in cases {
            let f = find(&mutation["fields"], field);
            assert_eq!(signatures(&f["args"]), vec![format!("input: {input}!")], "{field}");
            assert_eq!(f["type"]["name"], json!(payload), "{field}");
        }
        // A 1:1 relation has `set`, not `addTo`, so its input takes `addTo`'s name alone.
        let names: Vec<&str> = mutation["fields"].as_array().expect("fields").iter().filter_map(|f| f["name"].as_str()).collect();
        assert!(!names.contains(&"addToUserProfile") && !names.contains(&"unsetUserProfile"), "{names:?}");
        let input = type_info_at(srv, &url, "AddToUserPostsUserInput").await;
        assert_eq!(signatures(&input["inputFields"]), ["postsPostId: ID!", "authorUserId: ID!", "clientMutationId: String!"]);
        let input = type_info_at(srv, &url, "AddToPinnedPostPostInput").await;
        assert_eq!(signatures(&input["inputFields"]), ["pinnedInCategoryId: ID!", "pinnedPostPostId: ID!", "clientMutationId: String!"]);
        let payload = type_info_at(srv, &url, "AddToUserPostsPayload").await;
        assert_eq!(
            signatures(&payload["fields"]),
            ["viewer: Viewer!", "clientMutationId: String!", "authorUser: User", "postsPost: Post", "authorUserEdge: UserEdge", "postsPostEdge: PostEdge"]
        );
        let payload = type_info_at(srv, &url, "SetPinnedPostPayload").await;
        assert_eq!(
            signatures(&payload["fields"]),
            ["viewer: Viewer!", "clientMutationId: String!", "pinnedPostPost: Post", "pinnedInCategory: Category", "pinnedPostPostEdge: PostEdge", "pinnedInCategoryEdge: CategoryEdge"]
        );
        let input = type_info_at(srv, &url, "UpdateManyPostsInput").await;
        assert_eq!(signatures(&input["inputFields"]), ["filter: PostFilter", "data: UpdateManyPostsData!", "clientMutationId: String!"]);
        let payload = type_info_at(srv, &url, "DeleteManyPostsPayload").await;
        assert_eq!(signatures(&payload["fields"]), ["viewer: Viewer!", "clientMutationId: String!", "count: Int!"]);
    }

    /// addTo and removeFrom (1:n, n:m, a symmetric self relation), set and unset (1:1), each
    /// with its payload: both nodes as they are after the change, their edges, the echo.
    async fn relation_mutations(srv) {
        let b = blog(srv).await;
        let run = |text: &str| {
            let text = with_ids(text, &b);
            async move { data(srv, &text).await }
        };
        // gamma is Bob's: adding it to Ann moves it (Post.author is to-one).
        let res = run(r#"mutation { addToUserPosts(input: { postsPostId: "{gamma}", authorUserId: "{ann}", clientMutationId: "r1" }) { clientMutationId viewer { id } authorUser { name posts { edges { node { slug } } } } postsPost { slug author { name } } authorUserEdge { cursor node { name } } postsPostEdge { cursor node { slug } } } }"#).await;
        assert_eq!(
            res,
            json!({ "addToUserPosts": {
                "clientMutationId": "r1",
                "viewer": { "id": "viewer-fixed" },
                "authorUser": { "name": "Ann", "posts": { "edges": [
                    { "node": { "slug": "alpha" } }, { "node": { "slug": "beta" } }, { "node": { "slug": "gamma" } },
                ] } },
                "postsPost": { "slug": "gamma", "author": { "name": "Ann" } },
                "authorUserEdge": { "cursor": b.ann, "node": { "name": "Ann" } },
                "postsPostEdge": { "cursor": b.posts.gamma, "node": { "slug": "gamma" } },
            } })
        );
        let bob = run(r#"{ viewer { User(id: "{bob}") { posts { count } } } }"#).await;
        assert_eq!(bob, json!({ "viewer": { "User": { "posts": { "count": 0 } } } }));
        let res = run(r#"mutation { removeFromUserPosts(input: { postsPostId: "{gamma}", authorUserId: "{ann}", clientMutationId: "r2" }) { clientMutationId postsPost { author { name } } authorUser { posts { count } } } }"#).await;
        assert_eq!(res, json!({ "removeFromUserPosts": { "clientMutationId": "r2", "postsPost": { "author": null }, "authorUser": { "posts": { "count": 2 } } } }));
        // n:m: misc gets gamma; gamma keeps tech.
        let res = run(r#"mutation { addToPostCategories(input: { categoriesCategoryId: "{misc}", postsPostId: "{gamma}", clientMutationId: "r3" }) { postsPost { categories { edges { node { name } } } } categoriesCategoryEdge { cursor } } }"#).await;
        assert_eq!(
            res,
            json!({ "addToPostCategories": {
                "postsPost": { "categories": { "edges": [{ "node": { "name": "tech" } }, { "node": { "name": "misc" } }] } },
                "categoriesCategoryEdge": { "cursor": b.misc },
            } })
        );
        // A symmetric self relation: both see each other.
        let res = run(r#"mutation { addToFriends(input: { friends1UserId: "{bob}", friends2UserId: "{ann}", clientMutationId: "r4" }) { friends2User { name friends { edges { node { name } } } } friends1User { name friends { edges { node { name } } } } } }"#).await;
        assert_eq!(
            res,
            json!({ "addToFriends": {
                "friends2User": { "name": "Ann", "friends": { "edges": [{ "node": { "name": "Bob" } }] } },
                "friends1User": { "name": "Bob", "friends": { "edges": [{ "node": { "name": "Ann" } }] } },
            } })
        );
        // 1:1: set pins alpha in news, then beta steals the pin; unset clears it.
        let set = |post: &str, id: &str| format!(r#"mutation {{ setPinnedPost(input: {{ pinnedInCategoryId: "{{news}}", pinnedPostPostId: "{{{post}}}", clientMutationId: "{id}" }}) {{ clientMutationId pinnedPostPost {{ slug pinnedIn {{ name }} }} pinnedInCategory {{ name pinnedPost {{ slug }} }} pinnedPostPostEdge {{ node {{ slug }} }} pinnedInCategoryEdge {{ node {{ name }} }} }} }}"#);
        let res = run(&set("alpha", "r5")).await;
        assert_eq!(
            res,
            json!({ "setPinnedPost": {
                "clientMutationId": "r5",
                "pinnedPostPost": { "slug": "alpha", "pinnedIn": { "name": "news" } },
                "pinnedInCategory": { "name": "news", "pinnedPost": { "slug": "alpha" } },
                "pinnedPostPostEdge": { "node": { "slug": "alpha" } },
                "pinnedInCategoryEdge": { "node": { "name": "news" } },
            } })
        );
        let res = run(&set("beta", "r6")).await;
        assert_eq!(res["setPinnedPost"]["pinnedInCategory"], json!({ "name": "news", "pinnedPost": { "slug": "beta" } }));
        let alpha = run(r#"{ viewer { Post(id: "{alpha}") { pinnedIn { name } } } }"#).await;
        assert_eq!(alpha, json!({ "viewer": { "Post": { "pinnedIn": null } } }));
        let res = run(r#"mutation { unsetPinnedPost(input: { pinnedInCategoryId: "{news}", pinnedPostPostId: "{beta}", clientMutationId: "r7" }) { clientMutationId pinnedInCategory { pinnedPost { slug } } } }"#).await;
        assert_eq!(res, json!({ "unsetPinnedPost": { "clientMutationId": "r7", "pinnedInCategory": { "pinnedPost": null } } }));
    }

    /// The Simple API's relation errors at the mutation's path, nothing changed: an unknown node
    /// is 3011, a malformed id 3001; write permissions on the relation hold on Relay paths.
    async fn relation_mutation_errors_and_permissions(srv) {
        let b = blog(srv).await;
        let query = with_ids(&format!(r#"mutation {{ addToUserPosts(input: {{ postsPostId: "{MISSING}", authorUserId: "{{ann}}", clientMutationId: "e1" }}) {{ authorUser {{ id }} }} }}"#), &b);
        let res = gql_as(srv, Some(srv.root_token()), &query).await;
        assert_eq!(res["data"], json!({ "addToUserPosts": null }), "{res:#}");
        assert_eq!(res["errors"][0]["code"], json!(3011), "{res:#}");
        assert_eq!(res["errors"][0]["path"], json!(["addToUserPosts"]), "{res:#}");
        let query = with_ids(r#"mutation { addToUserPosts(input: { postsPostId: "not an id!", authorUserId: "{ann}", clientMutationId: "e2" }) { authorUser { id } } }"#, &b);
        let res = gql_as(srv, Some(srv.root_token()), &query).await;
        assert_eq!(res["errors"][0]["code"], json!(3001), "{res:#}");
        let query = with_ids(r#"mutation { addToUserPosts(input: { postsPostId: "{gamma}", authorUserId: "{ann}" }) { authorUser { id } } }"#, &b);
        let res = gql_as(srv, Some(srv.root_token()), &query).await;
        assert_validation_error(&res, "clientMutationId");
        // `UserPosts.connect` lets a user connect posts only to themselves.
        let link = |user: &str| with_ids(&format!(r#"mutation {{ addToUserPosts(input: {{ postsPostId: "{{delta}}", authorUserId: "{{{user}}}", clientMutationId: "e3" }}) {{ clientMutationId postsPost {{ slug }} }} }}"#), &b);
        let bob = node_token(&b.bob, "User");
        for token in [None, Some(bob.as_str())] {
            let res = gql_as(srv, token, &link("ann")).await;
            assert_eq!(res["data"], json!({ "addToUserPosts": null }), "{res:#}");
            assert_eq!(res["errors"][0]["code"], json!(3008), "{res:#}");
        }
        let delta = data(srv, &with_ids(r#"{ viewer { Post(id: "{delta}") { author { id } } } }"#, &b)).await;
        assert_eq!(delta, json!({ "viewer": { "Post": { "author": null } } }));
        let res = gql_as(srv, Some(&bob), &link("bob")).await;
        assert_eq!(res, json!({ "data": { "addToUserPosts": { "clientMutationId": "e3", "postsPost": { "slug": "delta" } } } }));
    }

    /// deleteMany and updateMany take `filter` and `data` in `input` and answer `count`.
    async fn batch_mutations(srv) {
        blog(srv).await;
        let res = data(srv, r#"mutation { updateManyPosts(input: { filter: { slug_in: ["alpha", "beta"] }, data: { votes: 7 }, clientMutationId: "b1" }) { clientMutationId count viewer { allPosts(filter: { votes: 7 }) { count } } } }"#).await;
        assert_eq!(res, json!({ "updateManyPosts": { "clientMutationId": "b1", "count": 2, "viewer": { "allPosts": { "count": 2 } } } }));
        let res = data(srv, r#"mutation { deleteManyPosts(input: { filter: { votes: 7 }, clientMutationId: "b2" }) { clientMutationId count } }"#).await;
        assert_eq!(res, json!({ "deleteManyPosts": { "clientMutationId": "b2", "count": 2 } }));
        // Deleting alpha took its three comments with it (`onDelete: CASCADE`): gamma's is left.
        let res = data(srv, r#"mutation { deleteManyComments(input: { clientMutationId: "b3" }) { count } }"#).await;
        assert_eq!(res["deleteManyComments"]["count"], json!(1), "{res:#}");
        let left = data(srv, "{ viewer { allPosts { count } allComments { count } } }").await;
        assert_eq!(left, json!({ "viewer": { "allPosts": { "count": 2 }, "allComments": { "count": 0 } } }));
        // A bad filter is an error at the path, nothing deleted.
        let res = gql_as(srv, Some(srv.root_token()), r#"mutation { deleteManyPosts(input: { filter: { votes: "x" }, clientMutationId: "b4" }) { count } }"#).await;
        assert!(res.get("errors").is_some(), "{res:#}");
        let left = data(srv, "{ viewer { allPosts { count } } }").await;
        assert_eq!(left, json!({ "viewer": { "allPosts": { "count": 2 } } }));
    }
}
