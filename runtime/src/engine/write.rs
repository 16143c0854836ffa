//! Mutations: `create<T>`, `update<T>`, `updateOrCreate<T>`, `delete<T>`, the relation
//! mutations, and the `deleteMany`/`updateMany` extensions. Each runs in one database
//! transaction (or one statement that is its own), however deeply its arguments nest, commits
//! through [`commit`](super::commit), and returns the node as stored.

use std::sync::Arc;

use sea_orm::SqlErr;

use super::Request;
use super::commit::{ChangeKind, Writes, commit, commit_unobserved};
use super::edges::{
    check_id, connect, delete_nodes, disconnect_pair, only_links, push_edge_insert, verify_exist,
};
use super::functions;
use super::nodes::{
    check_read_only, check_required, insert_node, not_found, partner_copies, previous_values,
    push_insert, push_sets, scalar_sets, supplied, update_node, write_error,
};
use super::read::{find_by, find_row};
use crate::model::{
    ApiError, ApiResult, ModelMeta, Operation, Record, Val, Write, get, is_valid_id,
};
use crate::query::{Cond, render};
use crate::storage::{Row, Sql, WriteUnit, sql_err};

/// `create<T>(…)`: the new node.
pub async fn create<R: Record>(req: &Arc<Request>, args: Write) -> ApiResult<R> {
    let args = functions::before_create(req, R::META, args).await?;
    let perms = req.perms();
    let row =
        if req.db().backend().writes_in_with() && perms.bypass() && one_statement(R::META, &args) {
            create_in_one_statement(req, R::META, args).await?
        } else {
            commit(req, WriteUnit::Bounded, || {
                async |tx: &Writes<'_>| insert_node(tx, &perms, R::META, args.clone(), None).await
            })
            .await?
        };
    let row = functions::after(req, R::META, Operation::Create, row).await?;
    Ok(R::decode(&row)?)
}

/// A node the system writes, the File API's `File` nodes: the request's principal is the
/// system's (no permission applies) and no observer is told (uploads fire no events).
pub async fn create_unobserved(
    req: &Arc<Request>,
    meta: &'static ModelMeta,
    args: Write,
) -> ApiResult<Row> {
    let perms = req.perms();
    commit_unobserved(req, WriteUnit::Bounded, || {
        async |tx: &Writes<'_>| insert_node(tx, &perms, meta, args.clone(), None).await
    })
    .await
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

/// A create as one statement, without `BEGIN`/`COMMIT` (where a `WITH` may hold writes): the
/// node's `INSERT` and each edge's in one `WITH`, which is atomic. A missing partner breaks the
/// join table's foreign key, which fails the whole statement; the existence checks of the
/// transaction path then run for their error. Unique violations come first, as in the
/// transaction path (the node's insert raises them before the foreign keys are checked at the
/// end of the statement).
async fn create_in_one_statement(
    req: &Request,
    meta: &'static ModelMeta,
    write: Write,
) -> ApiResult<Row> {
    check_required(meta, &write, None)?;
    commit(req, WriteUnit::Statement, || {
        async |tx: &Writes<'_>| {
            let mut sql = Sql::new(tx.backend());
            sql.push("WITH \"n\" AS (");
            // The new node's to-one partners go into its row with it, so the join table's trigger
            // finds its copy right and leaves the row alone. A missing partner fails the whole
            // statement, copy included.
            let copies = partner_copies(meta, &write, None, tx.backend());
            let fields = supplied(meta, &write.values);
            let id = push_insert(&mut sql, meta, write.values.clone(), &copies)?;
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
                    .bind(id.as_str().into())
                    .push(", ")
                    .bind(other.as_str().into())
                    .push("))");
                partners.push((field, other));
            }
            sql.push(" SELECT * FROM \"n\"");
            match tx.one(sql).await {
                Ok(Some(row)) => {
                    tx.node(meta, &id, ChangeKind::Created, fields, None);
                    for (field, other) in &partners {
                        tx.edges(field, &id, [other.as_str()], true);
                    }
                    Ok(row)
                }
                Ok(None) => Err(ApiError::Internal("insert returned no row".into())),
                Err(e) if matches!(sql_err(&e), Some(SqlErr::ForeignKeyConstraintViolation(_))) => {
                    for (field, other) in &partners {
                        verify_exist(tx, field.target, std::slice::from_ref(*other)).await?;
                    }
                    Err(ApiError::from(e))
                }
                Err(e) => Err(write_error(e, meta)),
            }
        }
    })
    .await
}

