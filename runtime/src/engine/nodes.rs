//! Writing one node: its row (insert with defaults, update of the given scalars, the values'
//! limits), the partners it is created with, and its relation arguments (connections and nested
//! creates, recursively).

use chrono::Utc;

use super::commit::{ChangeKind, Writes};
use super::edges::{
    check_id, connect, disconnect_except, link_if_exists, only_links, verify_exist,
};
use crate::model::{
    ApiError, ApiResult, FILE_READ_ONLY, FieldMeta, Kind, ModelMeta, RelArg, Val, Write, cuid, get,
    node_values,
};
use crate::permissions::Perms;
use crate::query::select::{locked_rows_sql, push_returning, push_select};
use crate::storage::layout::held_through;
use crate::storage::{Backend, Row, Sql, to_db, unique_violation};

/// Longest text a String, Json or list field may hold (the reference's "256KB").
pub const MAX_TEXT_CHARS: usize = 262_144;

/// 3032 before anything is written: every required to-one field of a new node must be given by
/// `<f>Id`, a nested create, or the parent a nested create comes from (`parent_field`).
pub(super) fn check_required(
    meta: &ModelMeta,
    write: &Write,
    parent_field: Option<usize>,
) -> ApiResult<()> {
    for (i, f) in meta.relations.iter().enumerate() {
        if f.list || !f.required || Some(i) == parent_field {
            continue;
        }
        if !write.rels.iter().any(|r| r.field == i && r.connects_any()) {
            return Err(ApiError::RelationIsRequired {
                field: f.name,
                model: meta.name,
            });
        }
    }
    Ok(())
}

/// Creates a node with its relation arguments; `parent` is the relation field (of `meta`) and
/// node a nested create comes through. Returns the inserted row.
pub(super) async fn insert_node(
    tx: &Writes<'_>,
    perms: &Perms<'_>,
    meta: &'static ModelMeta,
    write: Write,
    parent: Option<(usize, String)>,
) -> ApiResult<Row> {
    check_required(meta, &write, parent.as_ref().map(|p| p.0))?;
    perms.check_write(tx, meta, None, &write).await?;
    // Any error below rolls the transaction back, copies included.
    let copies = partner_copies(meta, &write, parent.as_ref(), tx.backend());
    let row = insert_row(tx, meta, write.values, &copies).await?;
    let id: String = get(&row, meta.id)?;
    if let Some((field, parent_id)) = parent {
        perms
            .check_relation(tx, &meta.relations[field], &id, &[parent_id.as_str()], true)
            .await?;
        connect(tx, meta, field, &id, &[parent_id], true).await?;
    }
    apply_relations(tx, perms, meta, &id, write.rels, false).await?;
    Ok(row)
}

/// Updates a node's scalars and relations; relation arguments replace what the field held.
pub(super) async fn update_node(
    tx: &Writes<'_>,
    perms: &Perms<'_>,
    meta: &'static ModelMeta,
    id: &str,
    write: Write,
) -> ApiResult<Row> {
    check_id(id)?;
    check_read_only(meta, &write.values)?;
    perms.check_write(tx, meta, Some(&[id]), &write).await?;
    let row = modify_row(tx, meta, id, write.values).await?;
    apply_relations(tx, perms, meta, id, write.rels, true).await?;
    Ok(row)
}

/// 3019 when a write of `File` sets a field only the File API writes ([`FILE_READ_ONLY`]).
pub(super) fn check_read_only(meta: &ModelMeta, values: &[(usize, Option<Val>)]) -> ApiResult<()> {
    if !meta.is_file() {
        return Ok(());
    }
    for (i, value) in values {
        let name = meta.fields[*i].name;
        if value.is_some() && FILE_READ_ONLY.contains(&name) {
            return Err(ApiError::ReadonlyField(name));
        }
    }
    Ok(())
}

