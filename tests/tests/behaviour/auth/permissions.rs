//! Permissions (reference §5) with the rules of `example-model/svc.yml`: read checks per node and
//! per field (nodes are never dropped), the field-coverage rule of creates and updates, query
//! permissions with every kind of variable, `authenticated`, delete checks, connect and
//! disconnect checks in nested mutations, `<f>Id(s)` arguments and relation mutations, the
//! mutation payload whitelist, types without any permission, and the permission endpoint.
//!
//! Every denied mutation is checked to have written nothing.

use serde_json::{Value, json};

use crate::support::{Server, counts, node_token};

const READ_DENIED: &str = "Insufficient Permissions";
const WRITE_DENIED: &str = "Insufficient permissions for this mutation";
const CONNECT_DENIED: &str = "No CONNECT permissions";
const DISCONNECT_DENIED: &str = "No DISCONNECT permissions";

/// Users with each role, their node tokens, and posts.
struct People {
    admin: String,
    editor: String,
    reader: String,
    admin_token: String,
    editor_token: String,
    reader_token: String,
    /// The editor's draft (`body: "secret"`).
    draft: String,
    /// A draft written by the reader (created with the root token).
    readers_draft: String,
    category: String,
}

async fn people(srv: &Server) -> People {
    let user = |name: &str, role: &str| {
        format!(r#"email: "{name}@example.com", name: "{name}", role: {role}"#)
    };
    let admin = srv.create("User", &user("ada", "ADMIN")).await;
    let editor = srv.create("User", &user("eve", "EDITOR")).await;
    let reader = srv.create("User", &user("rob", "READER")).await;
    let post = |slug: &str, status: &str, body: &str, author: &str| {
        format!(
            r#"slug: "{slug}", title: "{slug} title", status: {status}, body: "{body}", authorId: "{author}""#
        )
    };
    let draft = srv
        .create("Post", &post("draft", "DRAFT", "secret", &editor))
        .await;
    srv.create("Post", &post("published", "PUBLISHED", "hello", &editor))
        .await;
    let readers_draft = srv
        .create("Post", &post("readers", "DRAFT", "mine", &reader))
        .await;
    let category = srv.create("Category", r#"name: "news""#).await;
    People {
        admin_token: node_token(&admin, "User"),
        editor_token: node_token(&editor, "User"),
        reader_token: node_token(&reader, "User"),
        admin,
        editor,
        reader,
        draft,
        readers_draft,
        category,
    }
}

/// The errors of a response as `(path, code, message)`.
fn errors(res: &Value) -> Vec<(Value, u64, String)> {
    res["errors"]
        .as_array()
        .map(|errors| {
            errors
                .iter()
                .map(|e| {
                    (
                        e["path"].clone(),
                        e["code"].as_u64().unwrap_or(0),
                        e["message"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// [`errors`] sorted by path (root fields resolve concurrently, so their errors come in any
/// order).
fn errors_by_path(res: &Value) -> Vec<(Value, u64, String)> {
    let mut errs = errors(res);
    errs.sort_by_key(|(path, _, _)| path.to_string());
    errs
}

/// A 3008 error at `path` with `message`.
fn denied(path: Value, message: &str) -> (Value, u64, String) {
    (path, 3008, message.to_owned())
}

/// Runs a mutation with `token` that must be denied with `message` on its root field `field`,
/// and checks that nothing was written.
async fn assert_denied(
    srv: &Server,
    token: Option<&str>,
    mutation: &str,
    field: &str,
    message: &str,
) {
    let before = counts(srv).await;
    let res = srv.gql_as(token, mutation).await;
    assert_eq!(res["data"][field], Value::Null, "{mutation}\n{res:#}");
    assert_eq!(
        errors(&res),
        vec![denied(json!([field]), message)],
        "{mutation}"
    );
    assert_eq!(
        counts(srv).await,
        before,
        "a denied mutation wrote something: {mutation}"
    );
}

/// Runs a query or mutation with `token` that must succeed; returns `data`.
async fn allowed(srv: &Server, token: Option<&str>, query: &str) -> Value {
    let res = srv.gql_as(token, query).await;
    assert!(res.get("errors").is_none(), "{query}\n{res:#}");
    res["data"].clone()
}

db_tests! {
    /// Anonymous reads: the query-less fields of every post, the rest only of published posts;
    /// a forbidden field is a 3008 error at its path and `null`, and no node is dropped.
    async fn reads_are_checked_per_node_and_field(srv) {
        let p = people(srv).await;
        let res = srv.gql_as(None, "{ allPosts { slug body } }").await;
        assert_eq!(
            res["data"],
            json!({ "allPosts": [
                { "slug": "draft", "body": null },
                { "slug": "published", "body": "hello" },
                { "slug": "readers", "body": null },
            ] }),
            "{res:#}"
        );
        assert_eq!(
            errors(&res),
            vec![
                denied(json!(["allPosts", 0, "body"]), READ_DENIED),
                denied(json!(["allPosts", 2, "body"]), READ_DENIED),
            ]
        );
        // The author reads their own draft in full (`author: { id: $user_id }`).
        let data = allowed(srv, Some(&p.editor_token), r#"{ a: Post(slug: "draft") { body } b: Post(slug: "published") { body } }"#).await;
        assert_eq!(data, json!({ "a": { "body": "secret" }, "b": { "body": "hello" } }));
        let res = srv.gql_as(Some(&p.editor_token), r#"{ Post(slug: "readers") { slug body } }"#).await;
        assert_eq!(res["data"], json!({ "Post": { "slug": "readers", "body": null } }));
        assert_eq!(errors(&res), vec![denied(json!(["Post", "body"]), READ_DENIED)]);
        // Through `node` and through a relation field the same rules hold.
        let q = format!(r#"{{ node(id: "{}") {{ id ... on Post {{ body }} }} }}"#, p.draft);
        let res = srv.gql_as(None, &q).await;
        assert_eq!(res["data"], json!({ "node": { "id": p.draft, "body": null } }));
        assert_eq!(errors(&res), vec![denied(json!(["node", "body"]), READ_DENIED)]);
        let q = format!(r#"{{ User(id: "{}") {{ posts {{ slug body }} }} }}"#, p.editor);
        let data = allowed(srv, Some(&p.editor_token), &q).await;
        assert_eq!(data, json!({ "User": { "posts": [
            { "slug": "draft", "body": "secret" },
            { "slug": "published", "body": "hello" },
        ] } }));
    }

    /// A list read evaluates the read queries in its own statement, for exactly the nodes of
    /// its page: pages cut by `last`, `skip`, cursors, relation filters and orders that need a
    /// sort all get the right node's verdict, fields asked through a fragment included.
    async fn list_pages_carry_their_read_checks(srv) {
        let p = people(srv).await;
        let q = format!(
            r#"{{
                a: allPosts(orderBy: slug_DESC, last: 2) {{ slug body }}
                b: allPosts(orderBy: slug_ASC, skip: 1, first: 2) {{ slug body }}
                c: allPosts(filter: {{ author: {{ name: "rob" }} }}) {{ slug body }}
                d: allPosts(filter: {{ slug_in: ["draft", "readers"] }}, orderBy: title_DESC) {{ slug ...F }}
                e: allPosts(after: "{}") {{ slug body }}
            }}
            fragment F on Post {{ body }}"#,
            p.draft
        );
        let res = srv.gql_as(Some(&p.reader_token), &q).await;
        assert_eq!(
            res["data"],
            json!({
                "a": [{ "slug": "published", "body": "hello" }, { "slug": "draft", "body": null }],
                "b": [{ "slug": "published", "body": "hello" }, { "slug": "readers", "body": "mine" }],
                "c": [{ "slug": "readers", "body": "mine" }],
                "d": [{ "slug": "readers", "body": "mine" }, { "slug": "draft", "body": null }],
                "e": [{ "slug": "published", "body": "hello" }, { "slug": "readers", "body": "mine" }],
            }),
            "{res:#}"
        );
        assert_eq!(
            errors_by_path(&res),
            vec![
                denied(json!(["a", 1, "body"]), READ_DENIED),
                denied(json!(["d", 1, "body"]), READ_DENIED),
            ]
        );
        // Relation pages too: an admin user (not the author) reads the editor's posts.
        let q = format!(
            r#"{{ User(id: "{}") {{ all: posts(orderBy: slug_ASC) {{ slug body }} last: posts(orderBy: slug_DESC, last: 1) {{ slug body }} }} }}"#,
            p.editor
        );
        let res = srv.gql_as(Some(&p.admin_token), &q).await;
        assert_eq!(
            res["data"],
            json!({ "User": {
                "all": [{ "slug": "draft", "body": null }, { "slug": "published", "body": "hello" }],
                "last": [{ "slug": "draft", "body": null }],
            } }),
            "{res:#}"
        );
        assert_eq!(
            errors_by_path(&res),
            vec![
                denied(json!(["User", "all", 0, "body"]), READ_DENIED),
                denied(json!(["User", "last", 0, "body"]), READ_DENIED),
            ]
        );
        // The author's verdicts differ from the reader's in the same statement shape.
        let data = allowed(srv, Some(&p.editor_token), "{ allPosts(orderBy: slug_DESC, last: 2) { slug body } }").await;
        assert_eq!(data, json!({ "allPosts": [
            { "slug": "published", "body": "hello" },
            { "slug": "draft", "body": "secret" },
        ] }));
    }

    /// A forbidden non-null field nulls its parent as GraphQL requires: `votes: Int!` of a draft
    /// makes the whole non-null list, and so `data`, null.
    async fn forbidden_required_field_nulls_up_to_a_nullable_parent(srv) {
        people(srv).await;
        let res = srv.gql_as(None, "{ allPosts { votes } }").await;
        assert_eq!(res["data"], Value::Null, "{res:#}");
        assert!(errors(&res).contains(&denied(json!(["allPosts", 0, "votes"]), READ_DENIED)), "{res:#}");
        let res = srv.gql_as(None, r#"{ Post(slug: "draft") { votes } }"#).await;
        assert_eq!(res["data"], json!({ "Post": null }), "{res:#}");
        assert_eq!(errors(&res), vec![denied(json!(["Post", "votes"]), READ_DENIED)]);
    }

    /// `authenticated: true` rules apply only with a valid token; a query using `$node_email`
    /// (declared by the server) lets users read their own record; a query that does not depend
    /// on the node (`role: ADMIN`) opens every record to admins.
    async fn authenticated_rules_and_node_variables(srv) {
        let p = people(srv).await;
        let res = srv.gql_as(None, "{ allUsers { name } }").await;
        assert_eq!(
            errors(&res),
            (0..3).map(|i| denied(json!(["allUsers", i, "name"]), READ_DENIED)).collect::<Vec<_>>()
        );
        // An invalid token counts as none.
        let forged = format!("{}x", p.editor_token);
        let res = srv.gql_as(Some(&forged), "{ allUsers { name } }").await;
        assert_eq!(errors(&res).len(), 3, "{res:#}");
        let q = format!(r#"mutation {{ updateUser(id: "{}", age: 41) {{ id }} }}"#, p.reader);
        srv.data(&q).await;
        let res = srv.gql_as(Some(&p.reader_token), "{ allUsers { name age } }").await;
        assert_eq!(
            res["data"],
            json!({ "allUsers": [
                { "name": "ada", "age": null },
                { "name": "eve", "age": null },
                { "name": "rob", "age": 41 },
            ] })
        );
        assert_eq!(
            errors(&res),
            vec![
                denied(json!(["allUsers", 0, "age"]), READ_DENIED),
                denied(json!(["allUsers", 1, "age"]), READ_DENIED),
            ]
        );
        // A forbidden non-null field (`email: String!`) nulls its node, and so the whole list.
        let res = srv.gql_as(Some(&p.reader_token), "{ allUsers { email } }").await;
        assert_eq!(res["data"], Value::Null, "{res:#}");
        assert_eq!(errors(&res).len(), 2, "{res:#}");
        let data = allowed(srv, Some(&p.admin_token), "{ allUsers { email role } }").await;
        assert_eq!(data["allUsers"][1], json!({ "email": "eve@example.com", "role": "EDITOR" }));
        // `user` returns the token's node, read-checked like any other.
        let data = allowed(srv, Some(&p.reader_token), "{ user { id name email } }").await;
        assert_eq!(data, json!({ "user": { "id": p.reader, "name": "rob", "email": "rob@example.com" } }));
    }

    /// A field-scoped query permission: a profile's bio only for its own user; `id` for all.
    async fn field_scoped_query_permission(srv) {
        let p = people(srv).await;
        let q = format!(r#"mutation {{ createProfile(bio: "hi", userId: "{}") {{ id }} }}"#, p.reader);
        srv.data(&q).await;
        let res = srv.gql_as(Some(&p.editor_token), "{ allProfiles { id bio } }").await;
        assert_eq!(errors(&res), vec![denied(json!(["allProfiles", 0, "bio"]), READ_DENIED)]);
        assert!(res["data"]["allProfiles"][0]["id"].is_string());
        let data = allowed(srv, Some(&p.reader_token), "{ allProfiles { bio } }").await;
        assert_eq!(data, json!({ "allProfiles": [{ "bio": "hi" }] }));
    }

    /// A type without any permission is closed to everybody but root tokens; its `_meta` count
    /// and relation fields are not checked.
    async fn no_permission_means_denied(srv) {
        let p = people(srv).await;
        srv.create("Child", r#"name: "kid""#).await;
        assert_denied(srv, Some(&p.admin_token), r#"mutation { createChild(name: "x") { id } }"#, "createChild", WRITE_DENIED).await;
        assert_denied(srv, None, r#"mutation { createChild(name: "x") { id } }"#, "createChild", WRITE_DENIED).await;
        let res = srv.gql_as(Some(&p.admin_token), "{ allChildren { weight } _allChildrenMeta { count } }").await;
        assert_eq!(errors(&res), vec![denied(json!(["allChildren", 0, "weight"]), READ_DENIED)]);
        assert_eq!(res["data"]["allChildren"], json!([{ "weight": null }]));
        assert_eq!(res["data"]["_allChildrenMeta"], json!({ "count": 1 }));
        // The root token passes everything.
        allowed(srv, Some(srv.root_token()), "{ allChildren { name } }").await;
    }

    /// Field coverage of a create: anyone signs up with `email` and `name`, nobody sets `role`;
    /// the payload returns the given fields and `id` although `User.read` needs a token.
    async fn create_field_coverage_and_payload_whitelist(srv) {
        people(srv).await;
        let data = allowed(srv, None, r#"mutation { createUser(email: "new@example.com", name: "new") { id email name } }"#).await;
        assert_eq!(data["createUser"]["email"], "new@example.com");
        assert_denied(srv, None, r#"mutation { createUser(email: "x@example.com", name: "x", role: ADMIN) { id } }"#, "createUser", WRITE_DENIED).await;
        // `role` was not given, so it is read-checked: the non-null field nulls the payload.
        let res = srv.gql_as(None, r#"mutation { createUser(email: "y@example.com", name: "y") { id role } }"#).await;
        assert_eq!(res["data"], json!({ "createUser": null }), "{res:#}");
        assert_eq!(errors(&res), vec![denied(json!(["createUser", "role"]), READ_DENIED)]);
        // An alias names the payload; the whitelist follows it.
        let data = allowed(srv, None, r#"mutation { u: createUser(email: "z@example.com", name: "z") { id name } }"#).await;
        assert_eq!(data["u"]["name"], "z");
    }

    /// A create under a query permission with `$user_id` and `$input_authorId`: editors create
    /// posts as themselves only.
    async fn create_with_query_permission(srv) {
        let p = people(srv).await;
        let create = |author: &str| format!(r#"mutation {{ createPost(slug: "new", title: "New", authorId: "{author}") {{ id slug }} }}"#);
        assert_denied(srv, None, &create(&p.editor), "createPost", WRITE_DENIED).await;
        assert_denied(srv, Some(&p.reader_token), &create(&p.reader), "createPost", WRITE_DENIED).await;
        assert_denied(srv, Some(&p.editor_token), &create(&p.reader), "createPost", WRITE_DENIED).await;
        assert_denied(srv, Some(&p.editor_token), r#"mutation { createPost(slug: "new", title: "New") { id } }"#, "createPost", WRITE_DENIED).await;
        let data = allowed(srv, Some(&p.editor_token), &create(&p.editor)).await;
        assert_eq!(data["createPost"]["slug"], "new");
    }

    /// Updates: anyone votes (a query-less field permission); other fields need the author's
    /// own-post query (`$node_id`, `$user_id`); fields mix both kinds of grant.
    async fn update_rules(srv) {
        let p = people(srv).await;
        let vote = |id: &str| format!(r#"mutation {{ updatePost(id: "{id}", votes: 5) {{ id votes }} }}"#);
        let data = allowed(srv, None, &vote(&p.draft)).await;
        assert_eq!(data["updatePost"], json!({ "id": p.draft, "votes": 5 }));
        let retitle = |id: &str, extra: &str| format!(r#"mutation {{ updatePost(id: "{id}", title: "T"{extra}) {{ title }} }}"#);
        assert_denied(srv, None, &retitle(&p.draft, ""), "updatePost", WRITE_DENIED).await;
        assert_denied(srv, Some(&p.reader_token), &retitle(&p.draft, ""), "updatePost", WRITE_DENIED).await;
        assert_denied(srv, Some(&p.editor_token), &retitle(&p.readers_draft, ", votes: 1"), "updatePost", WRITE_DENIED).await;
        let data = allowed(srv, Some(&p.editor_token), &retitle(&p.draft, ", votes: 2")).await;
        assert_eq!(data["updatePost"]["title"], "T");
        // A user changes their own name but not someone else's, and never their role.
        let rename = |id: &str, extra: &str| format!(r#"mutation {{ updateUser(id: "{id}", name: "R"{extra}) {{ name }} }}"#);
        allowed(srv, Some(&p.reader_token), &rename(&p.reader, "")).await;
        assert_denied(srv, Some(&p.reader_token), &rename(&p.editor, ""), "updateUser", WRITE_DENIED).await;
        assert_denied(srv, Some(&p.reader_token), &rename(&p.reader, ", role: ADMIN"), "updateUser", WRITE_DENIED).await;
        // A node that does not exist is reported as such.
        let res = srv.gql_as(Some(&p.editor_token), r#"mutation { updatePost(id: "cnotthere0000000000000000", title: "T") { id } }"#).await;
        assert_eq!(errors(&res)[0].1, 3002, "{res:#}");
    }

    /// `$old_<f>` is the stored value and `$input_<f>` the value given, for every node an
    /// update touches: a category may only move up (`position` decreases), in
    /// `updateCategory`, in `updateManyCategories` (all matched nodes must pass, or nothing is
    /// written) and in `updateOrCreateCategory`, whose create branch follows the create rules.
    async fn update_queries_see_old_and_input_values(srv) {
        let a = srv.create("Category", r#"name: "a", position: 5"#).await;
        srv.create("Category", r#"name: "b", position: 1"#).await;
        let moved = |id: &str, position: i32| format!(r#"mutation {{ updateCategory(id: "{id}", position: {position}) {{ position }} }}"#);
        allowed(srv, None, &moved(&a, 4)).await;
        assert_denied(srv, None, &moved(&a, 4), "updateCategory", WRITE_DENIED).await;
        assert_denied(srv, None, &moved(&a, 6), "updateCategory", WRITE_DENIED).await;
        let data = allowed(srv, None, &moved(&a, 3)).await;
        assert_eq!(data["updateCategory"]["position"], 3);
        // Moving both to 2 would move `b` (at 1) down: denied as a whole.
        let many = |filter: &str, position: i32| format!(r#"mutation {{ updateManyCategories(filter: {filter}, data: {{ position: {position} }}) {{ count }} }}"#);
        assert_denied(srv, None, &many(r#"{ position_gt: 0 }"#, 2), "updateManyCategories", WRITE_DENIED).await;
        let data = allowed(srv, None, &many(r#"{ position_gt: 1 }"#, 2)).await;
        assert_eq!(data["updateManyCategories"]["count"], 1);
        // updateOrCreate: an existing node is updated under the update rules...
        let upsert = |id: &str, position: i32, create: &str| format!(
            r#"mutation {{ updateOrCreateCategory(update: {{ id: "{id}", position: {position} }}, create: {{ {create} }}) {{ name position }} }}"#
        );
        assert_denied(srv, None, &upsert(&a, 2, r#"name: "c""#), "updateOrCreateCategory", WRITE_DENIED).await;
        let data = allowed(srv, None, &upsert(&a, 0, r#"name: "c""#)).await;
        assert_eq!(data["updateOrCreateCategory"], json!({ "name": "a", "position": 0 }));
        // ...a missing one is created under the create rules (a name only).
        let missing = "cnotthere0000000000000000";
        assert_denied(srv, None, &upsert(missing, 0, r#"name: "c", position: 9"#), "updateOrCreateCategory", WRITE_DENIED).await;
        let data = allowed(srv, None, &upsert(missing, 0, r#"name: "c""#)).await;
        assert_eq!(data["updateOrCreateCategory"], json!({ "name": "c", "position": null }));
        let data = allowed(srv, None, "{ allCategories(orderBy: name_ASC) { name position } }").await;
        assert_eq!(data["allCategories"], json!([
            { "name": "a", "position": 0 },
            { "name": "b", "position": 1 },
            { "name": "c", "position": null },
        ]));
    }

    /// The payload of an update returns the fields given (and `id`) unchecked; the others are
    /// read-checked.
    async fn update_payload_whitelist(srv) {
        let p = people(srv).await;
        let q = format!(r#"mutation {{ updatePost(id: "{}", votes: 3) {{ id votes body }} }}"#, p.draft);
        let res = srv.gql_as(None, &q).await;
        assert_eq!(res["data"], json!({ "updatePost": { "id": p.draft, "votes": 3, "body": null } }));
        assert_eq!(errors(&res), vec![denied(json!(["updatePost", "body"]), READ_DENIED)]);
        // A nested node of the payload is not whitelisted.
        let q = format!(r#"mutation {{ updatePost(id: "{}", votes: 4) {{ author {{ email }} }} }}"#, p.draft);
        let res = srv.gql_as(None, &q).await;
        assert_eq!(errors(&res), vec![denied(json!(["updatePost", "author", "email"]), READ_DENIED)]);
    }

    /// Deletes: authors delete their own posts, admins any post (a query without node
    /// variables); everybody else is denied.
    async fn delete_rules(srv) {
        let p = people(srv).await;
        let delete = |id: &str| format!(r#"mutation {{ deletePost(id: "{id}") {{ id }} }}"#);
        assert_denied(srv, None, &delete(&p.draft), "deletePost", WRITE_DENIED).await;
        assert_denied(srv, Some(&p.reader_token), &delete(&p.draft), "deletePost", WRITE_DENIED).await;
        let data = allowed(srv, Some(&p.editor_token), &delete(&p.draft)).await;
        assert_eq!(data["deletePost"]["id"], p.draft);
        allowed(srv, Some(&p.admin_token), &delete(&p.readers_draft)).await;
        assert_eq!(counts(srv).await["posts"], 1);
        // `deleteMany` deletes only when every matching node may be deleted.
        srv.create("Post", &format!(r#"slug: "r2", title: "x", authorId: "{}""#, p.reader)).await;
        assert_denied(srv, Some(&p.editor_token), "mutation { deleteManyPosts { count } }", "deleteManyPosts", WRITE_DENIED).await;
        let data = allowed(srv, Some(&p.editor_token), r#"mutation { deleteManyPosts(filter: { slug: "published" }) { count } }"#).await;
        assert_eq!(data, json!({ "deleteManyPosts": { "count": 1 } }));
    }

    /// Connecting through `<f>Id(s)` needs the relation's connect permission, evaluated with
    /// the relation's variables (`$authorUser_id` is the user side).
    async fn connect_through_id_arguments(srv) {
        let p = people(srv).await;
        // `Post.update` with only relation arguments passes the type check (a query-less update
        // permission exists); the connect check decides.
        let reassign = |id: &str, author: &str| format!(r#"mutation {{ updatePost(id: "{id}", authorId: "{author}") {{ id }} }}"#);
        assert_denied(srv, Some(&p.editor_token), &reassign(&p.readers_draft, &p.admin), "updatePost", CONNECT_DENIED).await;
        allowed(srv, Some(&p.editor_token), &reassign(&p.readers_draft, &p.editor)).await;
        let q = format!(r#"mutation {{ updatePost(id: "{}", categoriesIds: ["{}"]) {{ id }} }}"#, p.draft, p.category);
        assert_denied(srv, None, &q, "updatePost", CONNECT_DENIED).await;
        allowed(srv, Some(&p.reader_token), &q).await;
        let data = srv.data(&format!(r#"{{ Post(id: "{}") {{ author {{ name }} }} }}"#, p.readers_draft)).await;
        assert_eq!(data, json!({ "Post": { "author": { "name": "eve" } } }));
    }

    /// Nested creates: every nested node needs its own create permission, and every edge to its
    /// parent a connect permission; a denial anywhere writes nothing.
    async fn nested_creates(srv) {
        let p = people(srv).await;
        let q = format!(
            r#"mutation {{ createPost(slug: "n", title: "N", authorId: "{}", comments: [{{ text: "first" }}], categories: [{{ name: "tech" }}]) {{ id }} }}"#,
            p.editor
        );
        allowed(srv, Some(&p.editor_token), &q).await;
        assert_eq!(counts(srv).await["comments"], 1);
        // Anonymous sign-up may not create posts on the way.
        let q = r#"mutation { createUser(email: "a@example.com", name: "a", posts: [{ slug: "p", title: "P" }]) { id } }"#;
        assert_denied(srv, None, q, "createUser", WRITE_DENIED).await;
        // A nested category with a field `Category.create` does not cover.
        let q = format!(
            r#"mutation {{ createPost(slug: "m", title: "M", authorId: "{}", categories: [{{ name: "x", position: 1 }}]) {{ id }} }}"#,
            p.editor
        );
        assert_denied(srv, Some(&p.editor_token), &q, "createPost", WRITE_DENIED).await;
        // The nested comment's edge to the post needs `PostComments.connect` (authenticated).
        let q = format!(r#"mutation {{ updatePost(id: "{}", comments: [{{ text: "c" }}]) {{ id }} }}"#, p.draft);
        assert_denied(srv, None, &q, "updatePost", WRITE_DENIED).await;
    }

    /// Relation mutations check connect and disconnect permissions with the relation's
    /// variables; a relation without permissions is closed.
    async fn relation_mutations(srv) {
        let p = people(srv).await;
        let follow = |op: &str, follower: &str, followed: &str| {
            format!(r#"mutation {{ {op}Follows(followersUserId: "{follower}", followingUserId: "{followed}") {{ followingUser {{ id }} }} }}"#)
        };
        allowed(srv, Some(&p.reader_token), &follow("addTo", &p.reader, &p.editor)).await;
        assert_denied(srv, Some(&p.reader_token), &follow("addTo", &p.editor, &p.admin), "addToFollows", CONNECT_DENIED).await;
        assert_denied(srv, None, &follow("addTo", &p.reader, &p.admin), "addToFollows", CONNECT_DENIED).await;
        assert_denied(srv, Some(&p.editor_token), &follow("removeFrom", &p.reader, &p.editor), "removeFromFollows", DISCONNECT_DENIED).await;
        allowed(srv, Some(&p.reader_token), &follow("removeFrom", &p.reader, &p.editor)).await;
        let friends = format!(r#"mutation {{ addToFriends(friends1UserId: "{}", friends2UserId: "{}") {{ friends1User {{ id }} }} }}"#, p.reader, p.editor);
        assert_denied(srv, Some(&p.reader_token), &friends, "addToFriends", CONNECT_DENIED).await;
        // `PostCategories.*` grants both directions to signed-in users.
        let cat = |op: &str| format!(r#"mutation {{ {op}PostCategories(categoriesCategoryId: "{}", postsPostId: "{}") {{ postsPost {{ slug }} }} }}"#, p.category, p.draft);
        assert_denied(srv, None, &cat("addTo"), "addToPostCategories", CONNECT_DENIED).await;
        allowed(srv, Some(&p.reader_token), &cat("addTo")).await;
        allowed(srv, Some(&p.reader_token), &cat("removeFrom")).await;
        // `UserPosts.disconnect` is query-less for signed-in users.
        let unlink = format!(r#"mutation {{ removeFromUserPosts(postsPostId: "{}", authorUserId: "{}") {{ authorUser {{ id }} }} }}"#, p.draft, p.editor);
        assert_denied(srv, None, &unlink, "removeFromUserPosts", DISCONNECT_DENIED).await;
        allowed(srv, Some(&p.reader_token), &unlink).await;
    }

    /// The permission endpoint runs `Some<Type>Exists` queries for admins.
    async fn permission_endpoint_queries(srv) {
        let p = people(srv).await;
        let q = format!(
            r#"{{ a: SomePostExists(filter: {{ status: PUBLISHED }}) b: SomePostExists(filter: {{ status: ARCHIVED }}) c: SomeUserExists(filter: {{ id: "{}", role: EDITOR }}) d: SomePostExists(filter: {{ author: {{ name: "eve" }} }}, skip: 2) e: SomePostExists(orderBy: slug_DESC, first: 1) }}"#,
            p.editor
        );
        let res = srv.permissions_as(Some(srv.root_token()), &q).await;
        assert_eq!(res, json!({ "data": { "a": true, "b": false, "c": true, "d": false, "e": true } }));
        let res = srv.permissions_as(Some(&p.admin_token), &q).await;
        assert!(res.get("data").is_none_or(Value::is_null), "{res:#}");
    }
}
