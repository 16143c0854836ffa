//! Relation fields of object types: `author(filter)`, `posts(filter, orderBy, …)` and
//! `_postsMeta(…)`, resolved in batches so a nested selection costs one SQL statement per level
//! and argument set, however many parent nodes there are.
//!
//! Every request carries its own [`RelLoaders`] (nothing is cached between requests). A resolver
//! enqueues its `(query, parent id)` key and waits. The first key of a batch starts a task that
//! leads it: the task yields to the executor until a whole round adds no more keys (by then every
//! sibling resolver of the same selection, running on the same worker thread, has enqueued its
//! key), then runs one statement per distinct query and hands every waiter its rows. No timer is involved, so how fast the machine is does not change
//! how many statements a request costs. Pagination is applied in SQL, per parent.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use async_graphql::Context;
use sea_orm::DbErr;
use tokio::sync::oneshot;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::filter::{Cond, Filter, OUTER, render};
use crate::meta::{ModelMeta, PermissionQuery, RelFieldMeta};
use crate::permissions::eval;
use crate::permissions::read::{ReadChecks, binder};
use crate::read::{
    ListArgs, Page, QueryMeta, count_to_i32, key_column, push_limit, push_order_by,
    push_order_keys, push_order_with_id, push_some_columns, read_flags,
};
use crate::record::Record;
use crate::state::State;
use crate::storage::ddl::quote;
use crate::storage::{Backend, Cells, Counter, Exec, PlanExec, Row, Sql, id_array, push_id_any};

/// Rounds without new keys after which a batch is complete.
const QUIET_ROUNDS: u32 = 2;

/// What one relation read asks for.
#[derive(Debug)]
enum Spec {
    /// The related nodes, filtered, ordered and paginated.
    Page(Page),
    /// How many related nodes match the filter.
    Count(Option<Cond>),
}

/// A read through one relation field, identified by a canonical text so equal requests from
/// different parents land in one group.
#[derive(Debug)]
struct RelQuery {
    owner: &'static ModelMeta,
    field: usize,
    spec: Spec,
    /// Whether the read permission queries of the related nodes are read with them (the
    /// selection reads a field only a query can grant).
    flags: bool,
    canon: String,
}

impl RelQuery {
    fn new(owner: &'static ModelMeta, field: usize, spec: Spec, flags: bool) -> Arc<Self> {
        let canon = format!("{}.{}:{flags}:{spec:?}", owner.name, field);
        Arc::new(RelQuery {
            owner,
            field,
            spec,
            flags,
            canon,
        })
    }

    fn field(&self) -> &'static RelFieldMeta {
        &self.owner.relations[self.field]
    }
}

/// One parent's share of a batch.
#[derive(Debug, Clone)]
enum Loaded {
    Rows(Arc<Vec<Row>>),
    Count(i32),
}

type Reply = Result<Loaded, async_graphql::Error>;

struct Waiter {
    query: Arc<RelQuery>,
    parent: String,
    reply: oneshot::Sender<Reply>,
}

#[derive(Default)]
struct Pending {
    waiters: Vec<Waiter>,
    /// A resolver is leading the current batch.
    led: bool,
}

/// The per-request batch loaders: relation fields, and read-permission checks.
pub struct RelLoaders {
    state: Arc<State>,
    counter: Arc<Counter>,
    principal: Principal,
    pending: Mutex<Pending>,
    pub(crate) checks: ReadChecks,
}

/// A loader for one request.
pub fn loaders(state: Arc<State>, counter: Arc<Counter>, principal: Principal) -> Arc<RelLoaders> {
    Arc::new(RelLoaders {
        state,
        counter,
        principal,
        pending: Mutex::new(Pending::default()),
        checks: ReadChecks::default(),
    })
}

/// Yields to the executor until `len` (the number of keys a batch has collected) stays the same
/// for [`QUIET_ROUNDS`] rounds: by then every sibling resolver has enqueued its key.
pub(crate) async fn settle(len: impl Fn() -> usize) {
    let mut seen = len();
    let mut quiet = 0;
    while quiet < QUIET_ROUNDS {
        tokio::task::yield_now().await;
        let now = len();
        if now == seen {
            quiet += 1;
        } else {
            seen = now;
            quiet = 0;
        }
    }
}

