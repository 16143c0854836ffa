//! Queries: `all<Plural>`, `_all<Plural>Meta`, `<Type>(unique args)` and `node(id)`, each one
//! SQL statement (two for `node`), with the reference's ordering and pagination rules.

use async_graphql::{Context, ID, SimpleObject};

use std::sync::Arc;

use crate::auth::{Principal, principal};
use crate::error::{ApiError, ApiResult};
use crate::filter::{Cond, Filter, OUTER, OrderBy, render};
use crate::meta::{ModelMeta, PermissionQuery};
use crate::permissions::{self, eval};
use crate::record::Record;
use crate::related::RelLoaders;
use crate::state::{State, request_counter};
use crate::storage::{Backend, Cells, Exec, Row, Run, Sql, push_param, push_select_col};
use crate::value::{Val, is_valid_id};

/// The most nodes one list field returns, with or without `first`/`last`.
pub const MAX_NODES: i32 = 1000;

/// `_QueryMeta { count }`.
#[derive(Debug, Clone, Copy, SimpleObject)]
#[graphql(name = "_QueryMeta")]
pub struct QueryMeta {
    #[graphql(name = "count")]
    pub count: i32,
}

/// The arguments of a list field: the reference's seven plus `orderByList` (an extension).
#[derive(Debug)]
pub struct ListArgs<R> {
    pub filter: Option<Filter<R>>,
    pub order_by: Option<OrderBy<R>>,
    pub order_by_list: Option<Vec<OrderBy<R>>>,
    pub skip: Option<i32>,
    pub after: Option<String>,
    pub before: Option<String>,
    pub first: Option<i32>,
    pub last: Option<i32>,
}

impl<R: Record> ListArgs<R> {
    /// Checks the reference's rules (3014, 3026–3028, 2041, 3033) and resolves the order.
    pub(crate) fn page(self) -> ApiResult<Page> {
        let keys: Vec<(usize, bool)> = self
            .order_by
            .into_iter()
            .chain(self.order_by_list.into_iter().flatten())
            .map(|o| (o.field, o.descending))
            .collect();
        Page::new(
            R::META,
            self.filter.map(|f| f.cond),
            keys,
            [self.skip, self.first, self.last],
            self.after,
            self.before,
        )
    }

    /// Only the filter matters for counts (the reference ignores the other arguments).
    pub(crate) fn count_filter(self) -> ApiResult<Option<Cond>> {
        let filter = self.filter.map(|f| f.cond);
        if let Some(f) = &filter {
            f.check()?;
        }
        Ok(filter)
    }
}

/// A sort order: `(field index, descending)` keys, always ending with `id`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Order(Vec<(usize, bool)>);

impl Order {
    /// How many keys the order has (the id included).
    pub(crate) fn key_count(&self) -> usize {
        self.0.len()
    }

    /// Whether the order is by the id alone (the id is always the last key).
    fn by_id_only(&self) -> bool {
        self.0.len() == 1
    }

    /// Keys in the order given (a repeated field counts once), then `id` as the tie-break in the
    /// direction of the first key; without keys, `id` ascending.
    pub(crate) fn new(meta: &ModelMeta, given: impl IntoIterator<Item = (usize, bool)>) -> Order {
        let mut keys: Vec<(usize, bool)> = Vec::new();
        for (field, desc) in given {
            if keys.iter().any(|(f, _)| *f == field) {
                continue;
            }
            keys.push((field, desc));
            if field == meta.id {
                break;
            }
        }
        if !keys.iter().any(|(f, _)| *f == meta.id) {
            let desc = keys.first().is_some_and(|k| k.1);
            keys.push((meta.id, desc));
        }
        Order(keys)
    }

    /// The same keys in the opposite directions.
    pub(crate) fn inverted(&self) -> Order {
        Order(self.0.iter().map(|&(f, d)| (f, !d)).collect())
    }
}

/// A checked list request: what to select and which slice of it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Page {
    pub filter: Option<Cond>,
    pub order: Order,
    pub skip: Option<i32>,
    pub after: Option<String>,
    pub before: Option<String>,
    pub first: Option<i32>,
    pub last: Option<i32>,
}

