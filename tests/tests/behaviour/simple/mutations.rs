//! Mutations (§2.5, §2.6, §1.4, §1.8): create with defaults and explicit values, update (also to
//! null), updateOrCreate, delete, system timestamps, and the errors 3001, 3002, 3007, 3010, 3020,
//! 3036 and 3037.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{
    Server, column_of, error_response, field_error, four_posts, is_timestamp, now_timestamp,
    to_seconds,
};

const POST_FIELDS: &str =
    "id slug title body votes rating published status publishedAt metadata tags scores externalId";

/// Takes a timestamp field out of an object (checking its format) so the rest can be compared.
fn take_timestamp(obj: &mut Value, field: &str) -> String {
    let value = obj
        .as_object_mut()
        .and_then(|o| o.remove(field))
        .unwrap_or_else(|| panic!("no `{field}` in {obj}"));
    let text = value.as_str().unwrap_or_default().to_owned();
    assert!(
        is_timestamp(&text),
        "`{field}` is not yyyy-MM-ddTHH:mm:ss.SSSZ: {value}"
    );
    text
}

/// Runs a mutation that must fail with one field error on its root field `field`.
async fn assert_fails(srv: &Server, mutation: &str, field: &str, code: u32, message: &str) {
    assert_eq!(
        srv.gql(mutation).await,
        error_response(
            json!({ field: null }),
            field_error(json!([field]), 1, column_of(mutation, field), code, message)
        ),
        "{mutation}"
    );
}

async fn post_count(srv: &Server) -> Value {
    srv.data("{ _allPostsMeta { count } }").await["_allPostsMeta"]["count"].clone()
}