impl RelLoaders {
    pub(crate) fn state(&self) -> &State {
        &self.state
    }

    pub(crate) fn counter(&self) -> &Counter {
        &self.counter
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Enqueues a read and waits for its share of the batch. The batch runs in a task of its
    /// own, so a resolver that is cancelled (a sibling's error nulls their common parent) never
    /// strands the others.
    async fn load(self: &Arc<Self>, query: Arc<RelQuery>, parent: String) -> Reply {
        let (reply, answer) = oneshot::channel();
        let lead = {
            let mut pending = self.lock();
            pending.waiters.push(Waiter {
                query,
                parent,
                reply,
            });
            !std::mem::replace(&mut pending.led, true)
        };
        if lead {
            let this = Arc::clone(self);
            tokio::spawn(async move { this.lead().await });
        }
        answer
            .await
            .unwrap_or_else(|_| Err(ApiError::Internal("relation batch dropped".into()).into()))
    }

    /// Waits until the siblings have enqueued their keys, then runs the batch.
    async fn lead(&self) {
        settle(|| self.lock().waiters.len()).await;
        let waiters = {
            let mut pending = self.lock();
            pending.led = false;
            std::mem::take(&mut pending.waiters)
        };
        // Each group's parents in the order they came, each once.
        let mut groups: BTreeMap<&str, (&Arc<RelQuery>, Vec<&str>)> = BTreeMap::new();
        let mut seen: HashSet<(&str, &str)> = HashSet::with_capacity(waiters.len());
        for w in &waiters {
            let (_, parents) = groups
                .entry(&w.query.canon)
                .or_insert_with(|| (&w.query, Vec::new()));
            if seen.insert((&w.query.canon, &w.parent)) {
                parents.push(&w.parent);
            }
        }
        let mut results: HashMap<String, Result<HashMap<String, Loaded>, async_graphql::Error>> =
            HashMap::new();
        for (canon, (query, parents)) in groups {
            let result = self.run(query, &parents).await.map_err(Into::into);
            results.insert(canon.to_owned(), result);
        }
        for w in waiters {
            let reply =
                match results.get(w.query.canon.as_str()) {
                    Some(Ok(found)) => Ok(found.get(&w.parent).cloned().unwrap_or_else(|| match w
                        .query
                        .spec
                    {
                        Spec::Page(_) => Loaded::Rows(Arc::new(Vec::new())),
                        Spec::Count(_) => Loaded::Count(0),
                    })),
                    Some(Err(e)) => Err(e.clone()),
                    None => Err(ApiError::Internal("relation batch lost a query".into()).into()),
                };
            // A waiter that went away (its request was cancelled) needs no answer.
            let _ = w.reply.send(reply);
        }
    }

    fn exec(&self) -> Exec<'_, crate::storage::Conn> {
        Exec {
            conn: self.state.db.reader(),
            counter: &self.counter,
        }
    }

    /// One statement for every parent of a query.
    async fn run(&self, query: &RelQuery, parents: &[&str]) -> ApiResult<HashMap<String, Loaded>> {
        Ok(match &query.spec {
            Spec::Page(page) => self
                .run_page(query.field(), page, parents, query.flags)
                .await?
                .into_iter()
                .map(|(parent, rows)| (parent, Loaded::Rows(Arc::new(rows))))
                .collect(),
            Spec::Count(filter) => self
                .run_count(query.field(), filter.as_ref(), parents)
                .await?
                .into_iter()
                .map(|(parent, count)| (parent, Loaded::Count(count)))
                .collect(),
        })
    }