impl Page {
    /// A checked page over `meta` (the reference's rules 3014, 3026–3028, 2041, 3033) from
    /// untyped arguments; `counts` is `[skip, first, last]`.
    pub(crate) fn new(
        meta: &ModelMeta,
        filter: Option<Cond>,
        order_keys: Vec<(usize, bool)>,
        [skip, first, last]: [Option<i32>; 3],
        after: Option<String>,
        before: Option<String>,
    ) -> ApiResult<Page> {
        if first.is_some() && last.is_some() {
            return Err(ApiError::InvalidConnectionArguments);
        }
        if first.is_some_and(|n| n < 0) {
            return Err(ApiError::InvalidFirstArgument);
        }
        if last.is_some_and(|n| n < 0) {
            return Err(ApiError::InvalidLastArgument);
        }
        if skip.is_some_and(|n| n < 0) {
            return Err(ApiError::InvalidSkipArgument);
        }
        if let Some(n) = first.or(last).filter(|&n| n > MAX_NODES) {
            return Err(ApiError::TooManyNodesRequested(n));
        }
        if let Some(f) = &filter {
            f.check()?;
        }
        Ok(Page {
            filter,
            order: Order::new(meta, order_keys),
            skip: skip.filter(|&s| s > 0),
            after,
            before,
            first,
            last,
        })
    }

    /// With `last`, rows are read from the other end and reversed afterwards.
    pub(crate) fn reads_backwards(&self) -> bool {
        self.last.is_some()
    }

    /// The order rows are read in.
    pub(crate) fn read_order(&self) -> Order {
        if self.reads_backwards() {
            self.order.inverted()
        } else {
            self.order.clone()
        }
    }

    /// How many rows to take after `skip`.
    pub(crate) fn limit(&self) -> i32 {
        self.first.or(self.last).unwrap_or(MAX_NODES)
    }

    /// Whether the page has a filter or a cursor (what [`Self::push_conditions`] writes).
    pub(crate) fn has_conditions(&self) -> bool {
        self.filter.is_some() || self.after.is_some() || self.before.is_some()
    }

    /// Whether a relation page can be taken from the join table alone, before reading its
    /// nodes: no condition, and ordered by the id, whose values are the join table's.
    pub(crate) fn pages_edges_alone(&self) -> bool {
        !self.has_conditions() && self.order.by_id_only()
    }

    /// Appends the filter and the cursor conditions over `alias` (to follow a ` WHERE `).
    pub(crate) fn push_conditions(&self, sql: &mut Sql, meta: &ModelMeta, alias: &str) {
        match &self.filter {
            Some(f) => render(f, meta, alias, sql),
            None => {
                sql.push("1=1");
            }
        }
        // `after` keeps what comes after the cursor in the requested order, `before` what comes
        // before; both compare the order keys of the cursor node.
        if let Some(after) = &self.after {
            push_cursor(sql, meta, alias, &self.order, after, true);
        }
        if let Some(before) = &self.before {
            push_cursor(sql, meta, alias, &self.order, before, false);
        }
    }
}

/// Appends `SELECT <all columns> FROM "<table>" AS <alias>`.
pub(crate) fn push_select(sql: &mut Sql, meta: &ModelMeta, alias: &str) {
    push_select_columns(sql, meta, alias, None);
}

/// Appends `SELECT <columns> FROM "<table>" AS <alias>`: the given columns (field indices) in
/// that order, or every column in field order for `None`.
pub(crate) fn push_select_columns(
    sql: &mut Sql,
    meta: &ModelMeta,
    alias: &str,
    columns: Option<&[usize]>,
) {
    sql.push("SELECT ");
    push_some_columns(sql, meta, alias, columns);
    sql.push(" FROM ")
        .ident(meta.table)
        .push(" AS ")
        .push(alias);
}

/// Appends every column of `meta` in select order.
pub(crate) fn push_columns(sql: &mut Sql, meta: &ModelMeta, alias: &str) {
    sql.join(meta.fields, ", ", |s, f| push_select_col(s, alias, f));
}

/// Appends the given columns (field indices) in that order, or every column in field order for
/// `None`.
pub(crate) fn push_some_columns(
    sql: &mut Sql,
    meta: &ModelMeta,
    alias: &str,
    columns: Option<&[usize]>,
) {
    match columns {
        Some(cols) => {
            sql.join(cols, ", ", |s, &f| {
                push_select_col(s, alias, &meta.fields[f])
            });
        }
        None => push_columns(sql, meta, alias),
    }
}

