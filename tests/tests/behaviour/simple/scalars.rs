//! Scalar input coercion and output formats (§2.10, §2.3, §1.3): DateTime forms and offsets,
//! bad dates, 32-bit Int, Float, enums and lists through literals and variables.

use serde_json::json;

use crate::support::{assert_validation_error, list_of};

db_tests! {
    /// DateTime accepts ISO-8601 forms, no offset means UTC, and is always output as
    /// `yyyy-MM-ddTHH:mm:ss.SSSZ` in UTC.
    async fn datetime_input_forms(srv) {
        let cases = [
            ("2016", "2016-01-01T00:00:00.000Z"),
            ("2016-07", "2016-07-01T00:00:00.000Z"),
            ("2016-07-31", "2016-07-31T00:00:00.000Z"),
            ("2016-07-31T23:59", "2016-07-31T23:59:00.000Z"),
            ("2016-07-31T23:59:01", "2016-07-31T23:59:01.000Z"),
            ("2016-07-31T23:59:01.5", "2016-07-31T23:59:01.500Z"),
            ("2016-07-31T23:59:01.123Z", "2016-07-31T23:59:01.123Z"),
            ("2016-07-31T23:59:01+02:00", "2016-07-31T21:59:01.000Z"),
            ("2016-07-31T23:59:01.250-05:30", "2016-08-01T05:29:01.250Z"),
            ("2016-12-31T23:30:00-01:00", "2017-01-01T00:30:00.000Z"),
        ];
        for (i, (input, output)) in cases.iter().enumerate() {
            assert_eq!(
                srv.gql(&format!(r#"mutation {{ createPost(slug: "d{i}", title: "t", publishedAt: "{input}") {{ publishedAt }} }}"#)).await,
                json!({ "data": { "createPost": { "publishedAt": output } } }),
                "literal {input}"
            );
        }
        // The same through variables, and read back from storage.
        let query = "mutation ($at: DateTime) { createPost(slug: \"var\", title: \"t\", publishedAt: $at) { publishedAt } }";
        assert_eq!(
            srv.gql_vars(query, json!({ "at": "2016-07-31T23:59:01+02:00" })).await,
            json!({ "data": { "createPost": { "publishedAt": "2016-07-31T21:59:01.000Z" } } })
        );
        assert_eq!(
            srv.gql(r#"{ Post(slug: "var") { publishedAt } allPosts(filter: { publishedAt: "2016" }) { slug } }"#).await,
            json!({ "data": { "Post": { "publishedAt": "2016-07-31T21:59:01.000Z" }, "allPosts": [{ "slug": "d0" }] } })
        );
    }

    /// A create answers its node exactly as a read of it answers afterwards, for every kind
    /// (defaults, an Int literal for a Float, date-times with an offset and with more digits
    /// than milliseconds, Json, lists, enums, nulls).
    async fn a_create_answers_the_node_as_stored(srv) {
        let fields = "id createdAt slug title body votes rating published status publishedAt metadata tags scores externalId";
        let creates = [
            format!(r#"mutation {{ createPost(slug: "a", title: "T") {{ {fields} }} }}"#),
            format!(
                r#"mutation {{ createPost(slug: "b", title: "Ünïcode", body: "", votes: -7, rating: 5, published: true, status: ARCHIVED, publishedAt: "2016-07-31T23:59:01.250-05:30", metadata: "{{\"k\": [1, 2.5, \"x\"], \"a\": null}}", tags: ["x", "y"], scores: [3, -1], externalId: "ext-1") {{ {fields} }} }}"#
            ),
            format!(r#"mutation {{ createPost(slug: "c", title: "t", rating: 0.1, tags: [], scores: [], metadata: "[]", publishedAt: "2016-07-31T23:59:01.123456789Z") {{ {fields} }} }}"#),
        ];
        for create in &creates {
            let created = srv.gql(create).await;
            let node = created["data"]["createPost"].clone();
            let id = node["id"].as_str().unwrap_or_else(|| panic!("no id: {created}")).to_owned();
            let read = srv.gql(&format!(r#"{{ Post(id: "{id}") {{ {fields} }} }}"#)).await;
            assert_eq!(node, read["data"]["Post"], "{create}");
        }
        let read = srv.gql(r#"{ Post(slug: "b") { rating publishedAt metadata } }"#).await;
        assert_eq!(
            read,
            json!({ "data": { "Post": { "rating": 5.0, "publishedAt": "2016-08-01T05:29:01.250Z", "metadata": { "k": [1, 2.5, "x"], "a": null } } } })
        );
    }

    /// Anything that is no date → an error mentioning `Date value expected`; nothing is written.
    async fn bad_dates_are_rejected(srv) {
        for bad in [r#""yesterday""#, r#""2016-13-01""#, r#""2016-02-30""#, "2016"] {
            let res = srv
                .gql(&format!(r#"mutation {{ createPost(slug: "s", title: "t", publishedAt: {bad}) {{ id }} }}"#))
                .await;
            assert_validation_error(&res, "Date value expected");
        }
        let res = srv
            .gql(r#"{ allPosts(filter: { publishedAt_gt: "not a date" }) { id } }"#)
            .await;
        assert_validation_error(&res, "Date value expected");
        let res = srv
            .gql_vars(
                "mutation ($at: DateTime) { createPost(slug: \"s\", title: \"t\", publishedAt: $at) { id } }",
                json!({ "at": "31/07/2016" }),
            )
            .await;
        let text = res.to_string();
        assert!(text.contains("Date value expected"), "{res:#}");
        assert!(res.get("data").is_none_or(|d| d.is_null() || d["createPost"].is_null()), "{res:#}");
        assert_eq!(srv.data("{ _allPostsMeta { count } }").await, json!({ "_allPostsMeta": { "count": 0 } }));
    }

    /// Int is 32-bit: the limits are accepted, one beyond is a validation error.
    async fn int_is_32_bit(srv) {
        assert_eq!(
            srv.gql(r#"mutation { a: createPost(slug: "max", title: "t", votes: 2147483647) { votes } b: createPost(slug: "min", title: "t", votes: -2147483648) { votes } }"#).await,
            json!({ "data": { "a": { "votes": 2_147_483_647 }, "b": { "votes": -2_147_483_648_i64 } } })
        );
        // Out-of-range Int literals are rejected and nothing is written. The reference reports
        // them as validation errors; svc reports them as a field error of the field whose argument
        // it is (docs/compatibility.md).
        for big in ["2147483648", "-2147483649", "99999999999"] {
            let res = srv
                .gql(&format!(r#"mutation {{ createPost(slug: "s", title: "t", votes: {big}) {{ id }} }}"#))
                .await;
            assert!(res["data"]["createPost"].is_null(), "{res:#}");
            let message = res["errors"][0]["message"].as_str().unwrap_or_default();
            assert!(message.contains("Only integers from -2147483648 to 2147483647"), "{res:#}");
        }
        let res = srv
            .gql(&format!("{{ allPosts(filter: {{ votes_gt: {} }}) {{ id }} }}", 1_u64 << 40))
            .await;
        assert!(res["errors"][0]["message"].as_str().is_some_and(|m| m.contains("Int")), "{res:#}");
        assert!(res["data"].is_null(), "{res:#}");
        let res = srv
            .gql_vars(
                "mutation ($v: Int) { createPost(slug: \"s\", title: \"t\", votes: $v) { id } }",
                json!({ "v": 2_147_483_648_i64 }),
            )
            .await;
        assert!(res.get("errors").is_some() && res["data"]["createPost"].is_null(), "{res:#}");
        assert_eq!(srv.data("{ _allPostsMeta { count } }").await, json!({ "_allPostsMeta": { "count": 2 } }));
    }

    /// Floats, enums and lists, through literals and variables.
    async fn floats_enums_and_lists(srv) {
        let query = "mutation ($r: Float, $s: PostStatus, $tags: [String!], $scores: [Int!]) { createPost(slug: \"v\", title: \"t\", rating: $r, status: $s, tags: $tags, scores: $scores) { rating status tags scores } }";
        assert_eq!(
            srv.gql_vars(query, json!({ "r": 0.1, "s": "ARCHIVED", "tags": [], "scores": [-1, 0, 7] })).await,
            json!({ "data": { "createPost": { "rating": 0.1, "status": "ARCHIVED", "tags": [], "scores": [-1, 0, 7] } } })
        );
        assert_eq!(
            srv.gql(r#"mutation { createPost(slug: "l", title: "t", rating: 12345.678, status: PUBLISHED, tags: "single", scores: 3) { rating status tags scores } }"#).await,
            json!({ "data": { "createPost": { "rating": 12345.678, "status": "PUBLISHED", "tags": ["single"], "scores": [3] } } })
        );
        assert_eq!(
            srv.gql(r#"{ allPosts(orderBy: rating_DESC) { slug } }"#).await,
            list_of("allPosts", "slug", &["l", "v"])
        );
        // An unknown enum value is a validation error.
        let res = srv
            .gql(r#"mutation { createPost(slug: "x", title: "t", status: DELETED) { id } }"#)
            .await;
        assert_validation_error(&res, "");
    }
}