db_tests! {
    /// The character U+0000 in a value: SQLite stores and finds it; PostgreSQL's text cannot
    /// hold it, so a write or a filter with it is error 3036 with a clear text (never an
    /// internal error) and writes nothing. In a Json value it is an escape (`\u0000`), which
    /// both keep.
    async fn nul_characters_in_values(srv) {
        let postgres = srv.database().postgres_schema().is_some();
        let created = srv.gql(r#"mutation { createCategory(name: "a\u0000b") { name } }"#).await;
        let found = srv.gql(r#"{ allCategories(filter: { name_in: ["a\u0000b"] }) { name } }"#).await;
        let json = srv.gql(r#"mutation { createChild(name: "c", settings: "{\"k\": \"x\\u0000y\"}") { name } }"#).await;
        if postgres {
            let text = "A value holds the character U+0000, which this service's database (PostgreSQL) cannot store or compare. Remove it from the value.";
            for res in [&created, &found] {
                let errors = res["errors"].as_array().unwrap_or_else(|| panic!("an error: {res}"));
                assert_eq!((&errors[0]["code"], &errors[0]["message"]), (&json!(3036), &json!(text)), "{res}");
            }
            let count = srv.data("{ _allCategoriesMeta { count } }").await;
            assert_eq!(count, json!({ "_allCategoriesMeta": { "count": 0 } }));
        } else {
            assert_eq!(created, json!({ "data": { "createCategory": { "name": "a\u{0}b" } } }));
            assert_eq!(found, json!({ "data": { "allCategories": [{ "name": "a\u{0}b" }] } }));
        }
        assert_eq!(json, json!({ "data": { "createChild": { "name": "c" } } }));
        let settings = srv.data("{ allChildren { settings } }").await;
        assert_eq!(settings, json!({ "allChildren": [{ "settings": { "k": "x\u{0}y" } }] }));
    }

    /// Absent arguments get their `@defaultValue`; others are null (§1.8).
    async fn create_applies_defaults(srv) {
        let mut res = srv
            .gql(&format!(r#"mutation {{ createPost(slug: "s", title: "T") {{ {POST_FIELDS} createdAt }} }}"#))
            .await;
        let created = take_timestamp(&mut res["data"]["createPost"], "createdAt");
        let id = res["data"]["createPost"]["id"].clone();
        assert_eq!(
            res,
            json!({ "data": { "createPost": {
                "id": id, "slug": "s", "title": "T", "body": null, "votes": 0, "rating": null,
                "published": false, "status": "DRAFT", "publishedAt": null, "metadata": null,
                "tags": null, "scores": null, "externalId": null,
            } } })
        );
        assert!(created <= now_timestamp());

        let res = srv
            .gql(r#"mutation { child: createChild(name: "Kim") { name birthday weight moods settings } category: createCategory(name: "News") { name position color } user: createUser(email: "a@b.c", name: "Ann") { email name role age verified nicknames } }"#)
            .await;
        assert_eq!(
            res,
            json!({ "data": {
                "child": { "name": "Kim", "birthday": "2020-01-01T00:00:00.000Z", "weight": 3.5, "moods": null, "settings": { "theme": "dark" } },
                "category": { "name": "News", "position": null, "color": "grey" },
                "user": { "email": "a@b.c", "name": "Ann", "role": "READER", "age": null, "verified": false, "nicknames": null },
            } })
        );
    }

    /// Explicit values of every kind are stored and read back unchanged.
    async fn create_with_explicit_values(srv) {
        let mutation = format!(
            r#"mutation {{ createPost(slug: "full", title: "Full", body: "b", votes: -3, rating: 2.75, published: true, status: ARCHIVED, publishedAt: "2017-02-03T04:05:06.789Z", metadata: "{{\"k\": [1, \"two\", null]}}", tags: ["x", "y"], scores: [3, 1, 2], externalId: "ext-9") {{ {POST_FIELDS} }} }}"#
        );
        let res = srv.gql(&mutation).await;
        let id = res["data"]["createPost"]["id"].as_str().unwrap_or_default().to_owned();
        let expected = json!({
            "id": id, "slug": "full", "title": "Full", "body": "b", "votes": -3, "rating": 2.75,
            "published": true, "status": "ARCHIVED", "publishedAt": "2017-02-03T04:05:06.789Z",
            "metadata": { "k": [1, "two", null] }, "tags": ["x", "y"], "scores": [3, 1, 2],
            "externalId": "ext-9",
        });
        assert_eq!(res, json!({ "data": { "createPost": expected } }));
        assert_eq!(
            srv.gql(&format!(r#"{{ Post(id: "{id}") {{ {POST_FIELDS} }} }}"#)).await,
            json!({ "data": { "Post": expected } })
        );

        let res = srv
            .gql(r#"mutation { child: createChild(name: "Lee", birthday: "2019-12-31T23:00:00-01:00", weight: 4, moods: [PUBLISHED, DRAFT], settings: "[]") { name birthday weight moods settings } user: createUser(email: "e@x.io", name: "Eve", role: ADMIN, age: 41, verified: true, nicknames: ["e", "evie"]) { role age verified nicknames } category: createCategory(name: "Tech", position: 7, color: "red") { name position color } }"#)
            .await;
        assert_eq!(
            res,
            json!({ "data": {
                "child": { "name": "Lee", "birthday": "2020-01-01T00:00:00.000Z", "weight": 4.0, "moods": ["PUBLISHED", "DRAFT"], "settings": [] },
                "user": { "role": "ADMIN", "age": 41, "verified": true, "nicknames": ["e", "evie"] },
                "category": { "name": "Tech", "position": 7, "color": "red" },
            } })
        );
    }

    /// `update` changes only the given fields; null clears an optional field.
    async fn update_changes_given_fields(srv) {
        let p = four_posts(srv).await;
        let mutation = format!(
            r#"mutation {{ updatePost(id: "{}", title: "Changed", body: null, externalId: null, tags: ["t"], metadata: "[1,2,3]", status: DRAFT) {{ {POST_FIELDS} }} }}"#,
            p.alpha
        );
        let expected = json!({
            "id": p.alpha, "slug": "alpha", "title": "Changed", "body": null, "votes": 5,
            "rating": 4.5, "published": true, "status": "DRAFT",
            "publishedAt": "2017-01-01T10:00:00.000Z", "metadata": [1, 2, 3], "tags": ["t"],
            "scores": null, "externalId": null,
        });
        assert_eq!(srv.gql(&mutation).await, json!({ "data": { "updatePost": expected } }));
        assert_eq!(
            srv.gql(&format!(r#"{{ Post(id: "{}") {{ {POST_FIELDS} }} }}"#, p.alpha)).await,
            json!({ "data": { "Post": expected } })
        );
        // Other nodes are untouched.
        assert_eq!(
            srv.gql(&format!(r#"{{ Post(id: "{}") {{ title body }} }}"#, p.beta)).await,
            json!({ "data": { "Post": { "title": "hello again", "body": null } } })
        );
    }

    /// Setting a required field to null in `update` → 3020; nothing changes.
    async fn update_required_field_to_null_is_3020(srv) {
        let p = four_posts(srv).await;
        let message = |f: &str| format!("You are trying to set a required field to null. If you are using GraphQL arguments, make sure that you specify a value for all arguments. Fieldname if known: {f}");
        for field in ["title", "votes", "status"] {
            let mutation = format!(r#"mutation {{ updatePost(id: "{}", {field}: null) {{ id }} }}"#, p.alpha);
            assert_fails(srv, &mutation, "updatePost", 3020, &message(field)).await;
        }
        assert_eq!(
            srv.gql(&format!(r#"{{ Post(id: "{}") {{ title votes status }} }}"#, p.alpha)).await,
            json!({ "data": { "Post": { "title": "Hello World", "votes": 5, "status": "PUBLISHED" } } })
        );
    }

    /// `updateOrCreate` updates an existing node, and creates (with a fresh id) otherwise.
    async fn update_or_create_both_branches(srv) {
        let p = four_posts(srv).await;
        let mutation = format!(
            r#"mutation {{ updateOrCreatePost(update: {{ id: "{}", title: "Updated" }}, create: {{ slug: "new", title: "Created" }}) {{ id slug title }} }}"#,
            p.beta
        );
        assert_eq!(
            srv.gql(&mutation).await,
            json!({ "data": { "updateOrCreatePost": { "id": p.beta, "slug": "beta", "title": "Updated" } } })
        );
        assert_eq!(post_count(srv).await, json!(4));

        let missing = "cnotthere0000000000000000";
        let mutation = format!(
            r#"mutation {{ updateOrCreatePost(update: {{ id: "{missing}", title: "Updated" }}, create: {{ slug: "new", title: "Created", votes: 7 }}) {{ id slug title votes status }} }}"#
        );
        let mut res = srv.gql(&mutation).await;
        let id = res["data"]["updateOrCreatePost"]
            .as_object_mut()
            .and_then(|o| o.remove("id"))
            .unwrap_or_default();
        assert!(
            id.as_str().is_some_and(|id| crate::support::is_cuid(id) && id != missing),
            "the created node gets a fresh id, got {id}"
        );
        assert_eq!(
            res,
            json!({ "data": { "updateOrCreatePost": { "slug": "new", "title": "Created", "votes": 7, "status": "DRAFT" } } })
        );
        assert_eq!(post_count(srv).await, json!(5));
    }

    /// `delete` returns the node as it was; it is gone afterwards.
    async fn delete_returns_the_old_node(srv) {
        let p = four_posts(srv).await;
        let mutation = format!(
            r#"mutation {{ deletePost(id: "{}") {{ {POST_FIELDS} }} }}"#,
            p.gamma
        );
        assert_eq!(
            srv.gql(&mutation).await,
            json!({ "data": { "deletePost": {
                "id": p.gamma, "slug": "gamma", "title": "100% sure_thing", "body": "third",
                "votes": 5, "rating": 1.25, "published": true, "status": "ARCHIVED",
                "publishedAt": "2016-06-15T00:00:00.000Z", "metadata": null, "tags": null,
                "scores": null, "externalId": null,
            } } })
        );
        assert_eq!(
            srv.gql(&format!(r#"{{ Post(id: "{}") {{ id }} node(id: "{}") {{ id }} _allPostsMeta {{ count }} }}"#, p.gamma, p.gamma)).await,
            json!({ "data": { "Post": null, "node": null, "_allPostsMeta": { "count": 3 } } })
        );
        // Deleting it again: it does not exist any more.
        assert_fails(srv, &mutation.replace(POST_FIELDS, "id"), "deletePost", 3002, &format!("'Post' has no item with id '{}'", p.gamma)).await;
        // The slug is free again.
        srv.create("Post", r#"slug: "gamma", title: "again""#).await;
    }

    /// A malformed id → 3001.
    async fn invalid_id_is_3001(srv) {
        four_posts(srv).await;
        assert_fails(srv, r#"mutation { deletePost(id: "not valid!") { id } }"#, "deletePost", 3001, "The given id 'not valid!' is invalid.").await;
        let long = "c".repeat(26);
        assert_fails(srv, &format!(r#"mutation {{ deletePost(id: "{long}") {{ id }} }}"#), "deletePost", 3001, &format!("The given id '{long}' is invalid.")).await;
        assert_eq!(post_count(srv).await, json!(4));
    }

    /// Updating or deleting a node that does not exist → 3002.
    async fn missing_node_is_3002(srv) {
        four_posts(srv).await;
        assert_fails(srv, r#"mutation { updatePost(id: "wrongid", title: "x") { id } }"#, "updatePost", 3002, "'Post' has no item with id 'wrongid'").await;
        assert_fails(srv, r#"mutation { deletePost(id: "cnotthere0000000000000000") { id } }"#, "deletePost", 3002, "'Post' has no item with id 'cnotthere0000000000000000'").await;
        assert_fails(srv, r#"mutation { updateCategory(id: "wrongid", name: "x") { id } }"#, "updateCategory", 3002, "'Category' has no item with id 'wrongid'").await;
        assert_eq!(post_count(srv).await, json!(4));
    }

    /// Unique fields (3010), case-insensitively for strings; nulls never collide; a failed
    /// mutation writes nothing.
    async fn unique_violation_is_3010(srv) {
        let p = four_posts(srv).await;
        let on = |model: &str, field: &str| format!("A unique constraint would be violated on {model}. Details: Field name = {field}");
        assert_fails(srv, r#"mutation { createPost(slug: "alpha", title: "dup") { id } }"#, "createPost", 3010, &on("Post", "slug")).await;
        assert_fails(srv, r#"mutation { createPost(slug: "ALPHA", title: "dup") { id } }"#, "createPost", 3010, &on("Post", "slug")).await;
        assert_fails(srv, r#"mutation { createPost(slug: "fresh", title: "dup", externalId: "ext-4") { id } }"#, "createPost", 3010, &on("Post", "externalId")).await;
        assert_fails(srv, &format!(r#"mutation {{ updatePost(id: "{}", slug: "Delta") {{ id }} }}"#, p.beta), "updatePost", 3010, &on("Post", "slug")).await;
        assert_eq!(post_count(srv).await, json!(4));
        assert_eq!(
            srv.gql(&format!(r#"{{ Post(id: "{}") {{ slug }} }}"#, p.beta)).await,
            json!({ "data": { "Post": { "slug": "beta" } } })
        );

        srv.create("Category", r#"name: "News""#).await;
        assert_fails(srv, r#"mutation { createCategory(name: "news") { id } }"#, "createCategory", 3010, &on("Category", "name")).await;
        srv.create("User", r#"email: "ann@example.com", name: "Ann""#).await;
        assert_fails(srv, r#"mutation { createUser(email: "Ann@Example.COM", name: "Other") { id } }"#, "createUser", 3010, &on("User", "email")).await;

        // Two more posts without `externalId`: null never violates uniqueness.
        srv.create("Post", r#"slug: "n1", title: "n""#).await;
        srv.create("Post", r#"slug: "n2", title: "n", externalId: null"#).await;
        // Updating a node to its own value is no violation.
        assert_eq!(
            srv.gql(&format!(r#"mutation {{ updatePost(id: "{}", slug: "alpha") {{ slug }} }}"#, p.alpha)).await,
            json!({ "data": { "updatePost": { "slug": "alpha" } } })
        );
    }

    /// Explicit null for a required field with a default in `create` → 3036.
    async fn null_for_required_default_is_3036(srv) {
        let invalid = |field: &str, model: &str| format!("The input value null was not valid for field {field} of type {model}.");
        assert_fails(srv, r#"mutation { createPost(slug: "s", title: "t", votes: null) { id } }"#, "createPost", 3036, &invalid("votes", "Post")).await;
        assert_fails(srv, r#"mutation { createPost(slug: "s", title: "t", status: null) { id } }"#, "createPost", 3036, &invalid("status", "Post")).await;
        assert_fails(srv, r#"mutation { createUser(email: "e", name: "n", role: null) { id } }"#, "createUser", 3036, &invalid("role", "User")).await;
        assert_eq!(post_count(srv).await, json!(0));
    }

    /// Strings longer than 262144 characters → 3007; exactly 262144 is fine.
    async fn too_long_string_is_3007(srv) {
        let query = "mutation ($slug: String!, $t: String!) { createPost(slug: $slug, title: $t) { id } }";
        let res = srv.gql_vars(query, json!({ "slug": "long", "t": "x".repeat(262_145) })).await;
        assert_eq!(
            res,
            error_response(
                json!({ "createPost": null }),
                field_error(json!(["createPost"]), 1, column_of(query, "createPost"), 3007, "Value for field title is too long.")
            )
        );
        let res = srv.gql_vars(query, json!({ "slug": "max", "t": "y".repeat(262_144) })).await;
        assert!(res["data"]["createPost"]["id"].is_string(), "262144 characters are allowed");
        let read = srv.data(r#"{ Post(slug: "max") { title } }"#).await;
        assert_eq!(read["Post"]["title"].as_str().map(str::len), Some(262_144));
        assert_eq!(post_count(srv).await, json!(1));
    }

    /// Json must end up an object or array → otherwise 3037.
    async fn json_that_is_no_object_or_array_is_3037(srv) {
        assert_fails(srv, r#"mutation { createPost(slug: "s", title: "t", metadata: "42") { id } }"#, "createPost", 3037, "The value in the field 'metadata' is not a valid Json: '42'").await;
        let query = "mutation ($m: Json) { createPost(slug: \"s\", title: \"t\", metadata: $m) { id } }";
        assert_eq!(
            srv.gql_vars(query, json!({ "m": 42 })).await,
            error_response(
                json!({ "createPost": null }),
                field_error(json!(["createPost"]), 1, column_of(query, "createPost"), 3037, "The value in the field 'metadata' is not a valid Json: '42'")
            )
        );
        assert_eq!(post_count(srv).await, json!(0));
    }

    /// Json literals are strings holding JSON; through variables any JSON value is taken, and a
    /// JSON string is read as JSON text (§2.10).
    async fn json_inputs(srv) {
        let res = srv
            .gql(r#"mutation { a: createPost(slug: "a", title: "t", metadata: "[1,2,3]") { metadata } b: createPost(slug: "b", title: "t", metadata: "{\"x\": {\"y\": [true, null, 1.5]}}") { metadata } }"#)
            .await;
        assert_eq!(
            res,
            json!({ "data": { "a": { "metadata": [1, 2, 3] }, "b": { "metadata": { "x": { "y": [true, null, 1.5] } } } } })
        );
        let query = "mutation ($m: Json, $s: String!) { createPost(slug: $s, title: \"t\", metadata: $m) { metadata } }";
        assert_eq!(
            srv.gql_vars(query, json!({ "s": "c", "m": { "nested": ["v", 2] } })).await,
            json!({ "data": { "createPost": { "metadata": { "nested": ["v", 2] } } } })
        );
        assert_eq!(
            srv.gql_vars(query, json!({ "s": "d", "m": "[4, 5]" })).await,
            json!({ "data": { "createPost": { "metadata": [4, 5] } } })
        );
        assert_eq!(
            srv.gql(r#"{ allPosts { slug metadata } }"#).await,
            json!({ "data": { "allPosts": [
                { "slug": "a", "metadata": [1, 2, 3] },
                { "slug": "b", "metadata": { "x": { "y": [true, null, 1.5] } } },
                { "slug": "c", "metadata": { "nested": ["v", 2] } },
                { "slug": "d", "metadata": [4, 5] },
            ] } })
        );
    }

    /// `createdAt`/`updatedAt` are set on create; an update moves `updatedAt` only (§1.4).
    async fn system_timestamps(srv) {
        let before = to_seconds(&now_timestamp());
        let mut res = srv
            .gql(r#"mutation { createUser(email: "t@x.io", name: "Tim") { id name createdAt updatedAt } }"#)
            .await;
        let after = now_timestamp();
        let created = take_timestamp(&mut res["data"]["createUser"], "createdAt");
        let updated = take_timestamp(&mut res["data"]["createUser"], "updatedAt");
        let id = res["data"]["createUser"]["id"].as_str().unwrap_or_default().to_owned();
        assert_eq!(res, json!({ "data": { "createUser": { "id": id, "name": "Tim" } } }));
        assert!(before <= created && created <= after, "createdAt {created} not in [{before}, {after}]");
        assert_eq!(created, updated, "a new node was last updated when it was created");

        // Second precision is allowed, so wait more than a second.
        tokio::time::sleep(Duration::from_millis(1100)).await;
        let mut res = srv
            .gql(&format!(r#"mutation {{ updateUser(id: "{id}", name: "Tom") {{ name createdAt updatedAt }} }}"#))
            .await;
        let created2 = take_timestamp(&mut res["data"]["updateUser"], "createdAt");
        let updated2 = take_timestamp(&mut res["data"]["updateUser"], "updatedAt");
        assert_eq!(res, json!({ "data": { "updateUser": { "name": "Tom" } } }));
        assert_eq!(created2, created, "createdAt never changes");
        assert!(updated2 > updated, "updatedAt moves on update: {updated} → {updated2}");
        assert!(updated2 <= now_timestamp());

        // Posts declare only `createdAt`; an update keeps it.
        let post = srv.create("Post", r#"slug: "p", title: "t""#).await;
        let first = srv.data(&format!(r#"{{ Post(id: "{post}") {{ createdAt }} }}"#)).await;
        let res = srv
            .gql(&format!(r#"mutation {{ updatePost(id: "{post}", title: "u") {{ title createdAt }} }}"#))
            .await;
        assert_eq!(
            res,
            json!({ "data": { "updatePost": { "title": "u", "createdAt": first["Post"]["createdAt"] } } })
        );
    }

    /// The executor keeps the parsed document of a mutation text it answered and reuses it
    /// for the same text: later requests are still validated against their variables and
    /// answered as a text seen for the first time is.
    async fn a_mutation_text_sent_again_is_answered_as_a_new_one(srv) {
        let text = "mutation Make($slug: String!, $title: String!) { \
                    createPost(slug: $slug, title: $title) { slug title votes } }";
        // The same operation as another text (one more space): parsed afresh each time it is new.
        let fresh = |n: usize| format!("{text}{}", " ".repeat(n + 1));
        let before = post_count(srv).await;
        for (n, (slug, title)) in [("a", "A"), ("b", "B"), ("c", "C")].into_iter().enumerate() {
            let vars = json!({ "slug": slug, "title": title });
            let again = srv.gql_vars(text, vars.clone()).await;
            assert_eq!(
                again,
                json!({ "data": { "createPost": { "slug": slug, "title": title, "votes": 0 } } })
            );
            let vars = json!({ "slug": format!("{slug}2"), "title": title });
            let new = srv.gql_vars(&fresh(n), vars).await;
            assert_eq!(new["data"]["createPost"]["title"], json!(title), "{new}");
        }
        // Bad variables: the same errors as for a text never seen, and nothing written.
        for vars in [json!({ "slug": 5, "title": "T" }), json!({ "title": "T" })] {
            let again = srv.gql_vars(text, vars.clone()).await;
            let new = srv.gql_vars(&fresh(9), vars.clone()).await;
            assert!(again.get("errors").is_some(), "{again}");
            assert_eq!(again, new, "{vars}");
        }
        let after = post_count(srv).await;
        assert_eq!(after.as_i64(), before.as_i64().map(|n| n + 6));
    }
}
