//! The servers under test and, for each, the logical queries spelt in its API, with the check
//! every response must pass.

use serde_json::{Value, json};

use crate::data::{FILTER_TITLE_CONTAINS, FILTER_VOTES_GT, POSTS_PER_USER, SEARCH_TITLE_CONTAINS};
use crate::json::Json;

/// The logical queries, in the order they run (the create runs last so the reads see the
/// loaded data set only; queries 6 and 7 came later and keep their numbers). Queries 8 and 9
/// are queries 4 and 6 on the large data set: `bench/run` measures them in a second phase, on
/// servers loaded with 100 000 posts, where a scan of the table and an index differ visibly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Query {
    List = 1,
    ById = 2,
    Nested = 3,
    Filter = 4,
    Create = 5,
    Search = 6,
    /// Query 1 with its arguments in variables, one of which the request leaves out (as Apollo
    /// Client leaves out `undefined` ones).
    LeftOut = 7,
    /// Query 4 on the large data set.
    FilterLarge = 8,
    /// Query 6 on the large data set.
    SearchLarge = 9,
}

impl Query {
    pub const ALL: [Query; 9] = [
        Query::List,
        Query::LeftOut,
        Query::ById,
        Query::Nested,
        Query::Filter,
        Query::Search,
        Query::Create,
        Query::FilterLarge,
        Query::SearchLarge,
    ];

    pub fn number(self) -> usize {
        self as usize
    }

    /// The number of the pgbench script (`bench/sql/q<N>.sql`) that runs the query: the large
    /// data set's queries run the scripts of the queries they repeat.
    pub fn script(self) -> usize {
        match self {
            Query::FilterLarge => Query::Filter.number(),
            Query::SearchLarge => Query::Search.number(),
            other => other.number(),
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Query::List => "100 posts, 5 fields, by id",
            Query::ById => "one post by id",
            Query::Nested => "10 users × 10 posts",
            Query::Filter => "filtered list + count",
            Query::Search => "substring search + count",
            Query::LeftOut => "100 posts, a variable left out",
            Query::Create => "create a post",
            Query::FilterLarge => "filtered list + count, large data set",
            Query::SearchLarge => "substring search + count, large data set",
        }
    }
}

/// What a server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The svc example service (Simple API), on SQLite or PostgreSQL.
    SvcSqlite,
    SvcPostgres,
    /// Another build of the example service (`bench/run --baseline`), to compare two builds in
    /// one run.
    SvcSqliteBaseline,
    SvcPostgresBaseline,
    /// The same servers as `SvcSqlite` and `SvcPostgres`, asked through their Relay API.
    SvcRelaySqlite,
    SvcRelayPostgres,
    PostGraphile4,
    PostGraphile5,
    /// pgbench running hand-written SQL on the peers' conventional schema.
    Sql,
}

impl Kind {
    pub fn parse(name: &str) -> Option<Kind> {
        Some(match name {
            "svc-sqlite" => Kind::SvcSqlite,
            "svc-postgres" => Kind::SvcPostgres,
            "svc-sqlite-baseline" => Kind::SvcSqliteBaseline,
            "svc-postgres-baseline" => Kind::SvcPostgresBaseline,
            "svc-relay-sqlite" => Kind::SvcRelaySqlite,
            "svc-relay-postgres" => Kind::SvcRelayPostgres,
            "postgraphile4" => Kind::PostGraphile4,
            "postgraphile5" => Kind::PostGraphile5,
            "sql" => Kind::Sql,
            _ => return None,
        })
    }

