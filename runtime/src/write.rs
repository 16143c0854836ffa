//! Mutations: `create<T>`, `update<T>`, `updateOrCreate<T>`, `delete<T>`, the relation
//! mutations, and the `deleteMany`/`updateMany` extensions. Each runs in one database
//! transaction, however deeply its arguments nest, and returns the node as stored.

use async_graphql::{Context, ID, SimpleObject};
use chrono::Utc;
use sea_orm::SqlErr;

use crate::edges::{
    Tx, check_id, connect, delete_nodes, disconnect_except, disconnect_pair, link_if_exists,
    only_links, push_edge_insert, verify_exist,
};
use crate::error::{ApiError, ApiResult};
use crate::filter::{Filter, render};
use crate::meta::{FieldMeta, Kind, ModelMeta};
use crate::nested::{RelArg, Write};
use crate::permissions::Perms;
use crate::permissions::read::allow_payload;
use crate::read::{find_by, find_row, push_select};
use crate::record::Record;
use crate::state::{State, request_counter};
use crate::storage::{Backend, Exec, Row, Sql, sql_err, to_db, unique_violation};
use crate::value::{Val, cuid, is_valid_id};

/// Longest text a String, Json or list field may hold (the reference's "256KB").
pub const MAX_TEXT_CHARS: usize = 262_144;

/// How many times a transaction PostgreSQL rolled back for a deadlock is run again.
const CONFLICT_RETRIES: u32 = 3;