    /// The page of related rows of every parent in `parents` (absent when it has none), in one
    /// statement, with every column of the target in field order.
    pub(crate) async fn run_page(
        &self,
        field: &RelFieldMeta,
        page: &Page,
        parents: &[&str],
        flags: bool,
    ) -> ApiResult<HashMap<String, Vec<Row>>> {
        let target = field.target;
        let queries: Vec<&PermissionQuery> = match self.state.reads.of(target, &self.principal) {
            Some(rules) if flags => rules.queries().collect(),
            _ => Vec::new(),
        };
        let (sql, parent_col, flags_col) =
            self.page_statement(field, page, parents, &queries, None)?;
        let rows = self.exec().all(sql).await?;
        if !queries.is_empty() {
            let flags = rows
                .iter()
                .map(|row| {
                    let id: String = crate::record::get(row, target.id, self.state.db.backend())?;
                    Ok((id, eval::flags_at(row, flags_col, queries.len())?))
                })
                .collect::<ApiResult<_>>()?;
            self.checks.remember(target, flags);
        }
        by_parent(rows, parent_col, page)
    }

    /// [`Self::run_page`] for a compiled plan (no permission flags), through `exec`: the rows
    /// hold the target's `columns` (field indices) in that order.
    pub(crate) async fn plan_page(
        &self,
        exec: &PlanExec<'_>,
        field: &RelFieldMeta,
        page: &Page,
        parents: &[&str],
        columns: &[usize],
    ) -> ApiResult<HashMap<String, Vec<Row>>> {
        let (sql, parent_col, _) = self.page_statement(field, page, parents, &[], Some(columns))?;
        by_parent(exec.rows(sql).await?, parent_col, page)
    }

    /// The statement of a relation page (with `columns`, or every column for `None`), the
    /// column of its rows' parent and the column of their first permission flag.
    fn page_statement(
        &self,
        field: &RelFieldMeta,
        page: &Page,
        parents: &[&str],
        queries: &[&PermissionQuery],
        columns: Option<&[usize]>,
    ) -> ApiResult<(Sql, usize, usize)> {
        let target = field.target;
        // PostgreSQL: SELECT q.* FROM <parents> AS p CROSS JOIN LATERAL (SELECT <cols>, j.own AS
        // __p, <order keys> AS __k0, … FROM … WHERE j.own = p.value ORDER BY … LIMIT limit OFFSET
        // skip) AS q
        //
        // SQLite (no LATERAL): SELECT s.* FROM (SELECT <cols>, p.value AS __p, <order keys> AS
        // __k0, … FROM json_each(<parents>) AS p JOIN <Target> AS t0 ON t0.id IN (SELECT
        // j.other FROM <join> AS j [JOIN <Target> AS t1 ON t1.id = j.other] WHERE j.own =
        // p.value AND … ORDER BY … LIMIT limit OFFSET skip)) AS s ORDER BY __k0, …
        //
        // Either way the page runs per parent and stops at skip + limit rows: over all parents
        // at once, PostgreSQL's planner estimates the parents' edges as a large share of the
        // target table and joins them to it by a full scan (10 parents of 10 000 posts: 2.3 ms
        // against 0.4 ms), and SQLite's alternative, a window numbering every related row of
        // every parent (`ROW_NUMBER() OVER (PARTITION BY j.own …)`), took twice as long as the
        // correlated page for 10 parents of 10 posts, and grows with all of a parent's partners
        // rather than its page. SQLite evaluates the correlated `IN` once per parent and looks
        // the page's nodes up by id. On SQLite the outer sort by the page's keys puts each
        // parent's rows in page order (rows are grouped by `__p` below, which keeps that order).
        // PostgreSQL needs no outer sort: a `LATERAL` subquery is run once per parent row (a
        // nested loop, the only join its outer reference allows) and each run yields its page in
        // the page's order, so each parent's rows arrive in page order already. Sorting the
        // pages' rows again cost about a seventh of the statement's time in PostgreSQL (100
        // rows of 10 parents).
        //
        // The id in the order is the join table's `other` column (the same values), so a page
        // ordered by id walks the `(own, other)` index in order and joins only the rows it
        // keeps, however many partners a parent has; on SQLite such a page without conditions
        // reads the join table alone.
        //
        // With `flags`, the read permission queries run for the rows of the pages only, over
        // the stored row joined back by id: SELECT s.*, CASE WHEN (…o…) … FROM (…) AS s
        // JOIN "<Target>" AS o ON o.id = s.id … ORDER BY __k0, … (on PostgreSQL too: that join
        // may reorder the rows).
        let mut sql = Sql::new(self.state.db.backend());
        let order = page.read_order();
        if sql.backend() == Backend::Postgres && queries.is_empty() {
            sql.push("SELECT q.* FROM ");
            push_lateral_pages(&mut sql, field, page, parents, columns, false);
            let parent_col = columns.map_or(field.target.fields.len(), <[usize]>::len);
            // No flags: their column would follow `__p`.
            return Ok((sql, parent_col, parent_col + 1));
        }
        sql.push("SELECT s.*");
        eval::push_flags(
            &mut sql,
            self.state.service,
            queries,
            target,
            &binder(&self.principal),
        )?;
        let id = target.fields[target.id].name;
        match sql.backend() {
            Backend::Postgres => {
                sql.push(" FROM (SELECT q.* FROM ");
                push_lateral_pages(&mut sql, field, page, parents, columns, true);
                sql.push(") AS s");
            }
            Backend::Sqlite => {
                sql.push(" FROM (SELECT ");
                push_some_columns(&mut sql, target, "t0", columns);
                sql.push(", p.\"value\" AS \"__p\"");
                push_order_keys(&mut sql, target, "t0", &order, ("t0", id));
                sql.push(" FROM ");
                push_parents(&mut sql, parents);
                sql.push(" JOIN ")
                    .ident(target.table)
                    .push(" AS t0 ON ")
                    .col("t0", id)
                    .push(" IN (SELECT ")
                    .col("j", field.other)
                    .push(" FROM ")
                    .ident(field.table)
                    .push(" AS j");
                // The target's row is needed for conditions and for order keys other than the id.
                let edges_only = page.pages_edges_alone();
                if !edges_only {
                    sql.push(" JOIN ")
                        .ident(target.table)
                        .push(" AS t1 ON ")
                        .col("t1", id)
                        .push(" = ")
                        .col("j", field.other);
                }
                sql.push(" WHERE ")
                    .col("j", field.own)
                    .push(" = p.\"value\"");
                if !edges_only {
                    sql.push(" AND ");
                    page.push_conditions(&mut sql, target, "t1");
                }
                push_order_with_id(&mut sql, target, "t1", &order, ("j", field.other));
                push_limit(&mut sql, page);
                sql.push(")) AS s");
            }
        }
        if !queries.is_empty() {
            sql.push(" JOIN ")
                .ident(target.table)
                .push(" AS ")
                .push(OUTER)
                .push(" ON ")
                .col(OUTER, id)
                .push(" = ")
                .col("s", id);
        }
        push_order_by(&mut sql, target, &order, |s, i, _| key_column(s, i));
        let parent_col = columns.map_or(target.fields.len(), <[usize]>::len);
        // The flags follow `__p` and the order keys.
        Ok((sql, parent_col, parent_col + 1 + order.key_count()))
    }

