//! Mutations: `create<T>`, `update<T>`, `updateOrCreate<T>`, `delete<T>`. Each runs in one
//! database transaction and returns the node as stored (re-read through `RETURNING`).

use async_graphql::{Context, ID};
use chrono::Utc;
use sea_orm::DatabaseTransaction;

use crate::error::{ApiError, ApiResult};
use crate::meta::{FieldMeta, Kind, ModelMeta};
use crate::read::find_by;
use crate::record::Record;
use crate::state::{State, request_counter};
use crate::storage::{Backend, Exec, Sql, to_db, unique_violation};
use crate::value::{Val, cuid, is_valid_id};

/// Longest text a String, Json or list field may hold (the reference's "256KB").
pub const MAX_TEXT_CHARS: usize = 262_144;

/// Mutation arguments: `(field index, value)`; `None` = absent, `Some(Val::Null)` = explicit null.
pub type Args = Vec<(usize, Option<Val>)>;

/// `create<T>(…)`.
pub async fn create<R: Record>(ctx: &Context<'_>, args: Args) -> async_graphql::Result<Option<R>> {
    let state = State::of(ctx);
    let tx = state.db.begin().await.map_err(ApiError::from)?;
    let exec = Exec {
        conn: &tx,
        counter: request_counter(ctx),
    };
    let node = insert::<R>(&exec, args).await?;
    tx.commit().await.map_err(ApiError::from)?;
    Ok(Some(node))
}

/// `update<T>(id, …)`.
pub async fn update<R: Record>(
    ctx: &Context<'_>,
    id: ID,
    args: Args,
) -> async_graphql::Result<Option<R>> {
    let state = State::of(ctx);
    let tx = state.db.begin().await.map_err(ApiError::from)?;
    let exec = Exec {
        conn: &tx,
        counter: request_counter(ctx),
    };
    let node = modify::<R>(&exec, &id, args).await?;
    tx.commit().await.map_err(ApiError::from)?;
    Ok(Some(node))
}

/// `updateOrCreate<T>(update: {id, …}, create: {…})`: updates the node `update.id` if it exists,
/// otherwise creates a new node (with a fresh id) from `create`.
pub async fn update_or_create<R: Record>(
    ctx: &Context<'_>,
    id: ID,
    update: Args,
    create: Args,
) -> async_graphql::Result<Option<R>> {
    let state = State::of(ctx);
    let tx = state.db.begin().await.map_err(ApiError::from)?;
    let exec = Exec {
        conn: &tx,
        counter: request_counter(ctx),
    };
    let exists = is_valid_id(&id)
        && find_by::<R, _>(&exec, R::META.id, &Val::String(id.to_string()))
            .await?
            .is_some();
    let node = if exists {
        modify::<R>(&exec, &id, update).await?
    } else {
        insert::<R>(&exec, create).await?
    };
    tx.commit().await.map_err(ApiError::from)?;
    Ok(Some(node))
}

/// `delete<T>(id)`: returns the node as it was.
pub async fn delete<R: Record>(ctx: &Context<'_>, id: ID) -> async_graphql::Result<Option<R>> {
    let meta = R::META;
    check_id(&id)?;
    let state = State::of(ctx);
    let tx = state.db.begin().await.map_err(ApiError::from)?;
    let exec = Exec {
        conn: &tx,
        counter: request_counter(ctx),
    };
    let backend = state.db.backend();
    let mut sql = Sql::new(backend);
    sql.push("DELETE FROM ")
        .ident(meta.table)
        .push(" WHERE ")
        .ident(meta.fields[meta.id].name)
        .push(" = ")
        .bind(sea_orm::Value::String(Some(id.to_string())));
    push_returning(&mut sql, meta);
    let row = exec.one(sql).await.map_err(ApiError::from)?;
    let Some(row) = row else {
        return Err(not_found(meta, &id).into());
    };
    let node = R::decode(&row, backend).map_err(ApiError::from)?;
    tx.commit().await.map_err(ApiError::from)?;
    Ok(Some(node))
}

fn check_id(id: &str) -> ApiResult<()> {
    if is_valid_id(id) {
        Ok(())
    } else {
        Err(ApiError::IdIsInvalid(id.to_owned()))
    }
}