/// Decodes every row into records.
pub(crate) fn decode_all<R: Record>(rows: &[Row], backend: Backend) -> ApiResult<Vec<R>> {
    rows.iter()
        .map(|row| R::decode(row, backend).map_err(ApiError::from))
        .collect()
}

/// `all<Plural>(filter, orderBy, skip, after, before, first, last)`.
pub async fn all<R: Record>(ctx: &Context<'_>, args: ListArgs<R>) -> async_graphql::Result<Vec<R>> {
    Ok(list::<R>(ctx, args.page()?).await?)
}

/// `Some<Type>Exists(filter, orderBy, skip, after, before, first, last)` of the permission schema:
/// whether the page these arguments select holds at least one node.
pub async fn some_exists<R: Record>(
    ctx: &Context<'_>,
    args: ListArgs<R>,
) -> async_graphql::Result<bool> {
    let state = State::of(ctx);
    let page = args.page()?;
    let mut sql = state.db.sql();
    sql.push("SELECT CASE WHEN ");
    push_exists(&mut sql, R::META, "t0", &page);
    sql.push(" THEN 1 ELSE 0 END");
    let exec = Exec {
        conn: state.db.reader(),
        counter: request_counter(ctx),
    };
    let row = exec.one(sql).await?;
    let found: i32 = match row {
        Some(row) => row.int(0)?.unwrap_or(0),
        None => 0,
    };
    Ok(found != 0)
}

/// Appends `EXISTS (SELECT 1 FROM "<table>" AS <alias> WHERE … LIMIT … OFFSET …)`: whether the
/// page selects at least one node. The subquery may refer to outer aliases.
pub(crate) fn push_exists(sql: &mut Sql, meta: &ModelMeta, alias: &str, page: &Page) {
    sql.push("EXISTS (SELECT 1 FROM ")
        .ident(meta.table)
        .push(" AS ")
        .push(alias)
        .push(" WHERE ");
    page.push_conditions(sql, meta, alias);
    // Without skip or a limit, order does not change whether a row exists.
    if page.skip.is_some() || page.first.is_some() || page.last.is_some() {
        push_order(sql, meta, alias, &page.read_order());
        sql.push(" LIMIT ").push(&page.limit().to_string());
        if let Some(skip) = page.skip {
            sql.push(" OFFSET ").push(&skip.to_string());
        }
    }
    sql.push(")");
}

async fn list<R: Record>(ctx: &Context<'_>, page: Page) -> ApiResult<Vec<R>> {
    let state = State::of(ctx);
    let meta = R::META;
    let flagged = read_flags::<R>(ctx);
    let mut sql = state.db.sql();
    if let Some((queries, principal, _)) = &flagged {
        // The read permission queries of the page's nodes, in the same statement. The page is a
        // derived table, so the queries run for the returned nodes only, never for every row
        // the filter matches (the outer ORDER BY also keeps SQLite from flattening it).
        sql.push("SELECT ");
        push_columns(&mut sql, meta, OUTER);
        eval::push_flags(
            &mut sql,
            state.service,
            queries,
            meta,
            &permissions::read::binder(principal),
        )?;
        sql.push(" FROM (SELECT * FROM ")
            .ident(meta.table)
            .push(" AS t0");
    } else {
        push_select(&mut sql, meta, "t0");
    }
    push_page(&mut sql, meta, "t0", &page);
    if flagged.is_some() {
        sql.push(") AS ").push(OUTER);
        push_order(&mut sql, meta, OUTER, &page.read_order());
    }
    let exec = Exec {
        conn: state.db.reader(),
        counter: request_counter(ctx),
    };
    let rows = exec.all(sql).await?;
    let mut out = decode_all::<R>(&rows, state.db.backend())?;
    if let Some((queries, _, loaders)) = flagged {
        let flags = rows
            .iter()
            .zip(&out)
            .map(|(row, node)| {
                eval::flags_at(row, meta.fields.len(), queries.len())
                    .map(|flags| (node.id().to_owned(), flags))
            })
            .collect::<ApiResult<_>>()?;
        loaders.checks.remember(meta, flags);
    }
    if page.reads_backwards() {
        out.reverse();
    }
    Ok(out)
}

