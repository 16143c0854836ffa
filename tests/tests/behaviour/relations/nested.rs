//! Relation arguments of create, update and updateOrCreate (§2.5, §2.6): connecting with
//! `{f}Id`/`{f}Ids`, nested creates through `{Owner}{field}{Related}` inputs (recursively),
//! replacing on update, stealing, required relations (3032), missing nodes (3011), and one
//! transaction per mutation.

use serde_json::{Value, json};

use crate::simple::introspection::{signatures, type_info};
use crate::support::{Blog, MISSING, Server, assert_fails, blog, count_values, counts, with_ids};

/// Runs a mutation or query whose `{name}` placeholders are replaced by the fixture's ids.
async fn run(srv: &Server, b: &Blog, text: &str) -> Value {
    srv.gql(&with_ids(text, b)).await
}

/// [`assert_fails`] with the fixture's ids filled in.
async fn fails(srv: &Server, b: &Blog, mutation: &str, field: &str, code: u32, message: &str) {
    assert_fails(srv, &with_ids(mutation, b), field, code, message).await;
}

fn required(field: &str, model: &str) -> String {
    format!(
        "The field '{field}' on type '{model}' is required. Performing this mutation would violate the constraint"
    )
}

fn no_such_node(id: &str) -> String {
    format!(
        "You are referencing a node that does not exist. Please check your mutation to make sure you are only creating edges between existing nodes. Id if available: {id}"
    )
}

/// What the blog fixture looks like from the users' and categories' side.
async fn edges(srv: &Server) -> Value {
    srv.data("{ allUsers { name posts { slug } profile { bio } } allCategories { name posts { slug } pinnedPost { slug } } allPosts { slug comments { text } } }").await
}