fn not_found(meta: &ModelMeta, id: &str) -> ApiError {
    ApiError::DataItemDoesNotExist {
        model: meta.name,
        id: id.to_owned(),
    }
}

/// Inserts a node inside `exec`'s transaction: absent arguments take their defaults.
pub(crate) async fn insert<R: Record>(
    exec: &Exec<'_, DatabaseTransaction>,
    args: Args,
) -> ApiResult<R> {
    let meta = R::META;
    let backend = exec.backend();
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
    for (i, arg) in args {
        let field = &meta.fields[i];
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
    values[meta.id] = Val::String(cuid());
    values[meta.created_at] = now.clone();
    values[meta.updated_at] = now;

    let mut sql = Sql::new(backend);
    sql.push("INSERT INTO ").ident(meta.table).push(" (");
    sql.join(meta.fields, ", ", |s, f| {
        s.ident(f.name);
    });
    sql.push(") VALUES (");
    sql.join(meta.fields.iter().zip(&values), ", ", |s, (f, v)| {
        s.bind(to_db(v, f, backend));
    });
    sql.push(")");
    push_returning(&mut sql, meta);
    let row = exec
        .one(sql)
        .await
        .map_err(|e| write_error(e, meta))?
        .ok_or_else(|| ApiError::Internal("insert returned no row".into()))?;
    Ok(R::decode(&row, backend)?)
}

/// Updates the scalar fields given in `args` of node `id` inside `exec`'s transaction.
pub(crate) async fn modify<R: Record>(
    exec: &Exec<'_, DatabaseTransaction>,
    id: &str,
    args: Args,
) -> ApiResult<R> {
    let meta = R::META;
    check_id(id)?;
    let backend = exec.backend();
    let mut sets: Vec<(usize, Val)> = Vec::with_capacity(args.len() + 1);
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
    let id_val = Val::String(id.to_owned());
    if sets.is_empty() {
        return find_by::<R, _>(exec, meta.id, &id_val)
            .await?
            .ok_or_else(|| not_found(meta, id));
    }
    sets.push((meta.updated_at, Val::DateTime(truncate_now())));
    let mut sql = Sql::new(backend);
    sql.push("UPDATE ").ident(meta.table).push(" SET ");
    sql.join(&sets, ", ", |s, (i, v)| {
        let f = &meta.fields[*i];
        s.ident(f.name).push(" = ").bind(to_db(v, f, backend));
    });
    sql.push(" WHERE ")
        .ident(meta.fields[meta.id].name)
        .push(" = ")
        .bind(sea_orm::Value::String(Some(id.to_owned())));
    push_returning(&mut sql, meta);
    let row = exec.one(sql).await.map_err(|e| write_error(e, meta))?;
    match row {
        Some(row) => Ok(R::decode(&row, backend)?),
        None => Err(not_found(meta, id)),
    }
}

/// Appends ` RETURNING <all columns>` in select order.
fn push_returning(sql: &mut Sql, meta: &ModelMeta) {
    sql.push(" RETURNING ");
    // RETURNING has no table alias; the bare quoted column names are unambiguous.
    sql.join(meta.fields, ", ", |s, f| {
        s.ident(f.name);
        if s.backend() == Backend::Postgres && f.kind.is_text() && !f.list {
            s.push("::text");
        }
    });
}

/// Maps a failed write to 3010 when it broke a unique constraint.
fn write_error(err: sea_orm::DbErr, meta: &'static ModelMeta) -> ApiError {
    match unique_violation(&err, meta.table) {
        Some(field) => ApiError::UniqueConstraintViolation {
            model: meta.name,
            field: field.and_then(|f| meta.fields.iter().find(|m| m.name == f).map(|m| m.name)),
        },
        None => ApiError::from(err),
    }
}

/// Checks one written value against the field's limits (3007, 3037).
fn check_value(field: &'static FieldMeta, val: &Val) -> ApiResult<()> {
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
fn truncate_now() -> chrono::DateTime<Utc> {
    let now = Utc::now();
    chrono::DateTime::from_timestamp_millis(now.timestamp_millis()).unwrap_or(now)
}
