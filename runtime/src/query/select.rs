//! Selects of a model's table: its columns, one node by a unique field, counts, and the node of
//! any model with a given id.

use super::filter::{Cond, render};
use sea_orm::DbErr;

use crate::model::{Cells, ModelMeta, Val};
use crate::storage::{Backend, Sql};

/// Appends `SELECT <all columns> FROM "<table>" AS <alias>`.
pub fn push_select(sql: &mut Sql, meta: &ModelMeta, alias: &str) {
    push_select_columns(sql, meta, alias, None);
}

/// Appends `SELECT <columns> FROM "<table>" AS <alias>`: the given columns (field indices) in
/// that order, or every column in field order for `None`.
pub fn push_select_columns(
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
pub fn push_columns(sql: &mut Sql, meta: &ModelMeta, alias: &str) {
    sql.join(meta.fields, ", ", |s, f| {
        s.select_col(alias, f);
    });
}

/// Appends the given columns (field indices) in that order, or every column in field order for
/// `None`.
pub fn push_some_columns(sql: &mut Sql, meta: &ModelMeta, alias: &str, columns: Option<&[usize]>) {
    match columns {
        Some(cols) => {
            sql.join(cols, ", ", |s, &f| {
                s.select_col(alias, &meta.fields[f]);
            });
        }
        None => push_columns(sql, meta, alias),
    }
}

/// A row count as the API's `Int` reports it (capped at its largest value).
pub fn count_to_i32(count: i64) -> i32 {
    i32::try_from(count).unwrap_or(i32::MAX)
}

/// `SELECT COUNT(*)` of the rows of `meta`'s table that match `filter`.
pub fn count_sql(backend: Backend, meta: &ModelMeta, filter: Option<&Cond>) -> Sql {
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

/// The row whose unique `field` holds `val`, with `columns` (every column for `None`).
pub fn find_row_sql(
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
pub fn push_find_row(
    sql: &mut Sql,
    meta: &ModelMeta,
    field: usize,
    val: &Val,
    columns: Option<&[usize]>,
) {
    push_select_columns(sql, meta, "t0", columns);
    let f = &meta.fields[field];
    sql.push(" WHERE ")
        .eq_col("t0", f)
        .push(" = ")
        .eq_param(val, f)
        .push(" LIMIT 1");
}

/// For `node(id)`: the index in `models` of the model that has a node with this id, in one
/// statement over all model tables (`SELECT <index> FROM … WHERE id = … UNION ALL …`).
pub fn node_model_sql(backend: Backend, models: &[&ModelMeta], id: &str) -> Sql {
    let mut sql = Sql::new(backend);
    sql.join(models.iter().enumerate(), " UNION ALL ", |s, (i, m)| {
        s.push("SELECT ")
            .push(&i.to_string())
            .push(" FROM ")
            .ident(m.table)
            .push(" WHERE ")
            .ident(m.fields[m.id].name)
            .push(" = ")
            .bind(sea_orm::Value::String(Some(id.to_owned())));
    });
    sql.push(" LIMIT 1");
    sql
}

/// The index of the model a [`node_model_sql`] row names (its literal is an `int4` on
/// PostgreSQL and an integer on SQLite).
pub fn node_model_of(row: &dyn Cells, backend: Backend) -> Result<Option<usize>, DbErr> {
    let idx: Option<i64> = match backend {
        Backend::Postgres => row.int(0)?.map(i64::from),
        Backend::Sqlite => row.int64(0)?,
    };
    Ok(idx.and_then(|idx| usize::try_from(idx).ok()))
}

/// Appends ` RETURNING <all columns>` in select order.
pub fn push_returning(sql: &mut Sql, meta: &ModelMeta) {
    sql.push(" RETURNING ");
    sql.join(meta.fields, ", ", |s, f| {
        s.select_field(f);
    });
}

/// The rows of the nodes of `meta` whose ids are `ids`, in id order, locked for the rest of the
/// transaction on PostgreSQL (on SQLite a write transaction holds the whole database): what they
/// hold before the write that follows.
pub fn locked_rows_sql<'a>(
    backend: Backend,
    meta: &ModelMeta,
    ids: impl IntoIterator<Item = &'a str>,
) -> Sql {
    let mut sql = Sql::new(backend);
    push_select(&mut sql, meta, "t0");
    sql.push(" WHERE ")
        .col("t0", meta.fields[meta.id].name)
        .id_in(ids)
        .push(" ORDER BY ")
        .col("t0", meta.fields[meta.id].name);
    if backend == Backend::Postgres {
        sql.push(" FOR UPDATE");
    }
    sql
}
