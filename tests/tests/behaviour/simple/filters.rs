//! `<Type>Filter` (§2.8): every suffix of every filterable scalar kind, `AND`/`OR`, nulls and
//! empty lists, case-insensitive text matching (§1.3) and literal `%`/`_` (the reference's fixed
//! defect).

use serde_json::Value;

use crate::support::{Posts, Server, four_posts, list_of};

/// Runs `allPosts(filter: {filter}) { slug }`.
async fn slugs_matching(srv: &Server, filter: &str) -> Value {
    srv.gql(&format!("{{ allPosts(filter: {filter}) {{ slug }} }}"))
        .await
}

/// Checks every `(filter, expected slugs)` case, naming the filter on failure.
async fn check(srv: &Server, cases: &[(&str, &[&str])]) {
    for (filter, expected) in cases {
        assert_eq!(
            slugs_matching(srv, filter).await,
            list_of("allPosts", "slug", expected),
            "filter: {filter}"
        );
    }
}

/// Same with filters that mention post ids (`{alpha}` etc. are replaced by the ids).
async fn check_with_ids(srv: &Server, p: &Posts, cases: &[(&str, &[&str])]) {
    for (filter, expected) in cases {
        let filter = filter
            .replace("{alpha}", &p.alpha)
            .replace("{beta}", &p.beta)
            .replace("{gamma}", &p.gamma)
            .replace("{delta}", &p.delta);
        assert_eq!(
            slugs_matching(srv, &filter).await,
            list_of("allPosts", "slug", expected),
            "filter: {filter}"
        );
    }
}

