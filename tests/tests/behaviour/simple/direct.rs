//! Compiled query plans (`runtime/src/plan/`): a query text the executor has answered once
//! is answered by its plan from then on, with a response byte for byte the executor's, the same
//! statement count, and the executor's errors whenever the plan cannot answer.
//!
//! Each case sends a query three times: once with a trailing comment that makes its text new
//! (the executor answers it; that is the reference), then twice as written (the executor
//! answers the first and the plan is learned; the second is the one compared). The
//! `Svc-Direct` header says who answered. A plan may run fewer statements than the executor (on
//! PostgreSQL it reads a page and its one relation field together), never more.
//!
//! Responses compare as JSON values, whose objects are equal whatever the order of their keys:
//! the executor writes an object's fields in the order their resolvers finish, a plan in the
//! order of the selection (as GraphQL asks), which one test checks on the text.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::{Value, json};

use crate::support::{Server, node_token, redact_request_ids};

/// One response: its text, `Svc-Direct`, `Svc-Checked` and `Svc-Sql-Statements`.
pub(crate) struct Answer {
    pub(crate) text: String,
    pub(crate) direct: String,
    pub(crate) checked: String,
    pub(crate) statements: String,
}

async fn send(srv: &Server, token: Option<&str>, body: &Value) -> Answer {
    send_to(srv, &srv.api(), token, body).await
}

/// [`send`] to the API at `url`.
pub(crate) async fn send_to(srv: &Server, url: &str, token: Option<&str>, body: &Value) -> Answer {
    let mut request = srv.anonymous().post(url).json(body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let res = request.send().await.expect("the request failed");
    assert_eq!(res.status(), 200);
    let header = |name: &str| {
        res.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("missing")
            .to_owned()
    };
    let (direct, checked, statements) = (
        header("Svc-Direct"),
        header("Svc-Checked"),
        header("Svc-Sql-Statements"),
    );
    let text = res.text().await.expect("cannot read the body");
    Answer {
        text,
        direct,
        checked,
        statements,
    }
}

/// A response text with its request ids redacted, for comparing error responses.
fn redacted(text: &str) -> Value {
    let value: Value = serde_json::from_str(text).expect("a JSON body");
    redact_message_ids(redact_request_ids(value))
}

/// The request ids an internal error's message quotes (`… include your Request ID:
/// local:simple:<cuid>`), replaced by `<request id>` like the `requestId` fields.
fn redact_message_ids(value: Value) -> Value {
    const PREFIX: &str = "Request ID: ";
    match value {
        Value::String(s) => match s.split_once(PREFIX) {
            Some((head, _)) => Value::String(format!("{head}{PREFIX}<request id>")),
            None => Value::String(s),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(redact_message_ids).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, redact_message_ids(v)))
                .collect(),
        ),
        other => other,
    }
}

/// Whether the plan answered `query` (with `variables`, as `token`), after checking that its
/// answer is exactly the executor's: the same bytes without errors, the same body up to
/// request ids with them, and the same statement count (at most the same, when the plan
/// answered).
async fn compare(srv: &Server, token: Option<&str>, query: &str, variables: Value) -> bool {
    compare_at(srv, &srv.api(), token, query, variables).await
}

/// [`compare`] on the API at `url`.
pub(crate) async fn compare_at(
    srv: &Server,
    url: &str,
    token: Option<&str>,
    query: &str,
    variables: Value,
) -> bool {
    static FRESH: AtomicU32 = AtomicU32::new(0);
    let fresh = FRESH.fetch_add(1, Ordering::Relaxed);
    let reference = send_to(
        srv,
        url,
        token,
        &json!({ "query": format!("{query}\n# reference {fresh}"), "variables": variables }),
    )
    .await;
    assert_eq!(
        reference.direct, "0",
        "a new text is the executor's: {query}"
    );
    let body = json!({ "query": query, "variables": variables });
    send_to(srv, url, token, &body).await;
    let answer = send_to(srv, url, token, &body).await;
    // Objects compare without their key order: the executor writes the fields of an object in
    // the order their resolvers finish, plans in the order of the selection.
    assert_eq!(
        redacted(&answer.text),
        redacted(&reference.text),
        "{query} {variables}"
    );
    let direct = match answer.direct.as_str() {
        "1" => true,
        "0" => false,
        other => panic!("Svc-Direct: {other}"),
    };
    let count = |a: &Answer| a.statements.parse::<u32>().expect("Svc-Sql-Statements");
    if direct {
        assert!(
            count(&answer) <= count(&reference),
            "statements of {query} {variables}: {} by the plan, {} by the executor",
            answer.statements,
            reference.statements
        );
    } else {
        assert_eq!(
            answer.statements, reference.statements,
            "statements of {query} {variables}"
        );
    }
    direct
}