/// Appends ` WHERE <conditions> ORDER BY … LIMIT … [OFFSET …]`: the rows of `page` over `alias`.
pub(crate) fn push_page(sql: &mut Sql, meta: &ModelMeta, alias: &str, page: &Page) {
    sql.push(" WHERE ");
    page.push_conditions(sql, meta, alias);
    push_order(sql, meta, alias, &page.read_order());
    push_limit(sql, page);
}

/// Appends ` LIMIT … [OFFSET …]`: the rows of `page` after its skip.
pub(crate) fn push_limit(sql: &mut Sql, page: &Page) {
    sql.push(" LIMIT ").push(&page.limit().to_string());
    if let Some(skip) = page.skip.filter(|&skip| skip > 0) {
        sql.push(" OFFSET ").push(&skip.to_string());
    }
}

/// When the selection of a list of `R` reads a field only a permission query can grant: the
/// model's read queries, who asks, and where the flags go.
pub(crate) fn read_flags<'a, R: Record>(
    ctx: &Context<'a>,
) -> Option<(Vec<&'static PermissionQuery>, &'a Principal, &'a RelLoaders)> {
    let principal = principal(ctx);
    if principal.is_admin() {
        return None;
    }
    let rules = State::of(ctx).reads.of(R::META, principal)?;
    let loaders = ctx.data_opt::<Arc<RelLoaders>>()?;
    ctx.field()
        .selection_set()
        .any(|f| rules.needs_flags(f.name()))
        .then(|| (rules.queries().collect(), principal, &**loaders))
}

/// Appends ` ORDER BY …` with nulls first in ascending order (as the reference's MySQL does).
pub(crate) fn push_order(sql: &mut Sql, meta: &ModelMeta, alias: &str, order: &Order) {
    push_order_with_id(sql, meta, alias, order, (alias, meta.fields[meta.id].name));
}

/// [`push_order`] with the id read from the column `id` (`(alias, name)`), which holds the same
/// values: a relation page orders by the join table's column, so that the join table's
/// `(own, other)` index yields its rows in order and the page stops at its last row.
pub(crate) fn push_order_with_id(
    sql: &mut Sql,
    meta: &ModelMeta,
    alias: &str,
    order: &Order,
    id: (&str, &str),
) {
    push_order_by(sql, meta, order, |s, _, field| {
        push_key(s, meta, alias, id, field);
    });
}

/// Appends `, <key> AS "__k<i>"` for each key of `order`, as [`push_order_with_id`] reads them:
/// the columns a statement that sorts its rows again, outside the subquery that read them, sorts
/// by (with [`push_order_by`] and [`key_column`]).
pub(crate) fn push_order_keys(
    sql: &mut Sql,
    meta: &ModelMeta,
    alias: &str,
    order: &Order,
    id: (&str, &str),
) {
    for (i, &(field, _)) in order.0.iter().enumerate() {
        sql.push(", ");
        push_key(sql, meta, alias, id, field);
        sql.push(" AS ");
        key_column(sql, i);
    }
}

/// The name of the `i`th order key selected by [`push_order_keys`].
pub(crate) fn key_column(sql: &mut Sql, i: usize) {
    sql.push("\"__k").push(&i.to_string()).push("\"");
}

/// The column of an order key: `id` for the id, else the field's column of `alias`.
fn push_key(sql: &mut Sql, meta: &ModelMeta, alias: &str, id: (&str, &str), field: usize) {
    if field == meta.id {
        sql.col(id.0, id.1);
    } else {
        sql.col(alias, meta.fields[field].name);
    }
}

/// Appends ` ORDER BY …` over the order's keys, each written by `key(sql, i, field)`; nulls come
/// first in ascending order (as the reference's MySQL does).
pub(crate) fn push_order_by(
    sql: &mut Sql,
    meta: &ModelMeta,
    order: &Order,
    key: impl Fn(&mut Sql, usize, usize),
) {
    sql.push(" ORDER BY ");
    sql.join(
        order.0.iter().enumerate(),
        ", ",
        |s, (i, &(field, desc))| {
            key(s, i, field);
            s.push(match (desc, field == meta.id) {
                (false, true) => " ASC",
                (true, true) => " DESC",
                (false, false) => " ASC NULLS FIRST",
                (true, false) => " DESC NULLS LAST",
            });
        },
    );
}