/// Runs `body` in one transaction of the request: committed when it succeeds, rolled back (by
/// dropping the transaction) when it fails. `inline`: the work is bounded by the request (one
/// node and what its arguments name, and cascades), so on SQLite it may run on the calling
/// thread (`storage/writer.rs`); the filtered `deleteMany`/`updateMany` are not. Mutations
/// call it through [`retrying!`].
async fn in_transaction<T>(
    ctx: &Context<'_>,
    inline: bool,
    body: impl AsyncFnOnce(&Tx<'_>) -> ApiResult<T>,
) -> ApiResult<T> {
    let state = State::of(ctx);
    let tx = state.db.begin_write(inline).await?;
    let exec = Exec {
        conn: &tx,
        counter: request_counter(ctx),
    };
    let out = body(&exec).await?;
    tx.commit().await?;
    Ok(out)
}

/// Runs `$transaction` (an [`in_transaction`] future, made anew each time) again while
/// PostgreSQL rolls it back to break a deadlock ([`ApiError::Conflict`]), up to
/// [`CONFLICT_RETRIES`] times. Two mutations that lock the same rows in opposite orders (say a
/// `deleteUser` whose cascade clears its posts' copies of their author while an `updatePost`
/// moves one of them, `storage/partner.rs`) then both succeed, one after the other, instead of
/// one failing.
macro_rules! retrying {
    ($transaction:expr) => {{
        let mut retries = 0;
        loop {
            match $transaction.await {
                Err(ApiError::Conflict(_)) if retries < CONFLICT_RETRIES => retries += 1,
                out => break out,
            }
        }
    }};
}

/// `create<T>(…)`.
pub async fn create<R: Record>(ctx: &Context<'_>, args: Write) -> async_graphql::Result<Option<R>> {
    let backend = State::of(ctx).db.backend();
    let perms = Perms::of(ctx);
    allow_payload(ctx, payload_fields(R::META, &args));
    let row = if backend == Backend::Postgres && perms.bypass() && one_statement(R::META, &args) {
        create_in_one_statement(ctx, R::META, args).await?
    } else {
        retrying!(in_transaction(ctx, true, async |tx| {
            insert_node(tx, &perms, R::META, args.clone(), None).await
        }))?
    };
    Ok(Some(R::decode(&row, backend).map_err(ApiError::from)?))
}

/// Whether a create (with no permission to check) can be a single statement: no nested
/// creates, and each connection adds one edge to one partner ([`only_links`]).
fn one_statement(meta: &ModelMeta, write: &Write) -> bool {
    write.rels.iter().all(|rel| {
        rel.nested.as_ref().is_none_or(Vec::is_empty)
            && match rel.ids.as_deref() {
                None | Some([]) => true,
                Some([_]) => only_links(meta, rel.field, true),
                Some(_) => false,
            }
    })
}

/// A create as one PostgreSQL statement, without `BEGIN`/`COMMIT`: the node's `INSERT` and each
/// edge's in one `WITH`, which is atomic. A missing partner breaks the join table's foreign key,
/// which fails the whole statement; the existence checks of the transaction path then run for
/// their error. Unique violations come first, as in the transaction path (the node's insert
/// raises them before the foreign keys are checked at the end of the statement).
async fn create_in_one_statement(
    ctx: &Context<'_>,
    meta: &'static ModelMeta,
    write: Write,
) -> ApiResult<Row> {
    check_required(meta, &write, None)?;
    let state = State::of(ctx);
    let mut sql = state.db.sql();
    sql.push("WITH \"n\" AS (");
    // The new node's to-one partners go into its row with it (`storage::partner`), so the join
    // table's trigger finds its copy right and leaves the row alone. A missing partner fails
    // the whole statement, copy included.
    let copies = partner_copies(meta, &write, None);
    let id = push_insert(&mut sql, meta, write.values, &copies)?;
    sql.push(")");
    let mut partners = Vec::new();
    for (k, rel) in write.rels.iter().enumerate() {
        let Some([other]) = rel.ids.as_deref() else {
            continue;
        };
        let field = &meta.relations[rel.field];
        sql.push(", \"e").push(&k.to_string()).push("\" AS (");
        push_edge_insert(&mut sql, field);
        sql.push(" VALUES (")
            .bind(cuid().into())
            .push(", ")
            .bind(id.as_str().into())
            .push(", ")
            .bind(other.as_str().into())
            .push("))");
        partners.push((field.target, other.clone()));
    }
    sql.push(" SELECT * FROM \"n\"");
    let exec = Exec {
        conn: state.db.writer(),
        counter: request_counter(ctx),
    };
    match exec.one(sql).await {
        Ok(Some(row)) => Ok(row),
        Ok(None) => Err(ApiError::Internal("insert returned no row".into())),
        Err(e) if matches!(sql_err(&e), Some(SqlErr::ForeignKeyConstraintViolation(_))) => {
            in_transaction(ctx, true, async |tx| {
                for (target, other) in &partners {
                    verify_exist(tx, target, std::slice::from_ref(other)).await?;
                }
                Err(ApiError::from(e))
            })
            .await
        }
        Err(e) => Err(write_error(e, meta)),
    }
}

/// `update<T>(id, …)`.
pub async fn update<R: Record>(
    ctx: &Context<'_>,
    id: ID,
    args: Write,
) -> async_graphql::Result<Option<R>> {
    let backend = State::of(ctx).db.backend();
    let perms = Perms::of(ctx);
    allow_payload(ctx, payload_fields(R::META, &args));
    let row = retrying!(in_transaction(ctx, true, async |tx| {
        update_node(tx, &perms, R::META, &id, args.clone()).await
    }))?;
    Ok(Some(R::decode(&row, backend).map_err(ApiError::from)?))
}

/// `updateOrCreate<T>(update: {id, …}, create: {…})`: updates the node `update.id` if it exists,
/// otherwise creates a new node (with a fresh id) from `create`.
pub async fn update_or_create<R: Record>(
    ctx: &Context<'_>,
    id: ID,
    update: Write,
    create: Write,
) -> async_graphql::Result<Option<R>> {
    let backend = State::of(ctx).db.backend();
    let perms = Perms::of(ctx);
    let row = retrying!(in_transaction(ctx, true, async |tx| {
        let exists = is_valid_id(&id)
            && find_by::<R, _>(tx, R::META.id, &Val::String(id.to_string()))
                .await?
                .is_some();
        if exists {
            allow_payload(ctx, payload_fields(R::META, &update));
            update_node(tx, &perms, R::META, &id, update.clone()).await
        } else {
            allow_payload(ctx, payload_fields(R::META, &create));
            insert_node(tx, &perms, R::META, create.clone(), None).await
        }
    }))?;
    Ok(Some(R::decode(&row, backend).map_err(ApiError::from)?))
}

/// `delete<T>(id)`: returns the node as it was.
pub async fn delete<R: Record>(ctx: &Context<'_>, id: ID) -> async_graphql::Result<Option<R>> {
    let meta = R::META;
    check_id(&id)?;
    let perms = Perms::of(ctx);
    allow_payload(ctx, vec![meta.fields[meta.id].name]);
    let node = retrying!(in_transaction(ctx, true, async |tx| {
        let node = find_by::<R, _>(tx, meta.id, &Val::String(id.to_string()))
            .await?
            .ok_or_else(|| not_found(meta, &id))?;
        perms.check_delete(tx, meta, &[id.as_str()]).await?;
        delete_nodes(tx, meta, vec![id.to_string()]).await?;
        Ok(node)
    }))?;
    Ok(Some(node))
}

/// `_BatchPayload { count }`: how many nodes a `deleteMany`/`updateMany` touched.
#[derive(Debug, Clone, Copy, SimpleObject)]
#[graphql(name = "_BatchPayload")]
pub struct BatchPayload {
    #[graphql(name = "count")]
    pub count: i32,
}

/// The ids of the nodes a `deleteMany`/`updateMany` filter matches.
async fn matching_ids<R: Record>(
    tx: &Tx<'_>,
    filter: &Option<Filter<R>>,
) -> ApiResult<Vec<String>> {
    let mut sql = Sql::new(tx.backend());
    push_matching_ids::<R>(&mut sql, filter);
    tx.all(sql)
        .await?
        .iter()
        .map(|r| crate::record::get(r, 0, tx.backend()).map_err(ApiError::from))
        .collect()
}

/// Appends `SELECT t0.id FROM <table> AS t0 WHERE <filter>`.
fn push_matching_ids<R: Record>(sql: &mut Sql, filter: &Option<Filter<R>>) {
    let meta = R::META;
    sql.push("SELECT ")
        .col("t0", meta.fields[meta.id].name)
        .push(" FROM ")
        .ident(meta.table)
        .push(" AS t0 WHERE ");
    match filter {
        Some(f) => render(&f.cond, meta, "t0", sql),
        None => {
            sql.push("1=1");
        }
    }
}

/// `deleteMany<Plural>(filter)` (extension): deletes every matching node, following cascades
/// and honouring required relations, in one transaction.
pub async fn delete_many<R: Record>(
    ctx: &Context<'_>,
    filter: Option<Filter<R>>,
) -> async_graphql::Result<BatchPayload> {
    if let Some(f) = &filter {
        f.cond.check()?;
    }
    let perms = Perms::of(ctx);
    let count = retrying!(in_transaction(ctx, false, async |tx| {
        let ids = matching_ids::<R>(tx, &filter).await?;
        let count = ids.len();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        perms.check_delete(tx, R::META, &refs).await?;
        delete_nodes(tx, R::META, ids).await?;
        Ok(count)
    }))?;
    Ok(BatchPayload {
        count: i32::try_from(count).unwrap_or(i32::MAX),
    })
}

/// `updateMany<Plural>(filter, data)` (extension): sets the given scalar fields on every
/// matching node in one statement.
pub async fn update_many<R: Record>(
    ctx: &Context<'_>,
    filter: Option<Filter<R>>,
    data: Vec<(usize, Option<Val>)>,
) -> async_graphql::Result<BatchPayload> {
    let meta = R::META;
    if let Some(f) = &filter {
        f.cond.check()?;
    }
    let perms = Perms::of(ctx);
    let write = Write {
        values: data,
        rels: Vec::new(),
    };
    let count = retrying!(in_transaction(ctx, false, async |tx| {
        if !perms.bypass() {
            let ids = matching_ids::<R>(tx, &filter).await?;
            let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
            perms.check_write(tx, meta, Some(&refs), &write).await?;
        }
        let sets = scalar_sets(meta, write.values.clone())?;
        let mut sql = Sql::new(tx.backend());
        sql.push("UPDATE ").ident(meta.table).push(" SET ");
        push_sets(&mut sql, meta, &sets);
        sql.push(" WHERE ")
            .ident(meta.fields[meta.id].name)
            .push(" IN (");
        push_matching_ids::<R>(&mut sql, &filter);
        sql.push(")");
        tx.execute(sql).await.map_err(|e| write_error(e, meta))
    }))?;
    Ok(BatchPayload {
        count: i32::try_from(count).unwrap_or(i32::MAX),
    })
}

/// Which relation mutation to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelOp {
    AddTo,
    RemoveFrom,
    Set,
    Unset,
}