/// Users with posts using every scalar kind (and nulls), comments, categories and a profile.
pub(crate) async fn data_set(srv: &Server) {
    srv.data(
        r#"mutation {
          a: createUser(email: "ann@example.com", name: "Ann", age: 41, role: ADMIN,
            nicknames: ["annie", "a\"n"], profile: { bio: "Writes" },
            posts: [
              { slug: "p1", title: "Héllo \"world\"\n", body: "text", votes: 3, rating: 4.5,
                published: true, status: PUBLISHED, publishedAt: "2024-02-29T12:34:56.789Z",
                metadata: "{\"z\": 1, \"a\": [true, null, 2.50], \"m\": {\"k\": \"v\"}}",
                tags: ["x", "y"], scores: [1, -2], externalId: "ext-1",
                comments: [{ text: "first" }, { text: "second" }] },
              { slug: "p2", title: "Second", votes: 7, rating: 1e-7 },
              { slug: "p3", title: "Third", votes: 0, rating: 12345678.9, tags: [] }
            ]) { id }
          b: createUser(email: "bob@example.com", name: "Bob",
            posts: [{ slug: "p4", title: "Fourth", votes: 5, comments: [{ text: "third" }] }]) { id }
          c: createUser(email: "cid@example.com", name: "Cid") { id }
          k: createCategory(name: "News", position: 2) { id }
          ch: createChild(name: "Kid") { id }
          ch2: createChild(name: "Moody", moods: [PUBLISHED, DRAFT, PUBLISHED], settings: "[1, {\"b\": null}]") { id }
        }"#,
    )
    .await;
    srv.data(
        r#"mutation { updateManyPosts(filter: { slug_in: ["p1", "p2"] }, data: { status: PUBLISHED }) { count } }"#,
    )
    .await;
}

/// [`data_set`] with n:m and self relations: the category "News" holds posts p1 and p2 and pins
/// p2; Bob and Cid follow Ann, and Bob is her friend. Returns the ids of p1, p2, the category
/// (`k`) and the three users (`a`, `b`, `c`).
pub(crate) async fn linked_data_set(srv: &Server) -> HashMap<&'static str, String> {
    data_set(srv).await;
    let found = srv
        .data(r#"{ p1: Post(slug: "p1") { id } p2: Post(slug: "p2") { id } k: Category(name: "News") { id } a: User(email: "ann@example.com") { id } b: User(email: "bob@example.com") { id } c: User(email: "cid@example.com") { id } }"#)
        .await;
    let ids: HashMap<&'static str, String> = ["p1", "p2", "k", "a", "b", "c"]
        .into_iter()
        .map(|k| (k, found[k]["id"].as_str().unwrap_or_default().to_owned()))
        .collect();
    srv.data(&format!(
        r#"mutation {{
          updateCategory(id: "{k}", postsIds: ["{p1}", "{p2}"], pinnedPostId: "{p2}") {{ id }}
          updateUser(id: "{a}", followersIds: ["{b}", "{c}"], friendsIds: ["{b}"]) {{ id }}
        }}"#,
        k = ids["k"],
        p1 = ids["p1"],
        p2 = ids["p2"],
        a = ids["a"],
        b = ids["b"],
        c = ids["c"],
    ))
    .await;
    ids
}

