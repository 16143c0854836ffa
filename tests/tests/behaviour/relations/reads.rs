//! Reading relations (§2.3, §2.4, §2.9): to-one fields (`null` when there is no partner),
//! to-many fields (`[]` when empty, id order by default), `_{f}Meta` counts, per-parent
//! ordering and pagination, the argument errors and the 1000 cap on relation fields, self
//! relations (two fields, one symmetric field, 1:1 symmetric), and `node(id)` for every type.

use serde_json::{Value, json};

use crate::support::{Blog, Server, blog, column_of, field_error, with_ids};

/// Runs a query whose `{name}` placeholders are replaced by the blog fixture's ids.
async fn query(srv: &Server, b: &Blog, text: &str) -> Value {
    srv.gql(&with_ids(text, b)).await
}

/// Creates users Ann, Bob and Cid; Ann writes (in this order) `a1` "Apple" (votes 3), `a2`
/// "banana" (votes 1), `a3` "Cherry" (votes 2); Bob writes `b1` "date" (votes 7), `b2` "Elder"
/// (votes 9), `b3` "fig" (votes 8); Cid writes nothing. Returns the post ids by slug order.
async fn six_posts_of_two_users(srv: &Server) -> Vec<String> {
    srv.data(
        r#"mutation {
  ann: createUser(email: "ann@example.com", name: "Ann") { id }
  bob: createUser(email: "bob@example.com", name: "Bob") { id }
  cid: createUser(email: "cid@example.com", name: "Cid") { id }
}"#,
    )
    .await;
    let data = srv
        .data(
            r#"mutation {
  a1: createPost(slug: "a1", title: "Apple", votes: 3) { id }
  a2: createPost(slug: "a2", title: "banana", votes: 1) { id }
  a3: createPost(slug: "a3", title: "Cherry", votes: 2) { id }
  b1: createPost(slug: "b1", title: "date", votes: 7) { id }
  b2: createPost(slug: "b2", title: "Elder", votes: 9) { id }
  b3: createPost(slug: "b3", title: "fig", votes: 8) { id }
}"#,
        )
        .await;
    let ids: Vec<String> = ["a1", "a2", "a3", "b1", "b2", "b3"]
        .iter()
        .map(|k| data[*k]["id"].as_str().expect("an id").to_owned())
        .collect();
    assert!(ids.is_sorted(), "cuids sort in creation order: {ids:?}");
    // Bob's posts are connected first, so the edge order differs from the id order.
    srv.data(&format!(
        r#"mutation {{
  bob: updateUser(id: "{bob}", postsIds: ["{b3}", "{b1}", "{b2}"]) {{ id }}
}}"#,
        bob = user_id(srv, "Bob").await,
        b1 = ids[3],
        b2 = ids[4],
        b3 = ids[5],
    ))
    .await;
    srv.data(&format!(
        r#"mutation {{
  ann: updateUser(id: "{ann}", postsIds: ["{a2}", "{a3}", "{a1}"]) {{ id }}
}}"#,
        ann = user_id(srv, "Ann").await,
        a1 = ids[0],
        a2 = ids[1],
        a3 = ids[2],
    ))
    .await;
    ids
}

