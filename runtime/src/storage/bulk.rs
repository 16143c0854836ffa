//! Bulk writes and the look-ups that go with them (an NDF import's), inside a write
//! transaction, in each database's fastest form.
//!
//! SQLite runs on the writer connection, where a statement of one row costs a microsecond or two:
//! each look-up and each write is such a statement, prepared once per batch and run once per row
//! (`sqlite_each`), which SQLite answers from its indexes without planning anything. PostgreSQL
//! gets one statement per batch instead, every batch bound as one JSON parameter: a look-up probes
//! the index once per value (`json_array_elements_text … WITH ORDINALITY`, the values' positions
//! coming back), a write reads its rows with `json_populate_recordset`/`json_to_recordset`, which
//! the planner joins to the table through its primary key.

use std::collections::{HashMap, HashSet};

use sea_orm::DbErr;

use super::layout::push_edge_insert;
use super::params::{LiteParam, lite_param};
use super::row::Row;
use super::sqlite::writer::Repeated;
use super::{Backend, Counted, Sql, Tx, sql_err, unique_violation};
use crate::model::{Cells as _, FieldMeta, Kind, ModelMeta, RelFieldMeta, Val, format_datetime};

/// A write transaction, counted in the request's statements.
pub type Writes<'a> = Counted<'a, Tx>;

/// Values per PostgreSQL statement.
const BATCH: usize = 10_000;

/// `::<type>` turning a text into a value of `field`'s column on PostgreSQL.
fn pg_cast(field: &FieldMeta) -> &'static str {
    match field.kind {
        Kind::String => "::citext",
        Kind::Int => "::integer",
        Kind::Float => "::double precision",
        Kind::Boolean => "::boolean",
        Kind::DateTime => "::timestamptz",
        Kind::Id | Kind::Enum | Kind::Json | Kind::Relation => "",
    }
}

/// A value as the text PostgreSQL casts back ([`pg_cast`]).
fn text_of(val: &Val) -> String {
    match val {
        Val::Null => String::new(),
        Val::String(s) | Val::Enum(s) => s.clone(),
        Val::Int(i) => i.to_string(),
        Val::Float(f) => f.to_string(),
        Val::Bool(b) => b.to_string(),
        Val::DateTime(d) => format_datetime(d),
        Val::Json(_) | Val::List(_) => val.to_json().to_string(),
    }
}

/// A JSON array of texts.
fn json_texts<'a>(texts: impl IntoIterator<Item = &'a str>) -> String {
    let texts: Vec<&str> = texts.into_iter().collect();
    serde_json::to_string(&texts).unwrap_or_else(|_| "[]".to_owned())
}

/// What each run of a statement repeated by [`sqlite_each`] gives: the rows it yields
/// (`Vec<Row>`), or how many rows it changed (`u64`, for a write without `RETURNING`, which
/// SQLite runs about twice as fast as the same write with it).
trait Ran: Sized {
    fn here(stmt: &mut Repeated<'_>, params: &[LiteParam<'_>]) -> Result<Self, DbErr>;
    fn sent(tx: &Writes<'_>, sql: Sql) -> impl Future<Output = Result<Self, DbErr>>;
}

impl Ran for Vec<Row> {
    fn here(stmt: &mut Repeated<'_>, params: &[LiteParam<'_>]) -> Result<Self, DbErr> {
        Ok(stmt.query(params)?.into_iter().map(Row::Lite).collect())
    }
    fn sent(tx: &Writes<'_>, sql: Sql) -> impl Future<Output = Result<Self, DbErr>> {
        tx.all(sql)
    }
}

impl Ran for u64 {
    fn here(stmt: &mut Repeated<'_>, params: &[LiteParam<'_>]) -> Result<Self, DbErr> {
        stmt.execute(params)
    }
    fn sent(tx: &Writes<'_>, sql: Sql) -> impl Future<Output = Result<Self, DbErr>> {
        tx.execute(sql)
    }
}

