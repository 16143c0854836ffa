//! Root reads: a page of a model's nodes, their count, one node by a unique field, the model of
//! an id, and whether a page holds any node. Each is one SQL statement, with the reference's
//! ordering and pagination rules (in [`crate::query`]).

use std::sync::Arc;

use super::Request;
use crate::model::{ApiError, ApiResult, Cells, ModelMeta, Record, Val, is_valid_id};
use crate::permissions::eval;
use crate::permissions::rules::binder;
use crate::query::order::push_order;
use crate::query::page::{push_exists, push_page};
use crate::query::select::{
    count_sql, count_to_i32, find_row_sql, node_model_of, node_model_sql, push_columns, push_select,
};
use crate::query::{Cond, OUTER, Page};
use crate::storage::{Counted, Row, Statements};

/// The nodes of `R` that `page` selects. With `flags` (the selection reads a field only a
/// permission query can grant), the read permission queries of the page's nodes are evaluated in
/// the same statement and remembered for the field guard.
pub async fn list<R: Record>(req: &Arc<Request>, page: Page, flags: bool) -> ApiResult<Vec<R>> {
    let state = req.state();
    let meta = R::META;
    let queries: Vec<_> = match state.reads.of(meta, req.principal()) {
        Some(rules) if flags => rules.queries().collect(),
        _ => Vec::new(),
    };
    let flagged = !queries.is_empty();
    let mut sql = req.db().sql();
    if flagged {
        // The read permission queries of the page's nodes, in the same statement. The page is a
        // derived table, so the queries run for the returned nodes only, never for every row
        // the filter matches (the outer ORDER BY also keeps SQLite from flattening it).
        sql.push("SELECT ");
        push_columns(&mut sql, meta, OUTER);
        eval::push_flags(
            &mut sql,
            state.service,
            &queries,
            meta,
            &binder(req.principal()),
        )?;
        sql.push(" FROM (SELECT * FROM ")
            .ident(meta.table)
            .push(" AS t0");
    } else {
        push_select(&mut sql, meta, "t0");
    }
    push_page(&mut sql, meta, "t0", &page);
    if flagged {
        sql.push(") AS ").push(OUTER);
        push_order(&mut sql, meta, OUTER, &page.read_order());
    }
    req.counter().within_budget()?;
    let rows = req.reads().all(sql).await?;
    req.counter().read_nodes(rows.len())?;
    let mut out = decode_all::<R>(&rows)?;
    if flagged {
        let flags = rows
            .iter()
            .zip(&out)
            .map(|(row, node)| {
                eval::flags_at(row, meta.fields.len(), queries.len())
                    .map(|flags| (node.id().to_owned(), flags))
            })
            .collect::<ApiResult<_>>()?;
        req.checks.remember(meta, flags);
    }
    if page.reads_backwards() {
        out.reverse();
    }
    Ok(out)
}

/// Decodes every row into records.
fn decode_all<R: Record>(rows: &[Row]) -> ApiResult<Vec<R>> {
    rows.iter()
        .map(|row| R::decode(row).map_err(ApiError::from))
        .collect()
}

/// How many nodes of `meta` match `filter` (one statement).
pub async fn count(req: &Request, meta: &ModelMeta, filter: Option<&Cond>) -> ApiResult<i32> {
    let sql = count_sql(req.db().backend(), meta, filter);
    let count: i64 = match req.reads().one(sql).await? {
        Some(row) => row.int64(0)?.unwrap_or(0),
        None => 0,
    };
    Ok(count_to_i32(count))
}

/// Whether the page `page` of `meta` holds at least one node.
pub async fn some_exists(req: &Request, meta: &ModelMeta, page: &Page) -> ApiResult<bool> {
    let found = each_exists(req, meta, std::slice::from_ref(page)).await?;
    Ok(found.first().copied().unwrap_or(false))
}