async fn user_id(srv: &Server, name: &str) -> String {
    let data = srv
        .data(&format!(
            r#"{{ allUsers(filter: {{ name: "{name}" }}) {{ id }} }}"#
        ))
        .await;
    data["allUsers"][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no user {name}: {data}"))
        .to_owned()
}

/// `{"data": {"allUsers": [{"name": n, "posts": [{"slug": s}, …]}, …]}}` for Ann, Bob, Cid.
fn posts_by_user(ann: &[&str], bob: &[&str], cid: &[&str]) -> Value {
    let user = |name: &str, slugs: &[&str]| {
        let posts: Vec<Value> = slugs.iter().map(|s| json!({ "slug": s })).collect();
        json!({ "name": name, "posts": posts })
    };
    json!({ "data": { "allUsers": [user("Ann", ann), user("Bob", bob), user("Cid", cid)] } })
}

db_tests! {
    /// To-one fields resolve the partner or `null`; to-many fields list the related nodes in id
    /// order, `[]` when there are none; both directions agree.
    async fn fields_in_both_directions(srv) {
        let b = blog(srv).await;
        assert_eq!(
            query(srv, &b, "{ allPosts { slug author { name } categories { name } comments { text } pinnedIn { name } } }").await,
            json!({ "data": { "allPosts": [
                { "slug": "alpha", "author": { "name": "Ann" }, "categories": [{ "name": "news" }], "comments": [{ "text": "great post" }, { "text": "fine" }, { "text": "agreed" }], "pinnedIn": null },
                { "slug": "beta", "author": { "name": "Ann" }, "categories": [{ "name": "news" }, { "name": "tech" }], "comments": [], "pinnedIn": null },
                { "slug": "gamma", "author": { "name": "Bob" }, "categories": [{ "name": "tech" }], "comments": [{ "text": "meh" }], "pinnedIn": null },
                { "slug": "delta", "author": null, "categories": [], "comments": [], "pinnedIn": null },
            ] } })
        );
        assert_eq!(
            query(srv, &b, "{ allUsers { name posts { slug } profile { bio } } }").await,
            json!({ "data": { "allUsers": [
                { "name": "Ann", "posts": [{ "slug": "alpha" }, { "slug": "beta" }], "profile": null },
                { "name": "Bob", "posts": [{ "slug": "gamma" }], "profile": null },
                { "name": "Cid", "posts": [], "profile": null },
            ] } })
        );
        assert_eq!(
            query(srv, &b, "{ allCategories { name posts { slug } pinnedPost { slug } } }").await,
            json!({ "data": { "allCategories": [
                { "name": "news", "posts": [{ "slug": "alpha" }, { "slug": "beta" }], "pinnedPost": null },
                { "name": "tech", "posts": [{ "slug": "beta" }, { "slug": "gamma" }], "pinnedPost": null },
                { "name": "misc", "posts": [], "pinnedPost": null },
            ] } })
        );
        assert_eq!(
            query(srv, &b, "{ allComments { text post { slug } parent { text } replies { text } } }").await,
            json!({ "data": { "allComments": [
                { "text": "great post", "post": { "slug": "alpha" }, "parent": null, "replies": [{ "text": "agreed" }] },
                { "text": "fine", "post": { "slug": "alpha" }, "parent": null, "replies": [] },
                { "text": "meh", "post": { "slug": "gamma" }, "parent": null, "replies": [] },
                { "text": "agreed", "post": { "slug": "alpha" }, "parent": { "text": "great post" }, "replies": [] },
            ] } })
        );
    }

    /// Relation fields nest to any depth, also on single-node queries, and come back to the
    /// starting node.
    async fn deep_nesting(srv) {
        let b = blog(srv).await;
        assert_eq!(
            query(srv, &b, r#"{ User(id: "{ann}") { name posts { slug categories { name posts { slug author { name } } } comments { text replies { text post { author { email } } } } } } }"#).await,
            json!({ "data": { "User": { "name": "Ann", "posts": [
                { "slug": "alpha",
                  "categories": [{ "name": "news", "posts": [{ "slug": "alpha", "author": { "name": "Ann" } }, { "slug": "beta", "author": { "name": "Ann" } }] }],
                  "comments": [
                      { "text": "great post", "replies": [{ "text": "agreed", "post": { "author": { "email": "ann@example.com" } } }] },
                      { "text": "fine", "replies": [] },
                      { "text": "agreed", "replies": [] },
                  ] },
                { "slug": "beta",
                  "categories": [
                      { "name": "news", "posts": [{ "slug": "alpha", "author": { "name": "Ann" } }, { "slug": "beta", "author": { "name": "Ann" } }] },
                      { "name": "tech", "posts": [{ "slug": "beta", "author": { "name": "Ann" } }, { "slug": "gamma", "author": { "name": "Bob" } }] },
                  ],
                  "comments": [] },
            ] } } })
        );
        assert_eq!(
            query(srv, &b, r#"{ Comment(id: "{agreed}") { text parent { text post { slug comments(filter: { text: "meh" }) { text } } } } }"#).await,
            json!({ "data": { "Comment": { "text": "agreed", "parent": { "text": "great post", "post": { "slug": "alpha", "comments": [] } } } } })
        );
    }

    /// `_{f}Meta { count }` counts the related nodes matching `filter` and ignores the
    /// pagination and ordering arguments (§2.3).
    async fn meta_counts_honour_only_the_filter(srv) {
        let b = blog(srv).await;
        assert_eq!(
            query(srv, &b, r#"{ allUsers { name _postsMeta { count } five: _postsMeta(filter: { votes: 5 }) { count } paged: _postsMeta(first: 1, skip: 1, orderBy: votes_DESC, after: "{alpha}") { count } } }"#).await,
            json!({ "data": { "allUsers": [
                { "name": "Ann", "_postsMeta": { "count": 2 }, "five": { "count": 1 }, "paged": { "count": 2 } },
                { "name": "Bob", "_postsMeta": { "count": 1 }, "five": { "count": 1 }, "paged": { "count": 1 } },
                { "name": "Cid", "_postsMeta": { "count": 0 }, "five": { "count": 0 }, "paged": { "count": 0 } },
            ] } })
        );
        assert_eq!(
            query(srv, &b, r#"{ allPosts { slug _categoriesMeta { count } _commentsMeta(filter: { parent: null }) { count } } Comment(id: "{great}") { _repliesMeta { count } } Category(name: "tech") { _postsMeta(filter: { author: { name: "Bob" } }) { count } } }"#).await,
            json!({ "data": {
                "allPosts": [
                    { "slug": "alpha", "_categoriesMeta": { "count": 1 }, "_commentsMeta": { "count": 2 } },
                    { "slug": "beta", "_categoriesMeta": { "count": 2 }, "_commentsMeta": { "count": 0 } },
                    { "slug": "gamma", "_categoriesMeta": { "count": 1 }, "_commentsMeta": { "count": 1 } },
                    { "slug": "delta", "_categoriesMeta": { "count": 0 }, "_commentsMeta": { "count": 0 } },
                ],
                "Comment": { "_repliesMeta": { "count": 1 } },
                "Category": { "_postsMeta": { "count": 1 } },
            } })
        );
    }

    /// A to-one field's `filter` makes it `null` when the partner does not match (§2.3).
    async fn to_one_filter_argument(srv) {
        let b = blog(srv).await;
        assert_eq!(
            query(srv, &b, r#"{ allPosts { slug author(filter: { name: "Ann" }) { name } } allComments(filter: { replies_none: {} }) { text match: parent(filter: { text: "great post" }) { text } other: parent(filter: { text: "fine" }) { text } } }"#).await,
            json!({ "data": {
                "allPosts": [
                    { "slug": "alpha", "author": { "name": "Ann" } },
                    { "slug": "beta", "author": { "name": "Ann" } },
                    { "slug": "gamma", "author": null },
                    { "slug": "delta", "author": null },
                ],
                "allComments": [
                    { "text": "fine", "match": null, "other": null },
                    { "text": "meh", "match": null, "other": null },
                    { "text": "agreed", "match": { "text": "great post" }, "other": null },
                ],
            } })
        );
    }

    /// `filter` and `orderBy` on a to-many field apply to each parent's own list.
    async fn to_many_filter_and_order(srv) {
        let b = blog(srv).await;
        assert_eq!(
            query(srv, &b, "{ allCategories { name posts(filter: { votes_gte: 5 }) { slug } } }").await,
            json!({ "data": { "allCategories": [
                { "name": "news", "posts": [{ "slug": "alpha" }] },
                { "name": "tech", "posts": [{ "slug": "gamma" }] },
                { "name": "misc", "posts": [] },
            ] } })
        );
        assert_eq!(
            query(srv, &b, "{ allCategories { name posts(orderBy: votes_ASC) { slug } } }").await,
            json!({ "data": { "allCategories": [
                { "name": "news", "posts": [{ "slug": "beta" }, { "slug": "alpha" }] },
                { "name": "tech", "posts": [{ "slug": "beta" }, { "slug": "gamma" }] },
                { "name": "misc", "posts": [] },
            ] } })
        );
        assert_eq!(
            query(srv, &b, "{ allPosts(filter: { slug: \"alpha\" }) { comments(orderBy: text_DESC) { text } } }").await,
            json!({ "data": { "allPosts": [{ "comments": [{ "text": "great post" }, { "text": "fine" }, { "text": "agreed" }] }] } })
        );
    }

    /// `first`, `last`, `skip`, `after` and `before` on a to-many field paginate each parent's
    /// list on its own (§2.9); the default order is by id, not by when the edge was made.
    async fn pagination_per_parent(srv) {
        let ids = six_posts_of_two_users(srv).await;
        let cases: Vec<(String, Value)> = vec![
            ("".into(), posts_by_user(&["a1", "a2", "a3"], &["b1", "b2", "b3"], &[])),
            ("(first: 2, orderBy: title_DESC)".into(), posts_by_user(&["a3", "a2"], &["b3", "b2"], &[])),
            ("(first: 2)".into(), posts_by_user(&["a1", "a2"], &["b1", "b2"], &[])),
            ("(last: 2)".into(), posts_by_user(&["a2", "a3"], &["b2", "b3"], &[])),
            ("(skip: 1)".into(), posts_by_user(&["a2", "a3"], &["b2", "b3"], &[])),
            ("(skip: 1, first: 1)".into(), posts_by_user(&["a2"], &["b2"], &[])),
            ("(skip: 1, last: 1)".into(), posts_by_user(&["a2"], &["b2"], &[])),
            ("(orderBy: votes_DESC, first: 1)".into(), posts_by_user(&["a1"], &["b2"], &[])),
            ("(orderBy: votes_ASC, last: 2)".into(), posts_by_user(&["a3", "a1"], &["b3", "b2"], &[])),
            ("(first: 0)".into(), posts_by_user(&[], &[], &[])),
            ("(skip: 5)".into(), posts_by_user(&[], &[], &[])),
            // Cursors compare with the cursor node's own values, also when the cursor is not
            // in this parent's list.
            (format!(r#"(after: "{}")"#, ids[1]), posts_by_user(&["a3"], &["b1", "b2", "b3"], &[])),
            (format!(r#"(before: "{}")"#, ids[4]), posts_by_user(&["a1", "a2", "a3"], &["b1"], &[])),
            (format!(r#"(after: "{}", first: 1)"#, ids[0]), posts_by_user(&["a2"], &["b1"], &[])),
            (format!(r#"(before: "{}", last: 1)"#, ids[5]), posts_by_user(&["a3"], &["b2"], &[])),
            (format!(r#"(orderBy: title_ASC, after: "{}")"#, ids[2]), posts_by_user(&[], &["b1", "b2", "b3"], &[])),
            (format!(r#"(orderBy: votes_DESC, before: "{}")"#, ids[5]), posts_by_user(&[], &["b2"], &[])),
            (r#"(after: "cnotthere0000000000000000")"#.into(), posts_by_user(&[], &[], &[])),
        ];
        for (args, expected) in cases {
            assert_eq!(
                srv.gql(&format!("{{ allUsers {{ name posts{args} {{ slug }} }} }}")).await,
                expected,
                "posts{args}"
            );
        }
    }

    /// `first` with `last`, negative values and more than 1000 on a relation field → 3014,
    /// 3026-3028, 2041 as a field error on that relation field (a nullable list, so only it is
    /// `null`).
    async fn relation_field_argument_errors(srv) {
        srv.create("User", r#"email: "ann@example.com", name: "Ann""#).await;
        let cases: &[(&str, u32, &str)] = &[
            ("first: 1, last: 1", 3014, "Including a value for both first and last is not supported. See the spec for a discussion of why https://facebook.github.io/relay/graphql/connections.htm#sec-Pagination-algorithm"),
            ("first: -1", 3026, "The 'first' argument must be non negative"),
            ("last: -1", 3027, "The 'last' argument must be non negative"),
            ("skip: -1", 3028, "The 'skip' argument must be non negative"),
            ("first: 1001", 2041, "You requested 1001 nodes. We will only return up to 1000 nodes per query."),
            ("last: 1500", 2041, "You requested 1500 nodes. We will only return up to 1000 nodes per query."),
        ];
        for (args, code, message) in cases {
            let q = format!("{{ allUsers {{ name posts({args}) {{ id }} }} }}");
            assert_eq!(
                srv.gql(&q).await,
                json!({
                    "data": { "allUsers": [{ "name": "Ann", "posts": null }] },
                    "errors": [field_error(json!(["allUsers", 0, "posts"]), 1, column_of(&q, "posts"), *code, message)],
                }),
                "posts({args})"
            );
        }
        let q = "{ allUsers { name followers(first: -1) { id } } }";
        assert_eq!(
            srv.gql(q).await,
            json!({
                "data": { "allUsers": [{ "name": "Ann", "followers": null }] },
                "errors": [field_error(json!(["allUsers", 0, "followers"]), 1, column_of(q, "followers"), 3026, "The 'first' argument must be non negative")],
            })
        );
        assert_eq!(
            srv.gql("{ allUsers { posts(first: 1000) { id } } }").await,
            json!({ "data": { "allUsers": [{ "posts": [] }] } })
        );
        // One error per parent.
        srv.create("User", r#"email: "bob@example.com", name: "Bob""#).await;
        let q = "{ allUsers { name posts(skip: -2) { id } } }";
        let error = |i: usize| field_error(json!(["allUsers", i, "posts"]), 1, column_of(q, "posts"), 3028, "The 'skip' argument must be non negative");
        assert_eq!(
            srv.gql(q).await,
            json!({
                "data": { "allUsers": [{ "name": "Ann", "posts": null }, { "name": "Bob", "posts": null }] },
                "errors": [error(0), error(1)],
            })
        );
    }

    /// Without `first`/`last` a relation field returns at most 1000 nodes, silently; its meta
    /// count is not capped.
    async fn implicit_cap_of_1000_per_relation_field(srv) {
        let posts: String = (0..1001)
            .map(|i| format!(r#"{{ slug: "p{i:04}", title: "Post {i}" }}, "#))
            .collect();
        let user = srv
            .data(&format!(r#"mutation {{ createUser(email: "ann@example.com", name: "Ann", posts: [{posts}]) {{ id }} }}"#))
            .await;
        let user = user["createUser"]["id"].as_str().expect("an id").to_owned();
        let all = srv.data("{ first: allPosts { id } last: allPosts(last: 1) { id } _allPostsMeta { count } }").await;
        assert_eq!(all["_allPostsMeta"], json!({ "count": 1001 }));
        let first_1000 = all["first"].clone();
        assert_eq!(first_1000.as_array().map(Vec::len), Some(1000));
        assert_eq!(
            srv.gql(&format!(r#"{{ User(id: "{user}") {{ posts {{ id }} _postsMeta {{ count }} rest: posts(skip: 1000) {{ id }} last: posts(last: 1) {{ id }} capped: posts(first: 1000) {{ id }} }} }}"#)).await,
            json!({ "data": { "User": {
                "posts": first_1000,
                "_postsMeta": { "count": 1001 },
                "rest": all["last"],
                "last": all["last"],
                "capped": first_1000,
            } } })
        );
    }

    /// A 1:1 relation read from both sides; the required side (`Profile.user`) is non-null.
    async fn one_to_one_both_directions(srv) {
        let b = blog(srv).await;
        srv.create("Profile", &format!(r#"bio: "Ann writes", userId: "{}""#, b.ann)).await;
        srv.create("Profile", &format!(r#"bio: "Cid reads", userId: "{}""#, b.cid)).await;
        assert_eq!(
            query(srv, &b, "{ allUsers { name profile { bio user { name } } } allProfiles { bio user { name profile { bio } } } }").await,
            json!({ "data": {
                "allUsers": [
                    { "name": "Ann", "profile": { "bio": "Ann writes", "user": { "name": "Ann" } } },
                    { "name": "Bob", "profile": null },
                    { "name": "Cid", "profile": { "bio": "Cid reads", "user": { "name": "Cid" } } },
                ],
                "allProfiles": [
                    { "bio": "Ann writes", "user": { "name": "Ann", "profile": { "bio": "Ann writes" } } },
                    { "bio": "Cid reads", "user": { "name": "Cid", "profile": { "bio": "Cid reads" } } },
                ],
            } })
        );
        let res = query(srv, &b, r#"mutation { setPinnedPost(pinnedInCategoryId: "{tech}", pinnedPostPostId: "{gamma}") { pinnedPostPost { slug } } }"#).await;
        assert_eq!(res, json!({ "data": { "setPinnedPost": { "pinnedPostPost": { "slug": "gamma" } } } }));
        assert_eq!(
            query(srv, &b, "{ allPosts(filter: { pinnedIn: { name_not: null } }) { slug pinnedIn { name pinnedPost { slug } } } allCategories { pinnedPost { slug } } }").await,
            json!({ "data": {
                "allPosts": [{ "slug": "gamma", "pinnedIn": { "name": "tech", "pinnedPost": { "slug": "gamma" } } }],
                "allCategories": [{ "pinnedPost": null }, { "pinnedPost": { "slug": "gamma" } }, { "pinnedPost": null }],
            } })
        );
    }

    /// Self relations: two fields (`followers`/`following`), one symmetric list field
    /// (`friends`), one symmetric single field (`twin`).
    async fn self_relations(srv) {
        let b = blog(srv).await;
        // Bob is followed by Ann and Cid; Ann is followed by Bob.
        srv.data(&with_ids(r#"mutation { bob: updateUser(id: "{bob}", followersIds: ["{ann}", "{cid}"]) { id } ann: updateUser(id: "{ann}", followersIds: ["{bob}"]) { id } }"#, &b)).await;
        assert_eq!(
            query(srv, &b, "{ allUsers { name followers { name } following { name } _followersMeta { count } _followingMeta { count } } }").await,
            json!({ "data": { "allUsers": [
                { "name": "Ann", "followers": [{ "name": "Bob" }], "following": [{ "name": "Bob" }], "_followersMeta": { "count": 1 }, "_followingMeta": { "count": 1 } },
                { "name": "Bob", "followers": [{ "name": "Ann" }, { "name": "Cid" }], "following": [{ "name": "Ann" }], "_followersMeta": { "count": 2 }, "_followingMeta": { "count": 1 } },
                { "name": "Cid", "followers": [], "following": [{ "name": "Bob" }], "_followersMeta": { "count": 0 }, "_followingMeta": { "count": 1 } },
            ] } })
        );
        // Friendship is symmetric: made from one side, seen from both.
        srv.data(&with_ids(r#"mutation { updateUser(id: "{ann}", friendsIds: ["{bob}"]) { id } }"#, &b)).await;
        srv.data(&with_ids(r#"mutation { updateUser(id: "{cid}", friendsIds: ["{ann}"]) { id } }"#, &b)).await;
        assert_eq!(
            query(srv, &b, "{ allUsers { name friends { name } _friendsMeta { count } } }").await,
            json!({ "data": { "allUsers": [
                { "name": "Ann", "friends": [{ "name": "Bob" }, { "name": "Cid" }], "_friendsMeta": { "count": 2 } },
                { "name": "Bob", "friends": [{ "name": "Ann" }], "_friendsMeta": { "count": 1 } },
                { "name": "Cid", "friends": [{ "name": "Ann" }], "_friendsMeta": { "count": 1 } },
            ] } })
        );
        // Twins: made from one side, seen from both.
        let kim = srv.create("Child", r#"name: "Kim""#).await;
        srv.create("Child", &format!(r#"name: "Lee", twinId: "{kim}""#)).await;
        srv.create("Child", r#"name: "Max""#).await;
        assert_eq!(
            srv.gql("{ allChildren { name twin { name twin { name } } } }").await,
            json!({ "data": { "allChildren": [
                { "name": "Kim", "twin": { "name": "Lee", "twin": { "name": "Kim" } } },
                { "name": "Lee", "twin": { "name": "Kim", "twin": { "name": "Lee" } } },
                { "name": "Max", "twin": null },
            ] } })
        );
    }

    /// `node(id)` resolves nodes of every model, including `Profile` and `Comment`, with their
    /// relation fields.
    async fn node_resolves_every_type(srv) {
        let b = blog(srv).await;
        let profile = srv.create("Profile", &format!(r#"bio: "hi", userId: "{}""#, b.bob)).await;
        let kim = srv.create("Child", r#"name: "Kim""#).await;
        let q = format!(
            r#"{{
  profile: node(id: "{profile}") {{ __typename id ... on Profile {{ bio user {{ name }} }} }}
  comment: node(id: "{agreed}") {{ __typename id ... on Comment {{ text post {{ slug }} parent {{ text }} }} }}
  post: node(id: "{gamma}") {{ __typename ... on Post {{ slug author {{ name profile {{ bio }} }} comments {{ text }} }} }}
  user: node(id: "{ann}") {{ __typename ... on User {{ name posts {{ slug }} }} }}
  category: node(id: "{news}") {{ __typename ... on Category {{ name posts {{ slug }} }} }}
  child: node(id: "{kim}") {{ __typename ... on Child {{ name twin {{ name }} }} }}
}}"#,
            agreed = b.agreed,
            gamma = b.posts.gamma,
            ann = b.ann,
            news = b.news,
        );
        assert_eq!(
            srv.gql(&q).await,
            json!({ "data": {
                "profile": { "__typename": "Profile", "id": profile, "bio": "hi", "user": { "name": "Bob" } },
                "comment": { "__typename": "Comment", "id": b.agreed, "text": "agreed", "post": { "slug": "alpha" }, "parent": { "text": "great post" } },
                "post": { "__typename": "Post", "slug": "gamma", "author": { "name": "Bob", "profile": { "bio": "hi" } }, "comments": [{ "text": "meh" }] },
                "user": { "__typename": "User", "name": "Ann", "posts": [{ "slug": "alpha" }, { "slug": "beta" }] },
                "category": { "__typename": "Category", "name": "news", "posts": [{ "slug": "alpha" }, { "slug": "beta" }] },
                "child": { "__typename": "Child", "name": "Kim", "twin": null },
            } })
        );
    }

    /// `delete` returns the node as it was, with its relation fields empty; the edges are gone
    /// from the partners afterwards (§2.5, §2.6).
    async fn deleted_node_has_no_relations(srv) {
        let b = blog(srv).await;
        assert_eq!(
            query(srv, &b, r#"mutation { deletePost(id: "{beta}") { slug author { name } categories { name } _categoriesMeta { count } comments { text } } }"#).await,
            json!({ "data": { "deletePost": { "slug": "beta", "author": null, "categories": [], "_categoriesMeta": { "count": 0 }, "comments": [] } } })
        );
        assert_eq!(
            query(srv, &b, r#"{ User(id: "{ann}") { posts { slug } _postsMeta { count } } allCategories { posts { slug } } }"#).await,
            json!({ "data": {
                "User": { "posts": [{ "slug": "alpha" }], "_postsMeta": { "count": 1 } },
                "allCategories": [{ "posts": [{ "slug": "alpha" }] }, { "posts": [{ "slug": "gamma" }] }, { "posts": [] }],
            } })
        );
    }
}