/// `addTo<R>`, `removeFrom<R>`, `set<R>`, `unset<R>`: `field` is the side-A field of the
/// relation (on `a_meta`); `b_id` is the B node (`<aName>Id`), `a_id` the A node (`<bName>Id`).
/// Returns the rows of the A and B nodes after the change.
pub async fn relate(
    ctx: &Context<'_>,
    a_meta: &'static ModelMeta,
    field: usize,
    op: RelOp,
    b_id: ID,
    a_id: ID,
) -> async_graphql::Result<(Option<Row>, Option<Row>)> {
    let f = &a_meta.relations[field];
    let b_meta = f.target;
    check_id(&b_id)?;
    check_id(&a_id)?;
    let (b, a) = (b_id.to_string(), a_id.to_string());
    let perms = Perms::of(ctx);
    let nodes = retrying!(in_transaction(ctx, true, async |tx| {
        match op {
            RelOp::AddTo | RelOp::Set => {
                verify_exist(tx, b_meta, std::slice::from_ref(&b)).await?;
                verify_exist(tx, a_meta, std::slice::from_ref(&a)).await?;
                perms.check_relation(tx, f, &a, &[b.as_str()], true).await?;
                connect(tx, a_meta, field, &a, std::slice::from_ref(&b), false).await?;
            }
            RelOp::RemoveFrom | RelOp::Unset => {
                perms
                    .check_relation(tx, f, &a, &[b.as_str()], false)
                    .await?;
                disconnect_pair(tx, f, &a, &b).await?;
            }
        }
        let Some(a_node) = find_row(tx, a_meta, a_meta.id, &Val::String(a.clone())).await? else {
            return Err(ApiError::NodeNotFound(a.clone()));
        };
        let b_node = find_row(tx, b_meta, b_meta.id, &Val::String(b.clone())).await?;
        Ok((Some(a_node), b_node))
    }))?;
    Ok(nodes)
}

