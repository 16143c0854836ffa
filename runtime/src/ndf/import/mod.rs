//! `POST /simple/v1/<id>/import` (reference §8.3): one NDF document written in one
//! transaction, or not at all.
//!
//! The document is read on a blocking thread (`elements`): each element against the model, and what
//! the document alone decides (an id or a unique value given twice, a to-one node given two
//! partners). Then, inside the write transaction (`storage/bulk.rs`), what the database decides:
//! ids and unique values taken already, the nodes that lists and edges name, and the partners
//! to-one sides have. The answer lists every failing element with its `index`; when there is one,
//! the transaction is rolled back and nothing is written. Checking inside the transaction means no
//! other write can slip in between a check and the write it allows.
//!
//! Imports bypass permissions and fire no events (§8.3); lists are appended to what the node
//! holds, an edge that exists already is skipped.

mod elements;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use self::elements::{Document, Edge, Failures, ListAppend, NodeRow, Parsed};
use crate::engine::{MAX_TEXT_CHARS, State};
use crate::model::{ApiError, RelFieldMeta, ServiceMeta, Val};
use crate::storage::bulk::{self as store, Writes};
use crate::storage::{Counted, Counter, Tx, WriteUnit};

/// One element that cannot be imported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    /// The element's position in the document's `values`, from 0.
    pub index: usize,
    /// Why the element cannot be imported.
    pub message: String,
}

/// Why a whole request was refused (the reference's `{code?, requestId, error}` envelope).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestError(pub String);

/// Imports the NDF document `body`: `Ok([])` when every element was written, the failures
/// (nothing written) otherwise.
pub async fn import(
    state: &Arc<State>,
    counter: &Arc<Counter>,
    body: bytes::Bytes,
) -> Result<Vec<Failure>, RequestError> {
    let service = state.service;
    let parsed = tokio::task::spawn_blocking(move || elements::parse(service, &body))
        .await
        .map_err(|e| RequestError(format!("the import stopped: {e}")))??;
    let failed = |e: sea_orm::DbErr| RequestError(format!("the import failed: {e}"));
    let tx = state
        .db
        .begin_write(WriteUnit::Bounded)
        .await
        .map_err(failed)?;
    let counter = counter.clone();
    tx.drive(move |tx| apply(service, counter, tx, parsed))
        .await
        .map_err(failed)
}

/// Checks `parsed` against the database and writes it, in `tx`.
async fn apply(
    service: &'static ServiceMeta,
    counter: Arc<Counter>,
    tx: Tx,
    parsed: Parsed,
) -> Result<Vec<Failure>, sea_orm::DbErr> {
    let Parsed {
        document,
        mut failures,
    } = parsed;
    let writes = Counted {
        conn: &tx,
        counter: &counter,
    };
    match &document {
        Document::Nodes(rows) => nodes(service, &writes, rows, &mut failures).await?,
        Document::Lists(appends) => lists(&writes, appends, &mut failures).await?,
        Document::Relations(edges) => relations(service, &writes, edges, &mut failures).await?,
    }
    if !failures.is_empty() {
        // Dropping the transaction rolls it back.
        return Ok(failures.into_sorted());
    }
    tx.commit().await?;
    Ok(Vec::new())
}

