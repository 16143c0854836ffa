//! Relation pages: the statements that read the related nodes of many parents at once, one per
//! relation field and argument set (a page per parent, or a count per parent), and how their
//! rows are grouped back by parent.
//!
//! Pagination is applied in SQL, per parent: a `LATERAL` page on PostgreSQL, a correlated
//! `IN (… LIMIT …)` page on SQLite. The parent ids travel as one JSON-array parameter, so a
//! batch of any size is one placeholder.

use std::collections::HashMap;

use sea_orm::DbErr;

use super::filter::{Cond, OUTER, render};
use super::order::{key_column, push_order_by, push_order_keys, push_order_with_id};
use super::page::{Page, push_limit};
use super::select::{count_to_i32, push_some_columns};
use crate::model::{ApiResult, Cells, ModelMeta, RelFieldMeta};
use crate::storage::layout::{held_through, quote};
use crate::storage::{Backend, Sql, id_array};

/// Appends the read-permission flags of a page's nodes to its select list (see
/// [`page_statement`]).
pub type Flags<'a> = &'a dyn Fn(&mut Sql) -> ApiResult<()>;

/// The statement of a relation page of every parent in `parents` (with `columns`, or every
/// column for `None`), the column of its rows' parent and the column of their first permission
/// flag. `flags` appends the read-permission flags of the page's nodes (over the outer row
/// [`OUTER`], the stored node joined back by id); `None` reads no flags.
pub fn page_statement(
    backend: Backend,
    field: &RelFieldMeta,
    page: &Page,
    parents: &[&str],
    flags: Option<Flags<'_>>,
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
    let mut sql = Sql::new(backend);
    let order = page.read_order();
    if backend == Backend::Postgres && flags.is_none() {
        sql.push("SELECT q.* FROM ");
        push_lateral_pages(&mut sql, field, page, parents, columns, false);
        let parent_col = columns.map_or(target.fields.len(), <[usize]>::len);
        // No flags: their column would follow `__p`.
        return Ok((sql, parent_col, parent_col + 1));
    }
    sql.push("SELECT s.*");
    if let Some(flags) = flags {
        flags(&mut sql)?;
    }
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
    if flags.is_some() {
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

/// How many related nodes match `filter` for every parent in `parents` that has any: rows of
/// `(parent, count)`.
pub fn count_statement(
    backend: Backend,
    field: &RelFieldMeta,
    filter: Option<&Cond>,
    parents: &[&str],
) -> Sql {
    let mut sql = Sql::new(backend);
    let filter = |sql: &mut Sql| {
        if let Some(filter) = filter {
            sql.push(" AND ");
            render(filter, field.target, "t0", sql);
        }
    };
    if sql.backend() == Backend::Postgres {
        // A count per parent, for the reason given in `page_statement`.
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

/// Rows of relation pages by parent (`parent_col` holds it), each parent's in page order.
pub fn by_parent<R: Cells>(
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
pub fn by_parent_count<R: Cells>(rows: Vec<R>) -> ApiResult<HashMap<String, i32>> {
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
        // Each related node has one partner: its row holds it (`migrate/partners.rs`), and the
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
/// through `field`, when each has at most one (`migrate/partners.rs` keeps it).
fn partner_column(field: &RelFieldMeta) -> Option<String> {
    held_through(field.back_field(), Backend::Postgres)
}

/// PostgreSQL: one statement for `owner`'s nodes that `nodes` selects (a statement reading
/// `owner`'s table as `t0`, its id among its columns, in the nodes' order) and, for each, its
/// page of `field`: `SELECT r.*, q.* FROM (<nodes>) AS r LEFT JOIN LATERAL (…page of r.id…) AS
/// q ON true`. Each row holds a node's columns, then a related node's `inner` columns and its
/// parent's id (null in the one row of a node without related nodes). A node's rows are
/// consecutive, in the nodes' order, and hold its related nodes in their page's order (the
/// nested loop a `LATERAL` reference requires keeps both orders, as for
/// `push_lateral_pages`). The related page may not read backwards.
pub fn joined_page_statement(
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
    sql.id_any(parents.iter().copied());
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