/// How many pages [`each_exists`] asks about in one statement.
const EXISTS_PER_STATEMENT: usize = 64;

/// Whether each of `pages` (of `meta`'s nodes) holds any node: one statement per 64 pages, each
/// page one `EXISTS` column of it.
pub async fn each_exists(req: &Request, meta: &ModelMeta, pages: &[Page]) -> ApiResult<Vec<bool>> {
    let mut found = Vec::with_capacity(pages.len());
    for chunk in pages.chunks(EXISTS_PER_STATEMENT) {
        let mut sql = req.db().sql();
        sql.push("SELECT ");
        for (i, page) in chunk.iter().enumerate() {
            if i > 0 {
                sql.push(", ");
            }
            sql.push("CASE WHEN ");
            push_exists(&mut sql, meta, "t0", page);
            sql.push(" THEN 1 ELSE 0 END");
        }
        let row = req.reads().one(sql).await?;
        for i in 0..chunk.len() {
            let yes = match &row {
                Some(row) => row.int(i)?.unwrap_or(0) != 0,
                None => false,
            };
            found.push(yes);
        }
    }
    Ok(found)
}

/// `<Type>(id, <unique field>…)`: the node named by the first non-null value among
/// `candidates` (`(field index, value)` for every unique argument, `None` when absent), in
/// declaration order; 3000 when there is none.
pub async fn one<R: Record>(
    req: &Request,
    candidates: &[(usize, Option<Val>)],
) -> ApiResult<Option<R>> {
    let meta = R::META;
    let Some((field, val)) = candidates
        .iter()
        .find_map(|(f, v)| v.as_ref().filter(|v| !v.is_null()).map(|v| (*f, v)))
    else {
        let names = candidates
            .iter()
            .map(|(f, _)| meta.fields[*f].name)
            .collect();
        return Err(ApiError::NoArgumentsProvided(names));
    };
    find_by::<R, _>(&req.reads(), field, val).await
}

/// Reads the node with the given id.
pub async fn by_id<R: Record>(req: &Request, id: &str) -> ApiResult<Option<R>> {
    find_by::<R, _>(&req.reads(), R::META.id, &Val::String(id.to_owned())).await
}

/// Reads the row of the node of `meta` whose `field` equals `val`, with no permission check:
/// for the system's own reads (the File API finds a file by its secret).
pub async fn row_by(
    req: &Request,
    meta: &ModelMeta,
    field: usize,
    val: &Val,
) -> ApiResult<Option<Row>> {
    find_row(&req.reads(), meta, field, val).await
}

/// Reads the node whose `field` equals `val`.
pub(crate) async fn find_by<R: Record, C: Statements + ?Sized>(
    exec: &Counted<'_, C>,
    field: usize,
    val: &Val,
) -> ApiResult<Option<R>> {
    match find_row(exec, R::META, field, val).await? {
        Some(row) => Ok(Some(R::decode(&row)?)),
        None => Ok(None),
    }
}

/// Reads the row of the node of `meta` whose `field` equals `val`.
pub(crate) async fn find_row<C: Statements + ?Sized>(
    exec: &Counted<'_, C>,
    meta: &ModelMeta,
    field: usize,
    val: &Val,
) -> ApiResult<Option<Row>> {
    let sql = find_row_sql(exec.backend(), meta, field, val, None);
    Ok(exec.one(sql).await?)
}

/// For `node(id)`: the index in `models` of the model that has a node with this id, in one
/// statement over all model tables.
pub async fn node_model(
    req: &Request,
    id: &str,
    models: &[&'static ModelMeta],
) -> ApiResult<Option<usize>> {
    if models.is_empty() || !is_valid_id(id) {
        return Ok(None);
    }
    let sql = node_model_sql(req.db().backend(), models, id);
    match req.reads().one(sql).await? {
        Some(row) => Ok(node_model_of(&row, req.db().backend())?),
        None => Ok(None),
    }
}
