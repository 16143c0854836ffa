//! The changes every mutation hands to the service's observers after its commit (the engine's
//! single commit point): for each committed mutation, its node changes (`CREATED`, `UPDATED`,
//! `DELETED`, with the scalar fields supplied and the values before) and edge changes, in the
//! order they were written; nothing for a mutation that fails. A test observer records them as
//! JSON; every expectation is the whole list.

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use svc_runtime::storage::Notice;
use svc_runtime::{Change, Observer};

use crate::support::{Db, Server, is_timestamp};

/// Records the changes of every committed mutation, one JSON array per mutation.
#[derive(Default)]
struct Recorder(Mutex<Vec<Value>>);

impl Observer for Recorder {
    fn committed(&self, changes: &[Change]) {
        let changes = changes.iter().map(change_json).collect();
        self.0
            .lock()
            .expect("the recorder")
            .push(Value::Array(changes));
    }
}

impl Recorder {
    /// The changes recorded since the last call, one array per mutation.
    fn take(&self) -> Value {
        Value::Array(std::mem::take(&mut *self.0.lock().expect("the recorder")))
    }
}

/// Sends, in every mutation's transaction, a notice the database refuses (PostgreSQL's
/// `pg_notify` takes at most 8000 bytes; SQLite has no `pg_notify`), as the PostgreSQL event
/// bus sends a mutation's events to the other instances: what an observer writes in the
/// transaction commits with the mutation or not at all.
struct RefusedNotice;

impl Observer for RefusedNotice {
    fn committed(&self, _changes: &[Change]) {}

    fn writes_in_transaction(&self) -> bool {
        true
    }

    fn notices(&self, _changes: &[Change]) -> Vec<Notice> {
        vec![Notice::Send {
            channel: "svc_refused".to_owned(),
            payload: "x".repeat(9000),
        }]
    }
}

/// A change as JSON: `{"node", "id", "change", "fields", "previous"}` with the previous values by
/// field (times of `createdAt`/`updatedAt` checked and replaced by `"<time>"`), or `{"edge", "a",
/// "b", "added"}`.
fn change_json(change: &Change) -> Value {
    match change {
        Change::Node {
            model,
            id,
            kind,
            fields,
            previous,
        } => {
            let previous = previous.as_ref().map(|values| {
                let mut map = Map::new();
                for (field, value) in model.fields.iter().zip(values) {
                    let mut value = value.to_json();
                    if matches!(field.name, "createdAt" | "updatedAt") {
                        assert!(value.as_str().is_some_and(is_timestamp), "{value}");
                        value = json!("<time>");
                    }
                    map.insert(field.name.to_owned(), value);
                }
                Value::Object(map)
            });
            json!({ "node": model.name, "id": id, "change": kind.name(), "fields": fields, "previous": previous })
        }
        Change::Edge(edge) => {
            json!({ "edge": edge.relation.name, "a": edge.a, "b": edge.b, "added": edge.added })
        }
    }
}

fn created(model: &str, id: &str, fields: &[&str]) -> Value {
    json!({ "node": model, "id": id, "change": "CREATED", "fields": fields, "previous": null })
}

fn updated(model: &str, id: &str, fields: &[&str], previous: Value) -> Value {
    json!({ "node": model, "id": id, "change": "UPDATED", "fields": fields, "previous": previous })
}

fn deleted(model: &str, id: &str, previous: Value) -> Value {
    json!({ "node": model, "id": id, "change": "DELETED", "fields": [], "previous": previous })
}

fn edge(relation: &str, a: &str, b: &str, added: bool) -> Value {
    json!({ "edge": relation, "a": a, "b": b, "added": added })
}

/// A `Post`'s values as stored, with the given ones over the defaults.
fn post_values(id: &str, slug: &str, title: &str, given: Value) -> Value {
    let mut values = json!({
        "id": id, "createdAt": "<time>", "slug": slug, "title": title, "body": null, "votes": 0,
        "rating": null, "published": false, "status": "DRAFT", "publishedAt": null,
        "metadata": null, "tags": null, "scores": null, "externalId": null, "updatedAt": "<time>",
    });
    for (key, value) in given.as_object().into_iter().flatten() {
        values[key] = value.clone();
    }
    values
}

/// A `Comment`'s values as stored (its `createdAt` and `updatedAt` are stored though not declared).
fn comment_values(id: &str, text: &str) -> Value {
    json!({ "id": id, "text": text, "createdAt": "<time>", "updatedAt": "<time>" })
}