    pub fn label(self) -> &'static str {
        match self {
            Kind::SvcSqlite => "svc (SQLite)",
            Kind::SvcPostgres => "svc (PostgreSQL)",
            Kind::SvcSqliteBaseline => "svc baseline (SQLite)",
            Kind::SvcPostgresBaseline => "svc baseline (PostgreSQL)",
            Kind::SvcRelaySqlite => "svc Relay API (SQLite)",
            Kind::SvcRelayPostgres => "svc Relay API (PostgreSQL)",
            Kind::PostGraphile4 => "PostGraphile 4",
            Kind::PostGraphile5 => "PostGraphile 5",
            Kind::Sql => "raw SQL (pgbench)",
        }
    }

    pub fn is_svc(self) -> bool {
        matches!(
            self,
            Kind::SvcSqlite
                | Kind::SvcPostgres
                | Kind::SvcSqliteBaseline
                | Kind::SvcPostgresBaseline
                | Kind::SvcRelaySqlite
                | Kind::SvcRelayPostgres
        )
    }

    /// Whether the target is an svc server's Relay API.
    pub fn is_relay(self) -> bool {
        matches!(self, Kind::SvcRelaySqlite | Kind::SvcRelayPostgres)
    }

    /// The GraphQL document of `query`; `None` for the SQL target.
    pub fn document(self, query: Query) -> Option<String> {
        let filter_svc = format!(
            r#"{{votes_gt: {FILTER_VOTES_GT}, title_contains: "{FILTER_TITLE_CONTAINS}"}}"#
        );
        let filter_pg = format!(
            r#"{{votes: {{greaterThan: {FILTER_VOTES_GT}}}, title: {{includesInsensitive: "{FILTER_TITLE_CONTAINS}"}}}}"#
        );
        let search_svc = format!(r#"{{title_contains: "{SEARCH_TITLE_CONTAINS}"}}"#);
        let search_pg = format!(r#"{{title: {{includesInsensitive: "{SEARCH_TITLE_CONTAINS}"}}}}"#);
        let id = self.id_field();
        Some(match (self, query) {
            (Kind::Sql, _) => return None,
            (_, Query::List) if self.is_relay() => {
                "{ viewer { allPosts(first: 100, orderBy: id_ASC) { edges { node { id slug title votes createdAt } } } } }".into()
            }
            (_, Query::LeftOut) if self.is_relay() => {
                "query ($first: Int, $after: String) { viewer { allPosts(first: $first, after: $after, orderBy: id_ASC) { edges { node { id slug title votes createdAt } } } } }".into()
            }
            (_, Query::ById) if self.is_relay() => {
                "query ($id: ID!) { viewer { Post(id: $id) { id slug title votes createdAt } } }".into()
            }
            (_, Query::Nested) if self.is_relay() => {
                "{ viewer { allUsers(first: 10, orderBy: id_ASC) { edges { node { id name posts(first: 10, orderBy: id_ASC) { edges { node { id title votes } } } } } } } }".into()
            }
            (_, Query::Filter | Query::FilterLarge) if self.is_relay() => format!(
                "{{ viewer {{ allPosts(filter: {filter_svc}, first: 50, orderBy: id_ASC) {{ count edges {{ node {{ id title votes }} }} }} }} }}"
            ),
            (_, Query::Search | Query::SearchLarge) if self.is_relay() => format!(
                "{{ viewer {{ allPosts(filter: {search_svc}, first: 50, orderBy: id_ASC) {{ count edges {{ node {{ id title votes }} }} }} }} }}"
            ),
            (_, Query::Create) if self.is_relay() => {
                "mutation ($slug: String!, $title: String!, $body: String, $votes: Int!, $authorId: ID!) { createPost(input: { slug: $slug, title: $title, body: $body, votes: $votes, authorId: $authorId, clientMutationId: \"bench\" }) { post { id slug } } }".into()
            }
            (_, Query::List) if self.is_svc() => {
                "{ allPosts(first: 100, orderBy: id_ASC) { id slug title votes createdAt } }".into()
            }
            (_, Query::List) => format!(
                "{{ allPosts(first: 100, orderBy: PRIMARY_KEY_ASC) {{ nodes {{ {id} slug title votes createdAt }} }} }}"
            ),
            (_, Query::LeftOut) if self.is_svc() => {
                "query ($first: Int, $skip: Int) { allPosts(first: $first, skip: $skip, orderBy: id_ASC) { id slug title votes createdAt } }".into()
            }
            (_, Query::LeftOut) => format!(
                "query ($first: Int, $offset: Int) {{ allPosts(first: $first, offset: $offset, orderBy: PRIMARY_KEY_ASC) {{ nodes {{ {id} slug title votes createdAt }} }} }}"
            ),
            (_, Query::ById) if self.is_svc() => {
                "query ($id: ID!) { Post(id: $id) { id slug title votes createdAt } }".into()
            }
            (_, Query::ById) => format!(
                "query ($id: Int!) {{ {}({id}: $id) {{ {id} slug title votes createdAt }} }}",
                self.by_id_field()
            ),
            (_, Query::Nested) if self.is_svc() => {
                "{ allUsers(first: 10, orderBy: id_ASC) { id name posts(first: 10, orderBy: id_ASC) { id title votes } } }".into()
            }
            (_, Query::Nested) => format!(
                "{{ allUsers(first: 10, orderBy: PRIMARY_KEY_ASC) {{ nodes {{ {id} name postsByAuthorId(first: 10, orderBy: PRIMARY_KEY_ASC) {{ nodes {{ {id} title votes }} }} }} }} }}"
            ),
            (_, Query::Filter | Query::FilterLarge) if self.is_svc() => format!(
                "{{ allPosts(filter: {filter_svc}, first: 50, orderBy: id_ASC) {{ id title votes }} _allPostsMeta(filter: {filter_svc}) {{ count }} }}"
            ),
            (_, Query::Filter | Query::FilterLarge) => format!(
                "{{ allPosts(filter: {filter_pg}, first: 50, orderBy: PRIMARY_KEY_ASC) {{ totalCount nodes {{ {id} title votes }} }} }}"
            ),
            (_, Query::Search | Query::SearchLarge) if self.is_svc() => format!(
                "{{ allPosts(filter: {search_svc}, first: 50, orderBy: id_ASC) {{ id title votes }} _allPostsMeta(filter: {search_svc}) {{ count }} }}"
            ),
            (_, Query::Search | Query::SearchLarge) => format!(
                "{{ allPosts(filter: {search_pg}, first: 50, orderBy: PRIMARY_KEY_ASC) {{ totalCount nodes {{ {id} title votes }} }} }}"
            ),
            (_, Query::Create) if self.is_svc() => {
                "mutation ($slug: String!, $title: String!, $body: String, $votes: Int!, $authorId: ID!) { createPost(slug: $slug, title: $title, body: $body, votes: $votes, authorId: $authorId) { id slug } }".into()
            }
            (_, Query::Create) => format!(
                "mutation ($slug: String!, $title: String!, $body: String, $votes: Int!, $authorId: Int!) {{ createPost(input: {{post: {{slug: $slug, title: $title, body: $body, votes: $votes, authorId: $authorId}}}}) {{ post {{ {id} slug }} }} }}"
            ),
        })
    }

    /// The field holding a row's key: PostGraphile 5 names the primary key `rowId` (its `id`
    /// is the global node id).
    fn id_field(self) -> &'static str {
        match self {
            Kind::PostGraphile5 => "rowId",
            _ => "id",
        }
    }

    fn by_id_field(self) -> &'static str {
        match self {
            Kind::PostGraphile5 => "postByRowId",
            _ => "postById",
        }
    }

    /// A page of ids of `model` (`Post` or `User`), `first` from `offset`, and where they are
    /// in the response.
    pub fn id_page(self, model: &str, offset: usize, first: usize) -> (String, String) {
        let id = self.id_field();
        if self.is_svc() {
            (
                format!(
                    "{{ all{model}s(first: {first}, skip: {offset}, orderBy: id_ASC) {{ id }} }}"
                ),
                format!("/all{model}s"),
            )
        } else {
            (
                format!(
                    "{{ all{model}s(first: {first}, offset: {offset}, orderBy: PRIMARY_KEY_ASC) {{ nodes {{ {id} }} }} }}"
                ),
                format!("/all{model}s/nodes"),
            )
        }
    }

    /// The id of one row of an id page.
    pub fn row_id(self, row: &Value) -> Option<Value> {
        row.get(self.id_field()).filter(|v| !v.is_null()).cloned()
    }

    /// Checks the `data` of a response to `query` sent with `variables`.
    pub fn check(
        self,
        query: Query,
        variables: &Value,
        data: &Json,
        expect: &Expect,
    ) -> Result<(), String> {
        if self.is_relay() {
            return relay_check(query, variables, data, expect);
        }
        let svc = self.is_svc();
        let id = self.id_field();
        fn list<'v, 'a>(v: &'v Json<'a>, ptr: &str) -> Result<&'v [Json<'a>], String> {
            v.pointer(ptr)
                .and_then(Json::as_array)
                .ok_or_else(|| format!("no list at {ptr}"))
        }
        let same = |got: Option<&Json>, want: Option<&Value>| {
            got.zip(want).is_some_and(|(g, w)| g.same_scalar(w))
        };
        let posts_ptr = if svc { "/allPosts" } else { "/allPosts/nodes" };
        match query {
            Query::List | Query::LeftOut => {
                let posts = list(data, posts_ptr)?;
                let want = expect.posts.min(100);
                if posts.len() != want {
                    return Err(format!("{} posts instead of {want}", posts.len()));
                }
                for p in posts {
                    for f in [id, "slug", "title", "votes", "createdAt"] {
                        if p.get(f).is_none_or(Json::is_null) {
                            return Err(format!("a post without `{f}`: {p}"));
                        }
                    }
                }
            }
            Query::ById => {
                let ptr = if svc {
                    "/Post".to_owned()
                } else {
                    format!("/{}", self.by_id_field())
                };
                let got = data.pointer(&ptr).and_then(|p| p.get(id));
                if !same(got, variables.get("id")) {
                    return Err(format!("asked for post {}, got {data}", variables["id"]));
                }
            }
            Query::Nested => {
                let (users, posts) = if svc {
                    ("/allUsers", "/posts")
                } else {
                    ("/allUsers/nodes", "/postsByAuthorId/nodes")
                };
                let users = list(data, users)?;
                if users.len() != expect.users.min(10) {
                    return Err(format!("{} users instead of 10", users.len()));
                }
                for u in users {
                    let n = list(u, posts)?.len();
                    if n != POSTS_PER_USER.min(10) {
                        return Err(format!("a user with {n} posts instead of 10"));
                    }
                }
            }
            Query::Filter | Query::Search | Query::FilterLarge | Query::SearchLarge => {
                let count_ptr = if svc {
                    "/_allPostsMeta/count"
                } else {
                    "/allPosts/totalCount"
                };
                let count = data.pointer(count_ptr).and_then(Json::as_u64);
                check_filtered(
                    query,
                    count,
                    list(data, posts_ptr)?.iter().collect(),
                    expect,
                )?;
            }
            Query::Create => {
                let ptr = if svc {
                    "/createPost"
                } else {
                    "/createPost/post"
                };
                let post = data.pointer(ptr);
                let slug = post.and_then(|p| p.get("slug"));
                if !same(slug, variables.get("slug"))
                    || post.and_then(|p| p.get(id)).is_none_or(Json::is_null)
                {
                    return Err(format!("the created post is not returned: {data}"));
                }
            }
        }
        Ok(())
    }
}