    /// How many related nodes match `filter`, for every parent in `parents` that has any.
    pub(crate) async fn run_count(
        &self,
        field: &RelFieldMeta,
        filter: Option<&Cond>,
        parents: &[&str],
    ) -> ApiResult<HashMap<String, i32>> {
        let sql = self.count_statement(field, filter, parents);
        by_parent_count(self.exec().all(sql).await?)
    }

    /// [`Self::run_count`] for a compiled plan, through `exec`.
    pub(crate) async fn plan_count(
        &self,
        exec: &PlanExec<'_>,
        field: &RelFieldMeta,
        filter: Option<&Cond>,
        parents: &[&str],
    ) -> ApiResult<HashMap<String, i32>> {
        let sql = self.count_statement(field, filter, parents);
        by_parent_count(exec.rows(sql).await?)
    }

    fn count_statement(
        &self,
        field: &RelFieldMeta,
        filter: Option<&Cond>,
        parents: &[&str],
    ) -> Sql {
        let mut sql = Sql::new(self.state.db.backend());
        let filter = |sql: &mut Sql| {
            if let Some(filter) = filter {
                sql.push(" AND ");
                render(filter, field.target, "t0", sql);
            }
        };
        if sql.backend() == Backend::Postgres {
            // A count per parent, for the reason given in `run_page`.
            sql.push("SELECT p.\"value\", (SELECT COUNT(*)");
            push_join_from(&mut sql, field);
            sql.push(" = p.\"value\"");
            filter(&mut sql);
            sql.push(") FROM ");
            push_parents(&mut sql, parents);
        } else {
            sql.push("SELECT ").col("j", field.own).push(", COUNT(*)");
            push_join(&mut sql, field, parents);
            filter(&mut sql);
            sql.push(" GROUP BY ").col("j", field.own);
        }
        sql
    }
}

