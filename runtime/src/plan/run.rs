//! Running a [`Plan`] for a request: its statements (through the storage layer's fastest path
//! for plans), and its rows written into the response.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::ops::Range;
use std::pin::Pin;

use async_graphql::{Name, Pos, Value, Variables};

use super::json::{write_count, write_json, write_str, write_value};
use super::{
    Args, ConnField, Connection, EdgeField, Item, Keyed, Object, PageInfoField, Plan, Root, Scan,
    ViewerItem,
};
use crate::auth::Principal;
use crate::model::{Cells, ModelMeta, RelFieldMeta, Val};
use crate::permissions::ReadTable;
use crate::query::Page;
use crate::query::args::{ListArgs, filter_of, value_of};
use crate::query::page::push_page;
use crate::query::relation::{
    by_parent, by_parent_count, count_statement, joined_page_statement, page_statement,
};
use crate::query::select::{count_sql, count_to_i32, push_find_row, push_select_columns};
use crate::storage::{Backend, Counter, Db, Keep, PlanReads, Row, Sql};

/// A plan run for one request: the plan, and what it needs from the request.
pub struct Execution<'a> {
    /// The compiled query.
    pub plan: &'a Plan,
    /// The service's database.
    pub db: &'a Db,
    /// The service's read permission rules.
    pub reads: &'a ReadTable,
    /// Who asks: the request's principal, for its read permissions.
    pub principal: &'a Principal,
    /// The request's variables, as sent.
    pub variables: &'a Variables,
    /// The statements of the run, added to the request's count when the run succeeds.
    pub counter: &'a Counter,
}

/// The rows of one selection level, and what its relation fields read for them.
struct Fetched {
    rows: Vec<Row>,
    /// Where each node's row is in `rows` when they are the rows of a joined statement (several
    /// rows per node, see [`Execution::read_joined`]); `None` when the node `i` is `rows[i]`.
    nodes: Option<Vec<usize>>,
    /// One entry per relation item of the object, in item order.
    rels: Vec<Rel>,
}

impl Fetched {
    fn new(rows: Vec<Row>, rels: Vec<Rel>) -> Fetched {
        Fetched {
            rows,
            nodes: None,
            rels,
        }
    }

    /// How many nodes the level holds.
    fn len(&self) -> usize {
        self.nodes.as_ref().map_or(self.rows.len(), Vec::len)
    }

    /// The row of the node `i`.
    fn node(&self, i: usize) -> &Row {
        match &self.nodes {
            Some(nodes) => &self.rows[nodes[i]],
            None => &self.rows[i],
        }
    }
}

enum Rel {
    /// Each parent's rows (a range of `inner.rows`).
    Rows {
        ranges: HashMap<String, Range<usize>>,
        inner: Fetched,
    },
    /// Related nodes read by the parents' own statement: each parent's are a range of the
    /// parents' rows, their columns from `offset` on (they have no relation fields).
    Joined {
        ranges: HashMap<String, Range<usize>>,
        offset: usize,
    },
    Counts(HashMap<String, i32>),
    /// Each parent's connection: its nodes (a range of `inner`'s) and page facts, and its
    /// count when the connection selects it.
    Connection {
        pages: HashMap<String, (Range<usize>, PageFacts)>,
        inner: Fetched,
        counts: Option<HashMap<String, i32>>,
    },
}

/// A page is read with its count in one scan when its filter selected at most this many times
/// the nodes the scan keeps, the last time ([`Execution::scanned`]). Each match costs the scan
/// a row handed out of SQLite (about as much as a row the page's walk reads), so up to this
/// ratio the scan costs at most a few page walks more than the count alone.
const SCAN_RATIO: u64 = 4;

/// The most nodes (a page and its `skip`) one such scan keeps.
const MAX_KEPT: usize = 2000;

/// `(hasNextPage, hasPreviousPage)`.
type PageFacts = (bool, bool);

type Fut<'a, T> = Pin<Box<dyn Future<Output = Option<T>> + Send + 'a>>;