async fn nodes(
    service: &'static ServiceMeta,
    tx: &Writes<'_>,
    rows: &[NodeRow],
    failures: &mut Failures,
) -> Result<(), sea_orm::DbErr> {
    // No node of another model has one of the ids (an id names one node of the service; the
    // model's own ids are its table's key, which the inserts below check).
    for meta in service.models {
        let others: Vec<&NodeRow> = rows
            .iter()
            .filter(|r| !std::ptr::eq(r.meta, *meta))
            .collect();
        if others.is_empty() {
            continue;
        }
        let ids: Vec<Val> = others.iter().map(|r| Val::String(r.id.clone())).collect();
        let ids: Vec<&Val> = ids.iter().collect();
        for i in store::present_ids(tx, meta, &ids).await? {
            failures.add(
                others[i].index,
                format!(
                    "a node with the id `{}` exists already (a {})",
                    others[i].id, meta.name
                ),
            );
        }
    }
    let mut by_model: BTreeMap<&'static str, Vec<&NodeRow>> = BTreeMap::new();
    for row in rows {
        by_model.entry(row.meta.name).or_default().push(row);
    }
    for group in by_model.values() {
        let meta = group[0].meta;
        let values: Vec<&[Val]> = group.iter().map(|r| r.values.as_slice()).collect();
        let skipped = store::insert_nodes(tx, meta, &values).await?;
        if skipped.is_empty() {
            continue;
        }
        // Each row the table refused takes an id or a unique value a node has already (one
        // the document gives twice has its failure already).
        let failed: BTreeSet<usize> = failures.0.iter().map(|f| f.index).collect();
        let refused: Vec<&NodeRow> = skipped
            .iter()
            .map(|&i| group[i])
            .filter(|r| !failed.contains(&r.index))
            .collect();
        let mut told = BTreeSet::new();
        let ids: Vec<Val> = refused.iter().map(|r| Val::String(r.id.clone())).collect();
        let ids: Vec<&Val> = ids.iter().collect();
        for i in store::present(tx, meta, meta.id, &ids).await? {
            told.insert(i);
            failures.add(
                refused[i].index,
                format!(
                    "a node with the id `{}` exists already (a {})",
                    refused[i].id, meta.name
                ),
            );
        }
        for (field, f) in meta.fields.iter().enumerate() {
            if !f.unique || field == meta.id || f.list {
                continue;
            }
            let mine: Vec<usize> = (0..refused.len())
                .filter(|&i| !refused[i].values[field].is_null())
                .collect();
            let values: Vec<&Val> = mine.iter().map(|&i| &refused[i].values[field]).collect();
            for j in store::present(tx, meta, field, &values).await? {
                told.insert(mine[j]);
                failures.add(
                    refused[mine[j]].index,
                    format!(
                        "`{}.{}` is unique, and a node has the value {} already",
                        meta.name,
                        f.name,
                        values[j].to_json()
                    ),
                );
            }
        }
        // Refused for a reason neither look-up found: the database's own word.
        for (i, row) in refused.iter().enumerate() {
            if !told.contains(&i) {
                failures.add(row.index, "the node could not be written");
            }
        }
    }
    Ok(())
}