db_tests! {
    /// String: all fourteen suffixes.
    async fn string_suffixes(srv) {
        four_posts(srv).await;
        check(srv, &[
            (r#"{ slug: "beta" }"#, &["beta"]),
            (r#"{ slug_not: "beta" }"#, &["alpha", "gamma", "delta"]),
            (r#"{ slug_in: ["gamma", "alpha", "omega"] }"#, &["alpha", "gamma"]),
            (r#"{ slug_not_in: ["gamma", "alpha"] }"#, &["beta", "delta"]),
            (r#"{ slug_lt: "beta" }"#, &["alpha"]),
            (r#"{ slug_lte: "beta" }"#, &["alpha", "beta"]),
            (r#"{ slug_gt: "delta" }"#, &["gamma"]),
            (r#"{ slug_gte: "delta" }"#, &["gamma", "delta"]),
            (r#"{ title_contains: "llo" }"#, &["alpha", "beta"]),
            (r#"{ title_not_contains: "llo" }"#, &["gamma", "delta"]),
            (r#"{ title_starts_with: "hello" }"#, &["alpha", "beta"]),
            (r#"{ title_not_starts_with: "hello" }"#, &["gamma", "delta"]),
            (r#"{ title_ends_with: "percent" }"#, &["delta"]),
            (r#"{ title_not_ends_with: "percent" }"#, &["alpha", "beta", "gamma"]),
        ]).await;
    }

    /// ID: all fourteen suffixes (on `id` and on the optional `externalId`).
    async fn id_suffixes(srv) {
        let p = four_posts(srv).await;
        let last6 = &p.delta[p.delta.len() - 6..];
        let first24 = &p.gamma[..24];
        let cases: Vec<(String, &[&str])> = vec![
            (r#"{ id: "{beta}" }"#.into(), &["beta"]),
            (r#"{ id_not: "{beta}" }"#.into(), &["alpha", "gamma", "delta"]),
            (r#"{ id_in: ["{delta}", "{alpha}"] }"#.into(), &["alpha", "delta"]),
            (r#"{ id_not_in: ["{delta}", "{alpha}"] }"#.into(), &["beta", "gamma"]),
            (r#"{ id_lt: "{gamma}" }"#.into(), &["alpha", "beta"]),
            (r#"{ id_lte: "{gamma}" }"#.into(), &["alpha", "beta", "gamma"]),
            (r#"{ id_gt: "{beta}" }"#.into(), &["gamma", "delta"]),
            (r#"{ id_gte: "{beta}" }"#.into(), &["beta", "gamma", "delta"]),
            (format!(r#"{{ id_contains: "{first24}" }}"#), &["gamma"]),
            (format!(r#"{{ id_not_contains: "{first24}" }}"#), &["alpha", "beta", "delta"]),
            (format!(r#"{{ id_starts_with: "{first24}" }}"#), &["gamma"]),
            (format!(r#"{{ id_not_starts_with: "{first24}" }}"#), &["alpha", "beta", "delta"]),
            (format!(r#"{{ id_ends_with: "{last6}" }}"#), &["delta"]),
            (format!(r#"{{ id_not_ends_with: "{last6}" }}"#), &["alpha", "beta", "gamma"]),
            (r#"{ externalId: "ext-4" }"#.into(), &["delta"]),
            (r#"{ externalId_starts_with: "ext-" }"#.into(), &["alpha", "delta"]),
            (r#"{ externalId_in: ["ext-1", "ext-9"] }"#.into(), &["alpha"]),
        ];
        let cases: Vec<(&str, &[&str])> = cases.iter().map(|(f, e)| (f.as_str(), *e)).collect();
        check_with_ids(srv, &p, &cases).await;
    }

    /// Int: all eight suffixes.
    async fn int_suffixes(srv) {
        four_posts(srv).await;
        check(srv, &[
            ("{ votes: 5 }", &["alpha", "gamma"]),
            ("{ votes_not: 5 }", &["beta", "delta"]),
            ("{ votes_in: [2, 10, 99] }", &["beta", "delta"]),
            ("{ votes_not_in: [5] }", &["beta", "delta"]),
            ("{ votes_lt: 5 }", &["beta"]),
            ("{ votes_lte: 5 }", &["alpha", "beta", "gamma"]),
            ("{ votes_gt: 5 }", &["delta"]),
            ("{ votes_gte: 5 }", &["alpha", "gamma", "delta"]),
        ]).await;
    }

    /// Float: all eight suffixes (an Int literal is a valid Float).
    async fn float_suffixes(srv) {
        four_posts(srv).await;
        check(srv, &[
            ("{ rating: 4.5 }", &["alpha", "delta"]),
            ("{ rating_not: 4.5 }", &["beta", "gamma"]),
            ("{ rating_in: [0.5, 1.25] }", &["beta", "gamma"]),
            ("{ rating_not_in: [0.5, 1.25] }", &["alpha", "delta"]),
            ("{ rating_lt: 1.25 }", &["beta"]),
            ("{ rating_lte: 1.25 }", &["beta", "gamma"]),
            ("{ rating_gt: 1 }", &["alpha", "gamma", "delta"]),
            ("{ rating_gte: 4.5 }", &["alpha", "delta"]),
        ]).await;
    }

    /// DateTime: all eight suffixes; filter values are coerced like inputs (§2.10).
    async fn datetime_suffixes(srv) {
        four_posts(srv).await;
        check(srv, &[
            (r#"{ publishedAt: "2016-06-15" }"#, &["gamma"]),
            (r#"{ publishedAt: "2017-01-01T11:00:00+01:00" }"#, &["alpha"]),
            (r#"{ publishedAt_not: "2016-06-15T00:00:00.000Z" }"#, &["alpha", "beta", "delta"]),
            (r#"{ publishedAt_in: ["2015-05-05T05:05:05.005Z", "2018-03-03T03:03:03.003Z"] }"#, &["beta", "delta"]),
            (r#"{ publishedAt_not_in: ["2015-05-05T05:05:05.005Z", "2018-03-03T03:03:03.003Z"] }"#, &["alpha", "gamma"]),
            (r#"{ publishedAt_lt: "2017-01-01T10:00:00.000Z" }"#, &["beta", "gamma"]),
            (r#"{ publishedAt_lte: "2017-01-01T10:00:00.000Z" }"#, &["alpha", "beta", "gamma"]),
            (r#"{ publishedAt_gt: "2017" }"#, &["alpha", "delta"]),
            (r#"{ publishedAt_gte: "2018-03-03T03:03:03.003Z" }"#, &["delta"]),
        ]).await;
    }

    /// Enum: the four suffixes.
    async fn enum_suffixes(srv) {
        four_posts(srv).await;
        check(srv, &[
            ("{ status: PUBLISHED }", &["alpha", "delta"]),
            ("{ status_not: PUBLISHED }", &["beta", "gamma"]),
            ("{ status_in: [DRAFT, ARCHIVED] }", &["beta", "gamma"]),
            ("{ status_not_in: [DRAFT] }", &["alpha", "gamma", "delta"]),
        ]).await;
    }

    /// Boolean: the two suffixes.
    async fn boolean_suffixes(srv) {
        four_posts(srv).await;
        check(srv, &[
            ("{ published: true }", &["alpha", "gamma"]),
            ("{ published: false }", &["beta", "delta"]),
            ("{ published_not: true }", &["beta", "delta"]),
        ]).await;
    }

    /// `_in` and `_not_in` lists longer than a statement's placeholders allow (they travel as
    /// one parameter): the same matches as short lists, for every kind, with the same
    /// case-insensitive text comparison; up to a million values in a variable.
    async fn long_in_lists(srv) {
        let p = four_posts(srv).await;
        let padded = |head: &[String], pad: &dyn Fn(usize) -> String| {
            let mut all: Vec<String> = head.to_vec();
            all.extend((0..100).map(pad));
            all.join(", ")
        };
        let quoted = |v: &str| format!("\"{v}\"");
        let text = padded(&[quoted("GAMMA"), quoted("Alpha"), quoted("omega")], &|i| quoted(&format!("s{i}")));
        let ids = padded(&[quoted(&p.delta), quoted(&p.alpha)], &|i| quoted(&format!("c{i:024}")));
        let votes = padded(&["2".into(), "10".into()], &|i| (1000 + i).to_string());
        let ratings = padded(&["0.5".into(), "1.25".into()], &|i| format!("{i}.75"));
        let dates = padded(
            &[quoted("2015-05-05T05:05:05.005Z"), quoted("2018-03-03T03:03:03.003Z")],
            &|i| quoted(&format!("{}-01-01T00:00:00.000Z", 1900 + i)),
        );
        let statuses = padded(&["DRAFT".into(), "ARCHIVED".into()], &|i| {
            if i % 2 == 0 { "DRAFT".into() } else { "ARCHIVED".into() }
        });
        let cases: Vec<(String, &[&str])> = vec![
            (format!("{{ slug_in: [{text}] }}"), &["alpha", "gamma"]),
            (format!("{{ slug_not_in: [{text}] }}"), &["beta", "delta"]),
            (format!("{{ id_in: [{ids}] }}"), &["alpha", "delta"]),
            (format!("{{ id_not_in: [{ids}] }}"), &["beta", "gamma"]),
            (format!("{{ votes_in: [{votes}] }}"), &["beta", "delta"]),
            (format!("{{ votes_not_in: [{votes}] }}"), &["alpha", "gamma"]),
            (format!("{{ rating_in: [{ratings}] }}"), &["beta", "gamma"]),
            (format!("{{ rating_not_in: [{ratings}] }}"), &["alpha", "delta"]),
            (format!("{{ publishedAt_in: [{dates}] }}"), &["beta", "delta"]),
            (format!("{{ publishedAt_not_in: [{dates}] }}"), &["alpha", "gamma"]),
            (format!("{{ status_in: [{statuses}] }}"), &["beta", "gamma"]),
            (format!("{{ status_not_in: [{statuses}] }}"), &["alpha", "delta"]),
        ];
        let cases: Vec<(&str, &[&str])> = cases.iter().map(|(f, e)| (f.as_str(), *e)).collect();
        check(srv, &cases).await;

        // A million values, most of them alike, in a variable.
        let mut many = vec![serde_json::json!("ALPHA")];
        many.extend(std::iter::repeat_n(serde_json::json!("x"), 999_999));
        let many = Value::Array(many);
        for (filter, expected) in [("slug_in", &["alpha"][..]), ("slug_not_in", &["beta", "gamma", "delta"])] {
            let out = srv
                .gql_vars(
                    &format!("query($v: [String!]) {{ allPosts(filter: {{ {filter}: $v }}) {{ slug }} }}"),
                    serde_json::json!({ "v": many }),
                )
                .await;
            assert_eq!(out, list_of("allPosts", "slug", expected), "{filter}");
        }
    }

    /// Sibling keys are ANDed; `AND`/`OR` nest; empty `AND: []`/`OR: []` match everything.
    async fn and_or_nesting(srv) {
        four_posts(srv).await;
        check(srv, &[
            ("{ votes: 5, published: true, status: ARCHIVED }", &["gamma"]),
            (r#"{ OR: [{ slug: "alpha" }, { slug: "delta" }] }"#, &["alpha", "delta"]),
            ("{ AND: [{ votes_gte: 5 }, { published: false }] }", &["delta"]),
            ("{ OR: [{ votes: 10 }, { AND: [{ status: ARCHIVED }, { published: true }] }] }", &["gamma", "delta"]),
            (r#"{ votes: 5, OR: [{ slug: "gamma" }, { slug: "delta" }] }"#, &["gamma"]),
            (r#"{ AND: [{ OR: [{ votes: 2 }, { votes: 10 }] }, { OR: [{ status: DRAFT }, { rating: 4.5 }] }] }"#, &["beta", "delta"]),
            ("{ AND: [] }", &["alpha", "beta", "gamma", "delta"]),
            ("{ OR: [] }", &["alpha", "beta", "gamma", "delta"]),
            ("{ OR: [], votes: 2 }", &["beta"]),
            ("{}", &["alpha", "beta", "gamma", "delta"]),
        ]).await;
    }

    /// `f: null` is IS NULL, `f_not: null` IS NOT NULL; `f_in: null`, `f_not_in: null` and
    /// `f_in: []` match nothing; `f_not_in: []` matches everything.
    async fn nulls_and_empty_lists(srv) {
        four_posts(srv).await;
        srv.create("Post", r#"slug: "epsilon", title: "no date""#).await;
        check(srv, &[
            ("{ body: null }", &["beta", "epsilon"]),
            ("{ body_not: null }", &["alpha", "gamma", "delta"]),
            ("{ externalId: null }", &["beta", "gamma", "epsilon"]),
            ("{ externalId_not: null }", &["alpha", "delta"]),
            ("{ publishedAt: null }", &["epsilon"]),
            ("{ rating: null }", &["epsilon"]),
            ("{ slug_in: null }", &[]),
            ("{ slug_not_in: null }", &[]),
            ("{ votes_in: null }", &[]),
            ("{ slug_in: [] }", &[]),
            ("{ status_in: [] }", &[]),
            ("{ slug_not_in: [] }", &["alpha", "beta", "gamma", "delta", "epsilon"]),
            ("{ votes_not_in: [] }", &["alpha", "beta", "gamma", "delta", "epsilon"]),
        ]).await;
    }

    /// `%` and `_` in `_contains`/`_starts_with`/`_ends_with` values are matched literally.
    async fn like_wildcards_are_literal(srv) {
        four_posts(srv).await;
        check(srv, &[
            (r#"{ title_contains: "100%" }"#, &["gamma"]),
            (r#"{ title_contains: "e_t" }"#, &["gamma"]),
            (r#"{ title_contains: "%" }"#, &["gamma"]),
            (r#"{ title_contains: "_" }"#, &["gamma"]),
            (r#"{ title_not_contains: "%" }"#, &["alpha", "beta", "delta"]),
            (r#"{ title_starts_with: "1%" }"#, &[]),
            (r#"{ title_starts_with: "100%" }"#, &["gamma"]),
            (r#"{ title_ends_with: "_thing" }"#, &["gamma"]),
            (r#"{ title_ends_with: "_ercent" }"#, &[]),
            (r#"{ title_contains: "\\" }"#, &[]),
        ]).await;
    }

    /// Equality and pattern matching on strings ignore case (§1.3, §2.8).
    async fn text_matching_ignores_case(srv) {
        four_posts(srv).await;
        check(srv, &[
            (r#"{ title: "hello world" }"#, &["alpha"]),
            (r#"{ title: "HELLO AGAIN" }"#, &["beta"]),
            (r#"{ slug_in: ["ALPHA", "Gamma"] }"#, &["alpha", "gamma"]),
            (r#"{ title_contains: "HELLO" }"#, &["alpha", "beta"]),
            (r#"{ title_starts_with: "zeta" }"#, &["delta"]),
            (r#"{ title_ends_with: "WORLD" }"#, &["alpha"]),
            (r#"{ title_not_contains: "WORLD" }"#, &["beta", "gamma", "delta"]),
        ]).await;
    }
}