/// Connects, replaces and creates what the relation arguments of node `id` say.
async fn apply_relations(
    tx: &Writes<'_>,
    perms: &Perms<'_>,
    meta: &'static ModelMeta,
    id: &str,
    rels: Vec<RelArg>,
    replace: bool,
) -> ApiResult<()> {
    for rel in rels {
        let field = &meta.relations[rel.field];
        if rel.ids.is_none() && rel.nested.is_none() {
            continue;
        }
        if replace {
            let keep = rel.ids.clone().unwrap_or_default();
            disconnect_except(tx, meta, rel.field, id, &keep).await?;
        }
        match rel.ids.as_deref() {
            // One partner that is only linked, and no permission to check: the edge is inserted
            // if the partner exists, one statement instead of two; only when nothing was
            // inserted does the check run, for its error (or to find the edge was there).
            Some([other]) if perms.bypass() && only_links(meta, rel.field, !replace) => {
                let linked = link_if_exists(tx, field, id, other).await?;
                if !linked {
                    verify_exist(tx, field.target, std::slice::from_ref(other)).await?;
                }
            }
            Some(ids) => {
                verify_exist(tx, field.target, ids).await?;
                let others: Vec<&str> = ids.iter().map(String::as_str).collect();
                perms.check_relation(tx, field, id, &others, true).await?;
                connect(tx, meta, rel.field, id, ids, !replace).await?;
            }
            None => {}
        }
        for nested in rel.nested.into_iter().flatten() {
            Box::pin(insert_node(
                tx,
                perms,
                field.target,
                nested,
                Some((field.back, id.to_owned())),
            ))
            .await?;
        }
    }
    Ok(())
}

/// The to-one partners a new node of `meta` is created with (its parent through the field
/// `parent`, and each to-one field given one id), as the columns of its row holding them where
/// the database keeps such copies (PostgreSQL, `migrate/partners.rs`). Written with the row, they
/// make the join table's trigger find its copy right and leave the row alone, instead of writing
/// it a second time.
pub(super) fn partner_copies(
    meta: &ModelMeta,
    write: &Write,
    parent: Option<&(usize, String)>,
    backend: Backend,
) -> Vec<(String, String)> {
    let given = write
        .rels
        .iter()
        .filter_map(|rel| match rel.ids.as_deref() {
            Some([other]) => Some((rel.field, other)),
            _ => None,
        });
    parent
        .map(|(field, id)| (*field, id))
        .into_iter()
        .chain(given)
        .filter_map(|(field, partner)| {
            held_through(&meta.relations[field], backend).map(|column| (column, partner.clone()))
        })
        .collect()
}

/// Inserts a row: absent arguments take their defaults, `copies` as [`push_insert`].
async fn insert_row(
    tx: &Writes<'_>,
    meta: &'static ModelMeta,
    args: Vec<(usize, Option<Val>)>,
    copies: &[(String, String)],
) -> ApiResult<Row> {
    let fields = supplied(meta, &args);
    let mut sql = Sql::new(tx.backend());
    let id = push_insert(&mut sql, meta, args, copies)?;
    let row = tx
        .one(sql)
        .await
        .map_err(|e| write_error(e, meta))?
        .ok_or_else(|| ApiError::Internal("insert returned no row".into()))?;
    tx.node(meta, &id, ChangeKind::Created, fields, None);
    Ok(row)
}

/// The scalar fields `args` gives a value (or an explicit null), in the model's field order.
pub(super) fn supplied(
    meta: &'static ModelMeta,
    args: &[(usize, Option<Val>)],
) -> Vec<&'static str> {
    field_names(
        meta,
        args.iter()
            .filter(|(i, v)| v.is_some() && *i != meta.id)
            .map(|(i, _)| *i),
    )
}

/// The names of the fields `indices` (of `meta.fields`), in the model's field order.
fn field_names(
    meta: &'static ModelMeta,
    indices: impl Iterator<Item = usize>,
) -> Vec<&'static str> {
    let mut indices: Vec<usize> = indices.collect();
    indices.sort_unstable();
    indices.into_iter().map(|i| meta.fields[i].name).collect()
}

