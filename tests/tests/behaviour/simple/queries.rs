//! The query root fields (§2.1, §2.4): `all<Plural>`, `_all<Plural>Meta`, `<Type>(unique args)`,
//! `node(id)`, the irregular plural `allChildren` (§2.2), and the one-statement list read.

use serde_json::json;

use crate::support::{error_response, field_error, four_posts};

db_tests! {
    /// `allPosts` returns every node in id order, with every scalar kind rendered.
    async fn all_posts_returns_every_node(srv) {
        let p = four_posts(srv).await;
        assert_eq!(
            srv.gql("{ allPosts { id slug title body votes rating published status publishedAt externalId } }").await,
            json!({ "data": { "allPosts": [
                { "id": p.alpha, "slug": "alpha", "title": "Hello World", "body": "first body", "votes": 5, "rating": 4.5, "published": true, "status": "PUBLISHED", "publishedAt": "2017-01-01T10:00:00.000Z", "externalId": "ext-1" },
                { "id": p.beta, "slug": "beta", "title": "hello again", "body": null, "votes": 2, "rating": 0.5, "published": false, "status": "DRAFT", "publishedAt": "2015-05-05T05:05:05.005Z", "externalId": null },
                { "id": p.gamma, "slug": "gamma", "title": "100% sure_thing", "body": "third", "votes": 5, "rating": 1.25, "published": true, "status": "ARCHIVED", "publishedAt": "2016-06-15T00:00:00.000Z", "externalId": null },
                { "id": p.delta, "slug": "delta", "title": "Zeta 100 percent", "body": "fourth", "votes": 10, "rating": 4.5, "published": false, "status": "PUBLISHED", "publishedAt": "2018-03-03T03:03:03.003Z", "externalId": "ext-4" },
            ] } })
        );
    }

    /// An empty table gives an empty list and a zero count.
    async fn empty_lists(srv) {
        assert_eq!(
            srv.gql("{ allPosts { id } _allPostsMeta { count } allCategories { id } allUsers { id } }").await,
            json!({ "data": { "allPosts": [], "_allPostsMeta": { "count": 0 }, "allCategories": [], "allUsers": [] } })
        );
    }

    /// `_allPostsMeta` counts what the filter matches and ignores the pagination arguments.
    async fn meta_count_uses_only_the_filter(srv) {
        four_posts(srv).await;
        assert_eq!(
            srv.gql(r#"{
  all: _allPostsMeta { count }
  five: _allPostsMeta(filter: { votes: 5 }) { count }
  paged: _allPostsMeta(filter: { votes_gte: 2 }, first: 1, skip: 1, orderBy: title_DESC) { count }
  none: _allPostsMeta(filter: { slug: "nope" }) { count }
}"#).await,
            json!({ "data": {
                "all": { "count": 4 },
                "five": { "count": 2 },
                "paged": { "count": 4 },
                "none": { "count": 0 },
            } })
        );
    }

    /// `Post(id:)`, `Post(slug:)`, `Post(externalId:)`; unknown values give `null`.
    async fn single_post_by_unique_field(srv) {
        let p = four_posts(srv).await;
        let query = format!(
            r#"{{
  byId: Post(id: "{gamma}") {{ slug }}
  bySlug: Post(slug: "delta") {{ id }}
  byExternalId: Post(externalId: "ext-1") {{ slug }}
  unknownId: Post(id: "cnotthere0000000000000000") {{ slug }}
  unknownSlug: Post(slug: "omega") {{ slug }}
}}"#,
            gamma = p.gamma
        );
        assert_eq!(
            srv.gql(&query).await,
            json!({ "data": {
                "byId": { "slug": "gamma" },
                "bySlug": { "id": p.delta },
                "byExternalId": { "slug": "alpha" },
                "unknownId": null,
                "unknownSlug": null,
            } })
        );
    }

    /// Unique String lookups are case-insensitive (§1.3).
    async fn single_post_by_slug_ignores_case(srv) {
        let p = four_posts(srv).await;
        assert_eq!(
            srv.gql(r#"{ Post(slug: "ALPHA") { id } }"#).await,
            json!({ "data": { "Post": { "id": p.alpha } } })
        );
    }

    /// With several arguments the first in declaration order (`id`) wins.
    async fn single_post_uses_the_first_argument(srv) {
        let p = four_posts(srv).await;
        let query = format!(r#"{{ Post(id: "{}", slug: "alpha") {{ slug }} }}"#, p.beta);
        assert_eq!(
            srv.gql(&query).await,
            json!({ "data": { "Post": { "slug": "beta" } } })
        );
    }

    /// No argument → 3000 listing the unique arguments.
    async fn single_post_without_arguments_is_3000(srv) {
        four_posts(srv).await;
        assert_eq!(
            srv.gql("{ Post { id } }").await,
            error_response(
                json!({ "Post": null }),
                field_error(json!(["Post"]), 1, 3, 3000, "None of the following arguments provided: List(id, slug, externalId)"),
            )
        );
        // Next to fields that succeed, the failing field is still present, as null (§11.1 a).
        assert_eq!(
            srv.gql("{ _allPostsMeta { count } Post { id } }").await,
            json!({
                "data": { "_allPostsMeta": { "count": 4 }, "Post": null },
                "errors": [field_error(json!(["Post"]), 1, 27, 3000, "None of the following arguments provided: List(id, slug, externalId)")],
            })
        );
        assert_eq!(
            srv.gql("{ Category { id } }").await,
            error_response(
                json!({ "Category": null }),
                field_error(json!(["Category"]), 1, 3, 3000, "None of the following arguments provided: List(id, name)"),
            )
        );
    }

    /// `node(id)` resolves a node of every model to its own type; unknown ids give `null`.
    async fn node_resolves_every_type(srv) {
        let p = four_posts(srv).await;
        let category = srv.create("Category", r#"name: "News""#).await;
        let child = srv.create("Child", r#"name: "Kim""#).await;
        let user = srv.create("User", r#"email: "ann@example.com", name: "Ann""#).await;
        let query = format!(
            r#"{{
  post: node(id: "{post}") {{ __typename id ... on Post {{ slug }} }}
  category: node(id: "{category}") {{ __typename id ... on Category {{ name }} }}
  child: node(id: "{child}") {{ __typename id ... on Child {{ name }} }}
  user: node(id: "{user}") {{ __typename id ... on User {{ email }} ... on Post {{ slug }} }}
  unknown: node(id: "cnotthere0000000000000000") {{ __typename id }}
  malformed: node(id: "not an id!") {{ id }}
}}"#,
            post = p.gamma
        );
        assert_eq!(
            srv.gql(&query).await,
            json!({ "data": {
                "post": { "__typename": "Post", "id": p.gamma, "slug": "gamma" },
                "category": { "__typename": "Category", "id": category, "name": "News" },
                "child": { "__typename": "Child", "id": child, "name": "Kim" },
                "user": { "__typename": "User", "id": user, "email": "ann@example.com" },
                "unknown": null,
                "malformed": null,
            } })
        );
    }

    /// `Child` pluralises irregularly: `allChildren`, `_allChildrenMeta` (§2.2).
    async fn children_use_the_irregular_plural(srv) {
        let kim = srv.create("Child", r#"name: "Kim""#).await;
        let lee = srv.create("Child", r#"name: "Lee""#).await;
        let query = format!(
            r#"{{ allChildren {{ id name }} _allChildrenMeta {{ count }} Child(id: "{lee}") {{ name }} }}"#
        );
        assert_eq!(
            srv.gql(&query).await,
            json!({ "data": {
                "allChildren": [{ "id": kim, "name": "Kim" }, { "id": lee, "name": "Lee" }],
                "_allChildrenMeta": { "count": 2 },
                "Child": { "name": "Lee" },
            } })
        );
    }

    /// A list read is one SQL statement (`Svc-Sql-Statements: 1`).
    async fn list_read_is_one_statement(srv) {
        four_posts(srv).await;
        let res = srv
            .post(&json!({ "query": "{ allPosts(first: 100) { id slug title votes status publishedAt metadata tags } }" }))
            .await;
        let header = res
            .headers()
            .get("Svc-Sql-Statements")
            .map(|v| v.to_str().unwrap_or_default().to_owned());
        assert_eq!(header.as_deref(), Some("1"));
        let body = crate::support::body_json(res).await;
        assert_eq!(body["data"]["allPosts"].as_array().map(Vec::len), Some(4), "{body:#}");
    }
}