impl Execution<'_> {
    /// Runs `plan`: the whole response body, or `None` when the executor must answer.
    pub async fn execute(&self) -> Option<Vec<u8>> {
        let plan = self.plan;
        if !plan.roots.iter().all(|r| self.may_read_root(&r.what)) {
            return None;
        }
        let mut out = Vec::with_capacity(1024);
        // The lists read so far whose page held every node of their filter: their model, their
        // `filter` argument and how many nodes that is. A count of the same filter after one
        // of them is that number, without reading the table again.
        let mut complete: Vec<(&'static ModelMeta, Option<Value>, usize)> = Vec::new();
        // The lists read so far whose filter a later root counts, and that did not learn the
        // count themselves: the count, once read, is theirs to learn.
        let mut counted: Vec<(&'static ModelMeta, Option<Value>, &Scan)> = Vec::new();
        out.extend_from_slice(b"{\"data\":{");
        for (i, root) in plan.roots.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(root.key.as_bytes());
            match &root.what {
                Root::Typename => write_str(&mut out, "Query"),
                Root::All { args, object, scan } => {
                    let args = self.resolve(args)?;
                    let filter = filter_arg(&args);
                    let later = &plan.roots[i + 1..];
                    let scan = self
                        .counts_later(later, object.meta, &filter)
                        .then_some(scan);
                    match self.write_list(&mut out, &args, object, scan).await? {
                        Some(total) => {
                            if let Some(scan) = scan {
                                scan.learn(total as u64);
                            }
                            complete.push((object.meta, filter, total));
                        }
                        None => {
                            if let Some(scan) = scan {
                                counted.push((object.meta, filter, scan));
                            }
                        }
                    }
                }
                Root::One { args, object } => self.write_one(&mut out, args, object).await?,
                Root::Viewer(items) => {
                    out.push(b'{');
                    for (n, item) in items.iter().enumerate() {
                        if n > 0 {
                            out.push(b',');
                        }
                        out.extend_from_slice(item.key.as_bytes());
                        match &item.what {
                            ViewerItem::Id => write_str(&mut out, VIEWER_ID),
                            ViewerItem::Typename => write_str(&mut out, "Viewer"),
                            ViewerItem::All { args, conn, scan } => {
                                self.write_root_connection(&mut out, args, conn, scan)
                                    .await?;
                            }
                            ViewerItem::One { args, object } => {
                                self.write_one(&mut out, args, object).await?;
                            }
                        }
                    }
                    out.push(b'}');
                }
                Root::Count { meta, args, fields } => {
                    let args = self.resolve(args)?;
                    // The list parsed and checked this very filter already.
                    let given = filter_arg(&args);
                    if let Some((.., total)) = complete
                        .iter()
                        .find(|(m, f, _)| std::ptr::eq(*m, *meta) && *f == given)
                    {
                        write_count(&mut out, fields, i32::try_from(*total).unwrap_or(i32::MAX));
                        continue;
                    }
                    let filter = ListArgs::from_values(meta, &args)?.count_filter().ok()?;
                    let sql = count_sql(self.backend(), meta, filter.as_ref());
                    let rows = self.read(sql).await?;
                    let count = match rows.first() {
                        Some(row) => row.int64(0).ok()??,
                        None => 0,
                    };
                    if let Some((.., scan)) = counted
                        .iter()
                        .find(|(m, f, _)| std::ptr::eq(*m, *meta) && *f == given)
                    {
                        scan.learn(u64::try_from(count).unwrap_or(0));
                    }
                    write_count(&mut out, fields, count_to_i32(count));
                }
            }
        }
        out.extend_from_slice(b"}}");
        Some(out)
    }

    /// Whether one of the roots `later` counts the nodes of `meta` that `filter` selects.
    fn counts_later(
        &self,
        later: &[Keyed<Root>],
        meta: &ModelMeta,
        filter: &Option<Value>,
    ) -> bool {
        later.iter().any(|root| match &root.what {
            Root::Count { meta: m, args, .. } => {
                std::ptr::eq(*m, meta)
                    && self
                        .resolve(args)
                        .is_some_and(|args| filter_arg(&args) == *filter)
            }
            _ => false,
        })
    }

    /// `all<Plural>(…)` with its arguments resolved: the page's nodes as a list. Gives the
    /// number of nodes the filter selects when the page holds all of them
    /// ([`Page::holds_all`]), or when it was read with them ([`Self::scanned`], tried when a
    /// later root counts them: `scan`).
    async fn write_list(
        &self,
        out: &mut Vec<u8>,
        args: &[(Name, Value)],
        object: &Object,
        scan: Option<&Scan>,
    ) -> Option<Option<usize>> {
        let page = ListArgs::from_values(object.meta, args)?
            .page(object.meta)
            .ok()?;
        if let Some(scan) = scan
            && let Some(scanned) = self.scanned(object, &page, scan)
        {
            let (rows, total) = scanned?;
            let fetched = self.fetch(object, rows).await?;
            self.write_items(out, object, &fetched)?;
            return Some(Some(usize::try_from(total).ok()?));
        }
        let nodes = |sql: &mut Sql| {
            push_select_columns(sql, object.meta, "t0", Some(&object.columns));
            push_page(sql, object.meta, "t0", &page);
        };
        let joined = if page.reads_backwards() {
            None
        } else {
            self.read_joined(object, &nodes).await
        };
        let fetched = match joined {
            Some(fetched) => fetched?,
            None => {
                let mut rows = self.rows(&nodes).await?;
                if page.reads_backwards() {
                    rows.reverse();
                }
                self.fetch(object, rows).await?
            }
        };
        self.write_items(out, object, &fetched)?;
        Some(page.holds_all(fetched.len()).then_some(fetched.len()))
    }

    /// Writes the nodes of `fetched` as a list.
    fn write_items(&self, out: &mut Vec<u8>, object: &Object, fetched: &Fetched) -> Option<()> {
        out.push(b'[');
        for j in 0..fetched.len() {
            if j > 0 {
                out.push(b',');
            }
            self.write_object(out, object, fetched, j)?;
        }
        out.push(b']');
        Some(())
    }

    /// The rows of `page` (after its `skip`) and how many nodes its filter selects, read
    /// together by one statement that scans the filter's matches once
    /// ([`PlanReads::count_and_keep`], where [`PlanReads::keeps_while_counting`]: SQLite),
    /// instead of a page that walks the id's index to its last node and a count that scans the
    /// table again. That is worth it when
    /// the filter selects few nodes for the page's size: the walk then reads a large part of
    /// the table to fill the page, while each match costs the scan little. So it runs when
    /// `scan` says the filter selected at most [`SCAN_RATIO`] times the nodes the scan keeps
    /// (`skip` and the page, at most [`MAX_KEPT`]) the last time, for a page with a filter,
    /// ordered by the id alone, from the first node (no cursor, no `last`). `None` when it does
    /// not run (the caller reads as it would without); `Some(None)` when the plan must give up.
    fn scanned(
        &self,
        object: &Object,
        page: &Page,
        scan: &Scan,
    ) -> Option<Option<(Vec<Row>, u64)>> {
        if !self.exec().keeps_while_counting()
            || page.filter.is_none()
            || !page.order.by_id_only()
            || page.after.is_some()
            || page.before.is_some()
            || page.reads_backwards()
        {
            return None;
        }
        let skip = usize::try_from(page.skip.unwrap_or(0)).ok()?;
        let kept = skip.checked_add(usize::try_from(page.limit()).ok()?)?;
        if kept > MAX_KEPT || scan.matched()? > SCAN_RATIO * kept as u64 {
            return None;
        }
        let meta = object.meta;
        // The rows are ordered by the id: the object's columns and the id after them when the
        // object does not select it.
        let mut columns = object.columns.clone();
        let key = match columns.iter().position(|&c| c == meta.id) {
            Some(at) => at,
            None => {
                columns.push(meta.id);
                columns.len() - 1
            }
        };
        let mut sql = self.db.sql();
        push_select_columns(&mut sql, meta, "t0", Some(&columns));
        sql.push(" WHERE ");
        page.push_conditions(&mut sql, meta, "t0");
        let keep = Keep {
            key,
            count: kept,
            descending: page.order.starts_descending(),
        };
        let (total, rows) = self.exec().count_and_keep(&sql, keep)?;
        scan.learn(total);
        let rows: Vec<Row> = rows.into_iter().skip(skip).collect();
        if self.counter.read_nodes(rows.len()).is_err() {
            return Some(None);
        }
        Some(Some((rows, total)))
    }

    /// `<Type>(<unique field>: …)`: the node, or `null`.
    async fn write_one(&self, out: &mut Vec<u8>, args: &Args, object: &Object) -> Option<()> {
        let args = self.resolve(args)?;
        let (field, val) = unique_arg(object.meta, &args)?;
        let find = |sql: &mut Sql| {
            push_find_row(sql, object.meta, field, &val, Some(&object.columns));
        };
        let fetched = match self.read_joined(object, &find).await {
            Some(fetched) => fetched?,
            None => {
                let rows = self.rows(&find).await?;
                self.fetch(object, rows).await?
            }
        };
        if fetched.len() == 0 {
            out.extend_from_slice(b"null");
            Some(())
        } else {
            self.write_object(out, object, &fetched, 0)
        }
    }

    /// The Relay API's `all<Plural>(…)`: the page's nodes as a connection, read with one node
    /// more on the side asked to learn the page facts (as the executor's connections are).
    async fn write_root_connection(
        &self,
        out: &mut Vec<u8>,
        args: &Args,
        conn: &Connection,
        scan: &Scan,
    ) -> Option<()> {
        let object = &conn.object;
        let meta = object.meta;
        let args = self.resolve(args)?;
        let page = ListArgs::from_values(meta, &args)?.page(meta).ok()?;
        let probe = page.probe();
        if conn.counts()
            && let Some(scanned) = self.scanned(object, &probe, scan)
        {
            let (mut rows, total) = scanned?;
            let facts = page.trim_probe(&mut rows);
            let count = count_to_i32(i64::try_from(total).unwrap_or(i64::MAX));
            let fetched = self.fetch(object, rows).await?;
            let range = 0..fetched.len();
            return self.write_connection(out, conn, &fetched, range, facts, Some(count));
        }
        let mut rows = self
            .rows(|sql: &mut Sql| {
                push_select_columns(sql, meta, "t0", Some(&object.columns));
                push_page(sql, meta, "t0", &probe);
            })
            .await?;
        if probe.reads_backwards() {
            rows.reverse();
        }
        let facts = page.trim_probe(&mut rows);
        let count = if conn.counts() {
            let sql = count_sql(self.backend(), meta, page.filter.as_ref());
            let rows = self.read(sql).await?;
            let count = match rows.first() {
                Some(row) => row.int64(0).ok()??,
                None => 0,
            };
            scan.learn(u64::try_from(count).unwrap_or(0));
            Some(count_to_i32(count))
        } else {
            None
        };
        let fetched = self.fetch(object, rows).await?;
        let range = 0..fetched.len();
        self.write_connection(out, conn, &fetched, range, facts, count)
    }

    /// Writes a connection whose nodes are `range` of `fetched`.
    fn write_connection(
        &self,
        out: &mut Vec<u8>,
        conn: &Connection,
        fetched: &Fetched,
        range: Range<usize>,
        (has_next, has_previous): PageFacts,
        count: Option<i32>,
    ) -> Option<()> {
        let id_at = conn.object.id_at();
        let cursor = |j: usize| fetched.node(j).text(id_at).ok().flatten();
        out.push(b'{');
        for (n, field) in conn.fields.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            out.extend_from_slice(field.key.as_bytes());
            match &field.what {
                ConnField::Typename(name) => write_str(out, name),
                ConnField::Count => write_json(out, &count?),
                ConnField::PageInfo(items) => {
                    out.push(b'{');
                    for (m, item) in items.iter().enumerate() {
                        if m > 0 {
                            out.push(b',');
                        }
                        out.extend_from_slice(item.key.as_bytes());
                        let end = match &item.what {
                            PageInfoField::Typename => {
                                write_str(out, "PageInfo");
                                continue;
                            }
                            PageInfoField::HasNextPage => {
                                write_json(out, &has_next);
                                continue;
                            }
                            PageInfoField::HasPreviousPage => {
                                write_json(out, &has_previous);
                                continue;
                            }
                            PageInfoField::StartCursor => range.clone().next(),
                            PageInfoField::EndCursor => range.clone().next_back(),
                        };
                        match end {
                            Some(j) => write_str(out, cursor(j)?),
                            None => out.extend_from_slice(b"null"),
                        }
                    }
                    out.push(b'}');
                }
                ConnField::Edges(items) => {
                    out.push(b'[');
                    for (k, j) in range.clone().enumerate() {
                        if k > 0 {
                            out.push(b',');
                        }
                        out.push(b'{');
                        for (m, item) in items.iter().enumerate() {
                            if m > 0 {
                                out.push(b',');
                            }
                            out.extend_from_slice(item.key.as_bytes());
                            match &item.what {
                                EdgeField::Typename(name) => write_str(out, name),
                                EdgeField::Cursor => write_str(out, cursor(j)?),
                                EdgeField::Node => {
                                    self.write_object(out, &conn.object, fetched, j)?
                                }
                            }
                        }
                        out.push(b'}');
                    }
                    out.push(b']');
                }
            }
        }
        out.push(b'}');
        Some(())
    }

    fn exec(&self) -> PlanReads<'_> {
        PlanReads {
            db: self.db,
            counter: self.counter,
            inline: &self.plan.inline,
        }
    }

    fn backend(&self) -> Backend {
        self.db.backend()
    }

    /// Whether every scalar field the root selects passes the read permissions without a
    /// permission query (the plan does not evaluate them; the executor does).
    fn may_read_root(&self, root: &Root) -> bool {
        match root {
            Root::All { object, .. } | Root::One { object, .. } => self.may_read(object),
            Root::Viewer(items) => items.iter().all(|item| match &item.what {
                ViewerItem::All { conn, .. } => self.may_read(&conn.object),
                ViewerItem::One { object, .. } => self.may_read(object),
                ViewerItem::Id | ViewerItem::Typename => true,
            }),
            Root::Typename | Root::Count { .. } => true,
        }
    }

    fn may_read(&self, object: &Object) -> bool {
        if self.principal.is_admin() {
            return true;
        }
        let Some(rules) = self.reads.of(object.meta, self.principal) else {
            return false;
        };
        object.items.iter().all(|item| match &item.what {
            Item::Scalar { field, .. } => rules.passes(object.meta.fields[*field].name),
            Item::Related { object, .. } => self.may_read(object),
            Item::Connection { conn, .. } => self.may_read(&conn.object),
            Item::Typename | Item::Count { .. } => true,
        })
    }

    /// The arguments with their variables resolved as the executor resolves them; `None` when
    /// a variable is missing.
    fn resolve(&self, args: &Args) -> Option<Vec<(Name, Value)>> {
        args.iter()
            .map(|(name, value)| {
                let value = value.clone().into_const_with(|var| {
                    let def = self.plan.vars.iter().find(|v| v.name == var).ok_or(())?;
                    let given = self.variables.get(&var);
                    if given.is_some_and(|given| !def.accepts(given)) {
                        return Err(());
                    }
                    given.or(def.default.as_ref()).cloned().ok_or(())
                });
                value.ok().map(|v| (name.clone(), v))
            })
            .collect()
    }

    /// The rows of the statement `statement` writes.
    async fn rows(&self, statement: impl FnOnce(&mut Sql)) -> Option<Vec<Row>> {
        let mut sql = self.db.sql();
        statement(&mut sql);
        self.read(sql).await
    }

    /// The rows of `sql`, counted against the request's node budget; `None` (the executor
    /// answers, and reports the budget) when the statement fails or the budget is spent.
    async fn read(&self, sql: Sql) -> Option<Vec<Row>> {
        let rows = self.exec().rows(sql).await.ok()?;
        self.counter.read_nodes(rows.len()).ok()?;
        Some(rows)
    }

    /// The nodes of `object`'s model that `nodes` selects and the related nodes of the
    /// object's one relation field, in one statement ([`joined_page_statement`]): on
    /// PostgreSQL, when the object selects one relation field and no `_<field>Meta`, the related
    /// nodes select no relation field, and the related page does not read backwards (`last`;
    /// `nodes` must keep the nodes' order, so a root page that reads backwards is not joined
    /// either). It saves a statement and its round trip per request, and PostgreSQL's work of
    /// a second statement (parsing the parents' ids, starting a second execution). `None` when
    /// it does not apply; `Some(None)` when the plan must give up.
    async fn read_joined(
        &self,
        object: &Object,
        nodes: impl FnOnce(&mut Sql),
    ) -> Option<Option<Fetched>> {
        if !self.backend().joins_laterally() {
            return None;
        }
        let mut relations = object.items.iter().filter(|i| i.what.is_relation());
        let (Some(item), None) = (relations.next(), relations.next()) else {
            return None;
        };
        let Item::Related {
            rel,
            args,
            object: inner,
        } = &item.what
        else {
            return None;
        };
        if inner.has_relations() {
            return None;
        }
        let field = &object.meta.relations[*rel];
        let Some(inner_page) = self.relation_page(field, args) else {
            return Some(None);
        };
        if inner_page.reads_backwards() {
            return None;
        }
        let sql = joined_page_statement(
            self.backend(),
            object.meta,
            nodes,
            field,
            &inner_page,
            &inner.columns,
        );
        Some(self.joined_rows(object, inner, sql).await)
    }

    /// Runs a [`Self::read_joined`] statement and finds its nodes and each node's related
    /// nodes.
    async fn joined_rows(&self, object: &Object, inner: &Object, sql: Sql) -> Option<Fetched> {
        let rows = self.read(sql).await?;
        let offset = object.columns.len();
        // The related node's parent: null in the row of a node without related nodes.
        let parent_at = offset + inner.columns.len();
        let id_at = object.id_at();
        let mut nodes = Vec::new();
        let mut ranges: HashMap<String, Range<usize>> = HashMap::new();
        let mut current: Option<String> = None;
        for (k, row) in rows.iter().enumerate() {
            let id = row.text(id_at).ok()??;
            if current.as_deref() != Some(id) {
                nodes.push(k);
                current = Some(id.to_owned());
            }
            if row.text(parent_at).ok()?.is_some() {
                ranges.entry(id.to_owned()).or_insert(k..k).end = k + 1;
            }
        }
        Some(Fetched {
            rows,
            nodes: Some(nodes),
            rels: vec![Rel::Joined { ranges, offset }],
        })
    }

    /// The page a relation field's arguments ask for: a to-one field's is its filter alone.
    fn relation_page(&self, field: &RelFieldMeta, args: &Args) -> Option<Page> {
        let args = self.resolve(args)?;
        if field.list {
            ListArgs::from_values(field.target, &args)?
                .page(field.target)
                .ok()
        } else {
            let filter = filter_of(field.target, &args)?;
            ListArgs::filtered(filter).page(field.target).ok()
        }
    }

    /// The page of `field`'s related rows of every parent in `parents` (absent when it has
    /// none), with the related nodes' `columns`, in one statement: the executor's statement
    /// without read-permission flags (a plan runs only where no field needs them).
    async fn page_rows(
        &self,
        field: &RelFieldMeta,
        page: &Page,
        parents: &[&str],
        columns: &[usize],
    ) -> Option<HashMap<String, Vec<Row>>> {
        let (sql, parent_col, _) =
            page_statement(self.backend(), field, page, parents, None, Some(columns)).ok()?;
        by_parent(self.read(sql).await?, parent_col, page).ok()
    }

    /// Reads what the relation fields of `object` need for `rows`, one statement per relation
    /// field and level.
    fn fetch<'a>(&'a self, object: &'a Object, rows: Vec<Row>) -> Fut<'a, Fetched> {
        Box::pin(async move {
            let mut rels = Vec::new();
            if !object.has_relations() {
                return Some(Fetched::new(rows, rels));
            }
            let id_at = object.id_at();
            // A node can appear under several parents of the level above (n:m): each id once.
            let ids = rows
                .iter()
                .map(|row| row.string(id_at).ok().flatten())
                .collect::<Option<Vec<_>>>()?;
            let mut seen = HashSet::with_capacity(ids.len());
            let parents: Vec<&str> = ids
                .iter()
                .map(String::as_str)
                .filter(|id| seen.insert(*id))
                .collect();
            for item in &object.items {
                match &item.what {
                    Item::Related {
                        rel,
                        args,
                        object: inner,
                    } => {
                        let field = &object.meta.relations[*rel];
                        let page = self.relation_page(field, args)?;
                        let mut found = if parents.is_empty() {
                            HashMap::new()
                        } else {
                            self.page_rows(field, &page, &parents, &inner.columns)
                                .await?
                        };
                        let mut all = Vec::new();
                        let mut ranges = HashMap::with_capacity(found.len());
                        for parent in &parents {
                            if let Some(rows) = found.remove(*parent) {
                                let start = all.len();
                                all.extend(rows);
                                ranges.insert((*parent).to_owned(), start..all.len());
                            }
                        }
                        let inner = self.fetch(inner, all).await?;
                        rels.push(Rel::Rows { ranges, inner });
                    }
                    Item::Count { rel, args, .. } => {
                        let field = &object.meta.relations[*rel];
                        let args = self.resolve(args)?;
                        let filter = ListArgs::from_values(field.target, &args)?
                            .count_filter()
                            .ok()?;
                        let counts = if parents.is_empty() {
                            HashMap::new()
                        } else {
                            let sql =
                                count_statement(self.backend(), field, filter.as_ref(), &parents);
                            by_parent_count(self.read(sql).await?).ok()?
                        };
                        rels.push(Rel::Counts(counts));
                    }
                    Item::Connection { rel, args, conn } => {
                        let field = &object.meta.relations[*rel];
                        let page = self.relation_page(field, args)?;
                        let mut found = if parents.is_empty() {
                            HashMap::new()
                        } else {
                            let columns = &conn.object.columns;
                            self.page_rows(field, &page.probe(), &parents, columns)
                                .await?
                        };
                        let mut all = Vec::new();
                        let mut pages = HashMap::with_capacity(found.len());
                        for parent in &parents {
                            if let Some(mut rows) = found.remove(*parent) {
                                let facts = page.trim_probe(&mut rows);
                                let start = all.len();
                                all.extend(rows);
                                pages.insert((*parent).to_owned(), (start..all.len(), facts));
                            }
                        }
                        let counts = if conn.counts() && !parents.is_empty() {
                            let filter = page.filter.as_ref();
                            let sql = count_statement(self.backend(), field, filter, &parents);
                            Some(by_parent_count(self.read(sql).await?).ok()?)
                        } else {
                            conn.counts().then(HashMap::new)
                        };
                        let inner = self.fetch(&conn.object, all).await?;
                        rels.push(Rel::Connection {
                            pages,
                            inner,
                            counts,
                        });
                    }
                    Item::Typename | Item::Scalar { .. } => {}
                }
            }
            Some(Fetched::new(rows, rels))
        })
    }

    /// Writes the node `i` of `fetched` as `object` selects it.
    fn write_object(
        &self,
        out: &mut Vec<u8>,
        object: &Object,
        fetched: &Fetched,
        i: usize,
    ) -> Option<()> {
        self.write_node(out, object, fetched.node(i), 0, fetched)
    }

    /// Writes the node whose columns are those of `row` from `offset` on, as `object` selects
    /// it; `fetched` holds the level's rows and what its relation fields read.
    fn write_node(
        &self,
        out: &mut Vec<u8>,
        object: &Object,
        row: &Row,
        offset: usize,
        fetched: &Fetched,
    ) -> Option<()> {
        let meta = object.meta;
        let mut id: Option<String> = None;
        let mut rels = fetched.rels.iter();
        let id_at = offset + object.id_at();
        out.push(b'{');
        for (n, item) in object.items.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            out.extend_from_slice(item.key.as_bytes());
            match &item.what {
                Item::Typename => write_str(out, meta.name),
                Item::Scalar { field, at } => {
                    write_value(out, row, offset + *at, &meta.fields[*field])?;
                }
                Item::Related {
                    rel,
                    object: inner_object,
                    ..
                } => {
                    // The related nodes' level, and the offset of their columns in its rows.
                    let (ranges, inner, inner_offset) = match rels.next()? {
                        Rel::Rows { ranges, inner } => (ranges, inner, None),
                        Rel::Joined { ranges, offset } => (ranges, fetched, Some(*offset)),
                        Rel::Counts(_) | Rel::Connection { .. } => return None,
                    };
                    let write = |out: &mut Vec<u8>, j: usize| match inner_offset {
                        None => self.write_object(out, inner_object, inner, j),
                        Some(at) => self.write_node(out, inner_object, &inner.rows[j], at, &NONE),
                    };
                    let id = node_id(&mut id, row, id_at)?;
                    let range = ranges.get(id).cloned().unwrap_or(0..0);
                    let field = &meta.relations[*rel];
                    if field.list {
                        out.push(b'[');
                        for (k, j) in range.enumerate() {
                            if k > 0 {
                                out.push(b',');
                            }
                            write(out, j)?;
                        }
                        out.push(b']');
                    } else if let Some(j) = range.clone().next() {
                        write(out, j)?;
                    } else if field.required {
                        // The executor reports the missing node.
                        return None;
                    } else {
                        out.extend_from_slice(b"null");
                    }
                }
                Item::Count { fields, .. } => {
                    let Some(Rel::Counts(counts)) = rels.next() else {
                        return None;
                    };
                    let id = node_id(&mut id, row, id_at)?;
                    write_count(out, fields, counts.get(id).copied().unwrap_or(0));
                }
                Item::Connection { conn, .. } => {
                    let Some(Rel::Connection {
                        pages,
                        inner,
                        counts,
                    }) = rels.next()
                    else {
                        return None;
                    };
                    let id = node_id(&mut id, row, id_at)?;
                    let (range, facts) = pages.get(id).cloned().unwrap_or((0..0, (false, false)));
                    let count = counts.as_ref().map(|c| c.get(id).copied().unwrap_or(0));
                    self.write_connection(out, conn, inner, range, facts, count)?;
                }
            }
        }
        out.push(b'}');
        Some(())
    }
}