/// `update<T>(id, …)`: the node as updated.
pub async fn update<R: Record>(req: &Arc<Request>, id: &str, args: Write) -> ApiResult<R> {
    let args = functions::before_update(req, R::META, id, args).await?;
    let perms = req.perms();
    let row = commit(req, WriteUnit::Bounded, || {
        async |tx: &Writes<'_>| update_node(tx, &perms, R::META, id, args.clone()).await
    })
    .await?;
    let row = functions::after(req, R::META, Operation::Update, row).await?;
    Ok(R::decode(&row)?)
}

/// `updateOrCreate<T>(update: {id, …}, create: {…})`: updates the node `id` if it exists,
/// otherwise creates a new node (with a fresh id) from `create`. Returns the node and whether
/// it was created.
pub async fn update_or_create<R: Record>(
    req: &Arc<Request>,
    id: &str,
    update: Write,
    create: Write,
) -> ApiResult<(R, bool)> {
    // The hooks of the write that happens: an update of a node that exists, else a create.
    let hooked = !req.state().service.functions.is_empty();
    let exists = hooked
        && is_valid_id(id)
        && find_by::<R, _>(&req.reads(), R::META.id, &Val::String(id.to_owned()))
            .await?
            .is_some();
    let (update, create) = if !hooked {
        (update, create)
    } else if exists {
        (
            functions::before_update(req, R::META, id, update).await?,
            create,
        )
    } else {
        (
            update,
            functions::before_create(req, R::META, create).await?,
        )
    };
    let perms = req.perms();
    let (row, created) = commit(req, WriteUnit::Bounded, || {
        async |tx: &Writes<'_>| {
            let exists = is_valid_id(id)
                && find_by::<R, _>(tx, R::META.id, &Val::String(id.to_owned()))
                    .await?
                    .is_some();
            if exists {
                let row = update_node(tx, &perms, R::META, id, update.clone()).await?;
                Ok((row, false))
            } else {
                let row = insert_node(tx, &perms, R::META, create.clone(), None).await?;
                Ok((row, true))
            }
        }
    })
    .await?;
    let op = if created {
        Operation::Create
    } else {
        Operation::Update
    };
    let row = functions::after(req, R::META, op, row).await?;
    Ok((R::decode(&row)?, created))
}

/// `delete<T>(id)`: the node as it was.
pub async fn delete<R: Record>(req: &Arc<Request>, id: &str) -> ApiResult<R> {
    let meta = R::META;
    check_id(id)?;
    functions::before_delete(req, meta, id).await?;
    let perms = req.perms();
    let row = commit(req, WriteUnit::Bounded, || {
        async |tx: &Writes<'_>| {
            let node = find_row(tx, meta, meta.id, &Val::String(id.to_owned()))
                .await?
                .ok_or_else(|| not_found(meta, id))?;
            perms.check_delete(tx, meta, &[id]).await?;
            delete_nodes(tx, meta, vec![id.to_owned()]).await?;
            Ok(node)
        }
    })
    .await?;
    let row = functions::after(req, meta, Operation::Delete, row).await?;
    Ok(R::decode(&row)?)
}

/// The ids of the nodes of `meta` a `deleteMany`/`updateMany` filter matches.
async fn matching_ids(
    tx: &Writes<'_>,
    meta: &ModelMeta,
    filter: Option<&Cond>,
) -> ApiResult<Vec<String>> {
    let mut sql = Sql::new(tx.backend());
    push_matching_ids(&mut sql, meta, filter);
    tx.all(sql)
        .await?
        .iter()
        .map(|r| get(r, 0).map_err(ApiError::from))
        .collect()
}

/// Appends `SELECT t0.id FROM <table> AS t0 WHERE <filter>`.
fn push_matching_ids(sql: &mut Sql, meta: &ModelMeta, filter: Option<&Cond>) {
    sql.push("SELECT ")
        .col("t0", meta.fields[meta.id].name)
        .push(" FROM ")
        .ident(meta.table)
        .push(" AS t0 WHERE ");
    match filter {
        Some(f) => render(f, meta, "t0", sql),
        None => {
            sql.push("1=1");
        }
    }
}

/// `deleteMany<Plural>(filter)` (extension): deletes every node of `meta` that matches, following
/// cascades and honouring required relations, in one transaction. Returns how many matched.
pub async fn delete_many(
    req: &Request,
    meta: &'static ModelMeta,
    filter: Option<Cond>,
) -> ApiResult<i32> {
    if let Some(f) = &filter {
        f.check()?;
    }
    let perms = req.perms();
    let count = commit(req, WriteUnit::Unbounded, || {
        async |tx: &Writes<'_>| {
            let ids = matching_ids(tx, meta, filter.as_ref()).await?;
            let count = ids.len();
            let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
            perms.check_delete(tx, meta, &refs).await?;
            delete_nodes(tx, meta, ids).await?;
            Ok(count)
        }
    })
    .await?;
    Ok(i32::try_from(count).unwrap_or(i32::MAX))
}

