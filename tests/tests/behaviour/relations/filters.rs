//! Relation filters (§2.8): to-one `f: {…}` and `f: null`, to-many `f_some`/`f_every`/`f_none`
//! (`f_every` holds when there are no related nodes), nested several levels, inside `AND`/`OR`,
//! on self relations, in relation-field and meta arguments and in variables; `f_some: null` and
//! friends → 3033.

use serde_json::json;

use crate::support::{Blog, Server, blog, column_of, field_error, list_of, with_ids};

/// Checks every `(filter, expected values of key)` case of the root list field `field`.
async fn check(srv: &Server, b: &Blog, field: &str, key: &str, cases: &[(&str, &[&str])]) {
    for (filter, expected) in cases {
        let filter = with_ids(filter, b);
        assert_eq!(
            srv.gql(&format!("{{ {field}(filter: {filter}) {{ {key} }} }}"))
                .await,
            list_of(field, key, expected),
            "{field}(filter: {filter})"
        );
    }
}

fn too_many_null(field: &str) -> String {
    format!("The field '{field}' is a toMany relation. This cannot be filtered by null.")
}

db_tests! {
    /// To-one filters: a partner exists and matches; `null` means no partner.
    async fn to_one_filters(srv) {
        let b = blog(srv).await;
        check(srv, &b, "allPosts", "slug", &[
            (r#"{ author: { name: "Ann" } }"#, &["alpha", "beta"]),
            (r#"{ author: { name_starts_with: "b" } }"#, &["gamma"]),
            (r#"{ author: { id: "{bob}" } }"#, &["gamma"]),
            ("{ author: { age_gt: 26 } }", &["alpha", "beta"]),
            ("{ author: null }", &["delta"]),
            ("{ author: {} }", &["alpha", "beta", "gamma"]),
            // A partner whose `age` is null: nobody without an age has written anything.
            ("{ author: { age: null } }", &[]),
            ("{ pinnedIn: null }", &["alpha", "beta", "gamma", "delta"]),
            ("{ pinnedIn: {} }", &[]),
            (r#"{ votes: 5, author: { name: "Ann" } }"#, &["alpha"]),
        ]).await;
        check(srv, &b, "allComments", "text", &[
            (r#"{ post: { slug: "gamma" } }"#, &["meh"]),
            ("{ parent: null }", &["great post", "fine", "meh"]),
            (r#"{ parent: { text: "great post" } }"#, &["agreed"]),
            (r#"{ parent: { text_not: "great post" } }"#, &[]),
        ]).await;
    }

    /// To-many filters: `_some` (at least one matches), `_every` (none fails; true when empty),
    /// `_none` (none matches); `{}` as sub-filter matches any related node.
    async fn to_many_filters(srv) {
        let b = blog(srv).await;
        check(srv, &b, "allUsers", "name", &[
            ("{ posts_some: { votes: 5 } }", &["Ann", "Bob"]),
            ("{ posts_every: { votes: 5 } }", &["Bob", "Cid"]),
            ("{ posts_none: { votes: 5 } }", &["Cid"]),
            ("{ posts_some: {} }", &["Ann", "Bob"]),
            ("{ posts_every: {} }", &["Ann", "Bob", "Cid"]),
            ("{ posts_none: {} }", &["Cid"]),
            ("{ posts_some: { votes: 5 }, posts_none: { votes: 2 } }", &["Bob"]),
            (r#"{ posts_some: { id: "{beta}" } }"#, &["Ann"]),
            ("{ posts_every: { votes_lt: 0 } }", &["Cid"]),
        ]).await;
        check(srv, &b, "allPosts", "slug", &[
            (r#"{ categories_some: { name: "tech" } }"#, &["beta", "gamma"]),
            (r#"{ categories_every: { name: "news" } }"#, &["alpha", "delta"]),
            (r#"{ categories_none: { name: "news" } }"#, &["gamma", "delta"]),
            ("{ categories_some: {} }", &["alpha", "beta", "gamma"]),
            ("{ categories_none: {} }", &["delta"]),
            (r#"{ comments_some: { text_contains: "GREAT" } }"#, &["alpha"]),
            ("{ comments_every: { parent: null } }", &["beta", "gamma", "delta"]),
            ("{ comments_none: {} }", &["beta", "delta"]),
        ]).await;
        check(srv, &b, "allCategories", "name", &[
            (r#"{ posts_every: { author: { name: "Ann" } } }"#, &["news", "misc"]),
            (r#"{ posts_some: { slug_in: ["alpha", "gamma"] } }"#, &["news", "tech"]),
            ("{ posts_none: { votes_gt: 3 } }", &["misc"]),
        ]).await;
        check(srv, &b, "allComments", "text", &[
            ("{ replies_some: {} }", &["great post"]),
            ("{ replies_none: {} }", &["fine", "meh", "agreed"]),
        ]).await;
    }

    /// Relation filters nest several levels deep and combine with `AND`/`OR` and scalar keys.
    async fn nested_and_combined(srv) {
        let b = blog(srv).await;
        check(srv, &b, "allUsers", "name", &[
            (r#"{ posts_some: { categories_some: { name: "tech" } } }"#, &["Ann", "Bob"]),
            (r#"{ posts_some: { comments_some: { text: "fine" } } }"#, &["Ann"]),
            (r#"{ posts_some: { comments_some: { replies_some: { text: "agreed" } } } }"#, &["Ann"]),
            (r#"{ posts_some: { comments_some: { replies_some: { post: { categories_some: { name: "news" } } } } } }"#, &["Ann"]),
            ("{ posts_every: { comments_some: {} } }", &["Bob", "Cid"]),
            (r#"{ OR: [{ posts_none: {} }, { posts_some: { title_contains: "again" } }] }"#, &["Ann", "Cid"]),
            (r#"{ AND: [{ posts_some: { votes: 5 } }, { posts_some: { votes: 2 } }] }"#, &["Ann"]),
            (r#"{ name_not: "Ann", posts_every: { votes: 5 } }"#, &["Bob", "Cid"]),
        ]).await;
        check(srv, &b, "allPosts", "slug", &[
            (r#"{ author: { posts_some: { slug: "beta" } } }"#, &["alpha", "beta"]),
            (r#"{ categories_some: { posts_some: { author: { name: "Bob" } } } }"#, &["beta", "gamma"]),
            (r#"{ OR: [{ author: null }, { author: { name: "Bob" } }] }"#, &["gamma", "delta"]),
            (r#"{ AND: [{ categories_some: { name: "news" } }, { categories_some: { name: "tech" } }] }"#, &["beta"]),
            (r#"{ author: { name: "Ann" }, categories_none: { name: "tech" } }"#, &["alpha"]),
            (r#"{ OR: [{ comments_some: { text: "meh" } }, { AND: [{ author: { name: "Ann" } }, { votes_lt: 5 }] }] }"#, &["beta", "gamma"]),
        ]).await;
        check(srv, &b, "allComments", "text", &[
            (r#"{ post: { author: { name: "Ann" } } }"#, &["great post", "fine", "agreed"]),
            (r#"{ post: { categories_some: { name: "tech" } } }"#, &["meh"]),
            (r#"{ parent: { post: { author: { profile: null } } } }"#, &["agreed"]),
        ]).await;
        check(srv, &b, "allCategories", "name", &[
            (r#"{ posts_some: { author: { name: "Bob" } } }"#, &["tech"]),
            (r#"{ posts_some: { comments_some: { parent: { text: "great post" } } } }"#, &["news"]),
        ]).await;
    }

    /// Filters over 1:1 relations and self relations (two fields, symmetric list, symmetric
    /// single field).
    async fn one_to_one_and_self_relations(srv) {
        let b = blog(srv).await;
        srv.create("Profile", &format!(r#"bio: "reader", userId: "{}""#, b.cid)).await;
        srv.data(&with_ids(r#"mutation { f: updateUser(id: "{bob}", followersIds: ["{ann}", "{cid}"]) { id } g: updateUser(id: "{ann}", friendsIds: ["{bob}"]) { id } }"#, &b)).await;
        check(srv, &b, "allUsers", "name", &[
            ("{ profile: null }", &["Ann", "Bob"]),
            (r#"{ profile: { bio: "reader" } }"#, &["Cid"]),
            (r#"{ followers_some: { name: "Ann" } }"#, &["Bob"]),
            (r#"{ following_some: { name: "Bob" } }"#, &["Ann", "Cid"]),
            ("{ followers_none: {} }", &["Ann", "Cid"]),
            ("{ followers_every: { profile: null } }", &["Ann", "Cid"]),
            (r#"{ friends_some: { name: "Ann" } }"#, &["Bob"]),
            (r#"{ friends_some: { name: "Bob" } }"#, &["Ann"]),
            ("{ friends_none: {} }", &["Cid"]),
        ]).await;
        check(srv, &b, "allProfiles", "bio", &[
            (r#"{ user: { name: "Cid" } }"#, &["reader"]),
            (r#"{ user: { name: "Ann" } }"#, &[]),
        ]).await;
        let kim = srv.create("Child", r#"name: "Kim""#).await;
        srv.create("Child", &format!(r#"name: "Lee", twinId: "{kim}""#)).await;
        srv.create("Child", r#"name: "Max""#).await;
        check(srv, &b, "allChildren", "name", &[
            (r#"{ twin: { name: "Kim" } }"#, &["Lee"]),
            (r#"{ twin: { name: "Lee" } }"#, &["Kim"]),
            ("{ twin: null }", &["Max"]),
            ("{ twin: {} }", &["Kim", "Lee"]),
        ]).await;
    }

    /// Relation filters work in relation-field arguments, in meta fields and through variables.
    async fn in_field_arguments_meta_and_variables(srv) {
        blog(srv).await;
        assert_eq!(
            srv.gql(r#"{ allUsers { name posts(filter: { categories_some: { name: "news" } }) { slug } _postsMeta(filter: { comments_some: {} }) { count } } }"#).await,
            json!({ "data": { "allUsers": [
                { "name": "Ann", "posts": [{ "slug": "alpha" }, { "slug": "beta" }], "_postsMeta": { "count": 1 } },
                { "name": "Bob", "posts": [], "_postsMeta": { "count": 1 } },
                { "name": "Cid", "posts": [], "_postsMeta": { "count": 0 } },
            ] } })
        );
        assert_eq!(
            srv.gql(r#"{ _allPostsMeta(filter: { author: { name_in: ["Ann", "Bob"] } }) { count } _allUsersMeta(filter: { posts_none: {} }) { count } }"#).await,
            json!({ "data": { "_allPostsMeta": { "count": 3 }, "_allUsersMeta": { "count": 1 } } })
        );
        let q = "query ($f: UserFilter) { allUsers(filter: $f) { name } }";
        assert_eq!(
            srv.gql_vars(q, json!({ "f": { "posts_some": { "votes": 5 }, "posts_none": { "slug": "beta" } } })).await,
            list_of("allUsers", "name", &["Bob"])
        );
        assert_eq!(
            srv.gql_vars("query ($f: PostFilter) { allPosts(filter: $f) { slug } }", json!({ "f": { "author": null } })).await,
            list_of("allPosts", "slug", &["delta"])
        );
    }

    /// `f_some`/`f_every`/`f_none: null` → 3033, at any depth, wherever a filter is accepted.
    async fn to_many_null_is_3033(srv) {
        let b = blog(srv).await;
        for (field, filter, relation) in [
            ("allUsers", "{ posts_some: null }", "posts"),
            ("allUsers", "{ posts_every: null }", "posts"),
            ("allUsers", "{ posts_none: null }", "posts"),
            ("allPosts", "{ author: { posts_every: null } }", "posts"),
            ("allPosts", "{ OR: [{ votes: 5 }, { categories_some: null }] }", "categories"),
            ("allComments", "{ replies_none: null }", "replies"),
            ("allUsers", "{ friends_some: null }", "friends"),
        ] {
            let q = format!("{{ {field}(filter: {filter}) {{ id }} }}");
            assert_eq!(
                srv.gql(&q).await,
                json!({ "data": null, "errors": [field_error(json!([field]), 1, 3, 3033, &too_many_null(relation))] }),
                "{q}"
            );
        }
        let q = "{ _allPostsMeta(filter: { comments_none: null }) { count } }";
        assert_eq!(
            srv.gql(q).await,
            json!({ "data": null, "errors": [field_error(json!(["_allPostsMeta"]), 1, 3, 3033, &too_many_null("comments"))] })
        );
        // On a relation field (a nullable list) only that field is null.
        let q = with_ids(r#"{ User(id: "{ann}") { name posts(filter: { categories_none: null }) { id } } }"#, &b);
        assert_eq!(
            srv.gql(&q).await,
            json!({
                "data": { "User": { "name": "Ann", "posts": null } },
                "errors": [field_error(json!(["User", "posts"]), 1, column_of(&q, "posts"), 3033, &too_many_null("categories"))],
            })
        );
        // Through a variable.
        let q = "query ($f: UserFilter) { allUsers(filter: $f) { name } }";
        assert_eq!(
            srv.gql_vars(q, json!({ "f": { "posts_some": null } })).await,
            json!({ "data": null, "errors": [field_error(json!(["allUsers"]), 1, column_of(q, "allUsers"), 3033, &too_many_null("posts"))] })
        );
    }
}