/// Query 4's answer: the count of the filter's posts, and a page of 50 of them, each inside the
/// filter.
fn check_filtered(
    query: Query,
    count: Option<u64>,
    posts: Vec<&Json>,
    expect: &Expect,
) -> Result<(), String> {
    let (expected, selects): (usize, fn(i64, &str) -> bool) = match query {
        Query::Search | Query::SearchLarge => (expect.searched, |_, title| {
            title.contains(SEARCH_TITLE_CONTAINS)
        }),
        _ => (expect.filtered, |votes, title| {
            votes > FILTER_VOTES_GT && title.contains(FILTER_TITLE_CONTAINS)
        }),
    };
    if count != Some(expected as u64) {
        return Err(format!(
            "count {count:?} instead of {expected} (different data or filter semantics)"
        ));
    }
    if posts.len() != expected.min(50) {
        return Err(format!(
            "{} posts instead of {}",
            posts.len(),
            expected.min(50)
        ));
    }
    for p in posts {
        let votes = p.get("votes").and_then(Json::as_i64).unwrap_or(i64::MIN);
        let title = p.get("title").and_then(Json::as_str).unwrap_or("");
        if !selects(votes, title) {
            return Err(format!("a post outside the filter: {p}"));
        }
    }
    Ok(())
}

/// [`Kind::check`] for the Relay API's answers: lists are connections (`edges { node }`).
fn relay_check(
    query: Query,
    variables: &Value,
    data: &Json,
    expect: &Expect,
) -> Result<(), String> {
    fn nodes<'v, 'a>(v: &'v Json<'a>, ptr: &str) -> Result<Vec<&'v Json<'a>>, String> {
        v.pointer(ptr)
            .and_then(Json::as_array)
            .ok_or_else(|| format!("no connection at {ptr}"))?
            .iter()
            .map(|e| {
                e.get("node")
                    .ok_or_else(|| format!("an edge without node: {e}"))
            })
            .collect()
    }
    match query {
        Query::List | Query::LeftOut => {
            let posts = nodes(data, "/viewer/allPosts/edges")?;
            let want = expect.posts.min(100);
            if posts.len() != want {
                return Err(format!("{} posts instead of {want}", posts.len()));
            }
            for p in posts {
                for f in ["id", "slug", "title", "votes", "createdAt"] {
                    if p.get(f).is_none_or(Json::is_null) {
                        return Err(format!("a post without `{f}`: {p}"));
                    }
                }
            }
        }
        Query::ById => {
            let got = data.pointer("/viewer/Post").and_then(|p| p.get("id"));
            let want = variables.get("id");
            if !got.zip(want).is_some_and(|(g, w)| g.same_scalar(w)) {
                return Err(format!("asked for post {}, got {data}", variables["id"]));
            }
        }
        Query::Nested => {
            let users = nodes(data, "/viewer/allUsers/edges")?;
            if users.len() != expect.users.min(10) {
                return Err(format!("{} users instead of 10", users.len()));
            }
            for u in users {
                let n = nodes(u, "/posts/edges")?.len();
                if n != POSTS_PER_USER.min(10) {
                    return Err(format!("a user with {n} posts instead of 10"));
                }
            }
        }
        Query::Filter | Query::Search | Query::FilterLarge | Query::SearchLarge => {
            let count = data
                .pointer("/viewer/allPosts/count")
                .and_then(Json::as_u64);
            check_filtered(query, count, nodes(data, "/viewer/allPosts/edges")?, expect)?;
        }
        Query::Create => {
            let post = data.pointer("/createPost/post");
            let slug = post.and_then(|p| p.get("slug"));
            let sent = variables.get("slug");
            if !slug.zip(sent).is_some_and(|(g, w)| g.same_scalar(w))
                || post.and_then(|p| p.get("id")).is_none_or(Json::is_null)
            {
                return Err(format!("the created post is not returned: {data}"));
            }
        }
    }
    Ok(())
}

/// What the loaded data set must give.
#[derive(Debug, Clone)]
pub struct Expect {
    pub users: usize,
    pub posts: usize,
    /// The number of posts query 4's filter selects.
    pub filtered: usize,
    /// The number of posts query 6's substring selects.
    pub searched: usize,
}

/// The variables of one request. `n` is unique per request of a run (for the create's
/// slug); `pick` draws an index below its argument.
pub fn variables(
    query: Query,
    ids: &Ids,
    n: u64,
    run: &str,
    mut pick: impl FnMut(usize) -> usize,
) -> Value {
    match query {
        Query::ById => json!({ "id": ids.posts[pick(ids.posts.len())] }),
        Query::LeftOut => json!({ "first": 100 }),
        Query::Create => json!({
            "slug": format!("bench-{run}-{n}"),
            "title": format!("benchmark post {n}"),
            "body": "written by the benchmark's create query.",
            "votes": pick(1000),
            "authorId": ids.users[pick(ids.users.len())],
        }),
        _ => json!({}),
    }
}

/// The ids a server gave the data set's rows.
#[derive(Debug, Default, Clone)]
pub struct Ids {
    pub posts: Vec<Value>,
    pub users: Vec<Value>,
}