/// Runs the statement text of `sql` once per parameter list of `rows` on SQLite, each run
/// counted; `each(i, result)` gets what run `i` gave ([`Ran`]) or its error, which left the
/// transaction as it was. On the writer connection the statement is prepared once for all the
/// runs and each parameter bound as it is; a transaction through sqlx (begun while another
/// process held the database) sends it each time, its parameters made values.
async fn sqlite_each<'p, T: Ran>(
    tx: &Writes<'_>,
    sql: &Sql,
    rows: impl Iterator<Item = Vec<LiteParam<'p>>>,
    mut each: impl FnMut(usize, Result<T, DbErr>) -> Result<(), DbErr>,
) -> Result<(), DbErr> {
    if let Tx::Lite(lite) = tx.conn {
        return lite.repeat(sql.text(), |stmt| {
            for (i, params) in rows.enumerate() {
                tx.counter.add(1);
                each(i, T::here(stmt, &params))?;
            }
            Ok(())
        });
    }
    for (i, params) in rows.enumerate() {
        let values = params.into_iter().map(LiteParam::into_value).collect();
        let ran = T::sent(tx, sql.with_values(values)).await;
        each(i, ran)?;
    }
    Ok(())
}

/// The positions in `ids` of the ids that `meta`'s table holds. A table of at most an eighth as
/// many rows as `ids` (empty, or the users beside a million posts) is read whole, its ids into
/// a set, instead of being searched once per id; finding out costs a read of at most that many
/// rows. Ids compare exactly in both databases (`TEXT`, `COLLATE "C"`), as in the set.
pub async fn present_ids(
    tx: &Writes<'_>,
    meta: &ModelMeta,
    ids: &[&Val],
) -> Result<Vec<usize>, DbErr> {
    let small = ids.len() / 8;
    let mut sql = Sql::new(tx.backend());
    sql.push("SELECT ")
        .ident(meta.fields[meta.id].name)
        .push(" FROM ")
        .ident(meta.table)
        .push(" LIMIT ")
        .push(&(small + 1).to_string());
    let rows = tx.all(sql).await?;
    if rows.len() > small {
        return present(tx, meta, meta.id, ids).await;
    }
    let mut held = HashSet::with_capacity(rows.len());
    for row in &rows {
        if let Some(id) = row.string(0)? {
            held.insert(id);
        }
    }
    Ok(ids
        .iter()
        .enumerate()
        .filter(|(_, id)| matches!(id, Val::String(id) if held.contains(id)))
        .map(|(i, _)| i)
        .collect())
}

/// The positions in `values` of those that column `field` of `meta` holds.
pub async fn present(
    tx: &Writes<'_>,
    meta: &ModelMeta,
    field: usize,
    values: &[&Val],
) -> Result<Vec<usize>, DbErr> {
    let f = &meta.fields[field];
    let mut found = Vec::new();
    match tx.backend() {
        Backend::Sqlite => {
            let mut sql = Sql::new(Backend::Sqlite);
            sql.push("SELECT 1 FROM ")
                .ident(meta.table)
                .push(" WHERE ")
                .ident(f.name)
                .push(" = ? LIMIT 1");
            let params = values.iter().map(|v| vec![lite_param(v, f)]);
            sqlite_each(tx, &sql, params, |i, rows: Result<Vec<Row>, _>| {
                if !rows?.is_empty() {
                    found.push(i);
                }
                Ok(())
            })
            .await?;
        }
        Backend::Postgres => {
            for (chunk, values) in values.chunks(BATCH).enumerate() {
                let texts: Vec<String> = values.iter().map(|v| text_of(v)).collect();
                let mut sql = Sql::new(Backend::Postgres);
                sql.push("SELECT v.n FROM json_array_elements_text(")
                    .bind(json_texts(texts.iter().map(String::as_str)).into())
                    .push("::json) WITH ORDINALITY AS v(x, n) WHERE EXISTS (SELECT 1 FROM ")
                    .ident(meta.table)
                    .push(" t WHERE ")
                    .eq_col("t", f)
                    .push(" = ");
                // As the column's unique index reads it ([`Sql::eq_col`]).
                match sql.lowered(f) {
                    true => sql.push("lower(v.x)"),
                    false => sql.push("v.x").push(pg_cast(f)),
                };
                sql.push(")");
                for row in tx.all(sql).await? {
                    if let Some(n) = row.int64(0)? {
                        found.push(chunk * BATCH + usize::try_from(n - 1).unwrap_or_default());
                    }
                }
            }
        }
    }
    Ok(found)
}