/// Rows of relation pages by parent (`parent_col` holds it), each parent's in page order.
fn by_parent<R: Cells>(
    rows: Vec<R>,
    parent_col: usize,
    page: &Page,
) -> ApiResult<HashMap<String, Vec<R>>> {
    let mut by_parent: HashMap<String, Vec<R>> = HashMap::new();
    for row in rows {
        let parent = row
            .string(parent_col)?
            .ok_or_else(|| DbErr::Type("a relation row without its parent".into()))?;
        by_parent.entry(parent).or_default().push(row);
    }
    if page.reads_backwards() {
        for rows in by_parent.values_mut() {
            rows.reverse();
        }
    }
    Ok(by_parent)
}

/// Relation counts by parent, from rows of `(parent, count)`.
fn by_parent_count<R: Cells>(rows: Vec<R>) -> ApiResult<HashMap<String, i32>> {
    let mut out = HashMap::new();
    for row in rows {
        let (Some(parent), Some(count)) = (row.string(0)?, row.int64(1)?) else {
            return Err(DbErr::Type("a relation count without its parent".into()).into());
        };
        out.insert(parent, count_to_i32(count));
    }
    Ok(out)
}

/// Appends the parent ids as a row source `p` with one column `value`, bound as one JSON array.
fn push_parents(sql: &mut Sql, parents: &[&str]) {
    let ids = sea_orm::Value::String(Some(id_array(parents.iter().copied())));
    match sql.backend() {
        Backend::Postgres => {
            sql.push("json_array_elements_text(")
                .bind(ids)
                .push("::json) AS p(\"value\")");
        }
        Backend::Sqlite => {
            sql.push("json_each(").bind(ids).push(") AS p");
        }
    }
}

/// PostgreSQL: appends `<parents> AS p CROSS JOIN LATERAL (SELECT <cols>, j.own AS __p, <order
/// keys> AS __k0, … FROM … WHERE j.own = p.value AND … ORDER BY … LIMIT … OFFSET …) AS q`, each
/// parent's page in page order.
fn push_lateral_pages(
    sql: &mut Sql,
    field: &RelFieldMeta,
    page: &Page,
    parents: &[&str],
    columns: Option<&[usize]>,
    keys: bool,
) {
    push_parents(sql, parents);
    sql.push(" CROSS JOIN ");
    push_lateral_page(sql, field, page, columns, keys, "p.\"value\"");
}

