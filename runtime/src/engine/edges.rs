//! Relation edges inside a mutation's transaction: connecting (with the reference's "steal"
//! semantics on to-one sides), disconnecting, existence checks, required-relation checks (3032)
//! and deletes that follow `onDelete: CASCADE`.
//!
//! Edges live in the relation's join table; a relation field reads column `own` for its node and
//! `other` for the related node. A self relation declared on one field stores each edge in both
//! directions, so reading `own → other` sees it from either node.

use std::collections::BTreeSet;

use super::commit::{ChangeKind, Writes};
use crate::model::{
    ApiError, ApiResult, ModelMeta, RelFieldMeta, Val, get, is_valid_id, node_values,
};
use crate::query::select::push_returning;
pub use crate::storage::layout::push_edge_insert;
use crate::storage::{Row, Sql};

/// Rows per multi-row `INSERT` (three parameters each, far below every placeholder limit).
const INSERT_CHUNK: usize = 500;

/// 3001 for a malformed id.
pub fn check_id(id: &str) -> ApiResult<()> {
    if is_valid_id(id) {
        Ok(())
    } else {
        Err(ApiError::IdIsInvalid(id.to_owned()))
    }
}

/// Checks that every id names a node of `meta`: 3001 for a malformed id, 3011 for the first
/// unknown one.
pub(crate) async fn verify_exist(
    tx: &Writes<'_>,
    meta: &ModelMeta,
    ids: &[String],
) -> ApiResult<()> {
    if ids.is_empty() {
        return Ok(());
    }
    for id in ids {
        check_id(id)?;
    }
    let id_col = meta.fields[meta.id].name;
    let mut sql = Sql::new(tx.backend());
    sql.push("SELECT ")
        .ident(id_col)
        .push(" FROM ")
        .ident(meta.table)
        .push(" WHERE ")
        .ident(id_col);
    sql.id_in(ids.iter().map(String::as_str));
    let found = column_strings(tx.all(sql).await?)?;
    match ids.iter().find(|id| !found.contains(*id)) {
        Some(missing) => Err(ApiError::NodeDoesNotExist(missing.clone())),
        None => Ok(()),
    }
}

/// The first column of every row, as strings.
fn column_strings(rows: Vec<Row>) -> ApiResult<BTreeSet<String>> {
    rows.iter()
        .map(|r| get(r, 0).map_err(ApiError::from))
        .collect()
}

/// The `(own, other)` column pairs the edges of `field` are stored under: both orders for a
/// symmetric relation, whose edges exist in both directions.
fn directions(field: &RelFieldMeta) -> Vec<(&'static str, &'static str)> {
    let mut out = vec![(field.own, field.other)];
    if field.symmetric {
        out.push((field.other, field.own));
    }
    out
}

/// Deletes the edges of `this` through `field` whose other end is not in `keep`, and returns the
/// nodes it was connected to.
async fn unlink_except(
    tx: &Writes<'_>,
    field: &RelFieldMeta,
    this: &str,
    keep: &[String],
) -> ApiResult<BTreeSet<String>> {
    let mut removed = BTreeSet::new();
    for (own, other) in directions(field) {
        let mut sql = Sql::new(tx.backend());
        sql.push("DELETE FROM ")
            .ident(field.table)
            .push(" WHERE ")
            .ident(own)
            .push(" = ")
            .bind(this.into())
            .push(" AND ")
            .ident(other)
            .push(" NOT")
            .id_in(keep.iter().map(String::as_str));
        sql.push(" RETURNING ").ident(other);
        removed.extend(column_strings(tx.all(sql).await?)?);
    }
    tx.edges(field, this, removed.iter().map(String::as_str), false);
    Ok(removed)
}

/// Deletes the edges that connect any of `others` through `field`'s back side to a node other
/// than `this`, and returns those nodes.
async fn unlink_others(
    tx: &Writes<'_>,
    field: &RelFieldMeta,
    this: &str,
    others: &[String],
) -> ApiResult<BTreeSet<String>> {
    let mut removed = BTreeSet::new();
    for (own, other) in directions(field) {
        let mut sql = Sql::new(tx.backend());
        sql.push("DELETE FROM ")
            .ident(field.table)
            .push(" WHERE ")
            .ident(other)
            .id_in(others.iter().map(String::as_str))
            .push(" AND ")
            .ident(own)
            .push(" <> ")
            .bind(this.into())
            .push(" RETURNING ")
            .ident(own);
        if tx.observed() {
            sql.push(", ").ident(other);
        }
        for row in tx.all(sql).await? {
            let owner: String = get(&row, 0)?;
            // A symmetric relation's edge is stored both ways: listed once, as the first
            // direction removed it.
            if tx.observed() && own == field.own {
                let partner: String = get(&row, 1)?;
                tx.edges(field, &owner, [partner.as_str()], false);
            }
            removed.insert(owner);
        }
    }
    Ok(removed)
}