db_tests! {
    /// Lists, single nodes and counts of every scalar kind, with arguments as literals and as
    /// variables, aliases, fragments and `__typename`: the plan's response is the executor's.
    async fn plans_answer_like_the_executor(srv) {
        data_set(srv).await;
        let root = Some(srv.root_token());
        let all_fields = "id slug title body votes rating published status publishedAt metadata tags scores externalId createdAt __typename";
        let cases: Vec<(String, Value)> = vec![
            (format!("{{ allPosts(orderBy: slug_ASC) {{ {all_fields} }} }}"), json!({})),
            (format!("{{ allPosts(orderBy: votes_DESC, first: 2) {{ {all_fields} }} }}"), json!({})),
            ("{ allPosts(last: 2, orderBy: slug_ASC) { slug } }".into(), json!({})),
            ("{ allPosts(skip: 1, first: 2, orderBy: slug_DESC) { slug } }".into(), json!({})),
            ("query ($t: String, $n: Int) { allPosts(filter: { title_contains: $t }, first: $n) { slug title } }".into(),
                json!({ "t": "o", "n": 2 })),
            ("query ($v: Int = 4) { allPosts(filter: { votes_gte: $v }, orderBy: slug_ASC) { slug votes } }".into(), json!({})),
            ("query ($v: Int = 4) { allPosts(filter: { votes_gte: $v }, orderBy: slug_ASC) { slug votes } }".into(), json!({ "v": 1 })),
            ("{ allUsers(orderBy: email_ASC) { email name age role verified nicknames createdAt updatedAt } }".into(), json!({})),
            ("{ allCategories { name position color } allChildren { name birthday weight settings moods } }".into(), json!({})),
            ("{ __typename a: allPosts(first: 1, orderBy: slug_ASC) { x: slug y: title } b: allPosts(last: 1) { slug } }".into(), json!({})),
            ("query ($slug: String) { Post(slug: $slug) { slug title metadata } }".into(), json!({ "slug": "p1" })),
            ("query ($slug: String) { Post(slug: $slug) { slug title } }".into(), json!({ "slug": "nothing" })),
            ("{ Post(externalId: \"ext-1\") { slug } User(email: \"bob@example.com\") { name } }".into(), json!({})),
            ("{ _allPostsMeta(filter: { votes_gt: 2 }) { count __typename } n: _allUsersMeta { count } }".into(), json!({})),
            ("{ _allPostsMeta(first: 5000) { count } }".into(), json!({})),
            // Fragments on the selected type itself are flattened; a leaf field selected twice
            // is merged.
            ("{ allPosts(orderBy: slug_ASC) { ...F } } fragment F on Post { slug title }".into(), json!({})),
            ("{ allPosts(orderBy: slug_ASC) { id ... on Post { slug } ... { votes id } } }".into(), json!({})),
            ("query Q { ...R } fragment R on Query { allUsers(orderBy: email_ASC) { ...U posts(first: 1) { ...P } } _allPostsMeta { ...C } } fragment U on User { name email } fragment P on Post { slug } fragment C on _QueryMeta { count }".into(), json!({})),
            // Order variables, at the root, in a relation and with a default.
            ("query ($o: PostOrderBy) { allPosts(orderBy: $o) { slug votes } }".into(), json!({ "o": "votes_DESC" })),
            ("query ($o: PostOrderBy) { allPosts(orderBy: $o) { slug } }".into(), json!({ "o": null })),
            ("query ($o: PostOrderBy!, $u: UserOrderBy = email_DESC) { allUsers(orderBy: $u) { email posts(orderBy: $o) { slug } } }".into(),
                json!({ "o": "title_ASC" })),
            // Project enum variables, in filters at the root and in relations, and a default.
            ("query ($s: PostStatus) { allPosts(filter: { status: $s }, orderBy: slug_ASC) { slug status } }".into(), json!({ "s": "PUBLISHED" })),
            ("query ($s: PostStatus) { allPosts(filter: { status: $s }, orderBy: slug_ASC) { slug status } }".into(), json!({ "s": null })),
            ("query ($s: PostStatus!, $t: PostStatus = DRAFT) { allUsers(orderBy: email_ASC) { posts(filter: { status_in: [$s, $t] }) { slug } } }".into(),
                json!({ "s": "PUBLISHED" })),
            ("query ($r: Role) { allUsers(filter: { role: $r }) { name role } }".into(), json!({ "r": "ADMIN" })),
        ];
        for (query, variables) in cases {
            assert!(compare(srv, root, &query, variables.clone()).await, "not direct: {query} {variables}");
        }
        // A variable left out without a default: the document runs without the argument it
        // fills, by the plan of the text learned for that variable left out.
        let left_out = "query ($t: String) { allPosts(filter: { title_contains: $t }) { slug } }";
        assert!(compare(srv, root, left_out, json!({})).await);
    }

    /// A plan writes every object's fields in the order of the selection, whatever order the
    /// statements run in.
    async fn plans_keep_the_selection_order(srv) {
        data_set(srv).await;
        let query = "{ allUsers(first: 1, orderBy: email_ASC) { posts(first: 1, orderBy: slug_ASC) { title slug } email profile { bio } __typename name } }";
        assert!(compare(srv, Some(srv.root_token()), query, json!({})).await);
        let answer = send(srv, Some(srv.root_token()), &json!({ "query": query })).await;
        assert_eq!(answer.direct, "1");
        assert_eq!(
            answer.text,
            r#"{"data":{"allUsers":[{"posts":[{"title":"Héllo \"world\"\n","slug":"p1"}],"email":"ann@example.com","profile":{"bio":"Writes"},"__typename":"User","name":"Ann"}]}}"#
        );
    }

    /// Relation fields at every depth: to-many with list arguments, to-one (optional with a
    /// filter, and required), counts, n:m and self relations, parents without related nodes.
    async fn plans_follow_relations(srv) {
        linked_data_set(srv).await;
        let root = Some(srv.root_token());
        let cases: Vec<(&str, Value)> = vec![
            ("{ allUsers(orderBy: email_ASC) { email posts(orderBy: slug_DESC) { slug author { email } comments { text post { slug } } _commentsMeta { count } } profile { bio user { name } } } }", json!({})),
            ("query ($n: Int) { allUsers(orderBy: email_ASC) { name posts(first: $n, orderBy: votes_ASC) { slug votes } _postsMeta(filter: { votes_gt: 3 }) { count __typename } } }", json!({ "n": 1 })),
            ("{ allUsers(orderBy: email_ASC) { name posts(last: 1, orderBy: slug_ASC) { slug } } }", json!({})),
            ("{ allPosts(orderBy: slug_ASC) { slug author(filter: { name: \"Ann\" }) { name } categories { name } pinnedIn { name } } }", json!({})),
            ("{ allUsers(orderBy: email_ASC) { name followers { name } friends { name } } }", json!({})),
            ("{ allComments(orderBy: text_ASC) { text post { slug author { email posts(first: 1) { slug } } } replies { text } parent { text } } }", json!({})),
            ("{ Post(slug: \"p1\") { slug comments(orderBy: text_DESC) { text } } }", json!({})),
        ];
        for (query, variables) in cases {
            assert!(compare(srv, root, query, variables.clone()).await, "not direct: {query} {variables}");
        }
    }

    /// A page or a single node whose one relation field selects no relation field: on
    /// PostgreSQL the plan reads both in one statement (`LEFT JOIN LATERAL`), with the
    /// executor's response: parents without related nodes, to-one fields (null, and filtered
    /// away), n:m and self relations, arguments on both pages (filters, orders, first, skip,
    /// cursors), an empty page, a node that does not exist. What it
    /// does not cover (`last`, two relation fields, a nested relation, a count) keeps one
    /// statement per level.
    async fn plans_read_a_page_and_its_relation_together(srv) {
        let ids = linked_data_set(srv).await;
        let root = Some(srv.root_token());
        let postgres = srv.database().postgres_schema().is_some();
        // (query, variables, statements on PostgreSQL, statements on SQLite)
        let cases: Vec<(&str, Value, &str, &str)> = vec![
            ("{ allUsers(orderBy: email_ASC) { name posts(orderBy: slug_DESC) { slug votes } } }", json!({}), "1", "2"),
            ("{ allUsers(orderBy: email_DESC) { posts(first: 1, skip: 1, orderBy: votes_ASC) { title } email } }", json!({}), "1", "2"),
            ("query ($n: Int, $v: Int) { allUsers(filter: { name_not: \"Bob\" }, first: $n, orderBy: name_DESC) { name posts(filter: { votes_gte: $v }, orderBy: rating_DESC) { slug rating } } }",
                json!({ "n": 2, "v": 1 }), "1", "2"),
            ("query ($after: String) { allUsers(orderBy: email_ASC) { email posts(after: $after, orderBy: slug_ASC) { slug } } }",
                json!({ "after": ids["p1"] }), "1", "2"),
            ("{ allPosts(orderBy: slug_ASC, skip: 1, first: 2) { slug author { name email } } }", json!({}), "1", "2"),
            ("{ allPosts(orderBy: slug_ASC) { slug author(filter: { name: \"Ann\" }) { name } } }", json!({}), "1", "2"),
            ("{ allCategories { name posts(orderBy: slug_ASC) { slug status tags metadata publishedAt } } }", json!({}), "1", "2"),
            ("{ allUsers(orderBy: email_ASC) { name followers(orderBy: name_ASC) { name __typename } } }", json!({}), "1", "2"),
            ("{ allUsers(filter: { name: \"nobody\" }) { name posts { slug } } }", json!({}), "1", "1"),
            // A single node and its relation field.
            ("{ Post(slug: \"p1\") { slug comments(orderBy: text_DESC) { text } } }", json!({}), "1", "2"),
            ("query ($e: String) { User(email: $e) { name posts(first: 2, orderBy: votes_DESC) { slug votes } } }",
                json!({ "e": "ann@example.com" }), "1", "2"),
            ("{ User(email: \"cid@example.com\") { name posts { slug } } }", json!({}), "1", "2"),
            ("{ User(email: \"nobody@example.com\") { name posts { slug } } }", json!({}), "1", "1"),
            ("{ Post(slug: \"p4\") { slug author { name } } }", json!({}), "1", "2"),
            ("{ Post(slug: \"p4\") { author { name } comments { text } } }", json!({}), "3", "3"),
            // A required to-one field.
            ("{ allComments(orderBy: text_ASC) { text post { slug } } }", json!({}), "1", "2"),
            ("{ allUsers(orderBy: email_ASC) { name posts(last: 1, orderBy: slug_ASC) { slug } } }", json!({}), "2", "2"),
            ("{ allUsers(last: 2, orderBy: email_ASC) { name posts { slug } } }", json!({}), "2", "2"),
            ("{ allUsers(orderBy: email_ASC) { name posts { slug } profile { bio } } }", json!({}), "3", "3"),
            ("{ allUsers(orderBy: email_ASC) { name posts { slug comments { text } } } }", json!({}), "3", "3"),
            ("{ allUsers(orderBy: email_ASC) { name posts { slug } _postsMeta { count } } }", json!({}), "3", "3"),
        ];
        for (query, variables, on_postgres, on_sqlite) in cases {
            assert!(compare(srv, root, query, variables.clone()).await, "not direct: {query} {variables}");
            let answer = send(srv, root, &json!({ "query": query, "variables": variables })).await;
            let expected = if postgres { on_postgres } else { on_sqlite };
            assert_eq!(answer.statements, expected, "statements of {query} {variables}");
        }
    }

    /// A count of the same filter after a list whose page holds every node of it (from the
    /// first node, fewer nodes than the page could take) is the page's length: one statement.
    /// On SQLite, a page in id order from its first node whose filter selected few nodes for
    /// its size is read with its count in one scan (`scan` below: one statement on SQLite, two
    /// on PostgreSQL). Any other count reads the table.
    async fn a_count_after_a_page_holding_every_match_reads_nothing_more(srv) {
        let ids = linked_data_set(srv).await;
        let root = Some(srv.root_token());
        let sqlite = srv.database().postgres_schema().is_none();
        // Posts with more than 2 votes: p1 (3), p4 (5), p2 (7).
        let cases: Vec<(&str, Value, &str, i64)> = vec![
            ("{ allPosts(filter: { votes_gt: 2 }, first: 10, orderBy: slug_ASC) { slug } _allPostsMeta(filter: { votes_gt: 2 }) { count } }", json!({}), "1", 3),
            ("query ($v: Int) { allPosts(filter: { votes_gt: $v }) { slug } m: _allPostsMeta(filter: { votes_gt: $v }) { count } }", json!({ "v": 2 }), "1", 3),
            ("{ allPosts(last: 4, filter: { votes_gt: 2 }) { slug } _allPostsMeta(filter: { votes_gt: 2 }) { count } }", json!({}), "1", 3),
            ("{ allPosts { slug } _allPostsMeta { count } }", json!({}), "1", 4),
            ("{ allPosts(filter: null) { slug } _allPostsMeta { count } }", json!({}), "1", 4),
            // The page is full: more may follow.
            ("{ allPosts(filter: { votes_gt: 2 }, first: 3) { slug } _allPostsMeta(filter: { votes_gt: 2 }) { count } }", json!({}), "scan", 3),
            ("{ allPosts(filter: { votes_gt: 2 }, first: 2) { slug } _allPostsMeta(filter: { votes_gt: 2 }) { count } }", json!({}), "scan", 3),
            ("{ allPosts(last: 3, filter: { votes_gt: 2 }) { slug } _allPostsMeta(filter: { votes_gt: 2 }) { count } }", json!({}), "2", 3),
            // Not from the first node.
            ("{ allPosts(filter: { votes_gt: 2 }, skip: 1, first: 10) { slug } _allPostsMeta(filter: { votes_gt: 2 }) { count } }", json!({}), "scan", 3),
            ("query ($a: String) { allPosts(filter: { votes_gt: 2 }, after: $a) { slug } _allPostsMeta(filter: { votes_gt: 2 }) { count } }", json!({ "a": ids["p1"] }), "2", 3),
            // Another filter, another model, or the count first.
            ("{ allPosts(filter: { votes_gt: 2 }) { slug } _allPostsMeta(filter: { votes_gt: 3 }) { count } }", json!({}), "2", 2),
            ("{ allPosts(filter: { votes_gt: 2 }) { slug } _allPostsMeta { count } }", json!({}), "2", 4),
            ("{ allUsers { name } _allPostsMeta { count } }", json!({}), "2", 4),
            ("{ _allPostsMeta(filter: { votes_gt: 2 }) { count } allPosts(filter: { votes_gt: 2 }) { slug } }", json!({}), "2", 3),
        ];
        for (query, variables, statements, count) in cases {
            assert!(compare(srv, root, query, variables.clone()).await, "not direct: {query} {variables}");
            let answer = send(srv, root, &json!({ "query": query, "variables": variables })).await;
            let statements = match statements {
                "scan" if sqlite => "1",
                "scan" => "2",
                n => n,
            };
            assert_eq!(answer.statements, statements, "statements of {query} {variables}");
            let body: Value = serde_json::from_str(&answer.text).unwrap();
            let counted = body["data"].as_object().unwrap().iter().find_map(|(key, value)| {
                (key == "m" || key == "_allPostsMeta").then(|| value["count"].as_i64().unwrap())
            });
            assert_eq!(counted, Some(count), "{query}: {body}");
        }
    }

    /// A page in id order and the count of its filter, read in one scan on SQLite once the
    /// filter has selected at most four times the nodes the page and its `skip` hold: the
    /// answer is the executor's in every case (ascending and descending, with `skip`, nested
    /// relations, no columns, no match, on both APIs), and a filter that has come to select many
    /// nodes goes back to a page and a count after one scan.
    async fn a_page_and_its_count_in_one_scan(srv) {
        let root = Some(srv.root_token());
        let sqlite = srv.database().postgres_schema().is_none();
        let mut posts = String::new();
        for i in 0..30 {
            let title = if i % 4 == 1 { format!("rare {i}") } else { format!("common {i}") };
            let author = if i % 3 == 0 { "Ann" } else { "Bob" };
            posts.push_str(&format!(
                r#"p{i}: createPost(slug: "s{i:02}", title: "{title}", votes: {i}, author: {{ email: "u{i}@example.com", name: "{author}" }}) {{ id }} "#
            ));
        }
        srv.data(&format!("mutation {{ {posts} }}")).await;
        // Eight titles hold "rare": posts 1, 5, 9, …, 29.
        let relay = srv.url(&format!("/relay/v1/{}", crate::support::ALIAS));
        // Each case with its statements on SQLite and on PostgreSQL (where a page and its one
        // relation field are one statement).
        let cases: Vec<(&str, &str, Value, [&str; 2])> = vec![
            (
                "simple",
                r#"{ allPosts(filter: { title_contains: "RARE" }, first: 3) { slug votes } _allPostsMeta(filter: { title_contains: "RARE" }) { count } }"#,
                json!({}),
                ["1", "2"],
            ),
            (
                "simple",
                r#"{ allPosts(filter: { title_contains: "rare" }, skip: 2, first: 3, orderBy: id_DESC) { slug author { name } } _allPostsMeta(filter: { title_contains: "rare" }) { count } }"#,
                json!({}),
                ["2", "2"],
            ),
            (
                "simple",
                r#"query ($t: String) { allPosts(filter: { title_contains: $t, author: { name: "Ann" } }, first: 2) { __typename } m: _allPostsMeta(filter: { title_contains: $t, author: { name: "Ann" } }) { count } }"#,
                json!({ "t": "rare" }),
                ["1", "2"],
            ),
            (
                "simple",
                r#"{ allPosts(filter: { title_contains: "none" }, first: 0) { slug } _allPostsMeta(filter: { title_contains: "none" }) { count } }"#,
                json!({}),
                ["1", "2"],
            ),
            (
                "relay",
                r#"{ viewer { allPosts(filter: { title_contains: "rare" }, first: 3, skip: 1) { count pageInfo { hasNextPage hasPreviousPage startCursor endCursor } edges { cursor node { slug } } } } }"#,
                json!({}),
                ["1", "2"],
            ),
            (
                "relay",
                r#"{ viewer { allPosts(filter: { title_contains: "rare" }, first: 8) { count pageInfo { hasNextPage } edges { node { slug } } } } }"#,
                json!({}),
                ["1", "2"],
            ),
        ];
        for (api, query, variables, [on_sqlite, on_postgres]) in cases {
            let url = if api == "relay" { relay.clone() } else { srv.api() };
            let fresh = json!({ "query": format!("{query}\n# executor"), "variables": variables });
            let reference = send_to(srv, &url, root, &fresh).await;
            assert!(compare_at(srv, &url, root, query, variables.clone()).await, "not direct: {query}");
            let body = json!({ "query": query, "variables": variables });
            let answer = send_to(srv, &url, root, &body).await;
            assert_eq!(answer.direct, "1", "{query}");
            let value: Value = serde_json::from_str(&answer.text).expect("JSON");
            assert_eq!(value, serde_json::from_str::<Value>(&reference.text).expect("JSON"), "{query}");
            let statements = if sqlite { on_sqlite } else { on_postgres };
            assert_eq!(answer.statements, statements, "statements of {query}");
        }
        // The executor, the plan's page and count (it learns 8), then one scan.
        let first = r#"{ allPosts(filter: { title_contains: "rare" }, first: 3) { slug } _allPostsMeta(filter: { title_contains: "rare" }) { count } }"#;
        for (round, statements) in [(0, "2"), (1, "2"), (2, if sqlite { "1" } else { "2" })] {
            let answer = send(srv, root, &json!({ "query": first })).await;
            assert_eq!(answer.statements, statements, "round {round}");
            let value: Value = serde_json::from_str(&answer.text).expect("JSON");
            assert_eq!(value, json!({ "data": { "allPosts": [{ "slug": "s01" }, { "slug": "s05" }, { "slug": "s09" }], "_allPostsMeta": { "count": 8 } } }));
        }
        // A filter selecting many nodes for the page: a page and a count.
        let many = r#"{ allPosts(filter: { votes_gt: -1 }, first: 2) { slug } _allPostsMeta(filter: { votes_gt: -1 }) { count } }"#;
        assert!(compare(srv, root, many, json!({})).await);
        let answer = send(srv, root, &json!({ "query": many })).await;
        assert_eq!(answer.statements, "2");
        // The filter comes to select many nodes: one more scan (it learned 8), right, then a
        // page and a count.
        srv.data(r#"mutation { updateManyPosts(filter: { title_contains: "common" }, data: { title: "rare again" }) { count } }"#).await;
        let answer = send(srv, root, &json!({ "query": first })).await;
        assert_eq!(answer.statements, if sqlite { "1" } else { "2" });
        let value: Value = serde_json::from_str(&answer.text).expect("JSON");
        assert_eq!(value, json!({ "data": { "allPosts": [{ "slug": "s00" }, { "slug": "s01" }, { "slug": "s02" }], "_allPostsMeta": { "count": 30 } } }));
        let again = send(srv, root, &json!({ "query": first })).await;
        assert_eq!(again.statements, "2");
        assert_eq!(again.text, answer.text);
    }

    /// What a plan does not cover, and every error, is answered by the executor, with the
    /// executor's response: fragments on interfaces, directives, repeated object fields,
    /// `node`, bad variables, broken paging rules, fields the requester may not
    /// read, a required relation with no node.
    async fn the_executor_answers_what_plans_do_not(srv) {
        data_set(srv).await;
        let root = Some(srv.root_token());
        let executor: Vec<(&str, Value)> = vec![
            ("{ allPosts { ... on Node { id } } }", json!({})),
            ("{ allPosts { ...F @include(if: true) } } fragment F on Post { slug }", json!({})),
            ("{ allPosts(orderBy: slug_ASC) { author { name } ...F } } fragment F on Post { author { email } }", json!({})),
            ("query ($s: Boolean!) { allPosts { slug @include(if: $s) } }", json!({ "s": true })),
            ("query ($f: PostFilter) { allPosts(filter: $f) { slug } }", json!({ "f": { "votes_gt": 1 } })),
            ("mutation { updateManyPosts(data: { votes: 1 }, filter: { slug: \"none\" }) { count } }", json!({})),
            ("query ($n: Int) { allPosts(first: $n) { slug } }", json!({ "n": -1 })),
            ("query ($n: Int) { allPosts(first: $n) { slug } }", json!({ "n": 1001 })),
            ("query ($n: Int) { allPosts(first: $n) { slug } }", json!({ "n": "two" })),
            ("query ($n: Int) { allPosts(first: $n) { slug } }", json!({ "n": 3_000_000_000_i64 })),
            ("query ($n: Int!) { allPosts(first: $n) { slug } }", json!({})),
            ("{ allPosts(first: 1, last: 1) { slug } }", json!({})),
            ("{ Post { slug } }", json!({})),
            ("query ($id: ID) { Post(id: $id) { slug } }", json!({ "id": null })),
            ("{ allPosts { slug } allPosts { title } }", json!({})),
            // Values validation refuses, behind arguments a plan might not need to read.
            ("query ($s: String, $x: ID) { Post(slug: $s, externalId: $x) { slug } }", json!({ "s": "p1", "x": true })),
            ("query ($t: String) { allPosts(filter: { title_contains: $t }) { slug } }", json!({ "t": 5 })),
            ("query ($t: String) { allPosts(filter: { slug_in: [$t, \"p2\"] }) { slug } }", json!({ "t": false })),
            ("query ($v: Int) { allPosts(filter: { votes_gt: $v }) { slug } }", json!({ "v": 1.5 })),
            ("query ($v: Float) { allPosts(filter: { rating_gt: $v }) { slug } }", json!({ "v": "high" })),
            ("query ($b: Boolean) { allPosts(filter: { published: $b }) { slug } }", json!({ "b": "yes" })),
            ("query ($n: Int) { allUsers { posts(first: $n) { slug } } }", json!({ "n": "2" })),
            ("query ($t: String) { allUsers { posts(filter: { title: $t }) { slug } } }", json!({ "t": ["a"] })),
            ("query ($t: String) { allPosts { author(filter: { name: $t }) { name } } }", json!({ "t": 1 })),
            ("query ($n: Int) { _allPostsMeta(skip: $n) { count } }", json!({ "n": "x" })),
            ("query ($n: Int) { allUsers { _postsMeta(last: $n) { count } } }", json!({ "n": "x" })),
            ("query ($id: ID) { allUsers(filter: { id: $id }) { name } }", json!({ "id": 1.5 })),
            // A required to-one field that its filter leaves without a node (an error).
            ("{ allComments(orderBy: text_ASC) { text post(filter: { slug: \"p4\" }) { slug } } }", json!({})),
        ];
        for (query, variables) in executor {
            assert!(!compare(srv, root, query, variables.clone()).await, "direct: {query} {variables}");
        }
        // A text longer than 16 KiB is never planned (the cache keeps the texts it plans).
        let long = format!("{{ allPosts {{ slug }} }}\n#{}", "x".repeat(16 * 1024));
        assert!(!compare(srv, root, &long, json!({})).await);
        // The same text with good values is answered by the plan.
        let paged = "query ($n: Int) { allPosts(first: $n) { slug } }";
        assert!(compare(srv, root, paged, json!({ "n": 2 })).await);
        // Read permissions: anonymous requesters read `slug` and `title` of every post freely;
        // `body` only through a permission query, and users not at all: the executor.
        assert!(compare(srv, None, "{ allPosts(orderBy: slug_ASC) { id slug title status } }", json!({})).await);
        assert!(!compare(srv, None, "{ allPosts(orderBy: slug_ASC) { slug body } }", json!({})).await);
        assert!(!compare(srv, None, "{ allPosts(orderBy: slug_ASC) { slug author { email } } }", json!({})).await);
        let ann = srv.data(r#"{ User(email: "ann@example.com") { id } }"#).await;
        let token = node_token(ann["User"]["id"].as_str().unwrap_or_default(), "User");
        assert!(compare(srv, Some(&token), "{ allUsers(orderBy: name_ASC) { id name } }", json!({})).await);
        assert!(!compare(srv, Some(&token), "{ allUsers(orderBy: name_ASC) { name email } }", json!({})).await);
    }

    /// A plan learned with good variables gives up on values the executor refuses, whatever
    /// the argument parsers would make of them: the response is the executor's error. (A text
    /// first sent with a bad value is never planned: its response has an error without a path.)
    async fn learned_plans_refuse_what_validation_refuses(srv) {
        data_set(srv).await;
        let root = Some(srv.root_token());
        let cases: Vec<(&str, Value, Vec<Value>)> = vec![
            ("query ($n: Int) { allPosts(first: $n) { slug } }", json!({ "n": 2 }),
                vec![json!({ "n": -1 }), json!({ "n": 1001 }), json!({ "n": "two" }), json!({ "n": 3_000_000_000_i64 })]),
            ("query ($n: Int!) { allPosts(first: $n) { slug } }", json!({ "n": 1 }),
                vec![json!({}), json!({ "n": null })]),
            ("query ($t: String!) { allPosts(filter: { title: $t }) { slug } }", json!({ "t": "Second" }),
                vec![json!({ "t": null }), json!({ "t": 1 }), json!({ "t": ["Second"] }), json!({ "t": { "a": 1 } })]),
            ("query ($t: String) { allUsers(orderBy: email_ASC) { posts(filter: { title_contains: $t }) { slug } } }", json!({ "t": "o" }),
                vec![json!({ "t": ["o"] }), json!({ "t": 2 })]),
            ("query ($s: String, $x: ID) { Post(slug: $s, externalId: $x) { slug } }", json!({ "s": "p1", "x": "ext-1" }),
                vec![json!({ "s": "p1", "x": true })]),
            ("query ($o: PostOrderBy) { allPosts(orderBy: $o) { slug } }", json!({ "o": "slug_ASC" }),
                vec![json!({ "o": "nope" }), json!({ "o": "SLUG_ASC" }), json!({ "o": 1 }), json!({ "o": ["slug_ASC"] })]),
            ("query ($o: PostOrderBy) { allUsers(orderBy: email_ASC) { posts(orderBy: $o) { slug } } }", json!({ "o": "slug_DESC" }),
                vec![json!({ "o": "email_ASC" })]),
            ("query ($o: UserOrderBy!) { allUsers(orderBy: $o) { name } }", json!({ "o": "name_ASC" }),
                vec![json!({ "o": "slug_ASC" }), json!({ "o": null })]),
            ("query ($s: PostStatus) { allPosts(filter: { status: $s }, orderBy: slug_ASC) { slug } }", json!({ "s": "PUBLISHED" }),
                vec![json!({ "s": "NOPE" }), json!({ "s": "published" }), json!({ "s": 2 }), json!({ "s": ["DRAFT"] })]),
            ("query ($s: PostStatus!) { allPosts(filter: { status: $s }, orderBy: slug_ASC) { slug } }", json!({ "s": "DRAFT" }),
                vec![json!({ "s": null }), json!({})]),
            ("query ($s: PostStatus!) { allPosts(filter: { status_in: [$s] }, orderBy: slug_ASC) { slug } }", json!({ "s": "DRAFT" }),
                vec![json!({ "s": "x" })]),
            ("query ($s: PostStatus) { allUsers(orderBy: email_ASC) { posts(filter: { status_not: $s }) { slug } } }", json!({ "s": "DRAFT" }),
                vec![json!({ "s": "ADMIN" })]),
            ("query ($r: Role) { allUsers(filter: { role: $r }, orderBy: email_ASC) { name } }", json!({ "r": "ADMIN" }),
                vec![json!({ "r": "PUBLISHED" })]),
            // List variables: a null item where items are non-null, an item of another type,
            // a single value (validation takes it as a list of one), a list of lists.
            ("query ($s: [String!]) { allPosts(filter: { slug_in: $s }, orderBy: slug_ASC) { slug } }", json!({ "s": ["p1", "p3"] }),
                vec![json!({ "s": ["p1", null] }), json!({ "s": [1] }), json!({ "s": "p1" }), json!({ "s": [["p1"]] }), json!({ "s": { "a": 1 } })]),
            ("query ($v: [Int!]) { allPosts(filter: { votes_in: $v }, orderBy: slug_ASC) { slug } }", json!({ "v": [3, 7] }),
                vec![json!({ "v": [1.5] }), json!({ "v": ["x"] }), json!({ "v": [3_000_000_000_i64] })]),
            ("query ($s: [PostStatus!]!) { allPosts(filter: { status_in: $s }, orderBy: slug_ASC) { slug } }", json!({ "s": ["DRAFT", "PUBLISHED"] }),
                vec![json!({ "s": ["NOPE"] }), json!({ "s": null }), json!({ "s": [null] }), json!({}), json!({ "s": "DRAFT" })]),
            ("query ($s: [PostStatus!]) { allUsers(orderBy: email_ASC) { posts(filter: { status_not_in: $s }) { slug } } }", json!({ "s": [] }),
                vec![json!({ "s": ["draft"] })]),
        ];
        for (query, good, bad) in cases {
            assert!(compare(srv, root, query, good.clone()).await, "not direct: {query} {good}");
            for variables in bad {
                assert!(!compare(srv, root, query, variables.clone()).await, "direct: {query} {variables}");
            }
        }
    }

    /// A plan that gives up after running statements does not count them: the response's
    /// statement count is the executor's alone (checked by `compare` for every error case
    /// above); and a batch reports how many of its requests plans answered.
    async fn batches_count_planned_requests(srv) {
        data_set(srv).await;
        let query = "{ allPosts(orderBy: slug_ASC) { slug } }";
        let batch = json!([{ "query": query }, { "query": "{ allUsers { name } }" }]);
        let first = send(srv, Some(srv.root_token()), &batch).await;
        assert_eq!(first.direct, "0");
        let second = send(srv, Some(srv.root_token()), &batch).await;
        assert_eq!(second.direct, "2");
        assert_eq!(second.text, first.text);
        assert_eq!(second.statements, "2");
        let value: Value = serde_json::from_str(&second.text).expect("JSON");
        assert_eq!(value[0]["data"]["allPosts"].as_array().map(Vec::len), Some(4));
    }
}