async fn lists(
    tx: &Writes<'_>,
    appends: &[ListAppend],
    failures: &mut Failures,
) -> Result<(), sea_orm::DbErr> {
    // Per model and list field, every node's new items as the text of a JSON array.
    let mut groups: BTreeMap<(&'static str, usize), Vec<&ListAppend>> = BTreeMap::new();
    for append in appends {
        groups
            .entry((append.meta.name, append.field))
            .or_default()
            .push(append);
    }
    for group in groups.values() {
        let (meta, field) = (group[0].meta, group[0].field);
        let f = &meta.fields[field];
        // Nothing to append: the node must exist all the same.
        let empty: Vec<&ListAppend> = group
            .iter()
            .copied()
            .filter(|a| a.items.is_empty())
            .collect();
        if !empty.is_empty() {
            let ids: Vec<Val> = empty.iter().map(|a| Val::String(a.id.clone())).collect();
            let ids: Vec<&Val> = ids.iter().collect();
            let found: BTreeSet<usize> = store::present(tx, meta, meta.id, &ids)
                .await?
                .into_iter()
                .collect();
            for (i, append) in empty.iter().enumerate() {
                if !found.contains(&i) {
                    failures.add(
                        append.index,
                        format!("there is no {} with the id `{}`", meta.name, append.id),
                    );
                }
            }
        }
        let full: Vec<&ListAppend> = group
            .iter()
            .copied()
            .filter(|a| !a.items.is_empty())
            .collect();
        let lists: Vec<(&str, String)> = full
            .iter()
            .map(|a| {
                let items = Value::Array(a.items.iter().map(Val::to_json).collect());
                (a.id.as_str(), items.to_string())
            })
            .collect();
        let appended = store::append_lists(tx, meta, field, &lists, MAX_TEXT_CHARS).await?;
        for i in appended.missing {
            failures.add(
                full[i].index,
                format!("there is no {} with the id `{}`", meta.name, full[i].id),
            );
        }
        for i in appended.too_long {
            failures.add(full[i].index, ApiError::ValueTooLong(f.name).message());
        }
    }
    Ok(())
}

async fn relations(
    service: &'static ServiceMeta,
    tx: &Writes<'_>,
    edges: &[Edge],
    failures: &mut Failures,
) -> Result<(), sea_orm::DbErr> {
    if !failures.is_empty() {
        // The document has failures already: its edges are only checked, not inserted.
        return check_edges(service, tx, edges.iter().collect(), failures).await;
    }
    // The edges per field (the join table and its columns), symmetric ones both ways.
    let mut by_field: BTreeMap<usize, (&'static RelFieldMeta, Vec<_>, Vec<&Edge>)> =
        BTreeMap::new();
    for edge in edges {
        let key = std::ptr::from_ref(edge.field) as usize;
        let (_, pairs, owners) = by_field
            .entry(key)
            .or_insert_with(|| (edge.field, Vec::new(), Vec::new()));
        pairs.push((edge.this.as_str(), edge.other.as_str()));
        owners.push(edge);
        if edge.field.symmetric && edge.this != edge.other {
            pairs.push((edge.other.as_str(), edge.this.as_str()));
            owners.push(edge);
        }
    }
    // Edges not inserted exist already, or give a to-one side a second partner, or name a
    // node that does not exist: the checks tell which.
    let mut skipped: Vec<&Edge> = Vec::new();
    for (field, pairs, owners) in by_field.values() {
        for i in store::insert_edges(tx, field, pairs).await? {
            skipped.push(owners[i]);
        }
    }
    check_edges(service, tx, skipped, failures).await
}

/// The nodes of one relation side that the edges give a partner: node → (partner, element).
type Partnered<'a> = HashMap<&'a str, (&'a str, usize)>;

/// The failures of `edges`: nodes that do not exist, and to-one sides that have another
/// partner in the database.
async fn check_edges(
    service: &'static ServiceMeta,
    tx: &Writes<'_>,
    edges: Vec<&Edge>,
    failures: &mut Failures,
) -> Result<(), sea_orm::DbErr> {
    // Both nodes of every edge exist.
    let mut wanted: BTreeMap<&'static str, BTreeSet<&str>> = BTreeMap::new();
    let mut models = BTreeMap::new();
    for edge in &edges {
        for (meta, id) in [
            (edge.this_model, &edge.this),
            (edge.field.target, &edge.other),
        ] {
            models.insert(meta.name, meta);
            wanted.entry(meta.name).or_default().insert(id.as_str());
        }
    }
    let mut found: BTreeSet<(&'static str, &str)> = BTreeSet::new();
    for (name, ids) in &wanted {
        let meta = models[name];
        let vals: Vec<Val> = ids.iter().map(|id| Val::String((*id).to_owned())).collect();
        let vals: Vec<&Val> = vals.iter().collect();
        let ids: Vec<&str> = ids.iter().copied().collect();
        for i in store::present(tx, meta, meta.id, &vals).await? {
            found.insert((*name, ids[i]));
        }
    }
    for edge in &edges {
        for (meta, id) in [
            (edge.this_model, &edge.this),
            (edge.field.target, &edge.other),
        ] {
            if !found.contains(&(meta.name, id.as_str())) {
                failures.add(
                    edge.index,
                    format!("there is no {} with the id `{id}`", meta.name),
                );
            }
        }
    }
    // The partners the to-one sides have in the database: one look-up per relation side.
    let mut sides: BTreeMap<(usize, &'static str), Partnered<'_>> = BTreeMap::new();
    for edge in &edges {
        for (to_one, column, node, other) in edge.to_one_sides() {
            if to_one {
                sides
                    .entry((edge.field.relation, column))
                    .or_default()
                    .entry(node)
                    .or_insert((other, edge.index));
            }
        }
    }
    for ((relation, column), nodes) in &sides {
        let rel = &service.relations[*relation];
        let other_column = if *column == "A" { "B" } else { "A" };
        let list: Vec<&str> = nodes.keys().copied().collect();
        for (node, has) in store::partners(tx, rel.table, column, other_column, &list).await? {
            if let Some((other, index)) = nodes.get(node.as_str())
                && has != *other
            {
                failures.add(
                    *index,
                    format!(
                        "`{node}` can have one partner in relation `{}`, and it has `{has}` already",
                        rel.name
                    ),
                );
            }
        }
    }
    Ok(())
}
