//! Relation mutations (§2.1, §2.7): `set`/`unset` for 1:1, `addTo`/`removeFrom` for 1:n and n:m,
//! their names, arguments (`{aName}Id` = the B node, `{bName}Id` = the A node) and payloads,
//! stealing, symmetric self relations, no-ops, and the errors 3001, 3011, 3013 and 3032.
//!
//! Side A is the first field of a relation in document order; the names used here are:
//!
//! | relation | A.field → B | aName | bName |
//! |---|---|---|---|
//! | UserPosts | User.posts → Post | postsPost | authorUser |
//! | UserProfile | User.profile → Profile | profileProfile | userUser |
//! | Follows | User.followers → User | followersUser | followingUser |
//! | Friends | User.friends (one field) | friends1User | friends2User |
//! | PostCategories | Post.categories → Category | categoriesCategory | postsPost |
//! | PostComments | Post.comments → Comment | commentsComment | postPost |
//! | PinnedPost | Post.pinnedIn → Category | pinnedInCategory | pinnedPostPost |
//! | Twins | Child.twin (one field) | twin1Child | twin2Child |
//! | CommentReplies | Comment.parent → Comment | parentComment | repliesComment |

use serde_json::{Value, json};

use crate::simple::introspection::{find, names, sdl, signatures, type_info};
use crate::support::{
    Blog, MISSING, Server, assert_fails, assert_validation_error, blog, with_ids,
};

/// Runs a mutation or query whose `{name}` placeholders are replaced by the fixture's ids.
async fn run(srv: &Server, b: &Blog, text: &str) -> Value {
    srv.gql(&with_ids(text, b)).await
}

/// Everything the relation mutations of these tests can change.
async fn snapshot(srv: &Server) -> Value {
    srv.data("{ allUsers { name posts { slug } followers { name } following { name } friends { name } profile { bio } } allPosts { slug author { name } categories { name } comments { text } pinnedIn { name } } allCategories { name posts { slug } pinnedPost { slug } } allComments { text post { slug } parent { text } replies { text } } allChildren { name twin { name } } }").await
}

fn required(field: &str, model: &str) -> String {
    format!(
        "The field '{field}' on type '{model}' is required. Performing this mutation would violate the constraint"
    )
}