/// Appends ` AND <row comes after (or before) the cursor node in `order`>`: the order keys are
/// compared lexicographically, nulls counting as the smallest values. An unknown cursor id
/// matches nothing.
fn push_cursor(
    sql: &mut Sql,
    meta: &ModelMeta,
    alias: &str,
    order: &Order,
    cursor: &str,
    after: bool,
) {
    sql.push(" AND EXISTS (SELECT 1 FROM ")
        .ident(meta.table)
        .push(" AS c WHERE ")
        .col("c", meta.fields[meta.id].name)
        .push(" = ")
        .bind(sea_orm::Value::String(Some(cursor.to_owned())))
        .push(" AND ");
    push_beyond(sql, meta, alias, &order.0, after);
    sql.push(")");
}

/// `key0 beyond OR (key0 same AND (key1 beyond OR …))`, ending with the id key.
fn push_beyond(sql: &mut Sql, meta: &ModelMeta, alias: &str, keys: &[(usize, bool)], after: bool) {
    let Some((&(field, desc), rest)) = keys.split_first() else {
        sql.push("1=0");
        return;
    };
    let f = meta.fields[field].name;
    let greater = after != desc;
    sql.push("(");
    if field == meta.id {
        sql.col(alias, f)
            .push(if greater { " > " } else { " < " })
            .col("c", f);
    } else {
        let (low, high) = if greater { ("c", alias) } else { (alias, "c") };
        // Strictly beyond on this key: a null sorts before every value.
        sql.push("(")
            .col(low, f)
            .push(" IS NULL AND ")
            .col(high, f)
            .push(" IS NOT NULL) OR ")
            .col(high, f)
            .push(" > ")
            .col(low, f);
        if !rest.is_empty() {
            sql.push(" OR (").col(alias, f);
            sql.push(match sql.backend() {
                Backend::Sqlite => " IS ",
                Backend::Postgres => " IS NOT DISTINCT FROM ",
            });
            sql.col("c", f).push(" AND ");
            push_beyond(sql, meta, alias, rest, after);
            sql.push(")");
        }
    }
    sql.push(")");
}

/// `_all<Plural>Meta(…) { count }`: counts the nodes matching `filter`; the other arguments are
/// accepted and ignored, as in the reference.
pub async fn count<R: Record>(
    ctx: &Context<'_>,
    args: ListArgs<R>,
) -> async_graphql::Result<QueryMeta> {
    let state = State::of(ctx);
    let filter = args.count_filter()?;
    let exec = Exec {
        conn: state.db.reader(),
        counter: request_counter(ctx),
    };
    Ok(QueryMeta {
        count: count_rows(&exec, R::META, filter.as_ref()).await?,
    })
}

/// How many nodes of `meta` match `filter` (one statement).
pub(crate) async fn count_rows<C: Run + ?Sized>(
    exec: &Exec<'_, C>,
    meta: &ModelMeta,
    filter: Option<&Cond>,
) -> ApiResult<i32> {
    let count: i64 = match exec.one(count_sql(exec.backend(), meta, filter)).await? {
        Some(row) => row.int64(0)?.unwrap_or(0),
        None => 0,
    };
    Ok(count_to_i32(count))
}

/// A row count as the API's `Int` reports it (capped at its largest value).
pub(crate) fn count_to_i32(count: i64) -> i32 {
    i32::try_from(count).unwrap_or(i32::MAX)
}

/// `SELECT COUNT(*)` of the rows of `meta`'s table that match `filter`.
pub(crate) fn count_sql(backend: Backend, meta: &ModelMeta, filter: Option<&Cond>) -> Sql {
    let mut sql = Sql::new(backend);
    sql.push("SELECT COUNT(*) FROM ")
        .ident(meta.table)
        .push(" AS t0 WHERE ");
    match filter {
        Some(f) => render(f, meta, "t0", &mut sql),
        None => {
            sql.push("1=1");
        }
    }
    sql
}

/// `<Type>(id, <unique field>…)`: the first supplied argument, in declaration order, is used.
/// `candidates` holds `(field index, value)` for every unique argument, `None` when absent.
pub async fn one<R: Record>(
    ctx: &Context<'_>,
    candidates: Vec<(usize, Option<Val>)>,
) -> async_graphql::Result<Option<R>> {
    let meta = R::META;
    let Some((field, val)) = candidates
        .iter()
        .find_map(|(f, v)| v.as_ref().filter(|v| !v.is_null()).map(|v| (*f, v)))
    else {
        let names = candidates
            .iter()
            .map(|(f, _)| meta.fields[*f].name)
            .collect();
        return Err(ApiError::NoArgumentsProvided(names).into());
    };
    let state = State::of(ctx);
    let exec = Exec {
        conn: state.db.reader(),
        counter: request_counter(ctx),
    };
    Ok(find_by::<R, _>(&exec, field, val).await?)
}