/// Inserts the edges `this → other` (and the mirrored ones of a symmetric relation); an edge
/// that exists already is left alone.
async fn link(
    tx: &Writes<'_>,
    field: &RelFieldMeta,
    this: &str,
    others: &[String],
) -> ApiResult<()> {
    let mut pairs: Vec<(&str, &str)> = others.iter().map(|o| (this, o.as_str())).collect();
    if field.symmetric {
        pairs.extend(others.iter().map(|o| (o.as_str(), this)));
    }
    for chunk in pairs.chunks(INSERT_CHUNK) {
        let mut sql = Sql::new(tx.backend());
        push_edge_insert(&mut sql, field);
        sql.push(" VALUES ");
        sql.join(chunk, ", ", |s, (own, other)| {
            s.push("(")
                .bind((*own).into())
                .push(", ")
                .bind((*other).into())
                .push(")");
        });
        sql.push(" ON CONFLICT DO NOTHING");
        if !tx.observed() {
            tx.execute(sql).await?;
            continue;
        }
        // The edges inserted (not those that existed), each once for a symmetric relation.
        sql.push(" RETURNING ")
            .ident(field.own)
            .push(", ")
            .ident(field.other);
        for row in tx.all(sql).await? {
            let (own, other): (String, String) = (get(&row, 0)?, get(&row, 1)?);
            if own == this || !field.symmetric {
                tx.edges(field, &own, [other.as_str()], true);
            }
        }
    }
    Ok(())
}

/// Whether connecting `this` through `meta.relations[field]` only adds edges (no previous edge
/// to steal on either side): a list field or a node inserted by this mutation (`fresh`), whose
/// partners' back field is a list, in a relation that is not symmetric.
pub fn only_links(meta: &ModelMeta, field: usize, fresh: bool) -> bool {
    let f = &meta.relations[field];
    (f.list || fresh) && f.back_field().list && !f.symmetric
}

/// Inserts the edge between `this` and `other` if the node `other` exists, in one statement;
/// `false` when nothing was inserted (`other` does not exist, or the edge already did). For
/// connections [`only_links`] allows.
pub(crate) async fn link_if_exists(
    tx: &Writes<'_>,
    field: &RelFieldMeta,
    this: &str,
    other: &str,
) -> ApiResult<bool> {
    let target = field.target;
    let id = target.fields[target.id].name;
    let mut sql = Sql::new(tx.backend());
    push_edge_insert(&mut sql, field);
    sql.push(" SELECT ")
        .bind(this.into())
        .push(", t.")
        .ident(id)
        .push(" FROM ")
        .ident(target.table)
        .push(" AS t WHERE t.")
        .ident(id)
        .push(" = ")
        .bind(other.into())
        .push(" ON CONFLICT DO NOTHING");
    let linked = tx.execute(sql).await? == 1;
    if linked {
        tx.edges(field, this, [other], true);
    }
    Ok(linked)
}

/// Connects `this` (a node of `meta`) to `others` through `meta.relations[field]`. A to-one side
/// keeps one partner: the previous edge is removed first ("steal"), and 3032 if that leaves a
/// required to-one field without its node. `fresh`: `this` was inserted by the same mutation,
/// so it has no previous edge through `field` to remove.
pub(crate) async fn connect(
    tx: &Writes<'_>,
    meta: &'static ModelMeta,
    field: usize,
    this: &str,
    others: &[String],
    fresh: bool,
) -> ApiResult<()> {
    let f = &meta.relations[field];
    let back = f.back_field();
    let Some(last) = others.last() else {
        return Ok(());
    };
    // A to-one field connects one node: with several, the last one stays.
    let others = if f.list {
        others
    } else {
        std::slice::from_ref(last)
    };
    // A node inserted by this mutation has no edge through `field` yet (the field a nested
    // create comes through is never among its own arguments), so there is nothing to unlink.
    if !f.list && !fresh {
        let removed = unlink_except(tx, f, this, others).await?;
        if back.required && !removed.is_empty() {
            return Err(required(back, f.target));
        }
    }
    if !back.list {
        let removed = unlink_others(tx, f, this, others).await?;
        if f.required && !removed.is_empty() {
            return Err(required(f, meta));
        }
    }
    link(tx, f, this, others).await
}

/// Removes every edge of `this` through `meta.relations[field]` except those to `keep` (the
/// replace step of an update); 3032 if a removed node's back field is required.
pub(crate) async fn disconnect_except(
    tx: &Writes<'_>,
    meta: &'static ModelMeta,
    field: usize,
    this: &str,
    keep: &[String],
) -> ApiResult<()> {
    let f = &meta.relations[field];
    let back = f.back_field();
    let removed = unlink_except(tx, f, this, keep).await?;
    if back.required && !back.list && !removed.is_empty() {
        return Err(required(back, f.target));
    }
    Ok(())
}