/// Appends `INSERT INTO "<table>" (…) VALUES (…) RETURNING …` for a new node with `args` over
/// the defaults, and `copies` (column, value) in columns that are not fields; returns the new
/// node's id.
pub(super) fn push_insert(
    sql: &mut Sql,
    meta: &'static ModelMeta,
    args: Vec<(usize, Option<Val>)>,
    copies: &[(String, String)],
) -> ApiResult<String> {
    let backend = sql.backend();
    let now = Val::DateTime(truncate_now());
    let mut values: Vec<Val> = vec![Val::Null; meta.fields.len()];
    for (i, field) in meta.fields.iter().enumerate() {
        if i == meta.id || i == meta.created_at || i == meta.updated_at {
            continue;
        }
        values[i] = match field.default {
            Some(lit) => Val::from_lit(&lit),
            None => Val::Null,
        };
    }
    // An id chosen before the write (an `operationBefore` hook saw it), else a new one.
    let mut id = None;
    for (i, arg) in args {
        let field = &meta.fields[i];
        if i == meta.id {
            if let Some(Val::String(given)) = arg {
                id = Some(given);
            }
            continue;
        }
        match arg {
            None => {}
            Some(Val::Null) if field.required && field.default.is_some() => {
                return Err(ApiError::InputInvalid {
                    value: "null".to_owned(),
                    field: field.name,
                    model: meta.name,
                });
            }
            Some(Val::Null) if field.required => {
                return Err(ApiError::FieldCannotBeNull(field.name));
            }
            Some(v) => {
                check_value(field, &v)?;
                values[i] = v;
            }
        }
    }
    let id = id.unwrap_or_else(cuid);
    values[meta.id] = Val::String(id.clone());
    values[meta.created_at] = now.clone();
    values[meta.updated_at] = now;

    sql.push("INSERT INTO ").ident(meta.table).push(" (");
    sql.join(meta.fields, ", ", |s, f| {
        s.ident(f.name);
    });
    for (column, _) in copies {
        sql.push(", ").ident(column);
    }
    sql.push(") VALUES (");
    sql.join(meta.fields.iter().zip(&values), ", ", |s, (f, v)| {
        s.bind(to_db(v, f, backend));
    });
    for (_, value) in copies {
        sql.push(", ").bind(value.as_str().into());
    }
    sql.push(")");
    push_returning(sql, meta);
    Ok(id)
}

/// Checks the scalar values of an update: 3020 for null in a required field, 3007, 3037.
pub(super) fn scalar_sets(
    meta: &'static ModelMeta,
    args: Vec<(usize, Option<Val>)>,
) -> ApiResult<Vec<(usize, Val)>> {
    let mut sets: Vec<(usize, Val)> = Vec::with_capacity(args.len());
    for (i, arg) in args {
        let field = &meta.fields[i];
        match arg {
            None => {}
            Some(Val::Null) if field.required => {
                return Err(ApiError::FieldCannotBeNull(field.name));
            }
            Some(v) => {
                check_value(field, &v)?;
                sets.push((i, v));
            }
        }
    }
    Ok(sets)
}

/// Appends `"f" = ?, …, "updatedAt" = ?`.
pub(super) fn push_sets(sql: &mut Sql, meta: &ModelMeta, sets: &[(usize, Val)]) {
    let backend = sql.backend();
    let now = Val::DateTime(truncate_now());
    let all = sets
        .iter()
        .map(|(i, v)| (*i, v))
        .chain([(meta.updated_at, &now)]);
    sql.join(all, ", ", |s, (i, v)| {
        let f = &meta.fields[i];
        s.ident(f.name).push(" = ").bind(to_db(v, f, backend));
    });
}