/// PostgreSQL: appends `LATERAL (SELECT <cols>, j.own AS __p[, <order keys> AS __k0, …] FROM …
/// WHERE j.own = <parent> AND … ORDER BY … LIMIT … OFFSET …) AS q`, the page of the parent
/// whose id is the expression `parent`. When each related node has one partner, the page reads
/// the related table alone, by the partner its rows hold ([`partner_column`]) instead of `j.own`.
fn push_lateral_page(
    sql: &mut Sql,
    field: &RelFieldMeta,
    page: &Page,
    columns: Option<&[usize]>,
    keys: bool,
    parent: &str,
) {
    let target = field.target;
    let order = &page.read_order();
    sql.push("LATERAL (SELECT ");
    push_some_columns(sql, target, "t0", columns);
    if let Some(partner) = partner_column(field) {
        // Each related node has one partner: its row holds it (`storage::partner`), and the
        // `(partner, id)` index yields the page like a foreign key's, with no lookup per node.
        let id = ("t0", target.fields[target.id].name);
        sql.push(", ").col("t0", &partner).push(" AS \"__p\"");
        if keys {
            push_order_keys(sql, target, "t0", order, id);
        }
        sql.push(" FROM ")
            .ident(target.table)
            .push(" AS t0 WHERE ")
            .col("t0", &partner)
            .push(" = ")
            .push(parent)
            .push(" AND ");
        page.push_conditions(sql, target, "t0");
        push_order_with_id(sql, target, "t0", order, id);
        push_limit(sql, page);
        sql.push(") AS q");
        return;
    }
    sql.push(", ").col("j", field.own).push(" AS \"__p\"");
    if keys {
        push_order_keys(sql, target, "t0", order, ("j", field.other));
    }
    if page.pages_edges_alone() {
        // The page of edges first, then their nodes: `FROM (SELECT j.own, j.other FROM <join>
        // AS j WHERE j.own = <parent> ORDER BY j.other LIMIT …) AS j JOIN <Target> AS t0 ON
        // t0.id = j.other ORDER BY j.other`. The `(own, other)` index yields the page in order
        // and stops at its end, so only the page's nodes are looked up, however many partners
        // the parent has. Joined first, PostgreSQL looked up every partner's node and sorted
        // them before the limit whenever it estimated few partners per parent, which its
        // statistics do for any parent when most have few.
        sql.push(" FROM (SELECT ")
            .col("j", field.own)
            .push(", ")
            .col("j", field.other)
            .push(" FROM ")
            .ident(field.table)
            .push(" AS j WHERE ")
            .col("j", field.own)
            .push(" = ")
            .push(parent);
        push_order_with_id(sql, target, "t0", order, ("j", field.other));
        push_limit(sql, page);
        sql.push(") AS j JOIN ")
            .ident(target.table)
            .push(" AS t0 ON ")
            .col("t0", target.fields[target.id].name)
            .push(" = ")
            .col("j", field.other);
        push_order_with_id(sql, target, "t0", order, ("j", field.other));
    } else {
        push_join_from(sql, field);
        sql.push(" = ").push(parent).push(" AND ");
        page.push_conditions(sql, target, "t0");
        push_order_with_id(sql, target, "t0", order, ("j", field.other));
        push_limit(sql, page);
    }
    sql.push(") AS q");
}

/// PostgreSQL: the column of `field`'s related table that holds each related node's partner
/// through `field`, when each has at most one ([`crate::storage::partner`]).
fn partner_column(field: &RelFieldMeta) -> Option<String> {
    crate::storage::partner::held_through(field.back_field())
}

/// PostgreSQL: one statement for `owner`'s nodes that `nodes` selects (a statement reading
/// `owner`'s table as `t0`, its id among its columns, in the nodes' order) and, for each, its
/// page of `field`: `SELECT r.*, q.* FROM (<nodes>) AS r LEFT JOIN LATERAL (…page of r.id…) AS
/// q ON true`. Each row holds a node's columns, then a related node's `inner` columns and its
/// parent's id (null in the one row of a node without related nodes). A node's rows are
/// consecutive, in the nodes' order, and hold its related nodes in their page's order (the
/// nested loop a `LATERAL` reference requires keeps both orders, as for
/// [`push_lateral_pages`]). The related page may not read backwards.
pub(crate) fn joined_page_statement(
    backend: Backend,
    owner: &ModelMeta,
    nodes: impl FnOnce(&mut Sql),
    field: &RelFieldMeta,
    inner_page: &Page,
    inner: &[usize],
) -> Sql {
    debug_assert!(!inner_page.reads_backwards());
    let mut sql = Sql::new(backend);
    sql.push("SELECT r.*, q.* FROM (");
    nodes(&mut sql);
    sql.push(") AS r LEFT JOIN ");
    let parent = format!("r.{}", quote(owner.fields[owner.id].name));
    push_lateral_page(&mut sql, field, inner_page, Some(inner), false, &parent);
    sql.push(" ON true");
    sql
}

/// Appends `FROM "<join>" AS j JOIN "<Target>" AS t0 ON t0.id = j.<other> WHERE j.<own> IN (…)`.
fn push_join(sql: &mut Sql, field: &RelFieldMeta, parents: &[&str]) {
    push_join_from(sql, field);
    push_id_any(sql, parents.iter().copied());
}