/// `updateMany<Plural>(filter, data)` (extension): sets the given scalar fields on every node of
/// `meta` that matches, in one statement. Returns how many it changed.
pub async fn update_many(
    req: &Request,
    meta: &'static ModelMeta,
    filter: Option<Cond>,
    data: Vec<(usize, Option<Val>)>,
) -> ApiResult<i32> {
    if let Some(f) = &filter {
        f.check()?;
    }
    check_read_only(meta, &data)?;
    let perms = req.perms();
    let write = Write {
        values: data,
        rels: Vec::new(),
    };
    let count = commit(req, WriteUnit::Unbounded, || {
        async |tx: &Writes<'_>| {
            let ids = match (perms.bypass(), tx.wants(meta)) {
                (true, false) => None,
                _ => Some(matching_ids(tx, meta, filter.as_ref()).await?),
            };
            if let (Some(ids), false) = (&ids, perms.bypass()) {
                let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
                perms.check_write(tx, meta, Some(&refs), &write).await?;
            }
            let sets = scalar_sets(meta, write.values.clone())?;
            // What the nodes held before, for the observers.
            let previous = match (&ids, tx.wants(meta)) {
                (Some(ids), true) => {
                    previous_values(tx, meta, ids.iter().map(String::as_str)).await?
                }
                _ => Vec::new(),
            };
            let mut sql = Sql::new(tx.backend());
            sql.push("UPDATE ").ident(meta.table).push(" SET ");
            push_sets(&mut sql, meta, &sets);
            sql.push(" WHERE ").ident(meta.fields[meta.id].name);
            match &ids {
                // The nodes the filter matched (and whose rows are locked now), not the filter
                // again: the changes list exactly those.
                Some(ids) if tx.wants(meta) => {
                    sql.id_in(ids.iter().map(String::as_str));
                }
                _ => {
                    sql.push(" IN (");
                    push_matching_ids(&mut sql, meta, filter.as_ref());
                    sql.push(")");
                }
            }
            let count = tx.execute(sql).await.map_err(|e| write_error(e, meta))?;
            let fields = supplied(meta, &write.values);
            for (id, values) in previous {
                tx.node(meta, &id, ChangeKind::Updated, fields.clone(), Some(values));
            }
            Ok(count)
        }
    })
    .await?;
    Ok(i32::try_from(count).unwrap_or(i32::MAX))
}

/// Which relation mutation to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelOp {
    /// `addTo<R>` (1:n and n:m relations): adds the edge; a node on the to-one side of a 1:n
    /// relation loses its previous edge.
    AddTo,
    /// `removeFrom<R>` (1:n and n:m relations): removes the edge.
    RemoveFrom,
    /// `set<R>` (1:1 relations): adds the edge, replacing both nodes' previous edges.
    Set,
    /// `unset<R>` (1:1 relations): removes the edge.
    Unset,
}

/// `addTo<R>`, `removeFrom<R>`, `set<R>`, `unset<R>`: `field` is the side-A field of the
/// relation (on `a_meta`); `b_id` is the B node (`<aName>Id`), `a_id` the A node (`<bName>Id`).
/// Returns the rows of the A and B nodes after the change.
pub async fn relate(
    req: &Request,
    a_meta: &'static ModelMeta,
    field: usize,
    op: RelOp,
    b_id: &str,
    a_id: &str,
) -> ApiResult<(Option<Row>, Option<Row>)> {
    let f = &a_meta.relations[field];
    let b_meta = f.target;
    check_id(b_id)?;
    check_id(a_id)?;
    let (b, a) = (b_id.to_owned(), a_id.to_owned());
    let perms = req.perms();
    commit(req, WriteUnit::Bounded, || {
        async |tx: &Writes<'_>| {
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
            let Some(a_node) = find_row(tx, a_meta, a_meta.id, &Val::String(a.clone())).await?
            else {
                return Err(ApiError::NodeNotFound(a.clone()));
            };
            let b_node = find_row(tx, b_meta, b_meta.id, &Val::String(b.clone())).await?;
            Ok((Some(a_node), b_node))
        }
    })
    .await
}

/// The payload whitelist of a create or update: the scalar fields given, plus `id`.
pub fn payload_fields(meta: &'static ModelMeta, write: &Write) -> Vec<&'static str> {
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