db_tests! {
    /// The nested input types have the related model's create arguments minus the
    /// back-relation (§2.5).
    async fn nested_input_types(srv) {
        let post_scalars = [
            "slug: String!", "title: String!", "body: String", "votes: Int", "rating: Float",
            "published: Boolean", "status: PostStatus", "publishedAt: DateTime", "metadata: Json",
            "tags: [String!]", "scores: [Int!]", "externalId: ID",
        ];
        let user_scalars = [
            "email: String!", "name: String!", "role: Role", "age: Int", "verified: Boolean",
            "nicknames: [String!]",
        ];
        let with = |base: &[&str], rest: &[&str]| -> Vec<String> {
            base.iter().chain(rest).map(|s| (*s).to_owned()).collect()
        };
        let cases: Vec<(&str, Vec<String>)> = vec![
            ("UserpostsPost", with(&post_scalars, &[
                "pinnedInId: ID", "pinnedIn: PostpinnedInCategory",
                "categoriesIds: [ID!]", "categories: [PostcategoriesCategory!]",
                "commentsIds: [ID!]", "comments: [PostcommentsComment!]",
            ])),
            ("CommentpostPost", with(&post_scalars, &[
                "authorId: ID", "author: PostauthorUser",
                "pinnedInId: ID", "pinnedIn: PostpinnedInCategory",
                "categoriesIds: [ID!]", "categories: [PostcategoriesCategory!]",
            ])),
            ("PostauthorUser", with(&user_scalars, &[
                "profileId: ID", "profile: UserprofileProfile",
                "followersIds: [ID!]", "followers: [UserfollowersUser!]",
                "followingIds: [ID!]", "following: [UserfollowingUser!]",
                "friendsIds: [ID!]", "friends: [UserfriendsUser!]",
            ])),
            ("ProfileuserUser", with(&user_scalars, &[
                "postsIds: [ID!]", "posts: [UserpostsPost!]",
                "followersIds: [ID!]", "followers: [UserfollowersUser!]",
                "followingIds: [ID!]", "following: [UserfollowingUser!]",
                "friendsIds: [ID!]", "friends: [UserfriendsUser!]",
            ])),
            ("UserprofileProfile", with(&["bio: String"], &[])),
            ("PostcommentsComment", with(&["text: String!"], &[
                "parentId: ID", "parent: CommentparentComment",
                "repliesIds: [ID!]", "replies: [CommentrepliesComment!]",
            ])),
            ("CommentrepliesComment", with(&["text: String!"], &[
                "postId: ID", "post: CommentpostPost",
                "repliesIds: [ID!]", "replies: [CommentrepliesComment!]",
            ])),
            ("CommentparentComment", with(&["text: String!"], &[
                "postId: ID", "post: CommentpostPost",
                "parentId: ID", "parent: CommentparentComment",
            ])),
            ("CategorypostsPost", with(&post_scalars, &[
                "authorId: ID", "author: PostauthorUser",
                "pinnedInId: ID", "pinnedIn: PostpinnedInCategory",
                "commentsIds: [ID!]", "comments: [PostcommentsComment!]",
            ])),
        ];
        for (name, expected) in cases {
            let ty = type_info(srv, name).await;
            assert_eq!(ty["kind"], json!("INPUT_OBJECT"), "{name}: {ty}");
            assert_eq!(signatures(&ty["inputFields"]), expected, "{name}");
        }
    }

    /// `{f}Id`/`{f}Ids` in create connect existing nodes, seen from both sides.
    async fn create_connects_existing_nodes(srv) {
        let b = blog(srv).await;
        assert_eq!(
            run(srv, &b, r#"mutation { createPost(slug: "eps", title: "Epsilon", authorId: "{bob}", pinnedInId: "{tech}", categoriesIds: ["{misc}", "{news}"], commentsIds: ["{fine}"]) { slug author { name } pinnedIn { name } categories { name } comments { text } } }"#).await,
            json!({ "data": { "createPost": {
                "slug": "eps", "author": { "name": "Bob" }, "pinnedIn": { "name": "tech" },
                "categories": [{ "name": "news" }, { "name": "misc" }], "comments": [{ "text": "fine" }],
            } } })
        );
        assert_eq!(
            edges(srv).await,
            json!({
                "allUsers": [
                    { "name": "Ann", "posts": [{ "slug": "alpha" }, { "slug": "beta" }], "profile": null },
                    { "name": "Bob", "posts": [{ "slug": "gamma" }, { "slug": "eps" }], "profile": null },
                    { "name": "Cid", "posts": [], "profile": null },
                ],
                "allCategories": [
                    { "name": "news", "posts": [{ "slug": "alpha" }, { "slug": "beta" }, { "slug": "eps" }], "pinnedPost": null },
                    { "name": "tech", "posts": [{ "slug": "beta" }, { "slug": "gamma" }], "pinnedPost": { "slug": "eps" } },
                    { "name": "misc", "posts": [{ "slug": "eps" }], "pinnedPost": null },
                ],
                "allPosts": [
                    { "slug": "alpha", "comments": [{ "text": "great post" }, { "text": "agreed" }] },
                    { "slug": "beta", "comments": [] },
                    { "slug": "gamma", "comments": [{ "text": "meh" }] },
                    { "slug": "delta", "comments": [] },
                    { "slug": "eps", "comments": [{ "text": "fine" }] },
                ],
            })
        );
        assert_eq!(
            run(srv, &b, r#"mutation { createUser(email: "dan@example.com", name: "Dan", followersIds: ["{ann}"], followingIds: ["{bob}", "{cid}"], friendsIds: ["{cid}"]) { followers { name } following { name } friends { name } } }"#).await,
            json!({ "data": { "createUser": {
                "followers": [{ "name": "Ann" }],
                "following": [{ "name": "Bob" }, { "name": "Cid" }],
                "friends": [{ "name": "Cid" }],
            } } })
        );
        assert_eq!(
            srv.data(r#"{ allUsers(filter: { name_in: ["Ann", "Bob", "Cid"] }) { name following { name } followers { name } friends { name } } }"#).await,
            json!({ "allUsers": [
                { "name": "Ann", "following": [{ "name": "Dan" }], "followers": [], "friends": [] },
                { "name": "Bob", "following": [], "followers": [{ "name": "Dan" }], "friends": [] },
                { "name": "Cid", "following": [], "followers": [{ "name": "Dan" }], "friends": [{ "name": "Dan" }] },
            ] })
        );
    }

    /// A nested to-many create makes the nodes (in list order) and connects them to the new
    /// parent.
    async fn create_with_nested_to_many(srv) {
        let b = blog(srv).await;
        assert_eq!(
            run(srv, &b, r#"mutation { createUser(email: "dan@example.com", name: "Dan", posts: [{ slug: "d1", title: "One" }, { slug: "d2", title: "Two", votes: 3, categoriesIds: ["{tech}"], comments: [{ text: "c1" }, { text: "c2" }] }]) { name posts { slug title votes author { name } categories { name } comments { text post { slug } } } } }"#).await,
            json!({ "data": { "createUser": { "name": "Dan", "posts": [
                { "slug": "d1", "title": "One", "votes": 0, "author": { "name": "Dan" }, "categories": [], "comments": [] },
                { "slug": "d2", "title": "Two", "votes": 3, "author": { "name": "Dan" }, "categories": [{ "name": "tech" }],
                  "comments": [{ "text": "c1", "post": { "slug": "d2" } }, { "text": "c2", "post": { "slug": "d2" } }] },
            ] } } })
        );
        assert_eq!(counts(srv).await, count_values(4, 6, 3, 0, 0, 6));
        assert_eq!(
            srv.data(r#"{ Category(name: "tech") { posts { slug } } allComments(filter: { post: { slug: "d2" } }) { text } }"#).await,
            json!({ "Category": { "posts": [{ "slug": "beta" }, { "slug": "gamma" }, { "slug": "d2" }] }, "allComments": [{ "text": "c1" }, { "text": "c2" }] })
        );
        // Connecting and creating through the same field in one create does both.
        assert_eq!(
            run(srv, &b, r#"mutation { createUser(email: "hal@example.com", name: "Hal", postsIds: ["{delta}"], posts: [{ slug: "h1", title: "H" }]) { posts { slug author { name } } } }"#).await,
            json!({ "data": { "createUser": { "posts": [
                { "slug": "delta", "author": { "name": "Hal" } },
                { "slug": "h1", "author": { "name": "Hal" } },
            ] } } })
        );
        // Self relations: the nested node is on the other end of the edge.
        assert_eq!(
            srv.gql(r#"mutation { createUser(email: "eve@example.com", name: "Eve", followers: [{ email: "fay@example.com", name: "Fay" }], friends: [{ email: "gus@example.com", name: "Gus" }]) { followers { name following { name } } friends { name friends { name } } } }"#).await,
            json!({ "data": { "createUser": {
                "followers": [{ "name": "Fay", "following": [{ "name": "Eve" }] }],
                "friends": [{ "name": "Gus", "friends": [{ "name": "Eve" }] }],
            } } })
        );
        // A comment with nested replies: each reply names its own post.
        assert_eq!(
            run(srv, &b, r#"mutation { createComment(text: "top", postId: "{delta}", replies: [{ text: "r1", postId: "{delta}" }, { text: "r2", postId: "{beta}" }]) { text replies { text parent { text } post { slug } } } }"#).await,
            json!({ "data": { "createComment": { "text": "top", "replies": [
                { "text": "r1", "parent": { "text": "top" }, "post": { "slug": "delta" } },
                { "text": "r2", "parent": { "text": "top" }, "post": { "slug": "beta" } },
            ] } } })
        );
    }

    /// A nested to-one create makes the partner, including the required side of a relation.
    async fn create_with_nested_to_one(srv) {
        assert_eq!(
            srv.gql(r#"mutation { createPost(slug: "eps", title: "E", author: { email: "dan@example.com", name: "Dan", age: 40 }, pinnedIn: { name: "top" }) { slug author { name age posts { slug } } pinnedIn { name pinnedPost { slug } } } }"#).await,
            json!({ "data": { "createPost": {
                "slug": "eps",
                "author": { "name": "Dan", "age": 40, "posts": [{ "slug": "eps" }] },
                "pinnedIn": { "name": "top", "pinnedPost": { "slug": "eps" } },
            } } })
        );
        assert_eq!(
            srv.gql(r#"mutation { createProfile(bio: "new", user: { email: "eve@example.com", name: "Eve" }) { bio user { name profile { bio } } } }"#).await,
            json!({ "data": { "createProfile": { "bio": "new", "user": { "name": "Eve", "profile": { "bio": "new" } } } } })
        );
        assert_eq!(
            srv.gql(r#"mutation { createUser(email: "fay@example.com", name: "Fay", profile: { bio: "mine" }) { name profile { bio user { name } } } }"#).await,
            json!({ "data": { "createUser": { "name": "Fay", "profile": { "bio": "mine", "user": { "name": "Fay" } } } } })
        );
        assert_eq!(
            srv.gql(r#"mutation { createComment(text: "hi", post: { slug: "p", title: "P" }) { text post { slug comments { text } } } }"#).await,
            json!({ "data": { "createComment": { "text": "hi", "post": { "slug": "p", "comments": [{ "text": "hi" }] } } } })
        );
        assert_eq!(
            srv.gql(r#"mutation { createChild(name: "Lee", twin: { name: "Kim" }) { name twin { name twin { name } } } }"#).await,
            json!({ "data": { "createChild": { "name": "Lee", "twin": { "name": "Kim", "twin": { "name": "Lee" } } } } })
        );
        assert_eq!(counts(srv).await, count_values(3, 2, 1, 2, 2, 1));
    }

    /// Nested creates recurse: a comment with a new post with a new author.
    async fn nested_create_recurses(srv) {
        let b = blog(srv).await;
        assert_eq!(
            run(srv, &b, r#"mutation { createComment(text: "first!", post: { slug: "new", title: "New", categoriesIds: ["{news}"], author: { email: "dan@example.com", name: "Dan", profile: { bio: "deep" } } }) { text post { slug categories { name } author { name profile { bio } posts { slug comments { text } } } } } }"#).await,
            json!({ "data": { "createComment": { "text": "first!", "post": {
                "slug": "new",
                "categories": [{ "name": "news" }],
                "author": { "name": "Dan", "profile": { "bio": "deep" }, "posts": [{ "slug": "new", "comments": [{ "text": "first!" }] }] },
            } } } })
        );
        assert_eq!(counts(srv).await, count_values(4, 5, 3, 0, 1, 5));
        assert_eq!(
            srv.gql(r#"mutation { createUser(email: "eve@example.com", name: "Eve", posts: [{ slug: "e1", title: "E1", comments: [{ text: "x", replies: [{ text: "y", post: { slug: "e2", title: "E2" } }] }] }]) { posts { slug comments { text replies { text post { slug author { name } } } } } } }"#).await,
            json!({ "data": { "createUser": { "posts": [{ "slug": "e1", "comments": [{ "text": "x", "replies": [{ "text": "y", "post": { "slug": "e2", "author": null } }] }] }] } } })
        );
    }

    /// `{f}Ids` in update replaces the whole set; `{f}Id` replaces the partner (§2.6).
    async fn update_ids_replace(srv) {
        let b = blog(srv).await;
        assert_eq!(
            run(srv, &b, r#"mutation { updateUser(id: "{ann}", postsIds: ["{delta}", "{gamma}"]) { name posts { slug } } }"#).await,
            json!({ "data": { "updateUser": { "name": "Ann", "posts": [{ "slug": "gamma" }, { "slug": "delta" }] } } })
        );
        assert_eq!(
            srv.data("{ allPosts { slug author { name } } allUsers { name _postsMeta { count } } }").await,
            json!({
                "allPosts": [
                    { "slug": "alpha", "author": null },
                    { "slug": "beta", "author": null },
                    { "slug": "gamma", "author": { "name": "Ann" } },
                    { "slug": "delta", "author": { "name": "Ann" } },
                ],
                "allUsers": [
                    { "name": "Ann", "_postsMeta": { "count": 2 } },
                    { "name": "Bob", "_postsMeta": { "count": 0 } },
                    { "name": "Cid", "_postsMeta": { "count": 0 } },
                ],
            })
        );
        assert_eq!(
            run(srv, &b, r#"mutation { updatePost(id: "{beta}", categoriesIds: ["{misc}"]) { categories { name } } }"#).await,
            json!({ "data": { "updatePost": { "categories": [{ "name": "misc" }] } } })
        );
        assert_eq!(
            srv.data("{ allCategories { name posts { slug } } }").await,
            json!({ "allCategories": [
                { "name": "news", "posts": [{ "slug": "alpha" }] },
                { "name": "tech", "posts": [{ "slug": "gamma" }] },
                { "name": "misc", "posts": [{ "slug": "beta" }] },
            ] })
        );
        // An empty list removes every edge of the field.
        assert_eq!(
            run(srv, &b, r#"mutation { updateUser(id: "{ann}", postsIds: []) { posts { slug } } }"#).await,
            json!({ "data": { "updateUser": { "posts": [] } } })
        );
        assert_eq!(srv.data("{ _allPostsMeta(filter: { author: null }) { count } }").await, json!({ "_allPostsMeta": { "count": 4 } }));

        // `{f}Id` replaces the partner, also together with scalar arguments.
        assert_eq!(
            run(srv, &b, r#"mutation { a: updatePost(id: "{alpha}", authorId: "{bob}") { author { name } } b: updatePost(id: "{alpha}", title: "Moved", authorId: "{cid}") { title author { name } } c: updateComment(id: "{meh}", postId: "{delta}") { post { slug } } }"#).await,
            json!({ "data": {
                "a": { "author": { "name": "Bob" } },
                "b": { "title": "Moved", "author": { "name": "Cid" } },
                "c": { "post": { "slug": "delta" } },
            } })
        );
        assert_eq!(
            srv.data("{ allUsers { name posts { slug } } allPosts(filter: { slug_in: [\"gamma\", \"delta\"] }) { slug comments { text } } }").await,
            json!({
                "allUsers": [
                    { "name": "Ann", "posts": [] },
                    { "name": "Bob", "posts": [] },
                    { "name": "Cid", "posts": [{ "slug": "alpha" }] },
                ],
                "allPosts": [{ "slug": "gamma", "comments": [] }, { "slug": "delta", "comments": [{ "text": "meh" }] }],
            })
        );
    }

    /// A nested create in update also replaces: the old partners are disconnected, not deleted.
    async fn nested_create_in_update_replaces(srv) {
        let b = blog(srv).await;
        assert_eq!(
            run(srv, &b, r#"mutation { updateUser(id: "{ann}", posts: [{ slug: "new", title: "New" }]) { name posts { slug } } }"#).await,
            json!({ "data": { "updateUser": { "name": "Ann", "posts": [{ "slug": "new" }] } } })
        );
        assert_eq!(
            srv.data("{ allPosts { slug author { name } } }").await,
            json!({ "allPosts": [
                { "slug": "alpha", "author": null },
                { "slug": "beta", "author": null },
                { "slug": "gamma", "author": { "name": "Bob" } },
                { "slug": "delta", "author": null },
                { "slug": "new", "author": { "name": "Ann" } },
            ] })
        );
        assert_eq!(
            run(srv, &b, r#"mutation { updatePost(id: "{gamma}", author: { email: "dan@example.com", name: "Dan" }) { author { name posts { slug } } } }"#).await,
            json!({ "data": { "updatePost": { "author": { "name": "Dan", "posts": [{ "slug": "gamma" }] } } } })
        );
        assert_eq!(
            srv.data(r#"{ User(email: "bob@example.com") { posts { slug } } }"#).await,
            json!({ "User": { "posts": [] } })
        );
        assert_eq!(
            run(srv, &b, r#"mutation { updateCategory(id: "{tech}", posts: [{ slug: "t1", title: "T1" }], pinnedPost: { slug: "t2", title: "T2" }) { posts { slug } pinnedPost { slug } } }"#).await,
            json!({ "data": { "updateCategory": { "posts": [{ "slug": "t1" }], "pinnedPost": { "slug": "t2" } } } })
        );
        assert_eq!(counts(srv).await, count_values(4, 7, 3, 0, 0, 4));
    }

    /// Connecting a node that already has a (to-one) partner moves it there (steal).
    async fn connecting_moves_the_node(srv) {
        let b = blog(srv).await;
        assert_eq!(
            run(srv, &b, r#"mutation { createUser(email: "dan@example.com", name: "Dan", postsIds: ["{alpha}"]) { posts { slug } } }"#).await,
            json!({ "data": { "createUser": { "posts": [{ "slug": "alpha" }] } } })
        );
        assert_eq!(
            run(srv, &b, r#"mutation { updateUser(id: "{cid}", postsIds: ["{beta}", "{gamma}"]) { posts { slug } } }"#).await,
            json!({ "data": { "updateUser": { "posts": [{ "slug": "beta" }, { "slug": "gamma" }] } } })
        );
        assert_eq!(
            run(srv, &b, r#"mutation { createPost(slug: "eps", title: "E", commentsIds: ["{meh}", "{fine}"]) { comments { text } } }"#).await,
            json!({ "data": { "createPost": { "comments": [{ "text": "fine" }, { "text": "meh" }] } } })
        );
        assert_eq!(
            srv.data("{ allUsers { name posts { slug } } allPosts(filter: { slug_in: [\"alpha\", \"gamma\"] }) { comments { text } } }").await,
            json!({
                "allUsers": [
                    { "name": "Ann", "posts": [] },
                    { "name": "Bob", "posts": [] },
                    { "name": "Cid", "posts": [{ "slug": "beta" }, { "slug": "gamma" }] },
                    { "name": "Dan", "posts": [{ "slug": "alpha" }] },
                ],
                "allPosts": [{ "comments": [{ "text": "great post" }, { "text": "agreed" }] }, { "comments": [] }],
            })
        );
        // 1:1 with neither side required: the post leaves its old category.
        srv.data(&with_ids(r#"mutation { updateCategory(id: "{news}", pinnedPostId: "{delta}") { id } }"#, &b)).await;
        assert_eq!(
            run(srv, &b, r#"mutation { updateCategory(id: "{misc}", pinnedPostId: "{delta}") { pinnedPost { slug pinnedIn { name } } } }"#).await,
            json!({ "data": { "updateCategory": { "pinnedPost": { "slug": "delta", "pinnedIn": { "name": "misc" } } } } })
        );
        assert_eq!(
            srv.data("{ allCategories { name pinnedPost { slug } } }").await,
            json!({ "allCategories": [
                { "name": "news", "pinnedPost": null },
                { "name": "tech", "pinnedPost": null },
                { "name": "misc", "pinnedPost": { "slug": "delta" } },
            ] })
        );
        // A symmetric 1:1: the twin leaves its old twin.
        let kim = srv.create("Child", r#"name: "Kim""#).await;
        srv.create("Child", &format!(r#"name: "Lee", twinId: "{kim}""#)).await;
        srv.create("Child", &format!(r#"name: "Max", twinId: "{kim}""#)).await;
        assert_eq!(
            srv.data("{ allChildren { name twin { name } } }").await,
            json!({ "allChildren": [
                { "name": "Kim", "twin": { "name": "Max" } },
                { "name": "Lee", "twin": null },
                { "name": "Max", "twin": { "name": "Kim" } },
            ] })
        );
    }

    /// A required to-one relation that is not satisfied → 3032; nothing is written.
    async fn missing_required_relation_is_3032(srv) {
        let b = blog(srv).await;
        fails(srv, &b, r#"mutation { createComment(text: "x") { id } }"#, "createComment", 3032, &required("post", "Comment")).await;
        fails(srv, &b, r#"mutation { createProfile(bio: "x") { id } }"#, "createProfile", 3032, &required("user", "Profile")).await;
        // A nested reply is connected to its parent comment, but not to a post.
        fails(srv, &b, r#"mutation { createComment(text: "c", postId: "{alpha}", replies: [{ text: "r" }]) { id } }"#, "createComment", 3032, &required("post", "Comment")).await;
        fails(srv, &b, r#"mutation { createUser(email: "dan@example.com", name: "Dan", posts: [{ slug: "p", title: "P", comments: [{ text: "ok", replies: [{ text: "no post" }] }] }]) { id } }"#, "createUser", 3032, &required("post", "Comment")).await;
        assert_eq!(counts(srv).await, count_values(3, 4, 3, 0, 0, 4));
    }

    /// Deleting a node whose partner's to-one field is required → 3032 naming that field;
    /// nothing is deleted.
    async fn deleting_a_required_partner_is_3032(srv) {
        let b = blog(srv).await;
        let profile = srv.create("Profile", &format!(r#"bio: "Ann's", userId: "{}""#, b.ann)).await;
        fails(srv, &b, r#"mutation { deleteUser(id: "{ann}") { id } }"#, "deleteUser", 3032, &required("user", "Profile")).await;
        assert_eq!(counts(srv).await, count_values(3, 4, 3, 0, 1, 4));
        assert_eq!(
            run(srv, &b, r#"{ User(id: "{ann}") { profile { bio } posts { slug } } }"#).await,
            json!({ "data": { "User": { "profile": { "bio": "Ann's" }, "posts": [{ "slug": "alpha" }, { "slug": "beta" }] } } })
        );
        // Without the profile the user can go.
        assert_eq!(
            srv.gql(&format!(r#"mutation {{ deleteProfile(id: "{profile}") {{ bio }} }}"#)).await,
            json!({ "data": { "deleteProfile": { "bio": "Ann's" } } })
        );
        assert_eq!(
            run(srv, &b, r#"mutation { deleteUser(id: "{ann}") { name } }"#).await,
            json!({ "data": { "deleteUser": { "name": "Ann" } } })
        );
        assert_eq!(counts(srv).await, count_values(2, 4, 3, 0, 0, 4));
    }

    /// 1:1 with a required side: moving the profile is fine while no profile is orphaned;
    /// orphaning one → 3032 and nothing changes.
    async fn one_to_one_with_a_required_side(srv) {
        let b = blog(srv).await;
        let p1 = srv.create("Profile", &format!(r#"bio: "one", userId: "{}""#, b.ann)).await;
        assert_eq!(
            run(srv, &b, &format!(r#"mutation {{ updateUser(id: "{{bob}}", profileId: "{p1}") {{ name profile {{ bio }} }} }}"#)).await,
            json!({ "data": { "updateUser": { "name": "Bob", "profile": { "bio": "one" } } } })
        );
        let p2 = srv.create("Profile", &format!(r#"bio: "two", userId: "{}""#, b.ann)).await;
        let profiles = json!({ "allUsers": [
            { "name": "Ann", "profile": { "bio": "two" } },
            { "name": "Bob", "profile": { "bio": "one" } },
            { "name": "Cid", "profile": null },
        ] });
        assert_eq!(srv.data("{ allUsers { name profile { bio } } }").await, profiles);

        // Ann's profile `two` would lose its user.
        fails(srv, &b, &format!(r#"mutation {{ updateUser(id: "{{ann}}", profileId: "{p1}") {{ id }} }}"#), "updateUser", 3032, &required("user", "Profile")).await;
        // Bob's profile `one` would lose its user.
        fails(srv, &b, &format!(r#"mutation {{ updateProfile(id: "{p2}", userId: "{{bob}}") {{ id }} }}"#), "updateProfile", 3032, &required("user", "Profile")).await;
        fails(srv, &b, r#"mutation { createProfile(bio: "three", userId: "{bob}") { id } }"#, "createProfile", 3032, &required("user", "Profile")).await;
        fails(srv, &b, r#"mutation { updateUser(id: "{bob}", profile: { bio: "three" }) { id } }"#, "updateUser", 3032, &required("user", "Profile")).await;
        assert_eq!(srv.data("{ allUsers { name profile { bio } } }").await, profiles);
        assert_eq!(counts(srv).await, count_values(3, 4, 3, 0, 2, 4));

        // Moving `two` to Cid (who has none) leaves Ann without a profile, which is allowed.
        assert_eq!(
            run(srv, &b, &format!(r#"mutation {{ updateProfile(id: "{p2}", userId: "{{cid}}") {{ user {{ name }} }} }}"#)).await,
            json!({ "data": { "updateProfile": { "user": { "name": "Cid" } } } })
        );
        assert_eq!(
            srv.gql(&format!(r#"mutation {{ createUser(email: "dan@example.com", name: "Dan", profileId: "{p1}") {{ profile {{ bio }} }} }}"#)).await,
            json!({ "data": { "createUser": { "profile": { "bio": "one" } } } })
        );
        assert_eq!(
            srv.data("{ allUsers { name profile { bio } } }").await,
            json!({ "allUsers": [
                { "name": "Ann", "profile": null },
                { "name": "Bob", "profile": null },
                { "name": "Cid", "profile": { "bio": "two" } },
                { "name": "Dan", "profile": { "bio": "one" } },
            ] })
        );
    }

    /// Replacing a to-many set that would leave required partners without a parent → 3032.
    async fn replacing_required_children_is_3032(srv) {
        let b = blog(srv).await;
        let before = edges(srv).await;
        fails(srv, &b, r#"mutation { updatePost(id: "{alpha}", commentsIds: ["{meh}"]) { id } }"#, "updatePost", 3032, &required("post", "Comment")).await;
        fails(srv, &b, r#"mutation { updatePost(id: "{gamma}", comments: [{ text: "new" }]) { id } }"#, "updatePost", 3032, &required("post", "Comment")).await;
        fails(srv, &b, r#"mutation { updatePost(id: "{gamma}", title: "changed", commentsIds: []) { id } }"#, "updatePost", 3032, &required("post", "Comment")).await;
        assert_eq!(edges(srv).await, before);
        assert_eq!(counts(srv).await, count_values(3, 4, 3, 0, 0, 4));
        assert_eq!(run(srv, &b, r#"{ Post(id: "{gamma}") { title } }"#).await, json!({ "data": { "Post": { "title": "100% sure_thing" } } }));
        // A post without comments may take comments from another post.
        assert_eq!(
            run(srv, &b, r#"mutation { updatePost(id: "{delta}", commentsIds: ["{meh}"]) { comments { text } } }"#).await,
            json!({ "data": { "updatePost": { "comments": [{ "text": "meh" }] } } })
        );
    }

    /// Connecting to a node that does not exist → 3011 naming the id; nothing is written.
    async fn missing_node_is_3011(srv) {
        let b = blog(srv).await;
        let before = edges(srv).await;
        let cases: &[(&str, &str)] = &[
            (r#"mutation { createPost(slug: "eps", title: "E", authorId: "cnotthere0000000000000000") { id } }"#, "createPost"),
            (r#"mutation { createPost(slug: "eps", title: "E", authorId: "{ann}", categoriesIds: ["{news}", "cnotthere0000000000000000"]) { id } }"#, "createPost"),
            (r#"mutation { createComment(text: "x", postId: "cnotthere0000000000000000") { id } }"#, "createComment"),
            (r#"mutation { createUser(email: "dan@example.com", name: "Dan", profileId: "cnotthere0000000000000000") { id } }"#, "createUser"),
            (r#"mutation { createUser(email: "dan@example.com", name: "Dan", posts: [{ slug: "n", title: "N", categoriesIds: ["cnotthere0000000000000000"] }]) { id } }"#, "createUser"),
            (r#"mutation { updateUser(id: "{ann}", postsIds: ["{alpha}", "cnotthere0000000000000000"]) { id } }"#, "updateUser"),
            (r#"mutation { updateUser(id: "{bob}", name: "Changed", postsIds: ["cnotthere0000000000000000"]) { id } }"#, "updateUser"),
            (r#"mutation { updatePost(id: "{beta}", categoriesIds: ["cnotthere0000000000000000"]) { id } }"#, "updatePost"),
            (r#"mutation { updatePost(id: "{delta}", authorId: "cnotthere0000000000000000") { id } }"#, "updatePost"),
            (r#"mutation { updateUser(id: "{cid}", followersIds: ["cnotthere0000000000000000"]) { id } }"#, "updateUser"),
        ];
        for (mutation, field) in cases {
            fails(srv, &b, mutation, field, 3011, &no_such_node(MISSING)).await;
        }
        assert_eq!(edges(srv).await, before);
        assert_eq!(counts(srv).await, count_values(3, 4, 3, 0, 0, 4));
        assert_eq!(run(srv, &b, r#"{ User(id: "{bob}") { name } }"#).await, json!({ "data": { "User": { "name": "Bob" } } }));
    }

    /// An `ID` argument takes an integer literal as its digits (GraphQL's input coercion of
    /// `ID`), at the top level and inside nested inputs alike; other literals are refused.
    async fn integer_literals_are_ids_everywhere(srv) {
        let b = blog(srv).await;
        let before = edges(srv).await;
        let cases: &[(&str, &str)] = &[
            (r#"mutation { createPost(slug: "eps", title: "E", authorId: 123) { id } }"#, "createPost"),
            (r#"mutation { createPost(slug: "eps", title: "E", categoriesIds: ["{news}", 123]) { id } }"#, "createPost"),
            (r#"mutation { createComment(text: "x", post: { slug: "p", title: "P", authorId: 123 }) { id } }"#, "createComment"),
            (r#"mutation { createUser(email: "dan@example.com", name: "Dan", posts: [{ slug: "n", title: "N", categoriesIds: [123] }]) { id } }"#, "createUser"),
        ];
        for (mutation, field) in cases {
            fails(srv, &b, mutation, field, 3011, &no_such_node("123")).await;
        }
        assert_eq!(edges(srv).await, before);
        // `update.id` of `updateOrCreate`: no node 123, so the create branch runs.
        assert_eq!(
            run(srv, &b, r#"mutation { updateOrCreatePost(update: { id: 123, title: "x" }, create: { slug: "eps", title: "E" }) { slug } }"#).await,
            json!({ "data": { "updateOrCreatePost": { "slug": "eps" } } })
        );
        let refused = run(srv, &b, r#"mutation { createComment(text: "x", post: { slug: "q", title: "Q", authorId: true }) { id } }"#).await;
        let message = refused["errors"][0]["message"].as_str().unwrap_or_default();
        assert!(message.contains(r#"expected type "ID""#), "{refused}");
        assert_eq!(counts(srv).await, count_values(3, 5, 3, 0, 0, 4));
    }

    /// A failing nested write undoes the whole mutation (one transaction).
    async fn failed_nested_write_leaves_nothing(srv) {
        let b = blog(srv).await;
        let before = edges(srv).await;
        let slug = "A unique constraint would be violated on Post. Details: Field name = slug";
        let email = "A unique constraint would be violated on User. Details: Field name = email";
        fails(srv, &b, r#"mutation { createUser(email: "dan@example.com", name: "Dan", posts: [{ slug: "fresh", title: "F" }, { slug: "alpha", title: "dup" }]) { id } }"#, "createUser", 3010, slug).await;
        fails(srv, &b, r#"mutation { createComment(text: "c", post: { slug: "p", title: "P", author: { email: "ANN@example.com", name: "dup" } }) { id } }"#, "createComment", 3010, email).await;
        fails(srv, &b, r#"mutation { updateUser(id: "{ann}", name: "Changed", posts: [{ slug: "beta", title: "dup" }]) { id } }"#, "updateUser", 3010, slug).await;
        fails(srv, &b, r#"mutation { createPost(slug: "eps", title: "E", authorId: "{bob}", comments: [{ text: "ok" }], categories: [{ name: "News" }]) { id } }"#, "createPost", 3010, "A unique constraint would be violated on Category. Details: Field name = name").await;
        assert_eq!(edges(srv).await, before);
        assert_eq!(counts(srv).await, count_values(3, 4, 3, 0, 0, 4));
        assert_eq!(
            srv.data(r#"{ fresh: Post(slug: "fresh") { id } eps: Post(slug: "eps") { id } dan: User(email: "dan@example.com") { id } ann: User(email: "ann@example.com") { name } }"#).await,
            json!({ "fresh": null, "eps": null, "dan": null, "ann": { "name": "Ann" } })
        );
    }

    /// `updateOrCreate` takes relation arguments in both branches.
    async fn update_or_create_with_relations(srv) {
        let b = blog(srv).await;
        assert_eq!(
            run(srv, &b, r#"mutation { updateOrCreatePost(update: { id: "cnotthere0000000000000000", title: "x" }, create: { slug: "eps", title: "E", authorId: "{bob}", categoriesIds: ["{misc}"], comments: [{ text: "new" }] }) { slug author { name } categories { name } comments { text } } }"#).await,
            json!({ "data": { "updateOrCreatePost": { "slug": "eps", "author": { "name": "Bob" }, "categories": [{ "name": "misc" }], "comments": [{ "text": "new" }] } } })
        );
        assert_eq!(
            run(srv, &b, r#"mutation { updateOrCreatePost(update: { id: "{delta}", authorId: "{cid}", categoriesIds: ["{news}"] }, create: { slug: "never", title: "N" }) { slug author { name } categories { name } } }"#).await,
            json!({ "data": { "updateOrCreatePost": { "slug": "delta", "author": { "name": "Cid" }, "categories": [{ "name": "news" }] } } })
        );
        assert_eq!(counts(srv).await, count_values(3, 5, 3, 0, 0, 5));
        assert_eq!(
            srv.data("{ allUsers { posts { slug } } }").await,
            json!({ "allUsers": [
                { "posts": [{ "slug": "alpha" }, { "slug": "beta" }] },
                { "posts": [{ "slug": "gamma" }, { "slug": "eps" }] },
                { "posts": [{ "slug": "delta" }] },
            ] })
        );
    }
}
