//! Extensions beyond the reference (docs/compatibility.md): the `orderByList` argument on list
//! and relation list fields, `deleteMany{Plural}`/`updateMany{Plural}` returning
//! `_BatchPayload { count }`, and `onDelete` on relation fields (`CASCADE` on `Post.comments`,
//! `SET_NULL` on `User.posts`).

use serde_json::json;

use crate::simple::introspection::{names, sdl, signatures, type_info};
use crate::support::{
    Posts, Server, blog, column_of, count_values, counts, field_error, four_posts, list_of,
    six_categories, with_ids,
};

/// Checks `allPosts({args}) { slug }` for every case; `{alpha}` etc. stand for post ids.
async fn check_posts(srv: &Server, ids: &Posts, cases: &[(&str, &[&str])]) {
    for (args, expected) in cases {
        let args = args
            .replace("{alpha}", &ids.alpha)
            .replace("{beta}", &ids.beta)
            .replace("{gamma}", &ids.gamma)
            .replace("{delta}", &ids.delta);
        assert_eq!(
            srv.gql(&format!("{{ allPosts({args}) {{ slug }} }}")).await,
            list_of("allPosts", "slug", expected),
            "allPosts({args})"
        );
    }
}

/// Runs a one-line batch mutation that must fail; its field is non-null, so `data` is `null`.
async fn assert_batch_fails(srv: &Server, mutation: &str, field: &str, code: u32, message: &str) {
    assert_eq!(
        srv.gql(mutation).await,
        json!({
            "data": null,
            "errors": [field_error(json!([field]), 1, column_of(mutation, field), code, message)],
        }),
        "{mutation}"
    );
}

fn required(field: &str, model: &str) -> String {
    format!(
        "The field '{field}' on type '{model}' is required. Performing this mutation would violate the constraint"
    )
}