/// Reads the node whose `field` equals `val`.
pub(crate) async fn find_by<R: Record, C: Run + ?Sized>(
    exec: &Exec<'_, C>,
    field: usize,
    val: &Val,
) -> ApiResult<Option<R>> {
    match find_row(exec, R::META, field, val).await? {
        Some(row) => Ok(Some(R::decode(&row, exec.backend())?)),
        None => Ok(None),
    }
}

/// Reads the row of the node of `meta` whose `field` equals `val`.
pub(crate) async fn find_row<C: Run + ?Sized>(
    exec: &Exec<'_, C>,
    meta: &ModelMeta,
    field: usize,
    val: &Val,
) -> ApiResult<Option<Row>> {
    find_row_with(exec, meta, field, val, None).await
}

/// [`find_row`] with the given columns ([`push_select_columns`]).
pub(crate) async fn find_row_with<C: Run + ?Sized>(
    exec: &Exec<'_, C>,
    meta: &ModelMeta,
    field: usize,
    val: &Val,
    columns: Option<&[usize]>,
) -> ApiResult<Option<Row>> {
    let sql = find_row_sql(exec.backend(), meta, field, val, columns);
    Ok(exec.one(sql).await?)
}

/// The row whose unique `field` holds `val`, with `columns` (every column for `None`).
pub(crate) fn find_row_sql(
    backend: Backend,
    meta: &ModelMeta,
    field: usize,
    val: &Val,
    columns: Option<&[usize]>,
) -> Sql {
    let mut sql = Sql::new(backend);
    push_find_row(&mut sql, meta, field, val, columns);
    sql
}

/// Appends [`find_row_sql`]'s statement.
pub(crate) fn push_find_row(
    sql: &mut Sql,
    meta: &ModelMeta,
    field: usize,
    val: &Val,
    columns: Option<&[usize]>,
) {
    push_select_columns(sql, meta, "t0", columns);
    sql.push(" WHERE ")
        .col("t0", meta.fields[field].name)
        .push(" = ");
    push_param(sql, val, &meta.fields[field]);
    sql.push(" LIMIT 1");
}

/// Reads the node with the given id.
pub async fn by_id<R: Record>(ctx: &Context<'_>, id: &str) -> async_graphql::Result<Option<R>> {
    let state = State::of(ctx);
    let exec = Exec {
        conn: state.db.reader(),
        counter: request_counter(ctx),
    };
    let meta = R::META;
    Ok(find_by::<R, _>(&exec, meta.id, &Val::String(id.to_owned())).await?)
}

/// For `node(id)`: the index in `models` of the model that has a node with this id, in one
/// statement over all model tables.
pub async fn node_model(
    ctx: &Context<'_>,
    id: &ID,
    models: &[&'static ModelMeta],
) -> async_graphql::Result<Option<usize>> {
    if models.is_empty() || !is_valid_id(id) {
        return Ok(None);
    }
    let state = State::of(ctx);
    let mut sql = state.db.sql();
    sql.join(models.iter().enumerate(), " UNION ALL ", |s, (i, m)| {
        s.push("SELECT ")
            .push(&i.to_string())
            .push(" FROM ")
            .ident(m.table)
            .push(" WHERE ")
            .ident(m.fields[m.id].name)
            .push(" = ")
            .bind(sea_orm::Value::String(Some(id.to_string())));
    });
    sql.push(" LIMIT 1");
    let exec = Exec {
        conn: state.db.reader(),
        counter: request_counter(ctx),
    };
    let row = exec.one(sql).await.map_err(ApiError::from)?;
    Ok(match row {
        Some(row) => {
            let idx: Option<i64> = match state.db.backend() {
                Backend::Postgres => row.int(0)?.map(i64::from),
                Backend::Sqlite => row.int64(0)?,
            };
            idx.and_then(|idx| usize::try_from(idx).ok())
        }
        None => None,
    })
}
