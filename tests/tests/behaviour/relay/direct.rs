//! Compiled plans for the Relay API's queries (`runtime/src/plan/`, `Api::Relay`): a `viewer`
//! query the executor has answered once is answered by its plan from then on, with the
//! executor's response (connections, their page facts, cursors and count, relation connections
//! at every depth, single nodes), no more statements than the executor, and the executor's
//! answer whenever the plan cannot give it. Each case is checked as `simple::direct` checks
//! the Simple API's plans.

use serde_json::{Value, json};

use crate::simple::direct::{compare_at, data_set, linked_data_set, send_to};
use crate::support::{ALIAS, Server, node_token};

fn relay(srv: &Server) -> String {
    srv.url(&format!("/relay/v1/{ALIAS}"))
}

/// Whether the plan answered `query` on the Relay API, after checking it answered as the
/// executor does.
async fn compare(srv: &Server, token: Option<&str>, query: &str, variables: Value) -> bool {
    compare_at(srv, &relay(srv), token, query, variables).await
}

db_tests! {
    /// Root connections of every scalar kind with every page rule (first, last, after, before,
    /// skip, empty pages, the probe node), `count` with filters, page facts and cursors,
    /// `__typename` at every level, aliases, fragments, variables, `viewer.id`, single nodes.
    async fn plans_answer_connections_like_the_executor(srv) {
        let ids = linked_data_set(srv).await;
        let root = Some(srv.root_token());
        let all_fields = "id slug title body votes rating published status publishedAt metadata tags scores externalId createdAt __typename";
        let info = "pageInfo { hasNextPage hasPreviousPage startCursor endCursor __typename }";
        let cases: Vec<(String, Value)> = vec![
            (format!("{{ viewer {{ allPosts(orderBy: slug_ASC) {{ edges {{ node {{ {all_fields} }} cursor __typename }} {info} count __typename }} }} }}"), json!({})),
            (format!("{{ viewer {{ allPosts(first: 2, orderBy: slug_ASC) {{ edges {{ cursor node {{ slug }} }} {info} }} }} }}"), json!({})),
            (format!("{{ viewer {{ allPosts(first: 4, orderBy: slug_ASC) {{ edges {{ node {{ slug }} }} {info} }} }} }}"), json!({})),
            (format!("{{ viewer {{ allPosts(first: 5, orderBy: slug_ASC) {{ edges {{ node {{ slug }} }} {info} }} }} }}"), json!({})),
            (format!("{{ viewer {{ allPosts(last: 2, orderBy: slug_ASC) {{ edges {{ node {{ slug }} }} {info} }} }} }}"), json!({})),
            (format!("{{ viewer {{ allPosts(last: 9, orderBy: votes_DESC) {{ edges {{ node {{ slug votes }} }} {info} }} }} }}"), json!({})),
            (format!("{{ viewer {{ allPosts(first: 0) {{ edges {{ node {{ slug }} }} {info} count }} }} }}"), json!({})),
            (format!("{{ viewer {{ allPosts(filter: {{ slug: \"none\" }}) {{ edges {{ node {{ slug }} }} {info} count }} }} }}"), json!({})),
            (format!("query ($a: String, $n: Int) {{ viewer {{ allPosts(after: $a, first: $n, orderBy: id_ASC) {{ edges {{ node {{ slug }} }} {info} }} }} }}"),
                json!({ "a": ids["p1"], "n": 1 })),
            (format!("query ($b: String) {{ viewer {{ allPosts(before: $b, last: 1) {{ edges {{ node {{ slug }} }} {info} }} }} }}"),
                json!({ "b": ids["p2"] })),
            (format!("{{ viewer {{ allPosts(skip: 1, first: 2, orderBy: slug_DESC) {{ edges {{ node {{ slug }} }} {info} }} }} }}"), json!({})),
            ("query ($v: Int) { viewer { allPosts(filter: { votes_gt: $v }, first: 1, orderBy: slug_ASC) { count edges { node { slug } } } } }".into(), json!({ "v": 2 })),
            ("{ viewer { id __typename a: allUsers(orderBy: email_ASC) { edges { node { x: email } } } b: allCategories { count } } }".into(), json!({})),
            ("{ viewer { allPosts(orderBy: slug_ASC) { ...C } } } fragment C on PostConnection { count edges { ...E } } fragment E on PostEdge { cursor node { ...P } } fragment P on Post { slug }".into(), json!({})),
            ("{ viewer { allPosts { pageInfo { hasNextPage } } } }".into(), json!({})),
            ("{ viewer { allPosts(orderBy: slug_ASC) { edges { cursor } } } }".into(), json!({})),
            ("query ($s: String) { viewer { Post(slug: $s) { slug title } User(email: \"bob@example.com\") { name } } }".into(), json!({ "s": "p1" })),
            ("{ viewer { Post(slug: \"nothing\") { slug } } __typename }".into(), json!({})),
            ("{ viewer { allUsers(first: 1000, orderBy: email_ASC) { edges { node { email } } pageInfo { hasNextPage } } } }".into(), json!({})),
        ];
        for (query, variables) in cases {
            assert!(compare(srv, root, &query, variables.clone()).await, "not direct: {query} {variables}");
        }
    }

    /// Relation connections at every depth with their own page facts and counts per parent
    /// (first and last, filters, parents without related nodes), to-one fields, n:m and self
    /// relations, a single node's connection; one statement per level and per count.
    async fn plans_answer_relation_connections(srv) {
        linked_data_set(srv).await;
        let root = Some(srv.root_token());
        let info = "pageInfo { hasNextPage hasPreviousPage startCursor endCursor }";
        let cases: Vec<(String, Value)> = vec![
            (format!("{{ viewer {{ allUsers(orderBy: email_ASC) {{ edges {{ node {{ email posts(first: 1, orderBy: slug_ASC) {{ count edges {{ cursor node {{ slug author {{ name }} comments {{ count edges {{ node {{ text }} }} }} }} }} {info} }} }} }} }} }} }}"), json!({})),
            (format!("{{ viewer {{ allUsers(orderBy: email_ASC) {{ edges {{ node {{ name posts(last: 2, orderBy: votes_ASC) {{ edges {{ node {{ slug votes }} }} {info} }} }} }} }} }} }}"), json!({})),
            ("query ($v: Int) { viewer { allUsers(orderBy: email_ASC) { edges { node { name posts(filter: { votes_gt: $v }) { count edges { node { slug } } } profile { bio } } } } } }".into(), json!({ "v": 2 })),
            ("{ viewer { allCategories { edges { node { name posts(orderBy: slug_ASC) { edges { node { slug categories { count } } } } pinnedPost { slug } } } } } }".into(), json!({})),
            ("{ viewer { allUsers(orderBy: email_ASC) { edges { node { name followers(orderBy: name_ASC) { edges { node { name } } } friends { count } following { pageInfo { hasNextPage } } } } } } }".into(), json!({})),
            ("{ viewer { Post(slug: \"p1\") { slug comments(orderBy: text_DESC, first: 1) { count edges { node { text } } pageInfo { hasNextPage endCursor } } } } }".into(), json!({})),
        ];
        for (query, variables) in cases {
            assert!(compare(srv, root, &query, variables.clone()).await, "not direct: {query} {variables}");
        }
        // A nested connection read costs one statement per level (and one per count), whatever
        // the number of parents.
        let query = "{ viewer { allUsers(orderBy: email_ASC) { edges { node { posts(first: 2) { edges { node { slug comments { edges { node { text } } } } } } } } } } }";
        assert!(compare(srv, root, query, json!({})).await);
        let answer = send_to(srv, &relay(srv), root, &json!({ "query": query })).await;
        assert_eq!((answer.direct.as_str(), answer.statements.as_str()), ("1", "3"), "{}", answer.text);
    }

    /// The benchmark's shape: 100 nodes of `allPosts(first: 100)` in one statement, by the plan.
    async fn a_hundred_node_page_is_one_statement(srv) {
        data_set(srv).await;
        let mutation: String = (0..100)
            .map(|i| format!(r#"p{i}: createPost(slug: "bulk-{i:03}", title: "T{i}", votes: {i}) {{ id }} "#))
            .collect();
        srv.data(&format!("mutation {{ {mutation} }}")).await;
        let query = "{ viewer { allPosts(first: 100, orderBy: id_ASC) { edges { node { id slug title votes createdAt } } pageInfo { hasNextPage } } } }";
        assert!(compare(srv, Some(srv.root_token()), query, json!({})).await);
        let answer = send_to(srv, &relay(srv), Some(srv.root_token()), &json!({ "query": query })).await;
        assert_eq!((answer.direct.as_str(), answer.statements.as_str()), ("1", "1"));
        let body: Value = serde_json::from_str(&answer.text).expect("JSON");
        let page = &body["data"]["viewer"]["allPosts"];
        assert_eq!(page["edges"].as_array().map(Vec::len), Some(100));
        assert_eq!(page["pageInfo"]["hasNextPage"], json!(true));
    }

    /// What the Relay plans do not cover, and every error, is the executor's: `node(id)`,
    /// `viewer.user`, two `edges` or `node` selections, fragments on interfaces, directives,
    /// bad paging arguments, fields the requester may not read, mutations.
    async fn the_executor_answers_what_relay_plans_do_not(srv) {
        let ids = linked_data_set(srv).await;
        let root = Some(srv.root_token());
        let node = format!("{{ node(id: \"{}\") {{ id ... on Post {{ slug }} }} }}", ids["p1"]);
        let executor: Vec<(&str, Value)> = vec![
            (node.as_str(), json!({})),
            ("{ viewer { user { name } } }", json!({})),
            ("{ viewer { allPosts { a: edges { cursor } b: edges { node { slug } } } } }", json!({})),
            ("{ viewer { allPosts { edges { a: node { slug } b: node { title } } } } }", json!({})),
            ("{ viewer { allPosts { edges { node { ... on Node { id } } } } } }", json!({})),
            ("query ($s: Boolean!) { viewer { allPosts { edges { node { slug @include(if: $s) } } } } }", json!({ "s": true })),
            ("{ viewer { allPosts(first: 1, last: 1) { edges { node { slug } } } } }", json!({})),
            ("query ($n: Int) { viewer { allPosts(first: $n) { count } } }", json!({ "n": 1001 })),
            ("query ($n: Int) { viewer { allUsers { edges { node { posts(last: $n) { count } } } } } }", json!({ "n": -1 })),
            ("mutation { deleteManyComments(input: { filter: { text: \"none\" }, clientMutationId: \"x\" }) { count } }", json!({})),
        ];
        for (query, variables) in executor {
            assert!(!compare(srv, root, query, variables.clone()).await, "direct: {query} {variables}");
        }
        // Read permissions: anonymous requesters read some fields of posts freely, `body` only
        // through a permission query, users' emails not at all.
        assert!(compare(srv, None, "{ viewer { allPosts(orderBy: slug_ASC) { edges { node { id slug title status } } } } }", json!({})).await);
        assert!(!compare(srv, None, "{ viewer { allPosts(orderBy: slug_ASC) { edges { node { slug body } } } } }", json!({})).await);
        assert!(!compare(srv, None, "{ viewer { allPosts(orderBy: slug_ASC) { edges { node { author { email } } } } } }", json!({})).await);
        let token = node_token(&ids["a"], "User");
        assert!(compare(srv, Some(&token), "{ viewer { allUsers(orderBy: name_ASC) { edges { node { id name } } } } }", json!({})).await);
        assert!(!compare(srv, Some(&token), "{ viewer { allUsers(orderBy: name_ASC) { edges { node { name email } } } } }", json!({})).await);
    }
}