/// Appends `FROM "<join>" AS j JOIN "<Target>" AS t0 ON t0.id = j.<other> WHERE j.<own>`.
fn push_join_from(sql: &mut Sql, field: &RelFieldMeta) {
    let target = field.target;
    sql.push(" FROM ")
        .ident(field.table)
        .push(" AS j JOIN ")
        .ident(target.table)
        .push(" AS t0 ON ")
        .col("t0", target.fields[target.id].name)
        .push(" = ")
        .col("j", field.other)
        .push(" WHERE ")
        .col("j", field.own);
}

/// Reads the related nodes of the node `parent` of `owner` through `field`.
async fn load_page<R: Record>(
    ctx: &Context<'_>,
    owner: &'static ModelMeta,
    parent: &str,
    field: usize,
    page: Page,
) -> async_graphql::Result<Vec<R>> {
    let flags = read_flags::<R>(ctx).is_some();
    let query = RelQuery::new(owner, field, Spec::Page(page), flags);
    let backend = State::of(ctx).db.backend();
    match loader(ctx)?.load(query, parent.to_owned()).await? {
        Loaded::Rows(rows) => Ok(rows
            .iter()
            .map(|row| R::decode(row, backend).map_err(ApiError::from))
            .collect::<ApiResult<Vec<R>>>()?),
        Loaded::Count(_) => Err(ApiError::Internal("a page read returned a count".into()).into()),
    }
}

fn loader<'a>(ctx: &Context<'a>) -> ApiResult<&'a Arc<RelLoaders>> {
    ctx.data_opt::<Arc<RelLoaders>>()
        .ok_or_else(|| ApiError::Internal("no relation loader in the request".into()))
}

/// A to-many relation field `posts(filter, orderBy, skip, after, before, first, last)` of the
/// node `parent` of `owner`.
pub async fn to_many<R: Record>(
    ctx: &Context<'_>,
    owner: &'static ModelMeta,
    parent: &str,
    field: usize,
    args: ListArgs<R>,
) -> async_graphql::Result<Option<Vec<R>>> {
    Ok(Some(
        load_page(ctx, owner, parent, field, args.page()?).await?,
    ))
}

/// A to-one relation field `author(filter)`: `null` when there is no related node or it does not
/// match the filter.
pub async fn to_one<R: Record>(
    ctx: &Context<'_>,
    owner: &'static ModelMeta,
    parent: &str,
    field: usize,
    filter: Option<Filter<R>>,
) -> async_graphql::Result<Option<R>> {
    let args = ListArgs {
        filter,
        order_by: None,
        order_by_list: None,
        skip: None,
        after: None,
        before: None,
        first: None,
        last: None,
    };
    let nodes = load_page::<R>(ctx, owner, parent, field, args.page()?).await?;
    Ok(nodes.into_iter().next())
}

/// A required to-one relation field (`author: User!`).
pub async fn to_one_required<R: Record>(
    ctx: &Context<'_>,
    owner: &'static ModelMeta,
    parent: &str,
    field: usize,
    filter: Option<Filter<R>>,
) -> async_graphql::Result<R> {
    to_one(ctx, owner, parent, field, filter)
        .await?
        .ok_or_else(|| {
            ApiError::Internal(format!(
                "the required field `{}` of `{}` {} has no node",
                owner.relations[field].name, owner.name, parent
            ))
            .into()
        })
}

/// `_<field>Meta(…) { count }` of a to-many relation field: counts the related nodes matching
/// `filter`; the other arguments are accepted and ignored, as in the reference.
pub async fn to_many_count<R: Record>(
    ctx: &Context<'_>,
    owner: &'static ModelMeta,
    parent: &str,
    field: usize,
    args: ListArgs<R>,
) -> async_graphql::Result<QueryMeta> {
    let query = RelQuery::new(owner, field, Spec::Count(args.count_filter()?), false);
    match loader(ctx)?.load(query, parent.to_owned()).await? {
        Loaded::Count(count) => Ok(QueryMeta { count }),
        Loaded::Rows(_) => Err(ApiError::Internal("a count returned rows".into()).into()),
    }
}