/// Updates the scalar fields given in `args` of node `id` and returns the row (3002 when there
/// is no such node).
async fn modify_row(
    tx: &Writes<'_>,
    meta: &'static ModelMeta,
    id: &str,
    args: Vec<(usize, Option<Val>)>,
) -> ApiResult<Row> {
    let sets = scalar_sets(meta, args)?;
    let mut sql = Sql::new(tx.backend());
    let id_col = meta.fields[meta.id].name;
    if sets.is_empty() {
        push_select(&mut sql, meta, "t0");
        sql.push(" WHERE ").col("t0", id_col).push(" = ");
    } else {
        sql.push("UPDATE ").ident(meta.table).push(" SET ");
        push_sets(&mut sql, meta, &sets);
        sql.push(" WHERE ").ident(id_col).push(" = ");
    }
    sql.bind(sea_orm::Value::String(Some(id.to_owned())));
    if sets.is_empty() {
        return tx
            .one(sql)
            .await
            .map_err(|e| write_error(e, meta))?
            .ok_or_else(|| not_found(meta, id));
    }
    push_returning(&mut sql, meta);
    // What the node held before, for the observers.
    let previous = match tx.wants(meta) {
        true => previous_values(tx, meta, [id])
            .await?
            .pop()
            .map(|(_, values)| values),
        false => None,
    };
    let row = tx
        .one(sql)
        .await
        .map_err(|e| write_error(e, meta))?
        .ok_or_else(|| not_found(meta, id))?;
    let fields = field_names(meta, sets.iter().map(|(i, _)| *i));
    tx.node(meta, id, ChangeKind::Updated, fields, previous);
    Ok(row)
}

/// The values the nodes `ids` of `meta` hold now (each `(id, values)`, in id order), locking
/// their rows for the rest of the transaction.
pub(super) async fn previous_values<'a>(
    tx: &Writes<'_>,
    meta: &'static ModelMeta,
    ids: impl IntoIterator<Item = &'a str>,
) -> ApiResult<Vec<(String, Vec<Val>)>> {
    let sql = locked_rows_sql(tx.backend(), meta, ids);
    tx.all(sql)
        .await?
        .iter()
        .map(|row| {
            let values = node_values(meta, row)?;
            let id = get::<String, _>(row, meta.id)?;
            Ok((id, values))
        })
        .collect()
}

pub(super) fn not_found(meta: &ModelMeta, id: &str) -> ApiError {
    ApiError::DataItemDoesNotExist {
        model: meta.name,
        id: id.to_owned(),
    }
}

/// Maps a failed write to 3010 when it broke a unique constraint.
pub(super) fn write_error(err: sea_orm::DbErr, meta: &'static ModelMeta) -> ApiError {
    match unique_violation(&err, meta.table) {
        Some(field) => ApiError::UniqueConstraintViolation {
            model: meta.name,
            field: field.and_then(|f| meta.fields.iter().find(|m| m.name == f).map(|m| m.name)),
        },
        None => ApiError::from(err),
    }
}

/// Checks one written value against the field's limits (3007, 3037).
pub(crate) fn check_value(field: &'static FieldMeta, val: &Val) -> ApiResult<()> {
    if field.list {
        if val.to_json().to_string().chars().count() > MAX_TEXT_CHARS {
            return Err(ApiError::ValueTooLong(field.name));
        }
        return Ok(());
    }
    match (field.kind, val) {
        (Kind::String | Kind::Id, Val::String(s)) if s.chars().count() > MAX_TEXT_CHARS => {
            Err(ApiError::ValueTooLong(field.name))
        }
        (Kind::Json, Val::Json(j)) => {
            if !(j.is_object() || j.is_array()) {
                return Err(ApiError::ValueNotAValidJson {
                    field: field.name,
                    value: j.to_string(),
                });
            }
            if j.to_string().chars().count() > MAX_TEXT_CHARS {
                return Err(ApiError::ValueTooLong(field.name));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The current time at the millisecond precision the API stores.
pub(crate) fn truncate_now() -> chrono::DateTime<Utc> {
    let now = Utc::now();
    chrono::DateTime::from_timestamp_millis(now.timestamp_millis()).unwrap_or(now)
}