/// The `filter` argument among resolved arguments (`None` without one, or when it is `null`:
/// both select every node).
fn filter_arg(args: &[(Name, Value)]) -> Option<Value> {
    args.iter()
        .find(|(name, _)| name.as_str() == "filter")
        .map(|(_, value)| value.clone())
        .filter(|value| *value != Value::Null)
}

/// `<Type>(…)`: the unique field and value of the first non-null unique argument, which names
/// the node, as `read::one` finds it. Every unique argument is read first, as the resolver
/// does, so one that does not parse makes the plan give up even when an earlier one names the
/// node.
fn unique_arg(meta: &ModelMeta, args: &[(Name, Value)]) -> Option<(usize, Val)> {
    let mut candidates = Vec::new();
    for (field, f) in meta.unique_fields() {
        let value = args
            .iter()
            .find(|(n, _)| n.as_str() == f.name)
            .map(|(_, v)| v.clone());
        candidates.push((field, value_of(value, f, Pos::default()).ok()?));
    }
    candidates
        .into_iter()
        .find_map(|(f, v)| v.filter(|v| !v.is_null()).map(|v| (f, v)))
}

/// The Relay API's `Viewer.id`.
const VIEWER_ID: &str = "viewer-fixed";

/// The level of nodes without relation fields read by their parents' statement: nothing more.
const NONE: Fetched = Fetched {
    rows: Vec::new(),
    nodes: None,
    rels: Vec::new(),
};

/// The id of the node in `row` (read once per node).
fn node_id<'a>(id: &'a mut Option<String>, row: &Row, at: usize) -> Option<&'a str> {
    if id.is_none() {
        *id = Some(row.string(at).ok()??);
    }
    id.as_deref()
}