/// Removes the edge between `this` and `other` (both directions for a symmetric relation).
pub(crate) async fn disconnect_pair(
    tx: &Writes<'_>,
    field: &RelFieldMeta,
    this: &str,
    other: &str,
) -> ApiResult<()> {
    let mut sql = Sql::new(tx.backend());
    sql.push("DELETE FROM ")
        .ident(field.table)
        .push(" WHERE (")
        .ident(field.own)
        .push(" = ")
        .bind(this.into())
        .push(" AND ")
        .ident(field.other)
        .push(" = ")
        .bind(other.into())
        .push(")");
    if field.symmetric {
        sql.push(" OR (")
            .ident(field.own)
            .push(" = ")
            .bind(other.into())
            .push(" AND ")
            .ident(field.other)
            .push(" = ")
            .bind(this.into())
            .push(")");
    }
    if tx.execute(sql).await? > 0 {
        tx.edges(field, this, [other], false);
    }
    Ok(())
}

fn required(field: &RelFieldMeta, model: &ModelMeta) -> ApiError {
    ApiError::RelationIsRequired {
        field: field.name,
        model: model.name,
    }
}

/// The nodes one delete removes, per model.
struct Doomed(Vec<(&'static ModelMeta, BTreeSet<String>)>);

impl Doomed {
    fn ids(&mut self, meta: &'static ModelMeta) -> &mut BTreeSet<String> {
        let pos = match self.0.iter().position(|(m, _)| std::ptr::eq(*m, meta)) {
            Some(pos) => pos,
            None => {
                self.0.push((meta, BTreeSet::new()));
                self.0.len() - 1
            }
        };
        &mut self.0[pos].1
    }

    fn get(&self, meta: &ModelMeta) -> Option<&BTreeSet<String>> {
        self.0
            .iter()
            .find(|(m, _)| std::ptr::eq(*m, meta))
            .map(|(_, ids)| ids)
    }
}

/// Deletes the nodes `ids` of `meta` and, through `onDelete: CASCADE` fields, the nodes they
/// take with them. Fails with 3032 when a surviving node would lose a required to-one partner.
/// Edges go with their nodes (the join tables' foreign keys cascade).
pub(crate) async fn delete_nodes(
    tx: &Writes<'_>,
    meta: &'static ModelMeta,
    ids: Vec<String>,
) -> ApiResult<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let mut doomed = Doomed(Vec::new());
    doomed.ids(meta).extend(ids.iter().cloned());
    // The cascade graph over types is a forest (checked at build time), so this terminates.
    let mut frontier: Vec<(&'static ModelMeta, Vec<String>)> = vec![(meta, ids)];
    while let Some((m, ids)) = frontier.pop() {
        for f in m.relations.iter().filter(|f| f.cascade) {
            let partners = partners(tx, f, &ids, None).await?;
            let known = doomed.ids(f.target);
            let new: Vec<String> = partners
                .into_iter()
                .filter(|p| known.insert(p.clone()))
                .collect();
            if !new.is_empty() {
                frontier.push((f.target, new));
            }
        }
    }
    for (m, ids) in &doomed.0 {
        let ids: Vec<String> = ids.iter().cloned().collect();
        for f in m.relations {
            let back = f.back_field();
            if back.list || !back.required {
                continue;
            }
            let spared = doomed.get(f.target);
            let survivors = partners(tx, f, &ids, spared).await?;
            if !survivors.is_empty() {
                return Err(required(back, f.target));
            }
        }
    }
    for (m, ids) in &doomed.0 {
        let id_col = m.fields[m.id].name;
        let mut sql = Sql::new(tx.backend());
        sql.push("DELETE FROM ")
            .ident(m.table)
            .push(" WHERE ")
            .ident(id_col)
            .id_in(ids.iter().map(String::as_str));
        if !tx.reports(m, ChangeKind::Deleted) {
            tx.execute(sql).await?;
            continue;
        }
        // What the deleted nodes held, for the observers, in the order of their ids.
        push_returning(&mut sql, m);
        let mut deleted = Vec::with_capacity(ids.len());
        for row in tx.all(sql).await? {
            let previous = node_values(m, &row)?;
            let Val::String(id) = &previous[m.id] else {
                return Err(ApiError::Internal("a deleted node without id".into()));
            };
            deleted.push((id.clone(), previous));
        }
        deleted.sort_by(|a, b| a.0.cmp(&b.0));
        for (id, previous) in deleted {
            tx.node(m, &id, ChangeKind::Deleted, Vec::new(), Some(previous));
        }
    }
    Ok(())
}

/// The nodes connected to any of `ids` through `field`, leaving out `except`.
async fn partners(
    tx: &Writes<'_>,
    field: &RelFieldMeta,
    ids: &[String],
    except: Option<&BTreeSet<String>>,
) -> ApiResult<BTreeSet<String>> {
    let mut sql = Sql::new(tx.backend());
    sql.push("SELECT DISTINCT ")
        .ident(field.other)
        .push(" FROM ")
        .ident(field.table)
        .push(" WHERE ")
        .ident(field.own)
        .id_in(ids.iter().map(String::as_str));
    if let Some(except) = except {
        sql.push(" AND ")
            .ident(field.other)
            .push(" NOT")
            .id_in(except.iter().map(String::as_str));
    }
    column_strings(tx.all(sql).await?)
}
