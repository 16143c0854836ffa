//! Pagination (§2.9): `first`, `last`, `skip`, `after`/`before` cursors (also with `orderBy` on a
//! field with ties and nulls), argument errors 3014/3026/3027/3028/2041, and the implicit cap of
//! 1000 nodes.

use serde_json::json;

use crate::support::{Server, error_response, field_error, list_of, six_categories};

/// Runs `allCategories({args}) { name }`, where `{a}`…`{f}` in `args` stand for the ids of the
/// categories of [`six_categories`].
async fn names(srv: &Server, ids: &[String], args: &str) -> serde_json::Value {
    let mut args = args.to_owned();
    for (key, id) in ["{a}", "{b}", "{c}", "{d}", "{e}", "{f}"].iter().zip(ids) {
        args = args.replace(key, id);
    }
    srv.gql(&format!("{{ allCategories({args}) {{ name }} }}"))
        .await
}

async fn check(srv: &Server, ids: &[String], cases: &[(&str, &[&str])]) {
    for (args, expected) in cases {
        assert_eq!(
            names(srv, ids, args).await,
            list_of("allCategories", "name", expected),
            "allCategories({args})"
        );
    }
}

db_tests! {
    /// `first`, `last` (the final N, still in ascending order) and `skip` with either.
    async fn first_last_skip(srv) {
        let ids = six_categories(srv).await;
        check(srv, &ids, &[
            ("first: 2", &["a", "b"]),
            ("first: 0", &[]),
            ("first: 10", &["a", "b", "c", "d", "e", "f"]),
            ("last: 2", &["e", "f"]),
            ("last: 0", &[]),
            ("last: 10", &["a", "b", "c", "d", "e", "f"]),
            ("skip: 4", &["e", "f"]),
            ("skip: 10", &[]),
            ("skip: 0", &["a", "b", "c", "d", "e", "f"]),
            ("skip: 1, first: 2", &["b", "c"]),
            ("skip: 1, last: 2", &["d", "e"]),
            ("skip: 5, last: 2", &["a"]),
            ("orderBy: name_DESC, first: 2", &["f", "e"]),
            ("orderBy: name_DESC, last: 2", &["b", "a"]),
            ("orderBy: name_DESC, skip: 1, last: 2", &["c", "b"]),
            ("filter: { name_not: \"a\" }, last: 3, skip: 1", &["c", "d", "e"]),
        ]).await;
    }

    /// `after`/`before` take node ids as cursors, in the default (id) order.
    async fn cursors_in_id_order(srv) {
        let ids = six_categories(srv).await;
        check(srv, &ids, &[
            (r#"after: "{b}""#, &["c", "d", "e", "f"]),
            (r#"after: "{b}", first: 2"#, &["c", "d"]),
            (r#"after: "{b}", last: 2"#, &["e", "f"]),
            (r#"after: "{b}", skip: 1, first: 2"#, &["d", "e"]),
            (r#"before: "{e}""#, &["a", "b", "c", "d"]),
            (r#"before: "{e}", last: 2"#, &["c", "d"]),
            (r#"before: "{e}", first: 2"#, &["a", "b"]),
            (r#"after: "{b}", before: "{e}""#, &["c", "d"]),
            (r#"after: "{f}""#, &[]),
            (r#"before: "{a}""#, &[]),
            (r#"orderBy: id_DESC, after: "{c}""#, &["b", "a"]),
            (r#"orderBy: id_DESC, before: "{c}""#, &["f", "e", "d"]),
        ]).await;
    }

    /// Cursors compare the `(order field, id)` tuple: ties on `position` are broken by id, and
    /// nulls sort first ascending (last descending).
    async fn cursors_with_order_by_ties_and_nulls(srv) {
        let ids = six_categories(srv).await;
        // position: a=3, b=1, c=null, d=3, e=2, f=null.
        check(srv, &ids, &[
            ("orderBy: position_ASC", &["c", "f", "b", "e", "a", "d"]),
            ("orderBy: position_DESC", &["d", "a", "e", "b", "f", "c"]),
            (r#"orderBy: position_ASC, after: "{c}""#, &["f", "b", "e", "a", "d"]),
            (r#"orderBy: position_ASC, after: "{f}""#, &["b", "e", "a", "d"]),
            (r#"orderBy: position_ASC, after: "{a}""#, &["d"]),
            (r#"orderBy: position_ASC, after: "{e}", first: 1"#, &["a"]),
            (r#"orderBy: position_ASC, before: "{b}""#, &["c", "f"]),
            (r#"orderBy: position_ASC, before: "{d}", last: 2"#, &["e", "a"]),
            (r#"orderBy: position_ASC, after: "{f}", before: "{d}""#, &["b", "e", "a"]),
            (r#"orderBy: position_ASC, last: 2"#, &["a", "d"]),
            (r#"orderBy: position_DESC, after: "{a}""#, &["e", "b", "f", "c"]),
            (r#"orderBy: position_DESC, after: "{f}""#, &["c"]),
            (r#"orderBy: position_DESC, before: "{f}""#, &["d", "a", "e", "b"]),
            (r#"orderBy: position_DESC, before: "{a}""#, &["d"]),
            (r#"orderBy: position_DESC, last: 3"#, &["b", "f", "c"]),
        ]).await;
    }

    /// An id that is no node (well-formed or not) as cursor gives an empty list, no error.
    async fn unknown_cursor_is_empty(srv) {
        let ids = six_categories(srv).await;
        check(srv, &ids, &[
            (r#"after: "cnotthere0000000000000000""#, &[]),
            (r#"before: "cnotthere0000000000000000""#, &[]),
            (r#"after: "nope", first: 3"#, &[]),
            (r#"orderBy: position_ASC, before: "cnotthere0000000000000000""#, &[]),
        ]).await;
        assert_eq!(
            names(srv, &ids, r#"after: "{a}", before: "cnotthere0000000000000000""#).await,
            list_of("allCategories", "name", &[])
        );
    }

    /// `first` with `last` → 3014; negative `first`/`last`/`skip` → 3026/3027/3028; more than
    /// 1000 → 2041. The list field is non-null, so `data` becomes null.
    async fn argument_errors(srv) {
        six_categories(srv).await;
        let cases: &[(&str, u32, &str)] = &[
            ("first: 1, last: 1", 3014, "Including a value for both first and last is not supported. See the spec for a discussion of why https://facebook.github.io/relay/graphql/connections.htm#sec-Pagination-algorithm"),
            ("first: -1", 3026, "The 'first' argument must be non negative"),
            ("last: -1", 3027, "The 'last' argument must be non negative"),
            ("skip: -1", 3028, "The 'skip' argument must be non negative"),
            ("first: 1001", 2041, "You requested 1001 nodes. We will only return up to 1000 nodes per query."),
            ("last: 5000", 2041, "You requested 5000 nodes. We will only return up to 1000 nodes per query."),
        ];
        for (args, code, message) in cases {
            assert_eq!(
                srv.gql(&format!("{{ allCategories({args}) {{ name }} }}")).await,
                error_response(json!(null), field_error(json!(["allCategories"]), 1, 3, *code, message)),
                "allCategories({args})"
            );
        }
        // Exactly 1000 is allowed.
        assert_eq!(
            srv.gql("{ allCategories(first: 1000, filter: { position: 1 }) { name } }").await,
            list_of("allCategories", "name", &["b"])
        );
    }

    /// Without `first`/`last` at most 1000 nodes come back, silently; the count is not capped.
    async fn implicit_cap_of_1000(srv) {
        // One request, 1001 aliased creates (root mutation fields run one after another).
        let mutation: String = (0..1001)
            .map(|i| format!(r#"c{i}: createCategory(name: "cat{i:04}") {{ id }} "#))
            .collect();
        let created = srv.data(&format!("mutation {{ {mutation}}}")).await;
        let mut ids: Vec<String> = (0..1001)
            .map(|i| created[format!("c{i}")]["id"].as_str().expect("an id").to_owned())
            .collect();
        ids.sort();

        let all = srv.gql("{ allCategories { id } _allCategoriesMeta { count } }").await;
        let expected: Vec<_> = ids[..1000].iter().map(|id| json!({ "id": id })).collect();
        assert_eq!(
            all,
            json!({ "data": { "allCategories": expected, "_allCategoriesMeta": { "count": 1001 } } })
        );
        assert_eq!(
            srv.gql("{ allCategories(skip: 1000) { id } }").await,
            json!({ "data": { "allCategories": [{ "id": ids[1000] }] } })
        );
        assert_eq!(
            srv.gql("{ allCategories(last: 1) { id } }").await,
            json!({ "data": { "allCategories": [{ "id": ids[1000] }] } })
        );
    }
}
