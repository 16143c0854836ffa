//! `orderBy` (§2.9): every scalar kind ascending and descending, ties broken by `id` in the same
//! direction, nulls first when ascending, strings in case-insensitive collation order (§1.3).

use crate::support::{four_posts, list_of};

db_tests! {
    /// Default order is `id` ascending; `id_DESC` reverses it.
    async fn order_by_id(srv) {
        four_posts(srv).await;
        for (order, expected) in [
            ("", ["alpha", "beta", "gamma", "delta"]),
            ("(orderBy: id_ASC)", ["alpha", "beta", "gamma", "delta"]),
            ("(orderBy: id_DESC)", ["delta", "gamma", "beta", "alpha"]),
        ] {
            assert_eq!(
                srv.gql(&format!("{{ allPosts{order} {{ slug }} }}")).await,
                list_of("allPosts", "slug", &expected),
                "{order}"
            );
        }
    }

    /// Every orderable field of every scalar kind, both directions.
    async fn order_by_every_scalar_kind(srv) {
        four_posts(srv).await;
        let cases: &[(&str, [&str; 4])] = &[
            // String, in case-insensitive order: "100%…" < "hello again" < "Hello World" < "Zeta…".
            ("title_ASC", ["gamma", "beta", "alpha", "delta"]),
            ("title_DESC", ["delta", "alpha", "beta", "gamma"]),
            ("slug_ASC", ["alpha", "beta", "delta", "gamma"]),
            ("slug_DESC", ["gamma", "delta", "beta", "alpha"]),
            // Int with a tie (alpha and gamma have 5 votes) broken by id in the same direction.
            ("votes_ASC", ["beta", "alpha", "gamma", "delta"]),
            ("votes_DESC", ["delta", "gamma", "alpha", "beta"]),
            // Float with a tie (alpha and delta have 4.5).
            ("rating_ASC", ["beta", "gamma", "alpha", "delta"]),
            ("rating_DESC", ["delta", "alpha", "gamma", "beta"]),
            // Boolean: false before true.
            ("published_ASC", ["beta", "delta", "alpha", "gamma"]),
            ("published_DESC", ["gamma", "alpha", "delta", "beta"]),
            // Enum values are stored as text: ARCHIVED < DRAFT < PUBLISHED.
            ("status_ASC", ["gamma", "beta", "alpha", "delta"]),
            ("status_DESC", ["delta", "alpha", "beta", "gamma"]),
            ("publishedAt_ASC", ["beta", "gamma", "alpha", "delta"]),
            ("publishedAt_DESC", ["delta", "alpha", "gamma", "beta"]),
            // Created one after another: same order as ids, also when timestamps tie.
            ("createdAt_ASC", ["alpha", "beta", "gamma", "delta"]),
            ("createdAt_DESC", ["delta", "gamma", "beta", "alpha"]),
            // Optional fields: nulls first ascending, last descending.
            ("body_ASC", ["beta", "alpha", "delta", "gamma"]),
            ("body_DESC", ["gamma", "delta", "alpha", "beta"]),
            ("externalId_ASC", ["beta", "gamma", "alpha", "delta"]),
            ("externalId_DESC", ["delta", "alpha", "gamma", "beta"]),
        ];
        for (order, expected) in cases {
            assert_eq!(
                srv.gql(&format!("{{ allPosts(orderBy: {order}) {{ slug }} }}")).await,
                list_of("allPosts", "slug", expected),
                "orderBy: {order}"
            );
        }
    }

    /// `orderBy` combines with a filter.
    async fn order_with_filter(srv) {
        four_posts(srv).await;
        assert_eq!(
            srv.gql("{ allPosts(filter: { votes_gte: 5 }, orderBy: votes_DESC) { slug } }").await,
            list_of("allPosts", "slug", &["delta", "gamma", "alpha"])
        );
    }

    /// Ordering another model, and on a field with a default (Child `weight`).
    async fn order_children_by_float(srv) {
        srv.create("Child", r#"name: "heavy", weight: 9.25"#).await;
        srv.create("Child", r#"name: "default""#).await;
        srv.create("Child", r#"name: "light", weight: 1"#).await;
        assert_eq!(
            srv.gql("{ allChildren(orderBy: weight_ASC) { name } }").await,
            list_of("allChildren", "name", &["light", "default", "heavy"])
        );
        assert_eq!(
            srv.gql("{ allChildren(orderBy: name_DESC) { name } }").await,
            list_of("allChildren", "name", &["light", "heavy", "default"])
        );
    }
}