/// The partners that `nodes` have in join column `column` of `table` (`other` holds them):
/// `(node, partner)`.
pub async fn partners(
    tx: &Writes<'_>,
    table: &str,
    column: &str,
    other: &str,
    nodes: &[&str],
) -> Result<Vec<(String, String)>, DbErr> {
    let mut out = Vec::new();
    match tx.backend() {
        Backend::Sqlite => {
            let mut sql = Sql::new(Backend::Sqlite);
            sql.push("SELECT ")
                .ident(other)
                .push(" FROM ")
                .ident(table)
                .push(" WHERE ")
                .ident(column)
                .push(" = ?");
            let params = nodes.iter().map(|node| vec![LiteParam::from(*node)]);
            sqlite_each(tx, &sql, params, |i, rows: Result<Vec<Row>, _>| {
                for row in rows? {
                    if let Some(partner) = row.string(0)? {
                        out.push((nodes[i].to_owned(), partner));
                    }
                }
                Ok(())
            })
            .await?;
        }
        Backend::Postgres => {
            for chunk in nodes.chunks(BATCH) {
                let mut sql = Sql::new(Backend::Postgres);
                sql.push("SELECT ")
                    .ident(column)
                    .push(", ")
                    .ident(other)
                    .push(" FROM ")
                    .ident(table)
                    .push(" WHERE ")
                    .ident(column)
                    .id_any(chunk.iter().copied());
                for row in tx.all(sql).await? {
                    if let (Some(node), Some(partner)) = (row.string(0)?, row.string(1)?) {
                        out.push((node, partner));
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Appends `val` to `out` as JSON, in the form `json_populate_recordset` reads into the column
/// it belongs to (Json and lists as the text of their JSON).
fn push_json(out: &mut String, val: &Val) {
    let string = |out: &mut String, s: &str| {
        out.push_str(&serde_json::to_string(s).unwrap_or_else(|_| "null".to_owned()));
    };
    match val {
        Val::Null => out.push_str("null"),
        Val::String(s) | Val::Enum(s) => string(out, s),
        Val::Int(i) => out.push_str(&i.to_string()),
        Val::Float(f) if f.is_finite() => out.push_str(&f.to_string()),
        Val::Float(_) => out.push_str("null"),
        Val::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Val::DateTime(d) => string(out, &format_datetime(d)),
        Val::Json(j) => string(out, &j.to_string()),
        Val::List(_) => string(out, &val.to_json().to_string()),
    }
}

/// Inserts `rows` (each a value per field of `meta`) into `meta`'s table, skipping those that
/// break a unique constraint (the id's or a unique field's): their positions.
pub async fn insert_nodes(
    tx: &Writes<'_>,
    meta: &ModelMeta,
    rows: &[&[Val]],
) -> Result<Vec<usize>, DbErr> {
    let mut columns = Sql::new(tx.backend());
    columns.join(meta.fields, ", ", |s, f| {
        s.ident(f.name);
    });
    let columns = columns.text().to_owned();
    let mut skipped = Vec::new();
    match tx.backend() {
        Backend::Sqlite => {
            let mut sql = Sql::new(Backend::Sqlite);
            sql.push("INSERT INTO ")
                .ident(meta.table)
                .push(" (")
                .push(&columns)
                .push(") VALUES (");
            sql.join(meta.fields, ", ", |s, _| {
                s.push("?");
            });
            sql.push(")");
            let params = rows.iter().map(|row| {
                meta.fields
                    .iter()
                    .zip(row.iter())
                    .map(|(f, v)| lite_param(v, f))
                    .collect()
            });
            sqlite_each(tx, &sql, params, |i, result: Result<u64, _>| match result {
                Ok(_) => Ok(()),
                Err(e) if unique_violation(&e, meta.table).is_some() => {
                    skipped.push(i);
                    Ok(())
                }
                Err(e) => Err(e),
            })
            .await?;
        }
        Backend::Postgres => {
            let id = meta.fields[meta.id].name;
            for (chunk, batch) in rows.chunks(BATCH).enumerate() {
                let mut json = String::with_capacity(batch.len() * 256);
                json.push('[');
                for (i, row) in batch.iter().enumerate() {
                    if i > 0 {
                        json.push(',');
                    }
                    json.push('{');
                    for (j, (f, v)) in meta.fields.iter().zip(row.iter()).enumerate() {
                        if j > 0 {
                            json.push(',');
                        }
                        json.push_str(&serde_json::to_string(f.name).unwrap_or_default());
                        json.push(':');
                        push_json(&mut json, v);
                    }
                    json.push('}');
                }
                json.push(']');
                let mut sql = Sql::new(Backend::Postgres);
                sql.push("INSERT INTO ")
                    .ident(meta.table)
                    .push(" (")
                    .push(&columns)
                    .push(") SELECT ")
                    .push(&columns)
                    .push(" FROM json_populate_recordset(NULL::")
                    .ident(meta.table)
                    .push(", ")
                    .bind(json.into())
                    .push("::json) ON CONFLICT DO NOTHING RETURNING ")
                    .ident(id);
                let inserted: HashSet<String> = tx
                    .all(sql)
                    .await?
                    .iter()
                    .filter_map(|row| row.string(0).ok().flatten())
                    .collect();
                if inserted.len() < batch.len() {
                    for (i, row) in batch.iter().enumerate() {
                        let Val::String(node) = &row[meta.id] else {
                            continue;
                        };
                        if !inserted.contains(node) {
                            skipped.push(chunk * BATCH + i);
                        }
                    }
                }
            }
        }
    }
    Ok(skipped)
}

/// What appending to lists found: the positions of the nodes that do not exist, and of the
/// lists that became too long.
#[derive(Default)]
pub struct Appended {
    /// The indexes in `lists` of the nodes that do not exist; nothing was appended for them.
    pub missing: Vec<usize>,
    /// The indexes in `lists` of the lists longer than `max_chars` characters with the items
    /// appended.
    pub too_long: Vec<usize>,
}

/// Appends to list field `field` of each node of `lists` the items given as the text of a
/// JSON array (not empty), in one statement per node (SQLite) or batch (PostgreSQL), without
/// reading the lists first: `[…]` + `[…]` is joined as text.
pub async fn append_lists(
    tx: &Writes<'_>,
    meta: &ModelMeta,
    field: usize,
    lists: &[(&str, String)],
    max_chars: usize,
) -> Result<Appended, DbErr> {
    let id = meta.fields[meta.id].name;
    let list = meta.fields[field].name;
    let mut out = Appended::default();
    // `UPDATE t SET f = CASE WHEN f IS NULL OR f = '[]' THEN new ELSE f without its `]` || ','
    // || new without its `[` END`.
    let update = |backend: Backend, new: &str| {
        let mut sql = Sql::new(backend);
        sql.push("UPDATE ")
            .ident(meta.table)
            .push(" SET ")
            .ident(list)
            .push(" = CASE WHEN ")
            .ident(list)
            .push(" IS NULL OR ")
            .ident(list)
            .push(" = '[]' THEN ")
            .push(new)
            .push(" ELSE substr(")
            .ident(list)
            .push(", 1, length(")
            .ident(list)
            .push(") - 1) || ',' || substr(")
            .push(new)
            .push(", 2) END");
        sql
    };
    match tx.backend() {
        Backend::Sqlite => {
            // `?1` the items, `?2` the node. The length is checked before the write (the row
            // is left alone when too long), so the statement needs no `RETURNING`, which would
            // halve SQLite's rate; the rows it did not change are told apart afterwards.
            let mut sql = update(Backend::Sqlite, "?1");
            sql.push(" WHERE ")
                .ident(id)
                .push(" = ?2 AND CASE WHEN ")
                .ident(list)
                .push(" IS NULL OR ")
                .ident(list)
                .push(" = '[]' THEN length(?1) ELSE length(")
                .ident(list)
                .push(") + length(?1) - 1 END <= ")
                .push(&max_chars.to_string());
            let params = lists
                .iter()
                .map(|(node, items)| vec![LiteParam::from(items.as_str()), LiteParam::from(*node)]);
            let mut unchanged = Vec::new();
            sqlite_each(tx, &sql, params, |i, changed: Result<u64, _>| {
                if changed? == 0 {
                    unchanged.push(i);
                }
                Ok(())
            })
            .await?;
            if !unchanged.is_empty() {
                let ids: Vec<Val> = unchanged
                    .iter()
                    .map(|&i| Val::String(lists[i].0.to_owned()))
                    .collect();
                let ids: Vec<&Val> = ids.iter().collect();
                let found: HashSet<usize> = present(tx, meta, meta.id, &ids)
                    .await?
                    .into_iter()
                    .collect();
                for (j, i) in unchanged.into_iter().enumerate() {
                    match found.contains(&j) {
                        true => out.too_long.push(i),
                        false => out.missing.push(i),
                    }
                }
            }
        }
        Backend::Postgres => {
            for (chunk, batch) in lists.chunks(BATCH).enumerate() {
                let rows: Vec<serde_json::Value> = batch
                    .iter()
                    .map(|(node, items)| serde_json::json!({ "i": node, "v": items }))
                    .collect();
                let mut sql = update(Backend::Postgres, "v.v");
                sql.push(" FROM json_to_recordset(")
                    .bind(serde_json::Value::Array(rows).to_string().into())
                    .push("::json) AS v(i text, v text) WHERE ")
                    .ident(meta.table)
                    .push(".")
                    .ident(id)
                    .push(" = v.i RETURNING v.i, length(")
                    .ident(meta.table)
                    .push(".")
                    .ident(list)
                    .push(")::int8");
                let mut lengths: HashMap<String, i64> = HashMap::with_capacity(batch.len());
                for row in tx.all(sql).await? {
                    if let Some(node) = row.string(0)? {
                        lengths.insert(node, row.int64(1)?.unwrap_or_default());
                    }
                }
                for (i, (node, _)) in batch.iter().enumerate() {
                    match lengths.get(*node) {
                        None => out.missing.push(chunk * BATCH + i),
                        Some(&chars)
                            if usize::try_from(chars).unwrap_or(usize::MAX) > max_chars =>
                        {
                            out.too_long.push(chunk * BATCH + i);
                        }
                        Some(_) => {}
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Inserts the edges `pairs` (this node, the other) through `field`; the
/// positions of those not inserted: an edge that exists already, one that would give a to-one
/// side a second partner, or one whose nodes do not both exist (the caller tells them apart).
pub async fn insert_edges(
    tx: &Writes<'_>,
    field: &RelFieldMeta,
    pairs: &[(&str, &str)],
) -> Result<Vec<usize>, DbErr> {
    let mut skipped = Vec::new();
    match tx.backend() {
        Backend::Sqlite => {
            let mut sql = Sql::new(Backend::Sqlite);
            push_edge_insert(&mut sql, field);
            sql.push(" VALUES (?, ?) ON CONFLICT DO NOTHING");
            let params = pairs
                .iter()
                .map(|(this, other)| vec![LiteParam::from(*this), LiteParam::from(*other)]);
            sqlite_each(tx, &sql, params, |i, result| match result {
                // Not inserted: it exists already, or a to-one side has a partner.
                Ok(0) => {
                    skipped.push(i);
                    Ok(())
                }
                Ok(_) => Ok(()),
                // A node that does not exist; the statement alone failed.
                Err(e)
                    if matches!(
                        sql_err(&e),
                        Some(sea_orm::SqlErr::ForeignKeyConstraintViolation(_))
                    ) =>
                {
                    skipped.push(i);
                    Ok(())
                }
                Err(e) => Err(e),
            })
            .await?;
        }
        Backend::Postgres => {
            let own_model = field.target.relations[field.back].target;
            for (chunk, batch) in pairs.chunks(BATCH).enumerate() {
                let rows: Vec<serde_json::Value> = batch
                    .iter()
                    .map(|(this, other)| serde_json::json!({ "a": this, "b": other }))
                    .collect();
                let mut sql = Sql::new(Backend::Postgres);
                push_edge_insert(&mut sql, field);
                // Only edges whose nodes exist (a missing one would end the transaction).
                sql.push(" SELECT v.a, v.b FROM json_to_recordset(")
                    .bind(serde_json::Value::Array(rows).to_string().into())
                    .push("::json) AS v(a text, b text) WHERE EXISTS (SELECT 1 FROM ")
                    .ident(own_model.table)
                    .push(" n WHERE n.")
                    .ident(own_model.fields[own_model.id].name)
                    .push(" = v.a) AND EXISTS (SELECT 1 FROM ")
                    .ident(field.target.table)
                    .push(" n WHERE n.")
                    .ident(field.target.fields[field.target.id].name)
                    .push(" = v.b) ON CONFLICT DO NOTHING RETURNING ")
                    .ident(field.own)
                    .push(", ")
                    .ident(field.other);
                let inserted: HashSet<(String, String)> = tx
                    .all(sql)
                    .await?
                    .iter()
                    .filter_map(|row| Some((row.string(0).ok()??, row.string(1).ok()??)))
                    .collect();
                if inserted.len() < batch.len() {
                    for (i, (this, other)) in batch.iter().enumerate() {
                        if !inserted.contains(&((*this).to_owned(), (*other).to_owned())) {
                            skipped.push(chunk * BATCH + i);
                        }
                    }
                }
            }
        }
    }
    Ok(skipped)
}