db_tests! {
    /// Which relation mutations exist, with which arguments and payloads.
    async fn names_arguments_and_payloads(srv) {
        let mutation = type_info(srv, "Mutation").await;
        let fields = &mutation["fields"];
        let cases: &[(&str, [&str; 2], &str, [&str; 2])] = &[
            ("setUserProfile", ["profileProfileId: ID!", "userUserId: ID!"], "SetUserProfilePayload", ["userUser: User", "profileProfile: Profile"]),
            ("setPinnedPost", ["pinnedInCategoryId: ID!", "pinnedPostPostId: ID!"], "SetPinnedPostPayload", ["pinnedPostPost: Post", "pinnedInCategory: Category"]),
            ("unsetPinnedPost", ["pinnedInCategoryId: ID!", "pinnedPostPostId: ID!"], "UnsetPinnedPostPayload", ["pinnedPostPost: Post", "pinnedInCategory: Category"]),
            ("setTwins", ["twin1ChildId: ID!", "twin2ChildId: ID!"], "SetTwinsPayload", ["twin2Child: Child", "twin1Child: Child"]),
            ("unsetTwins", ["twin1ChildId: ID!", "twin2ChildId: ID!"], "UnsetTwinsPayload", ["twin2Child: Child", "twin1Child: Child"]),
            ("addToUserPosts", ["postsPostId: ID!", "authorUserId: ID!"], "AddToUserPostsPayload", ["authorUser: User", "postsPost: Post"]),
            ("removeFromUserPosts", ["postsPostId: ID!", "authorUserId: ID!"], "RemoveFromUserPostsPayload", ["authorUser: User", "postsPost: Post"]),
            ("addToFollows", ["followersUserId: ID!", "followingUserId: ID!"], "AddToFollowsPayload", ["followingUser: User", "followersUser: User"]),
            ("removeFromFollows", ["followersUserId: ID!", "followingUserId: ID!"], "RemoveFromFollowsPayload", ["followingUser: User", "followersUser: User"]),
            ("addToFriends", ["friends1UserId: ID!", "friends2UserId: ID!"], "AddToFriendsPayload", ["friends2User: User", "friends1User: User"]),
            ("removeFromFriends", ["friends1UserId: ID!", "friends2UserId: ID!"], "RemoveFromFriendsPayload", ["friends2User: User", "friends1User: User"]),
            ("addToPostCategories", ["categoriesCategoryId: ID!", "postsPostId: ID!"], "AddToPostCategoriesPayload", ["postsPost: Post", "categoriesCategory: Category"]),
            ("removeFromPostCategories", ["categoriesCategoryId: ID!", "postsPostId: ID!"], "RemoveFromPostCategoriesPayload", ["postsPost: Post", "categoriesCategory: Category"]),
            ("addToPostComments", ["commentsCommentId: ID!", "postPostId: ID!"], "AddToPostCommentsPayload", ["postPost: Post", "commentsComment: Comment"]),
            ("addToCommentReplies", ["parentCommentId: ID!", "repliesCommentId: ID!"], "AddToCommentRepliesPayload", ["repliesComment: Comment", "parentComment: Comment"]),
            ("removeFromCommentReplies", ["parentCommentId: ID!", "repliesCommentId: ID!"], "RemoveFromCommentRepliesPayload", ["repliesComment: Comment", "parentComment: Comment"]),
        ];
        for (name, args, payload, payload_fields) in cases {
            let field = find(fields, name);
            assert_eq!(signatures(&field["args"]), args, "{name}");
            assert_eq!(sdl(&field["type"]), *payload, "{name}");
            let ty = type_info(srv, payload).await;
            assert_eq!(ty["kind"], json!("OBJECT"), "{payload}");
            assert_eq!(signatures(&ty["fields"]), payload_fields, "{payload}");
        }
        // No `unset` when a side is required, no `removeFrom` when a to-one side is required.
        let all = names(fields);
        let mut relation_mutations: Vec<&String> = all
            .iter()
            .filter(|n| {
                ["set", "unset", "addTo", "removeFrom"].iter().any(|p| {
                    n.strip_prefix(p).is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase()))
                })
            })
            .collect();
        relation_mutations.sort();
        let mut expected: Vec<&str> = cases.iter().map(|c| c.0).collect();
        expected.sort_unstable();
        assert_eq!(relation_mutations, expected);
        for (absent, mutation) in [
            ("unsetUserProfile", r#"mutation { unsetUserProfile(profileProfileId: "a", userUserId: "b") { userUser { id } } }"#),
            ("removeFromPostComments", r#"mutation { removeFromPostComments(commentsCommentId: "a", postPostId: "b") { postPost { id } } }"#),
        ] {
            assert_validation_error(&srv.gql(mutation).await, absent);
        }
    }

    /// `addToUserPosts`/`removeFromUserPosts` (1:n): connecting moves the post from its old
    /// author; adding an existing edge and removing a missing one are no-ops.
    async fn add_to_and_remove_from_one_to_many(srv) {
        let b = blog(srv).await;
        let selection = "{ authorUser { name posts { slug } } postsPost { slug author { name } } }";
        let call = |op: &str, post: &str, user: &str| format!(r#"mutation {{ {op}UserPosts(postsPostId: "{{{post}}}", authorUserId: "{{{user}}}") {selection} }}"#);
        let payload = |op: &str, user: &str, posts: &[&str], post: &str, author: Value| {
            let posts: Vec<Value> = posts.iter().map(|s| json!({ "slug": s })).collect();
            json!({ "data": { format!("{op}UserPosts"): {
                "authorUser": { "name": user, "posts": posts },
                "postsPost": { "slug": post, "author": author },
            } } })
        };
        assert_eq!(run(srv, &b, &call("addTo", "delta", "cid")).await, payload("addTo", "Cid", &["delta"], "delta", json!({ "name": "Cid" })));
        // alpha moves from Ann to Bob.
        assert_eq!(run(srv, &b, &call("addTo", "alpha", "bob")).await, payload("addTo", "Bob", &["alpha", "gamma"], "alpha", json!({ "name": "Bob" })));
        // The same edge again: no error, no duplicate.
        assert_eq!(run(srv, &b, &call("addTo", "alpha", "bob")).await, payload("addTo", "Bob", &["alpha", "gamma"], "alpha", json!({ "name": "Bob" })));
        assert_eq!(
            srv.data("{ allUsers { name posts { slug } } }").await,
            json!({ "allUsers": [
                { "name": "Ann", "posts": [{ "slug": "beta" }] },
                { "name": "Bob", "posts": [{ "slug": "alpha" }, { "slug": "gamma" }] },
                { "name": "Cid", "posts": [{ "slug": "delta" }] },
            ] })
        );
        assert_eq!(run(srv, &b, &call("removeFrom", "alpha", "bob")).await, payload("removeFrom", "Bob", &["gamma"], "alpha", json!(null)));
        // Removing it again, or an edge that never existed, is no error and changes nothing.
        assert_eq!(run(srv, &b, &call("removeFrom", "alpha", "bob")).await, payload("removeFrom", "Bob", &["gamma"], "alpha", json!(null)));
        assert_eq!(run(srv, &b, &call("removeFrom", "gamma", "ann")).await, payload("removeFrom", "Ann", &["beta"], "gamma", json!({ "name": "Bob" })));
        assert_eq!(
            srv.data("{ allPosts { slug author { name } } }").await,
            json!({ "allPosts": [
                { "slug": "alpha", "author": null },
                { "slug": "beta", "author": { "name": "Ann" } },
                { "slug": "gamma", "author": { "name": "Bob" } },
                { "slug": "delta", "author": { "name": "Cid" } },
            ] })
        );
    }

    /// `addToPostCategories`/`removeFromPostCategories` (n:m): no stealing on either side.
    async fn add_to_and_remove_from_many_to_many(srv) {
        let b = blog(srv).await;
        assert_eq!(
            run(srv, &b, r#"mutation { addToPostCategories(categoriesCategoryId: "{misc}", postsPostId: "{alpha}") { postsPost { slug categories { name } } categoriesCategory { name posts { slug } } } }"#).await,
            json!({ "data": { "addToPostCategories": {
                "postsPost": { "slug": "alpha", "categories": [{ "name": "news" }, { "name": "misc" }] },
                "categoriesCategory": { "name": "misc", "posts": [{ "slug": "alpha" }] },
            } } })
        );
        assert_eq!(
            run(srv, &b, r#"mutation { a: addToPostCategories(categoriesCategoryId: "{misc}", postsPostId: "{beta}") { categoriesCategory { posts { slug } } } b: addToPostCategories(categoriesCategoryId: "{news}", postsPostId: "{alpha}") { categoriesCategory { posts { slug } } } }"#).await,
            json!({ "data": {
                "a": { "categoriesCategory": { "posts": [{ "slug": "alpha" }, { "slug": "beta" }] } },
                "b": { "categoriesCategory": { "posts": [{ "slug": "alpha" }, { "slug": "beta" }] } },
            } })
        );
        assert_eq!(
            run(srv, &b, r#"mutation { removeFromPostCategories(categoriesCategoryId: "{news}", postsPostId: "{alpha}") { postsPost { categories { name } } categoriesCategory { posts { slug } } } }"#).await,
            json!({ "data": { "removeFromPostCategories": {
                "postsPost": { "categories": [{ "name": "misc" }] },
                "categoriesCategory": { "posts": [{ "slug": "beta" }] },
            } } })
        );
        assert_eq!(
            srv.data("{ allCategories { name posts { slug } } }").await,
            json!({ "allCategories": [
                { "name": "news", "posts": [{ "slug": "beta" }] },
                { "name": "tech", "posts": [{ "slug": "beta" }, { "slug": "gamma" }] },
                { "name": "misc", "posts": [{ "slug": "alpha" }, { "slug": "beta" }] },
            ] })
        );
    }

    /// `addToPostComments` moves a comment to another post; there is no `removeFrom` because
    /// `Comment.post` is required.
    async fn add_to_required_one_to_many(srv) {
        let b = blog(srv).await;
        assert_eq!(
            run(srv, &b, r#"mutation { addToPostComments(commentsCommentId: "{meh}", postPostId: "{alpha}") { postPost { slug comments { text } } commentsComment { text post { slug } } } }"#).await,
            json!({ "data": { "addToPostComments": {
                "postPost": { "slug": "alpha", "comments": [{ "text": "great post" }, { "text": "fine" }, { "text": "meh" }, { "text": "agreed" }] },
                "commentsComment": { "text": "meh", "post": { "slug": "alpha" } },
            } } })
        );
        assert_eq!(
            run(srv, &b, r#"{ Post(id: "{gamma}") { comments { text } _commentsMeta { count } } }"#).await,
            json!({ "data": { "Post": { "comments": [], "_commentsMeta": { "count": 0 } } } })
        );
    }

    /// `addToFollows`/`removeFromFollows`: a self relation on two fields has a direction.
    async fn self_relation_on_two_fields(srv) {
        let b = blog(srv).await;
        assert_eq!(
            run(srv, &b, r#"mutation { addToFollows(followersUserId: "{ann}", followingUserId: "{bob}") { followingUser { name followers { name } following { name } } followersUser { name followers { name } following { name } } } }"#).await,
            json!({ "data": { "addToFollows": {
                "followingUser": { "name": "Bob", "followers": [{ "name": "Ann" }], "following": [] },
                "followersUser": { "name": "Ann", "followers": [], "following": [{ "name": "Bob" }] },
            } } })
        );
        srv.data(&with_ids(r#"mutation { a: addToFollows(followersUserId: "{cid}", followingUserId: "{bob}") { followingUser { id } } b: addToFollows(followersUserId: "{bob}", followingUserId: "{ann}") { followingUser { id } } }"#, &b)).await;
        assert_eq!(
            run(srv, &b, r#"mutation { removeFromFollows(followersUserId: "{ann}", followingUserId: "{bob}") { followingUser { name followers { name } } followersUser { name following { name } followers { name } } } }"#).await,
            json!({ "data": { "removeFromFollows": {
                "followingUser": { "name": "Bob", "followers": [{ "name": "Cid" }] },
                "followersUser": { "name": "Ann", "following": [], "followers": [{ "name": "Bob" }] },
            } } })
        );
        assert_eq!(
            srv.data("{ allUsers { name followers { name } following { name } } }").await,
            json!({ "allUsers": [
                { "name": "Ann", "followers": [{ "name": "Bob" }], "following": [] },
                { "name": "Bob", "followers": [{ "name": "Cid" }], "following": [{ "name": "Ann" }] },
                { "name": "Cid", "followers": [], "following": [{ "name": "Bob" }] },
            ] })
        );
    }

    /// `addToFriends`/`removeFromFriends`: a symmetric relation, the same from either side and
    /// with the arguments either way round.
    async fn symmetric_many_to_many(srv) {
        let b = blog(srv).await;
        assert_eq!(
            run(srv, &b, r#"mutation { addToFriends(friends1UserId: "{ann}", friends2UserId: "{bob}") { friends2User { name friends { name } } friends1User { name friends { name } } } }"#).await,
            json!({ "data": { "addToFriends": {
                "friends2User": { "name": "Bob", "friends": [{ "name": "Ann" }] },
                "friends1User": { "name": "Ann", "friends": [{ "name": "Bob" }] },
            } } })
        );
        // The same pair the other way round is the same edge.
        assert_eq!(
            run(srv, &b, r#"mutation { addToFriends(friends1UserId: "{bob}", friends2UserId: "{ann}") { friends2User { name friends { name } _friendsMeta { count } } } }"#).await,
            json!({ "data": { "addToFriends": { "friends2User": { "name": "Ann", "friends": [{ "name": "Bob" }], "_friendsMeta": { "count": 1 } } } } })
        );
        srv.data(&with_ids(r#"mutation { addToFriends(friends1UserId: "{cid}", friends2UserId: "{ann}") { friends1User { id } } }"#, &b)).await;
        assert_eq!(
            srv.data("{ allUsers { name friends { name } } }").await,
            json!({ "allUsers": [
                { "name": "Ann", "friends": [{ "name": "Bob" }, { "name": "Cid" }] },
                { "name": "Bob", "friends": [{ "name": "Ann" }] },
                { "name": "Cid", "friends": [{ "name": "Ann" }] },
            ] })
        );
        // Removed with the arguments the other way round from how it was added.
        assert_eq!(
            run(srv, &b, r#"mutation { removeFromFriends(friends1UserId: "{bob}", friends2UserId: "{ann}") { friends2User { name friends { name } } friends1User { name friends { name } } } }"#).await,
            json!({ "data": { "removeFromFriends": {
                "friends2User": { "name": "Ann", "friends": [{ "name": "Cid" }] },
                "friends1User": { "name": "Bob", "friends": [] },
            } } })
        );
        assert_eq!(
            srv.data(r#"{ allUsers(filter: { friends_some: {} }) { name friends { name } } }"#).await,
            json!({ "allUsers": [
                { "name": "Ann", "friends": [{ "name": "Cid" }] },
                { "name": "Cid", "friends": [{ "name": "Ann" }] },
            ] })
        );
    }

    /// `addToCommentReplies`/`removeFromCommentReplies`: a 1:n self relation whose side A
    /// (`parent`) is the to-one field; adding moves the reply from its old parent.
    async fn self_relation_one_to_many(srv) {
        let b = blog(srv).await;
        assert_eq!(
            run(srv, &b, r#"mutation { addToCommentReplies(parentCommentId: "{great}", repliesCommentId: "{meh}") { repliesComment { text parent { text } } parentComment { text replies { text } } } }"#).await,
            json!({ "data": { "addToCommentReplies": {
                "repliesComment": { "text": "meh", "parent": { "text": "great post" } },
                "parentComment": { "text": "great post", "replies": [{ "text": "meh" }, { "text": "agreed" }] },
            } } })
        );
        assert_eq!(
            run(srv, &b, r#"mutation { addToCommentReplies(parentCommentId: "{fine}", repliesCommentId: "{agreed}") { repliesComment { text parent { text } } parentComment { text replies { text } } } }"#).await,
            json!({ "data": { "addToCommentReplies": {
                "repliesComment": { "text": "agreed", "parent": { "text": "fine" } },
                "parentComment": { "text": "fine", "replies": [{ "text": "agreed" }] },
            } } })
        );
        assert_eq!(
            run(srv, &b, r#"mutation { removeFromCommentReplies(parentCommentId: "{great}", repliesCommentId: "{meh}") { repliesComment { text parent { text } } parentComment { text replies { text } } } }"#).await,
            json!({ "data": { "removeFromCommentReplies": {
                "repliesComment": { "text": "meh", "parent": null },
                "parentComment": { "text": "great post", "replies": [] },
            } } })
        );
        assert_eq!(
            srv.data("{ allComments { text parent { text } } }").await,
            json!({ "allComments": [
                { "text": "great post", "parent": null },
                { "text": "fine", "parent": null },
                { "text": "meh", "parent": null },
                { "text": "agreed", "parent": { "text": "fine" } },
            ] })
        );
    }

    /// `setPinnedPost`/`unsetPinnedPost` (1:1, neither side required): set replaces the old
    /// partner of both nodes.
    async fn set_and_unset_one_to_one(srv) {
        let b = blog(srv).await;
        let selection = "{ pinnedPostPost { slug pinnedIn { name } } pinnedInCategory { name pinnedPost { slug } } }";
        let set = |category: &str, post: &str| with_ids(&format!(r#"mutation {{ setPinnedPost(pinnedInCategoryId: "{{{category}}}", pinnedPostPostId: "{{{post}}}") {selection} }}"#), &b);
        let payload = |op: &str, post: &str, category: &str, linked: bool| {
            let (pinned_in, pinned) = if linked { (json!({ "name": category }), json!({ "slug": post })) } else { (json!(null), json!(null)) };
            json!({ "data": { op: {
                "pinnedPostPost": { "slug": post, "pinnedIn": pinned_in },
                "pinnedInCategory": { "name": category, "pinnedPost": pinned },
            } } })
        };
        assert_eq!(srv.gql(&set("news", "alpha")).await, payload("setPinnedPost", "alpha", "news", true));
        assert_eq!(srv.gql(&set("news", "beta")).await, payload("setPinnedPost", "beta", "news", true));
        assert_eq!(srv.gql(&set("tech", "beta")).await, payload("setPinnedPost", "beta", "tech", true));
        assert_eq!(srv.gql(&set("tech", "beta")).await, payload("setPinnedPost", "beta", "tech", true));
        let query = "{ allCategories { name pinnedPost { slug } } allPosts { slug pinnedIn { name } } }";
        assert_eq!(
            srv.data(query).await,
            json!({
                "allCategories": [
                    { "name": "news", "pinnedPost": null },
                    { "name": "tech", "pinnedPost": { "slug": "beta" } },
                    { "name": "misc", "pinnedPost": null },
                ],
                "allPosts": [
                    { "slug": "alpha", "pinnedIn": null },
                    { "slug": "beta", "pinnedIn": { "name": "tech" } },
                    { "slug": "gamma", "pinnedIn": null },
                    { "slug": "delta", "pinnedIn": null },
                ],
            })
        );
        let unset = with_ids(&format!(r#"mutation {{ unsetPinnedPost(pinnedInCategoryId: "{{tech}}", pinnedPostPostId: "{{beta}}") {selection} }}"#), &b);
        assert_eq!(srv.gql(&unset).await, payload("unsetPinnedPost", "beta", "tech", false));
        // Unsetting an edge that does not exist is no error.
        assert_eq!(srv.gql(&unset).await, payload("unsetPinnedPost", "beta", "tech", false));
        assert_eq!(
            srv.data("{ _allCategoriesMeta(filter: { pinnedPost: null }) { count } _allPostsMeta(filter: { pinnedIn: null }) { count } }").await,
            json!({ "_allCategoriesMeta": { "count": 3 }, "_allPostsMeta": { "count": 4 } })
        );
    }

    /// `setUserProfile` (1:1, `Profile.user` required): moving a profile to a user without one
    /// is fine; leaving a profile without a user → 3032 and nothing changes. There is no
    /// `unsetUserProfile`.
    async fn set_one_to_one_with_a_required_side(srv) {
        let b = blog(srv).await;
        let p1 = srv.create("Profile", &format!(r#"bio: "one", userId: "{}""#, b.ann)).await;
        let set = |profile: &str, user: &str| with_ids(&format!(r#"mutation {{ setUserProfile(profileProfileId: "{profile}", userUserId: "{{{user}}}") {{ userUser {{ name profile {{ bio }} }} profileProfile {{ bio user {{ name }} }} }} }}"#), &b);
        let payload = |user: &str, bio: &str| json!({ "data": { "setUserProfile": {
            "userUser": { "name": user, "profile": { "bio": bio } },
            "profileProfile": { "bio": bio, "user": { "name": user } },
        } } });
        assert_eq!(srv.gql(&set(&p1, "bob")).await, payload("Bob", "one"));
        let p2 = srv.create("Profile", &format!(r#"bio: "two", userId: "{}""#, b.ann)).await;
        let before = snapshot(srv).await;
        // Ann's profile `two` would lose its user.
        assert_fails(srv, &set(&p1, "ann"), "setUserProfile", 3032, &required("user", "Profile")).await;
        assert_eq!(snapshot(srv).await, before);
        // The existing pair again is a no-op.
        assert_eq!(srv.gql(&set(&p1, "bob")).await, payload("Bob", "one"));
        assert_eq!(srv.gql(&set(&p2, "cid")).await, payload("Cid", "two"));
        assert_eq!(
            srv.data("{ allUsers { name profile { bio } } }").await,
            json!({ "allUsers": [
                { "name": "Ann", "profile": null },
                { "name": "Bob", "profile": { "bio": "one" } },
                { "name": "Cid", "profile": { "bio": "two" } },
            ] })
        );
    }

    /// `setTwins`/`unsetTwins`: a symmetric 1:1, visible from both children, replaced from
    /// either side.
    async fn symmetric_one_to_one(srv) {
        let data = srv.data(r#"mutation { kim: createChild(name: "Kim") { id } lee: createChild(name: "Lee") { id } max: createChild(name: "Max") { id } }"#).await;
        let id = |k: &str| data[k]["id"].as_str().expect("an id").to_owned();
        let (kim, lee, max) = (id("kim"), id("lee"), id("max"));
        let selection = "{ twin2Child { name twin { name } } twin1Child { name twin { name } } }";
        assert_eq!(
            srv.gql(&format!(r#"mutation {{ setTwins(twin1ChildId: "{kim}", twin2ChildId: "{lee}") {selection} }}"#)).await,
            json!({ "data": { "setTwins": {
                "twin2Child": { "name": "Lee", "twin": { "name": "Kim" } },
                "twin1Child": { "name": "Kim", "twin": { "name": "Lee" } },
            } } })
        );
        assert_eq!(
            srv.gql(&format!(r#"mutation {{ setTwins(twin1ChildId: "{max}", twin2ChildId: "{kim}") {selection} }}"#)).await,
            json!({ "data": { "setTwins": {
                "twin2Child": { "name": "Kim", "twin": { "name": "Max" } },
                "twin1Child": { "name": "Max", "twin": { "name": "Kim" } },
            } } })
        );
        assert_eq!(
            srv.data("{ allChildren { name twin { name } } }").await,
            json!({ "allChildren": [
                { "name": "Kim", "twin": { "name": "Max" } },
                { "name": "Lee", "twin": null },
                { "name": "Max", "twin": { "name": "Kim" } },
            ] })
        );
        // Unset with the arguments the other way round from how it was set.
        assert_eq!(
            srv.gql(&format!(r#"mutation {{ unsetTwins(twin1ChildId: "{kim}", twin2ChildId: "{max}") {selection} }}"#)).await,
            json!({ "data": { "unsetTwins": {
                "twin2Child": { "name": "Max", "twin": null },
                "twin1Child": { "name": "Kim", "twin": null },
            } } })
        );
        assert_eq!(
            srv.data("{ linked: allChildren(filter: { twin: {} }) { name } single: allChildren(filter: { twin: null }) { name } }").await,
            json!({ "linked": [], "single": [{ "name": "Kim" }, { "name": "Lee" }, { "name": "Max" }] })
        );
    }

    /// Unknown ids → 3011 in `addTo`/`set`, 3013 (the A node) in `removeFrom`/`unset`;
    /// malformed ids → 3001; nothing changes.
    async fn errors(srv) {
        let b = blog(srv).await;
        let kim = srv.create("Child", r#"name: "Kim""#).await;
        let before = snapshot(srv).await;
        let missing = format!("You are referencing a node that does not exist. Please check your mutation to make sure you are only creating edges between existing nodes. Id if available: {MISSING}");
        let not_found = format!("Node with id {MISSING} not found");
        let invalid = "The given id 'not valid!' is invalid.";
        let cases: Vec<(String, &str, u32, String)> = vec![
            (r#"mutation { addToUserPosts(postsPostId: "cnotthere0000000000000000", authorUserId: "{ann}") { authorUser { id } } }"#.into(), "addToUserPosts", 3011, missing.clone()),
            (r#"mutation { addToUserPosts(postsPostId: "{alpha}", authorUserId: "cnotthere0000000000000000") { authorUser { id } } }"#.into(), "addToUserPosts", 3011, missing.clone()),
            (r#"mutation { addToPostCategories(categoriesCategoryId: "cnotthere0000000000000000", postsPostId: "{alpha}") { postsPost { id } } }"#.into(), "addToPostCategories", 3011, missing.clone()),
            (r#"mutation { addToPostComments(commentsCommentId: "cnotthere0000000000000000", postPostId: "{beta}") { postPost { id } } }"#.into(), "addToPostComments", 3011, missing.clone()),
            (r#"mutation { addToFollows(followersUserId: "cnotthere0000000000000000", followingUserId: "{ann}") { followingUser { id } } }"#.into(), "addToFollows", 3011, missing.clone()),
            (r#"mutation { setPinnedPost(pinnedInCategoryId: "cnotthere0000000000000000", pinnedPostPostId: "{alpha}") { pinnedPostPost { id } } }"#.into(), "setPinnedPost", 3011, missing.clone()),
            (format!(r#"mutation {{ setTwins(twin1ChildId: "{MISSING}", twin2ChildId: "{kim}") {{ twin2Child {{ id }} }} }}"#), "setTwins", 3011, missing.clone()),
            (r#"mutation { addToUserPosts(postsPostId: "not valid!", authorUserId: "{ann}") { authorUser { id } } }"#.into(), "addToUserPosts", 3001, invalid.into()),
            (r#"mutation { addToUserPosts(postsPostId: "{delta}", authorUserId: "not valid!") { authorUser { id } } }"#.into(), "addToUserPosts", 3001, invalid.into()),
            (r#"mutation { removeFromUserPosts(postsPostId: "not valid!", authorUserId: "{ann}") { authorUser { id } } }"#.into(), "removeFromUserPosts", 3001, invalid.into()),
            (r#"mutation { unsetPinnedPost(pinnedInCategoryId: "{news}", pinnedPostPostId: "not valid!") { pinnedPostPost { id } } }"#.into(), "unsetPinnedPost", 3001, invalid.into()),
            (r#"mutation { removeFromUserPosts(postsPostId: "{alpha}", authorUserId: "cnotthere0000000000000000") { authorUser { id } } }"#.into(), "removeFromUserPosts", 3013, not_found.clone()),
            (r#"mutation { removeFromFollows(followersUserId: "{ann}", followingUserId: "cnotthere0000000000000000") { followingUser { id } } }"#.into(), "removeFromFollows", 3013, not_found.clone()),
            (r#"mutation { unsetPinnedPost(pinnedInCategoryId: "{news}", pinnedPostPostId: "cnotthere0000000000000000") { pinnedPostPost { id } } }"#.into(), "unsetPinnedPost", 3013, not_found.clone()),
            (r#"mutation { removeFromCommentReplies(parentCommentId: "{great}", repliesCommentId: "cnotthere0000000000000000") { repliesComment { id } } }"#.into(), "removeFromCommentReplies", 3013, not_found.clone()),
        ];
        for (mutation, field, code, message) in &cases {
            assert_fails(srv, &with_ids(mutation, &b), field, *code, message).await;
        }
        // An id of another model is no node of the expected one.
        assert_fails(srv, &with_ids(r#"mutation { addToUserPosts(postsPostId: "{news}", authorUserId: "{ann}") { authorUser { id } } }"#, &b), "addToUserPosts", 3011, &format!("You are referencing a node that does not exist. Please check your mutation to make sure you are only creating edges between existing nodes. Id if available: {}", b.news)).await;
        assert_eq!(snapshot(srv).await, before);
        // `removeFrom` does not check the B node: an unknown one is no error.
        assert_eq!(
            run(srv, &b, r#"mutation { removeFromUserPosts(postsPostId: "cnotthere0000000000000000", authorUserId: "{ann}") { authorUser { name posts { slug } } postsPost { slug } } }"#).await,
            json!({ "data": { "removeFromUserPosts": { "authorUser": { "name": "Ann", "posts": [{ "slug": "alpha" }, { "slug": "beta" }] }, "postsPost": null } } })
        );
        assert_eq!(snapshot(srv).await, before);
    }
}