/// The payload whitelist of a create or update: the scalar fields given, plus `id`.
fn payload_fields(meta: &'static ModelMeta, write: &Write) -> Vec<&'static str> {
    std::iter::once(meta.fields[meta.id].name)
        .chain(
            write
                .values
                .iter()
                .filter(|(_, v)| v.is_some())
                .map(|(i, _)| meta.fields[*i].name),
        )
        .collect()
}

fn not_found(meta: &ModelMeta, id: &str) -> ApiError {
    ApiError::DataItemDoesNotExist {
        model: meta.name,
        id: id.to_owned(),
    }
}

/// 3032 before anything is written: every required to-one field of a new node must be given by
/// `<f>Id`, a nested create, or the parent a nested create comes from (`parent_field`).
fn check_required(meta: &ModelMeta, write: &Write, parent_field: Option<usize>) -> ApiResult<()> {
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
async fn insert_node(
    tx: &Tx<'_>,
    perms: &Perms<'_>,
    meta: &'static ModelMeta,
    write: Write,
    parent: Option<(usize, String)>,
) -> ApiResult<Row> {
    check_required(meta, &write, parent.as_ref().map(|p| p.0))?;
    perms.check_write(tx, meta, None, &write).await?;
    // Any error below rolls the transaction back, copies included.
    let copies = match tx.backend() {
        Backend::Postgres => partner_copies(meta, &write, parent.as_ref()),
        Backend::Sqlite => Vec::new(),
    };
    let row = insert_row(tx, meta, write.values, &copies).await?;
    let id: String = crate::record::get(&row, meta.id, tx.backend()).map_err(ApiError::from)?;
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
async fn update_node(
    tx: &Tx<'_>,
    perms: &Perms<'_>,
    meta: &'static ModelMeta,
    id: &str,
    write: Write,
) -> ApiResult<Row> {
    check_id(id)?;
    perms.check_write(tx, meta, Some(&[id]), &write).await?;
    let row = modify_row(tx, meta, id, write.values).await?;
    apply_relations(tx, perms, meta, id, write.rels, true).await?;
    Ok(row)
}

/// Connects, replaces and creates what the relation arguments of node `id` say.
async fn apply_relations(
    tx: &Tx<'_>,
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

/// PostgreSQL: the to-one partners a new node of `meta` is created with (its parent through
/// the field `parent`, and each to-one field given one id), as the columns of its row holding
/// them (`storage::partner`). Written with the row, they make the join table's trigger find
/// its copy right and leave the row alone, instead of writing it a second time.
fn partner_copies(
    meta: &ModelMeta,
    write: &Write,
    parent: Option<&(usize, String)>,
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
            crate::storage::partner::held_through(&meta.relations[field])
                .map(|column| (column, partner.clone()))
        })
        .collect()
}

/// Inserts a row: absent arguments take their defaults, `copies` as [`push_insert`].
async fn insert_row(
    tx: &Tx<'_>,
    meta: &'static ModelMeta,
    args: Vec<(usize, Option<Val>)>,
    copies: &[(String, String)],
) -> ApiResult<Row> {
    let mut sql = Sql::new(tx.backend());
    push_insert(&mut sql, meta, args, copies)?;
    tx.one(sql)
        .await
        .map_err(|e| write_error(e, meta))?
        .ok_or_else(|| ApiError::Internal("insert returned no row".into()))
}

/// Appends `INSERT INTO "<table>" (…) VALUES (…) RETURNING …` for a new node with `args` over
/// the defaults, and `copies` (column, value) in columns that are not fields; returns the new
/// node's id.
fn push_insert(
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
    let id = cuid();
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
fn scalar_sets(
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
fn push_sets(sql: &mut Sql, meta: &ModelMeta, sets: &[(usize, Val)]) {
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
    tx: &Tx<'_>,
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
    if !sets.is_empty() {
        push_returning(&mut sql, meta);
    }
    tx.one(sql)
        .await
        .map_err(|e| write_error(e, meta))?
        .ok_or_else(|| not_found(meta, id))
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