db_tests! {
    /// `orderByList` applies its keys in order, after `orderBy` when both are given, with `id`
    /// as the last tie-break; it combines with filters, cursors and pagination.
    async fn order_by_list_on_root_lists(srv) {
        let p = four_posts(srv).await;
        check_posts(srv, &p, &[
            ("orderByList: [votes_DESC, title_ASC]", &["delta", "gamma", "alpha", "beta"]),
            ("orderByList: [votes_DESC, title_DESC]", &["delta", "alpha", "gamma", "beta"]),
            ("orderByList: [status_ASC, votes_DESC]", &["gamma", "beta", "delta", "alpha"]),
            ("orderByList: [published_DESC, rating_ASC]", &["gamma", "alpha", "beta", "delta"]),
            ("orderBy: published_ASC, orderByList: [votes_DESC, slug_DESC]", &["delta", "beta", "gamma", "alpha"]),
            ("orderByList: [published_ASC]", &["beta", "delta", "alpha", "gamma"]),
            ("orderByList: []", &["alpha", "beta", "gamma", "delta"]),
            ("orderByList: [votes_DESC, title_ASC], first: 2", &["delta", "gamma"]),
            ("orderByList: [votes_DESC, title_ASC], skip: 1, first: 2", &["gamma", "alpha"]),
            ("orderByList: [votes_DESC, title_ASC], last: 2", &["alpha", "beta"]),
            (r#"orderByList: [votes_DESC, title_ASC], after: "{gamma}""#, &["alpha", "beta"]),
            (r#"orderByList: [votes_DESC, title_ASC], before: "{alpha}""#, &["delta", "gamma"]),
            (r#"orderByList: [votes_DESC, title_ASC], after: "{delta}", first: 1"#, &["gamma"]),
            ("orderByList: [votes_DESC, title_ASC], filter: { votes_gte: 5 }", &["delta", "gamma", "alpha"]),
        ]).await;
        six_categories(srv).await;
        assert_eq!(
            srv.gql("{ allCategories(orderByList: [position_DESC, name_DESC]) { name } }").await,
            list_of("allCategories", "name", &["d", "a", "e", "b", "f", "c"])
        );
        assert_eq!(
            srv.gql("{ allCategories(orderByList: [position_ASC, name_DESC]) { name } }").await,
            list_of("allCategories", "name", &["f", "c", "b", "e", "d", "a"])
        );
    }

    /// `orderByList` on relation list fields orders each parent's own list.
    async fn order_by_list_on_relation_fields(srv) {
        let p = four_posts(srv).await;
        srv.data(&format!(
            r#"mutation {{ ann: createUser(email: "ann@example.com", name: "Ann", postsIds: ["{}", "{}", "{}"]) {{ id }} bob: createUser(email: "bob@example.com", name: "Bob", postsIds: ["{}"]) {{ id }} }}"#,
            p.alpha, p.beta, p.gamma, p.delta
        )).await;
        let names_and_slugs = |ann: &[&str], bob: &[&str]| {
            let posts = |slugs: &[&str]| slugs.iter().map(|s| json!({ "slug": s })).collect::<Vec<_>>();
            json!({ "data": { "allUsers": [
                { "name": "Ann", "posts": posts(ann) },
                { "name": "Bob", "posts": posts(bob) },
            ] } })
        };
        let cases: &[(&str, &[&str], &[&str])] = &[
            ("orderByList: [votes_DESC, title_ASC]", &["gamma", "alpha", "beta"], &["delta"]),
            ("orderByList: [votes_DESC, title_ASC], first: 2", &["gamma", "alpha"], &["delta"]),
            ("orderByList: [votes_DESC, title_ASC], last: 1", &["beta"], &["delta"]),
            ("orderBy: published_ASC, orderByList: [title_DESC]", &["beta", "alpha", "gamma"], &["delta"]),
            ("orderByList: [status_DESC], filter: { votes: 5 }", &["alpha", "gamma"], &[]),
        ];
        for (args, ann, bob) in cases {
            assert_eq!(
                srv.gql(&format!("{{ allUsers {{ name posts({args}) {{ slug }} }} }}")).await,
                names_and_slugs(ann, bob),
                "posts({args})"
            );
        }
    }

    /// The batch mutations exist for every model, with the documented shapes.
    async fn batch_mutation_types(srv) {
        let mutation = type_info(srv, "Mutation").await;
        let fields = mutation["fields"].as_array().cloned().unwrap_or_default();
        let field = |name: &str| {
            fields.iter().find(|f| f["name"] == json!(name)).cloned().unwrap_or_else(|| panic!("no mutation `{name}` in {:?}", names(&mutation["fields"])))
        };
        for plural in ["Users", "Posts", "Categories", "Children", "Profiles", "Comments"] {
            let model = match plural {
                "Categories" => "Category".to_owned(),
                "Children" => "Child".to_owned(),
                other => other.trim_end_matches('s').to_owned(),
            };
            let delete = field(&format!("deleteMany{plural}"));
            assert_eq!(signatures(&delete["args"]), [format!("filter: {model}Filter")], "deleteMany{plural}");
            assert_eq!(sdl(&delete["type"]), "_BatchPayload!");
            let update = field(&format!("updateMany{plural}"));
            assert_eq!(signatures(&update["args"]), [format!("filter: {model}Filter"), format!("data: UpdateMany{plural}Data!")], "updateMany{plural}");
            assert_eq!(sdl(&update["type"]), "_BatchPayload!");
        }
        assert_eq!(signatures(&type_info(srv, "_BatchPayload").await["fields"]), ["count: Int!"]);
        assert_eq!(signatures(&type_info(srv, "UpdateManyPostsData").await["inputFields"]), [
            "slug: String", "title: String", "body: String", "votes: Int", "rating: Float",
            "published: Boolean", "status: PostStatus", "publishedAt: DateTime", "metadata: Json",
            "tags: [String!]", "scores: [Int!]", "externalId: ID",
        ]);
        assert_eq!(signatures(&type_info(srv, "UpdateManyCommentsData").await["inputFields"]), ["text: String"]);
        assert_eq!(signatures(&type_info(srv, "UpdateManyProfilesData").await["inputFields"]), ["bio: String"]);
        assert_eq!(signatures(&type_info(srv, "UpdateManyChildrenData").await["inputFields"]), [
            "name: String", "birthday: DateTime", "weight: Float", "moods: [PostStatus!]", "settings: Json",
        ]);
    }

    /// `deleteMany` deletes what the filter matches (everything without a filter) and returns
    /// the count.
    async fn delete_many(srv) {
        four_posts(srv).await;
        assert_eq!(
            srv.gql("mutation { deleteManyPosts(filter: { votes: 5 }) { count } }").await,
            json!({ "data": { "deleteManyPosts": { "count": 2 } } })
        );
        assert_eq!(srv.gql("{ allPosts { slug } }").await, list_of("allPosts", "slug", &["beta", "delta"]));
        assert_eq!(
            srv.gql(r#"mutation { a: deleteManyPosts(filter: { slug: "nope" }) { count } b: deleteManyChildren(filter: { name: "nobody" }) { count } c: deleteManyCategories { count } }"#).await,
            json!({ "data": { "a": { "count": 0 }, "b": { "count": 0 }, "c": { "count": 0 } } })
        );
        assert_eq!(
            srv.gql("mutation { deleteManyPosts { count } }").await,
            json!({ "data": { "deleteManyPosts": { "count": 2 } } })
        );
        assert_eq!(srv.gql("{ allPosts { slug } _allPostsMeta { count } }").await, json!({ "data": { "allPosts": [], "_allPostsMeta": { "count": 0 } } }));
        // The slugs are free again.
        four_posts(srv).await;
    }

    /// `deleteMany` with a relation filter removes the edges of the deleted nodes and cascades
    /// to their comments.
    async fn delete_many_with_relations(srv) {
        let b = blog(srv).await;
        assert_eq!(
            srv.gql(r#"mutation { deleteManyPosts(filter: { author: { name: "Ann" } }) { count } }"#).await,
            json!({ "data": { "deleteManyPosts": { "count": 2 } } })
        );
        assert_eq!(counts(srv).await, count_values(3, 2, 3, 0, 0, 1));
        assert_eq!(
            srv.data(&with_ids(r#"{ User(id: "{ann}") { posts { slug } } allCategories { name posts { slug } } allComments { text post { slug } } }"#, &b)).await,
            json!({
                "User": { "posts": [] },
                "allCategories": [
                    { "name": "news", "posts": [] },
                    { "name": "tech", "posts": [{ "slug": "gamma" }] },
                    { "name": "misc", "posts": [] },
                ],
                "allComments": [{ "text": "meh", "post": { "slug": "gamma" } }],
            })
        );
    }

    /// `deleteMany` honours required relations: one node whose deletion would orphan a required
    /// partner → 3032, and nothing is deleted.
    async fn delete_many_honours_required_relations(srv) {
        let b = blog(srv).await;
        srv.create("Profile", &format!(r#"bio: "Ann's", userId: "{}""#, b.ann)).await;
        assert_batch_fails(srv, r#"mutation { deleteManyUsers(filter: { name_in: ["Ann", "Bob"] }) { count } }"#, "deleteManyUsers", 3032, &required("user", "Profile")).await;
        assert_eq!(counts(srv).await, count_values(3, 4, 3, 0, 1, 4));
        assert_eq!(
            srv.gql(r#"mutation { deleteManyUsers(filter: { profile: null }) { count } }"#).await,
            json!({ "data": { "deleteManyUsers": { "count": 2 } } })
        );
        assert_eq!(
            srv.data("{ allUsers { name profile { bio } } allPosts(filter: { author: null }) { slug } }").await,
            json!({ "allUsers": [{ "name": "Ann", "profile": { "bio": "Ann's" } }], "allPosts": [{ "slug": "gamma" }, { "slug": "delta" }] })
        );
    }

    /// `updateMany` sets the given fields on every matching node and returns the count.
    async fn update_many(srv) {
        let p = four_posts(srv).await;
        assert_eq!(
            srv.gql("mutation { updateManyPosts(filter: { votes_lt: 5 }, data: { votes: 7, status: ARCHIVED }) { count } }").await,
            json!({ "data": { "updateManyPosts": { "count": 1 } } })
        );
        assert_eq!(
            srv.gql(r#"mutation { a: updateManyPosts(data: { published: true, body: null }) { count } b: updateManyPosts(filter: { slug: "nope" }, data: { title: "x" }) { count } }"#).await,
            json!({ "data": { "a": { "count": 4 }, "b": { "count": 0 } } })
        );
        assert_eq!(
            srv.gql("{ allPosts { slug title body votes published status } }").await,
            json!({ "data": { "allPosts": [
                { "slug": "alpha", "title": "Hello World", "body": null, "votes": 5, "published": true, "status": "PUBLISHED" },
                { "slug": "beta", "title": "hello again", "body": null, "votes": 7, "published": true, "status": "ARCHIVED" },
                { "slug": "gamma", "title": "100% sure_thing", "body": null, "votes": 5, "published": true, "status": "ARCHIVED" },
                { "slug": "delta", "title": "Zeta 100 percent", "body": null, "votes": 10, "published": true, "status": "PUBLISHED" },
            ] } })
        );
        srv.data(&format!(r#"mutation {{ createUser(email: "ann@example.com", name: "Ann", postsIds: ["{}", "{}"]) {{ id }} }}"#, p.alpha, p.delta)).await;
        assert_eq!(
            srv.gql(r#"mutation { updateManyPosts(filter: { author: { name: "Ann" } }, data: { title: "By Ann", tags: ["a"] }) { count } }"#).await,
            json!({ "data": { "updateManyPosts": { "count": 2 } } })
        );
        assert_eq!(
            srv.gql("{ allPosts { title tags } }").await,
            json!({ "data": { "allPosts": [
                { "title": "By Ann", "tags": ["a"] },
                { "title": "hello again", "tags": null },
                { "title": "100% sure_thing", "tags": null },
                { "title": "By Ann", "tags": ["a"] },
            ] } })
        );
    }

    /// `updateMany` is one transaction: a unique violation on any node changes nothing.
    async fn update_many_is_one_transaction(srv) {
        four_posts(srv).await;
        let before = srv.data("{ allPosts { slug externalId title } }").await;
        assert_batch_fails(srv, r#"mutation { updateManyPosts(filter: { votes: 5 }, data: { slug: "same", title: "changed" }) { count } }"#, "updateManyPosts", 3010, "A unique constraint would be violated on Post. Details: Field name = slug").await;
        assert_batch_fails(srv, r#"mutation { updateManyPosts(filter: { slug_in: ["beta", "gamma"] }, data: { externalId: "ext-new" }) { count } }"#, "updateManyPosts", 3010, "A unique constraint would be violated on Post. Details: Field name = externalId").await;
        assert_eq!(srv.data("{ allPosts { slug externalId title } }").await, before);
    }

    /// `updateMany` setting a required field to null → 3020, like `update`; nothing changes.
    async fn update_many_required_field_to_null_is_3020(srv) {
        four_posts(srv).await;
        assert_batch_fails(srv, "mutation { updateManyPosts(data: { title: null }) { count } }", "updateManyPosts", 3020, "You are trying to set a required field to null. If you are using GraphQL arguments, make sure that you specify a value for all arguments. Fieldname if known: title").await;
        assert_eq!(srv.data("{ _allPostsMeta(filter: { title: null }) { count } }").await, json!({ "_allPostsMeta": { "count": 0 } }));
    }

    /// `onDelete: CASCADE` on `Post.comments`: deleting a post deletes its comments (although
    /// `Comment.post` is required); replies on other posts lose their parent.
    async fn cascade_deletes_comments(srv) {
        let b = blog(srv).await;
        // `meh` (on gamma) replies to `great post` (on alpha).
        srv.data(&with_ids(r#"mutation { updateComment(id: "{meh}", parentId: "{great}") { id } }"#, &b)).await;
        assert_eq!(
            srv.gql(&with_ids(r#"mutation { deletePost(id: "{alpha}") { slug comments { text } } }"#, &b)).await,
            json!({ "data": { "deletePost": { "slug": "alpha", "comments": [] } } })
        );
        assert_eq!(counts(srv).await, count_values(3, 3, 3, 0, 0, 1));
        assert_eq!(
            srv.data(&with_ids(r#"{ allComments { text post { slug } parent { text } } great: Comment(id: "{great}") { id } agreed: node(id: "{agreed}") { id } User(id: "{ann}") { posts { slug } } }"#, &b)).await,
            json!({
                "allComments": [{ "text": "meh", "post": { "slug": "gamma" }, "parent": null }],
                "great": null,
                "agreed": null,
                "User": { "posts": [{ "slug": "beta" }] },
            })
        );
        assert_eq!(
            srv.gql(&with_ids(r#"mutation { gamma: deletePost(id: "{gamma}") { slug } beta: deletePost(id: "{beta}") { slug } }"#, &b)).await,
            json!({ "data": { "gamma": { "slug": "gamma" }, "beta": { "slug": "beta" } } })
        );
        assert_eq!(counts(srv).await, count_values(3, 1, 3, 0, 0, 0));
    }

    /// `onDelete: SET_NULL` on `User.posts`: deleting a user keeps the posts, without author.
    async fn set_null_keeps_the_posts(srv) {
        let b = blog(srv).await;
        assert_eq!(
            srv.gql(&with_ids(r#"mutation { deleteUser(id: "{bob}") { name posts { slug } } }"#, &b)).await,
            json!({ "data": { "deleteUser": { "name": "Bob", "posts": [] } } })
        );
        assert_eq!(
            srv.data(r#"{ allPosts(filter: { author: null }) { slug comments { text } } gamma: Post(slug: "gamma") { author { name } } }"#).await,
            json!({
                "allPosts": [{ "slug": "gamma", "comments": [{ "text": "meh" }] }, { "slug": "delta", "comments": [] }],
                "gamma": { "author": null },
            })
        );
        srv.data(&with_ids(r#"mutation { deleteUser(id: "{ann}") { id } }"#, &b)).await;
        assert_eq!(counts(srv).await, count_values(1, 4, 3, 0, 0, 4));
        assert_eq!(
            srv.gql("{ allPosts { slug author { name } } }").await,
            json!({ "data": { "allPosts": [
                { "slug": "alpha", "author": null },
                { "slug": "beta", "author": null },
                { "slug": "gamma", "author": null },
                { "slug": "delta", "author": null },
            ] } })
        );
    }
}