/// Starts a server whose mutations `recorder` records; `None` as [`Server::start`].
async fn observed(db: Db) -> Option<(Server, Arc<Recorder>)> {
    let recorder = Arc::new(Recorder::default());
    let srv = Server::start_observed(db, recorder.clone()).await?;
    Some((srv, recorder))
}

/// The id a mutation returned at `field`.
async fn id_of(srv: &Server, mutation: &str, field: &str) -> String {
    let data = srv.data(mutation).await;
    data[field]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no id at `{field}`: {data}"))
        .to_owned()
}

db_cases! {
    /// A create reports the node with the scalar fields given (not the defaults), then the edges
    /// its connections add; a nested create reports each node it creates, each followed by its
    /// edge to its parent.
    async fn creates(db) {
        let Some((srv, changes)) = observed(db).await else { return };
        let user = id_of(&srv, r#"mutation { createUser(email: "a@x.org", name: "Ann") { id } }"#, "createUser").await;
        assert_eq!(changes.take(), json!([[created("User", &user, &["email", "name"])]]));

        let post = id_of(&srv, &format!(r#"mutation {{ createPost(slug: "p1", title: "One", votes: 3, authorId: "{user}") {{ id }} }}"#), "createPost").await;
        assert_eq!(
            changes.take(),
            json!([[created("Post", &post, &["slug", "title", "votes"]), edge("UserPosts", &user, &post, true)]])
        );

        let data = srv.data(r#"mutation { createUser(email: "b@x.org", name: "Bo", posts: [{ slug: "p2", title: "Two" }, { slug: "p3", title: "Three" }]) { id posts(orderBy: slug_ASC) { id } } }"#).await;
        let bo = data["createUser"]["id"].as_str().expect("id");
        let (p2, p3) = (data["createUser"]["posts"][0]["id"].as_str().expect("id"), data["createUser"]["posts"][1]["id"].as_str().expect("id"));
        assert_eq!(
            changes.take(),
            json!([[
                created("User", bo, &["email", "name"]),
                created("Post", p2, &["slug", "title"]),
                edge("UserPosts", bo, p2, true),
                created("Post", p3, &["slug", "title"]),
                edge("UserPosts", bo, p3, true),
            ]])
        );
    }

    /// An update reports the scalar fields given (explicit nulls included) with the node's values
    /// before; a relation argument reports the edges it removes and adds, and nothing of the
    /// node when no scalar was given; an update that changes nothing reports nothing.
    async fn updates(db) {
        let Some((srv, changes)) = observed(db).await else { return };
        let ann = id_of(&srv, r#"mutation { createUser(email: "a@x.org", name: "Ann") { id } }"#, "createUser").await;
        let bo = id_of(&srv, r#"mutation { createUser(email: "b@x.org", name: "Bo") { id } }"#, "createUser").await;
        let post = id_of(&srv, &format!(r#"mutation {{ createPost(slug: "p1", title: "Old", body: "text", authorId: "{ann}") {{ id }} }}"#), "createPost").await;
        changes.take();

        srv.data(&format!(r#"mutation {{ updatePost(id: "{post}", title: "New", body: null) {{ id }} }}"#)).await;
        let before = post_values(&post, "p1", "Old", json!({ "body": "text" }));
        assert_eq!(changes.take(), json!([[updated("Post", &post, &["title", "body"], before)]]));

        srv.data(&format!(r#"mutation {{ updatePost(id: "{post}", authorId: "{bo}") {{ id }} }}"#)).await;
        assert_eq!(
            changes.take(),
            json!([[edge("UserPosts", &ann, &post, false), edge("UserPosts", &bo, &post, true)]])
        );

        srv.data(&format!(r#"mutation {{ updatePost(id: "{post}") {{ id }} }}"#)).await;
        assert_eq!(changes.take(), json!([]));

        srv.data(&format!(r#"mutation {{ updateOrCreatePost(update: {{ id: "{post}", votes: 7 }}, create: {{ slug: "x", title: "X" }}) {{ id }} }}"#)).await;
        let before = post_values(&post, "p1", "New", json!({}));
        assert_eq!(changes.take(), json!([[updated("Post", &post, &["votes"], before)]]));

        let new = id_of(&srv, r#"mutation { updateOrCreatePost(update: { id: "cnotthere000000000000000x", votes: 7 }, create: { slug: "x", title: "X" }) { id } }"#, "updateOrCreatePost").await;
        assert_eq!(changes.take(), json!([[created("Post", &new, &["slug", "title"])]]));
    }

    /// A delete reports every node it deletes, cascades included, each with its values before
    /// (the deleted node's edges go with it and are not listed).
    async fn deletes(db) {
        let Some((srv, changes)) = observed(db).await else { return };
        let ann = id_of(&srv, r#"mutation { createUser(email: "a@x.org", name: "Ann") { id } }"#, "createUser").await;
        let data = srv.data(&format!(r#"mutation {{ createPost(slug: "p1", title: "One", authorId: "{ann}", comments: [{{ text: "c1" }}, {{ text: "c2" }}]) {{ id comments(orderBy: id_ASC) {{ id text }} }} }}"#)).await;
        let post = data["createPost"]["id"].as_str().expect("id").to_owned();
        let comments: Vec<(String, String)> = data["createPost"]["comments"]
            .as_array()
            .expect("comments")
            .iter()
            .map(|c| (c["id"].as_str().expect("id").to_owned(), c["text"].as_str().expect("text").to_owned()))
            .collect();
        changes.take();

        srv.data(&format!(r#"mutation {{ deletePost(id: "{post}") {{ id }} }}"#)).await;
        let mut expected = vec![deleted("Post", &post, post_values(&post, "p1", "One", json!({})))];
        for (id, text) in &comments {
            expected.push(deleted("Comment", id, comment_values(id, text)));
        }
        assert_eq!(changes.take(), json!([expected]));

        srv.data(&format!(r#"mutation {{ deleteUser(id: "{ann}") {{ id }} }}"#)).await;
        let user = json!({
            "id": ann, "createdAt": "<time>", "updatedAt": "<time>", "email": "a@x.org",
            "name": "Ann", "role": "READER", "age": null, "verified": false, "nicknames": null,
        });
        assert_eq!(changes.take(), json!([[deleted("User", &ann, user)]]));
    }

    /// The relation mutations report the edges they add and remove (a `set` on a to-one side
    /// first removes the edge it replaces), and nothing of the nodes; an edge of a self relation
    /// declared on one field is reported once.
    async fn relation_mutations(db) {
        let Some((srv, changes)) = observed(db).await else { return };
        let post = id_of(&srv, r#"mutation { createPost(slug: "p1", title: "One") { id } }"#, "createPost").await;
        let other = id_of(&srv, r#"mutation { createPost(slug: "p2", title: "Two") { id } }"#, "createPost").await;
        let category = id_of(&srv, r#"mutation { createCategory(name: "news") { id } }"#, "createCategory").await;
        let ann = id_of(&srv, r#"mutation { createUser(email: "a@x.org", name: "Ann") { id } }"#, "createUser").await;
        let bo = id_of(&srv, r#"mutation { createUser(email: "b@x.org", name: "Bo") { id } }"#, "createUser").await;
        changes.take();

        srv.data(&format!(r#"mutation {{ addToPostCategories(postsPostId: "{post}", categoriesCategoryId: "{category}") {{ postsPost {{ id }} }} }}"#)).await;
        srv.data(&format!(r#"mutation {{ removeFromPostCategories(postsPostId: "{post}", categoriesCategoryId: "{category}") {{ postsPost {{ id }} }} }}"#)).await;
        srv.data(&format!(r#"mutation {{ setPinnedPost(pinnedPostPostId: "{post}", pinnedInCategoryId: "{category}") {{ pinnedPostPost {{ id }} }} }}"#)).await;
        srv.data(&format!(r#"mutation {{ setPinnedPost(pinnedPostPostId: "{other}", pinnedInCategoryId: "{category}") {{ pinnedPostPost {{ id }} }} }}"#)).await;
        srv.data(&format!(r#"mutation {{ unsetPinnedPost(pinnedPostPostId: "{other}", pinnedInCategoryId: "{category}") {{ pinnedPostPost {{ id }} }} }}"#)).await;
        srv.data(&format!(r#"mutation {{ addToFriends(friends1UserId: "{ann}", friends2UserId: "{bo}") {{ friends1User {{ id }} }} }}"#)).await;
        assert_eq!(
            changes.take(),
            json!([
                [edge("PostCategories", &post, &category, true)],
                [edge("PostCategories", &post, &category, false)],
                [edge("PinnedPost", &post, &category, true)],
                [edge("PinnedPost", &post, &category, false), edge("PinnedPost", &other, &category, true)],
                [edge("PinnedPost", &other, &category, false)],
                [edge("Friends", &bo, &ann, true)],
            ])
        );
    }

    /// `updateMany` reports each node it updates with the fields given and its values before;
    /// `deleteMany` each node it deletes, cascades included.
    async fn many(db) {
        let Some((srv, changes)) = observed(db).await else { return };
        let mut posts = Vec::new();
        for slug in ["a", "b", "c"] {
            posts.push(id_of(&srv, &format!(r#"mutation {{ createPost(slug: "{slug}", title: "T") {{ id }} }}"#), "createPost").await);
        }
        let comment = id_of(&srv, &format!(r#"mutation {{ createComment(text: "c", postId: "{}") {{ id }} }}"#, posts[0]), "createComment").await;
        changes.take();
        let mut matched: Vec<(String, &str)> = vec![(posts[0].clone(), "a"), (posts[1].clone(), "b")];
        matched.sort();

        srv.data(r#"mutation { updateManyPosts(filter: { slug_in: ["a", "b"] }, data: { votes: 5 }) { count } }"#).await;
        let updates: Vec<Value> = matched.iter().map(|(id, slug)| updated("Post", id, &["votes"], post_values(id, slug, "T", json!({})))).collect();
        assert_eq!(changes.take(), json!([updates]));

        srv.data(r#"mutation { deleteManyPosts(filter: { slug_in: ["a", "b"] }) { count } }"#).await;
        let mut deletes: Vec<Value> = matched.iter().map(|(id, slug)| deleted("Post", id, post_values(id, slug, "T", json!({ "votes": 5 })))).collect();
        deletes.push(deleted("Comment", &comment, comment_values(&comment, "c")));
        assert_eq!(changes.take(), json!([deletes]));
    }

    /// A mutation that fails reports nothing: its transaction was rolled back (a unique
    /// violation, a nested create failing after its parent was written, a required relation, a
    /// missing node).
    async fn failures(db) {
        let Some((srv, changes)) = observed(db).await else { return };
        let ann = id_of(&srv, r#"mutation { createUser(email: "a@x.org", name: "Ann") { id } }"#, "createUser").await;
        srv.data(&format!(r#"mutation {{ createProfile(bio: "hi", userId: "{ann}") {{ id }} }}"#)).await;
        srv.data(r#"mutation { createPost(slug: "p1", title: "One") { id } }"#).await;
        changes.take();

        let failing = [
            r#"mutation { createPost(slug: "p1", title: "Again") { id } }"#.to_owned(),
            r#"mutation { createUser(email: "b@x.org", name: "Bo", posts: [{ slug: "p2", title: "Two" }, { slug: "p1", title: "Dup" }]) { id } }"#.to_owned(),
            format!(r#"mutation {{ deleteUser(id: "{ann}") {{ id }} }}"#),
            r#"mutation { deletePost(id: "cnotthere000000000000000x") { id } }"#.to_owned(),
            r#"mutation { createPost(slug: "p3", title: "Three", authorId: "cnotthere000000000000000x") { id } }"#.to_owned(),
        ];
        for mutation in &failing {
            let res = srv.gql(mutation).await;
            assert!(res["errors"].is_array(), "{mutation} fails: {res}");
        }
        assert_eq!(changes.take(), json!([]), "nothing of the failed mutations");
    }

    /// A mutation whose observer's notice fails writes nothing, the single-statement create of
    /// an admin included (on PostgreSQL it runs without a transaction of its own when nothing
    /// else is written with it: its row committed before the notice, which a process killed in
    /// between never sent).
    async fn a_refused_notice_undoes_the_mutation(db) {
        let Some(srv) = Server::start_observed(db, Arc::new(RefusedNotice)).await else { return };
        for mutation in [
            r#"mutation { createPost(slug: "p1", title: "One") { id } }"#,
            r#"mutation { createUser(email: "a@x.org", name: "Ann", posts: [{ slug: "p2", title: "Two" }]) { id } }"#,
        ] {
            let res = srv.gql_as(Some(srv.root_token()), mutation).await;
            assert!(res["errors"].is_array(), "{mutation} fails: {res}");
        }
        let left = srv
            .gql_as(Some(srv.root_token()), "{ _allPostsMeta { count } _allUsersMeta { count } }")
            .await;
        assert_eq!(
            left["data"],
            json!({ "_allPostsMeta": { "count": 0 }, "_allUsersMeta": { "count": 0 } }),
            "{left}"
        );
    }
}
