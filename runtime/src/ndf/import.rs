//! `POST /simple/v1/<id>/import` (reference §8.3): one NDF document written in one
//! transaction, or not at all.
//!
//! Every element is checked before anything is written: its type, id and fields against the
//! model, ids and unique values against each other and the database, the nodes that lists and
//! edges name, and the to-one sides of edges. The answer lists every failing element with its
//! `index`; when there is one, nothing is written. Imports bypass permissions and fire no
//! events (§8.3); lists are appended to what the node holds, an edge that exists already is
//! skipped.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::engine::edges::push_edge_insert;
use crate::engine::{State, check_value, truncate_now};
use crate::model::{
    Cells, FieldMeta, Kind, ModelMeta, RelFieldMeta, ServiceMeta, Val, cuid, is_valid_id,
    node_values, parse_datetime,
};
use crate::query::select::push_select;
use crate::storage::{Counted, Counter, Sql, Tx, WriteUnit, to_db};

/// One element that cannot be imported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    pub index: usize,
    pub message: String,
}

/// Why a whole request was refused (the reference's `{code?, requestId, error}` envelope).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestError(pub String);

/// Parameters per statement (every database takes at least 32 766).
const MAX_PARAMS: usize = 30_000;

/// Lists written per `UPDATE` (two parameters each).
const LISTS_PER_UPDATE: usize = 5000;

/// Edges per multi-row `INSERT` (three parameters each).
const EDGES_PER_INSERT: usize = 1000;

/// Imports the NDF document `body`: `Ok([])` when every element was written, the failures
/// (nothing written) otherwise.
pub async fn import(
    state: &Arc<State>,
    counter: &Arc<Counter>,
    body: &[u8],
) -> Result<Vec<Failure>, RequestError> {
    // Elements are parsed one at a time (the document is kept as its text), so an import holds
    // the body and what its checked elements become, not a parsed tree of the whole document.
    let document: Document<'_> = serde_json::from_slice(body)
        .map_err(|e| RequestError(format!("the body is not a JSON document: {e}")))?;
    let value_type = document
        .value_type
        .as_ref()
        .and_then(Value::as_str)
        .ok_or_else(|| RequestError("the body has no `valueType`".to_owned()))?;
    let values: Vec<&RawValue> = document
        .values
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .ok_or_else(|| RequestError("the body has no `values` list".to_owned()))?;
    let values = Elements(values);
    let importer = Importer {
        state,
        counter,
        service: state.service,
    };
    let result = match value_type {
        "nodes" => importer.nodes(&values).await,
        "lists" => importer.lists(&values).await,
        "relations" => importer.relations(&values).await,
        other => {
            return Err(RequestError(format!(
                "unknown valueType `{other}` (nodes, lists or relations)"
            )));
        }
    };
    result.map_err(|e| RequestError(format!("the import failed: {e}")))
}

/// An NDF document with its elements unparsed.
#[derive(serde::Deserialize)]
struct Document<'a> {
    #[serde(rename = "valueType")]
    value_type: Option<Value>,
    #[serde(borrow, default)]
    values: Option<&'a RawValue>,
}

/// A document's elements, each parsed when it is read.
struct Elements<'a>(Vec<&'a RawValue>);

impl Elements<'_> {
    /// `(index, element)` for every element, parsed one at a time.
    fn iter(&self) -> impl Iterator<Item = (usize, Value)> + '_ {
        self.0
            .iter()
            .map(|raw| serde_json::from_str(raw.get()).unwrap_or(Value::Null))
            .enumerate()
    }
}

struct Importer<'a> {
    state: &'a Arc<State>,
    counter: &'a Arc<Counter>,
    service: &'static ServiceMeta,
}

/// Failures so far.
#[derive(Default)]
struct Failures(Vec<Failure>);

impl Failures {
    fn add(&mut self, index: usize, message: impl Into<String>) {
        self.0.push(Failure {
            index,
            message: message.into(),
        });
    }

    fn into_sorted(mut self) -> Vec<Failure> {
        self.0.sort_by_key(|f| f.index);
        self.0
    }
}

/// A node element, checked: its model and a value per field.
struct NodeRow {
    index: usize,
    meta: &'static ModelMeta,
    values: Vec<Val>,
}

/// The model named `name`, matched case-insensitively as the original did.
fn model_named(service: &ServiceMeta, name: &str) -> Option<&'static ModelMeta> {
    service
        .models
        .iter()
        .copied()
        .find(|m| m.name == name)
        .or_else(|| {
            service
                .models
                .iter()
                .copied()
                .find(|m| m.name.eq_ignore_ascii_case(name))
        })
}

/// `_typeName` and `id` of an element.
fn type_and_id(
    service: &ServiceMeta,
    element: &serde_json::Map<String, Value>,
) -> Result<(&'static ModelMeta, String), String> {
    let name = element
        .get("_typeName")
        .and_then(Value::as_str)
        .ok_or("the element has no `_typeName`")?;
    let meta = model_named(service, name).ok_or_else(|| format!("unknown `_typeName` `{name}`"))?;
    let id = match element.get("id") {
        Some(Value::String(id)) => id.clone(),
        Some(other) => return Err(format!("`id` must be a string, not {other}")),
        None => return Err("the element has no `id`".to_owned()),
    };
    if !is_valid_id(&id) {
        return Err(format!(
            "`{id}` is not a valid id (1 to 25 letters, digits, `-` or `_`)"
        ));
    }
    Ok((meta, id))
}

/// One value of `field` (a list's item when `field.list`) from its JSON.
fn value_of(meta: &ModelMeta, field: &FieldMeta, value: &Value) -> Result<Val, String> {
    let wrong = |expected: &str| {
        format!(
            "`{}.{}` expects {expected}, not {value}",
            meta.name, field.name
        )
    };
    match (field.kind, value) {
        (Kind::String | Kind::Id, Value::String(s)) => Ok(Val::String(s.clone())),
        (Kind::String | Kind::Id, _) => Err(wrong("a string")),
        (Kind::Int, Value::Number(n)) => n
            .as_i64()
            .and_then(|i| i32::try_from(i).ok())
            .map(Val::Int)
            .ok_or_else(|| wrong("a 32-bit integer")),
        (Kind::Int, _) => Err(wrong("an integer")),
        (Kind::Float, Value::Number(n)) => {
            n.as_f64().map(Val::Float).ok_or_else(|| wrong("a number"))
        }
        (Kind::Float, _) => Err(wrong("a number")),
        (Kind::Boolean, Value::Bool(b)) => Ok(Val::Bool(*b)),
        (Kind::Boolean, _) => Err(wrong("true or false")),
        (Kind::DateTime, Value::String(s)) => {
            parse_datetime(s).map(Val::DateTime).ok_or_else(|| {
                wrong("a date-time (`2017-11-29T14:35:13.000Z` or `2017-11-29 14:35:13`)")
            })
        }
        (Kind::DateTime, _) => Err(wrong("a date-time text")),
        (Kind::Enum, Value::String(s)) if field.enum_values.contains(&s.as_str()) => {
            Ok(Val::Enum(s.clone()))
        }
        (Kind::Enum, _) => Err(wrong(&format!("one of {}", field.enum_values.join(", ")))),
        // Json as a string holding JSON (the reference), or as the JSON itself (an export's).
        (Kind::Json, Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(json @ (Value::Object(_) | Value::Array(_))) => Ok(Val::Json(json)),
            _ => Err(wrong("a JSON object or array (or a string holding one)")),
        },
        (Kind::Json, json @ (Value::Object(_) | Value::Array(_))) => Ok(Val::Json(json.clone())),
        (Kind::Json, _) => Err(wrong("a JSON object or array (or a string holding one)")),
        (Kind::Relation, _) => Err(format!("`{}.{}` is a relation", meta.name, field.name)),
    }
}

impl Importer<'_> {
    fn backend(&self) -> crate::storage::Backend {
        self.state.db.backend()
    }

    async fn begin(&self) -> Result<Tx, sea_orm::DbErr> {
        self.state.db.begin_write(WriteUnit::Unbounded).await
    }

    fn counted<'t>(&'t self, tx: &'t Tx) -> Counted<'t, Tx> {
        Counted {
            conn: tx,
            counter: self.counter,
        }
    }

    /// Of `ids`, those that name a node of `meta` in the database.
    async fn existing(
        &self,
        meta: &ModelMeta,
        ids: &BTreeSet<String>,
    ) -> Result<BTreeSet<String>, sea_orm::DbErr> {
        self.column_in(
            meta,
            meta.id,
            ids.iter().map(|id| Val::String(id.clone())).collect(),
        )
        .await
        .map(|found| found.into_iter().collect())
    }

    /// The values of column `field` of `meta` among `values` (as text).
    async fn column_in(
        &self,
        meta: &ModelMeta,
        field: usize,
        values: Vec<Val>,
    ) -> Result<Vec<String>, sea_orm::DbErr> {
        let f = &meta.fields[field];
        let mut found = Vec::new();
        let reads = Counted {
            conn: self.state.db.reader(),
            counter: self.counter,
        };
        for chunk in values.chunks(MAX_PARAMS / 2) {
            let mut sql = Sql::new(self.backend());
            sql.push("SELECT ")
                .select_field(f)
                .push(" FROM ")
                .ident(meta.table)
                .push(" WHERE ")
                .ident(f.name)
                .push(" IN (");
            sql.join(chunk, ", ", |s, v| {
                s.param(v, f);
            });
            sql.push(")");
            for row in reads.all(sql).await? {
                if let Some(text) = row.string(0)? {
                    found.push(text);
                }
            }
        }
        Ok(found)
    }

    async fn nodes(&self, values: &Elements<'_>) -> Result<Vec<Failure>, sea_orm::DbErr> {
        let mut failures = Failures::default();
        let mut rows = Vec::new();
        let now = Val::DateTime(truncate_now());
        for (index, element) in values.iter() {
            match self.node_row(index, &element, &now) {
                Ok(row) => rows.push(row),
                Err(message) => failures.add(index, message),
            }
        }
        // Ids: once in the request, and no node of any model has them already (an id names
        // one node of the service).
        let mut seen: HashMap<String, usize> = HashMap::new();
        for row in &rows {
            let id = id_text(row);
            if let Some(first) = seen.insert(id.clone(), row.index) {
                failures.add(
                    row.index,
                    format!(
                        "the id `{id}` is given twice (elements {first} and {})",
                        row.index
                    ),
                );
            }
        }
        let ids: BTreeSet<String> = rows.iter().map(id_text).collect();
        if !ids.is_empty() {
            for meta in self.service.models {
                let taken = self.existing(meta, &ids).await?;
                for row in rows.iter().filter(|r| taken.contains(&id_text(r))) {
                    failures.add(
                        row.index,
                        format!(
                            "a node with the id `{}` exists already (a {})",
                            id_text(row),
                            meta.name
                        ),
                    );
                }
            }
        }
        // Unique fields: once in the request, and not taken in the database.
        for meta in self.service.models {
            for (field_index, field) in meta.fields.iter().enumerate() {
                if !field.unique || field_index == meta.id || field.list {
                    continue;
                }
                let mine: Vec<&NodeRow> = rows
                    .iter()
                    .filter(|r| std::ptr::eq(r.meta, *meta) && !r.values[field_index].is_null())
                    .collect();
                if mine.is_empty() {
                    continue;
                }
                let key = |r: &NodeRow| unique_key(field, &r.values[field_index]);
                let mut seen: HashMap<String, usize> = HashMap::new();
                for row in &mine {
                    if let Some(first) = seen.insert(key(row), row.index) {
                        failures.add(
                            row.index,
                            format!(
                                "`{}.{}` is unique, and element {first} has the same value",
                                meta.name, field.name
                            ),
                        );
                    }
                }
                let values = mine.iter().map(|r| r.values[field_index].clone()).collect();
                let taken: BTreeSet<String> = self
                    .column_in(meta, field_index, values)
                    .await?
                    .iter()
                    .map(|t| unique_key(field, &Val::String(t.clone())))
                    .collect();
                for row in mine.iter().filter(|r| taken.contains(&key(r))) {
                    failures.add(
                        row.index,
                        format!(
                            "`{}.{}` is unique, and a node has the value {} already",
                            meta.name,
                            field.name,
                            row.values[field_index].to_json()
                        ),
                    );
                }
            }
        }
        if !failures.0.is_empty() {
            return Ok(failures.into_sorted());
        }
        let tx = self.begin().await?;
        let writes = self.counted(&tx);
        let mut by_model: BTreeMap<&'static str, Vec<&NodeRow>> = BTreeMap::new();
        for row in &rows {
            by_model.entry(row.meta.name).or_default().push(row);
        }
        for group in by_model.values() {
            let meta = group[0].meta;
            let per_statement = (MAX_PARAMS / meta.fields.len().max(1)).max(1);
            for chunk in group.chunks(per_statement) {
                let mut sql = Sql::new(self.backend());
                sql.push("INSERT INTO ").ident(meta.table).push(" (");
                sql.join(meta.fields, ", ", |s, f| {
                    s.ident(f.name);
                });
                sql.push(") VALUES ");
                let backend = self.backend();
                sql.join(chunk, ", ", |s, row| {
                    s.push("(");
                    s.join(meta.fields.iter().zip(&row.values), ", ", |s, (f, v)| {
                        s.bind(to_db(v, f, backend));
                    });
                    s.push(")");
                });
                if let Err(e) = writes.execute(sql).await {
                    // Checked above; what is left is the database's own word.
                    return Ok(vec![Failure {
                        index: chunk[0].index,
                        message: format!(
                            "the nodes from element {} on could not be written: {e}",
                            chunk[0].index
                        ),
                    }]);
                }
            }
        }
        tx.commit().await?;
        Ok(Vec::new())
    }

    /// A node element's model and values (defaults for what it leaves out).
    fn node_row(&self, index: usize, element: &Value, now: &Val) -> Result<NodeRow, String> {
        let element = element
            .as_object()
            .ok_or("a node element must be an object")?;
        let (meta, id) = type_and_id(self.service, element)?;
        let mut values: Vec<Val> = meta
            .fields
            .iter()
            .map(|f| f.default.as_ref().map_or(Val::Null, Val::from_lit))
            .collect();
        values[meta.id] = Val::String(id);
        values[meta.created_at] = now.clone();
        values[meta.updated_at] = now.clone();
        let mut given = vec![false; meta.fields.len()];
        for (key, value) in element {
            if key == "_typeName" || key == "id" {
                continue;
            }
            let Some(i) = meta.fields.iter().position(|f| f.name == key) else {
                return Err(format!("`{}` has no field `{key}`", meta.name));
            };
            let field = &meta.fields[i];
            if field.list {
                return Err(format!(
                    "`{}.{key}` is a list: lists are imported with `valueType: lists`",
                    meta.name
                ));
            }
            if value.is_null() {
                values[i] = Val::Null;
            } else {
                let val = value_of(meta, field, value)?;
                check_value(field, &val).map_err(|e| e.message())?;
                values[i] = val;
            }
            given[i] = true;
        }
        for (i, field) in meta.fields.iter().enumerate() {
            if field.required && !field.list && values[i].is_null() {
                return Err(format!(
                    "`{}.{}` is required and the element has no value for it",
                    meta.name, field.name
                ));
            }
        }
        Ok(NodeRow {
            index,
            meta,
            values,
        })
    }

    async fn lists(&self, values: &Elements<'_>) -> Result<Vec<Failure>, sea_orm::DbErr> {
        let mut failures = Failures::default();
        // (model, id, field) → the values to append, in element order.
        let mut appends: BTreeMap<(&'static str, String, usize), (usize, Vec<Val>)> =
            BTreeMap::new();
        let mut models: BTreeMap<&'static str, &'static ModelMeta> = BTreeMap::new();
        for (index, element) in values.iter() {
            match list_element(self.service, &element) {
                Ok((meta, id, field, items)) => {
                    models.insert(meta.name, meta);
                    appends
                        .entry((meta.name, id, field))
                        .or_insert_with(|| (index, Vec::new()))
                        .1
                        .extend(items);
                }
                Err(message) => failures.add(index, message),
            }
        }
        // Every node named must exist.
        let mut current: HashMap<(&'static str, String), Vec<Val>> = HashMap::new();
        for meta in models.values() {
            let ids: BTreeSet<String> = appends
                .keys()
                .filter(|(m, _, _)| *m == meta.name)
                .map(|(_, id, _)| id.clone())
                .collect();
            for (id, values) in self.rows(meta, &ids).await? {
                current.insert((meta.name, id), values);
            }
        }
        for ((model, id, _), (index, _)) in &appends {
            if !current.contains_key(&(*model, id.clone())) {
                failures.add(*index, format!("there is no {model} with the id `{id}`"));
            }
        }
        if !failures.0.is_empty() {
            return Ok(failures.into_sorted());
        }
        // The new lists, per model and field.
        let mut updates: BTreeMap<(&'static str, usize), Vec<(String, Val)>> = BTreeMap::new();
        for ((model, id, field), (index, items)) in appends {
            let meta = models[model];
            let f = &meta.fields[field];
            let mut list = match &current[&(model, id.clone())][field] {
                Val::List(old) => old.clone(),
                _ => Vec::new(),
            };
            list.extend(items);
            let list = Val::List(list);
            if let Err(e) = check_value(f, &list) {
                return Ok(vec![Failure {
                    index,
                    message: e.message(),
                }]);
            }
            updates.entry((model, field)).or_default().push((id, list));
        }
        let tx = self.begin().await?;
        let writes = self.counted(&tx);
        for ((model, field), lists) in &updates {
            let meta = models[model];
            let f = &meta.fields[*field];
            let id = meta.fields[meta.id].name;
            for chunk in lists.chunks(LISTS_PER_UPDATE) {
                // `WITH v(id, val) AS (VALUES …) UPDATE … FROM v`: one statement per chunk.
                let backend = self.backend();
                let mut sql = Sql::new(backend);
                sql.push("WITH v(id, val) AS (VALUES ");
                sql.join(chunk, ", ", |s, (node, list)| {
                    s.push("(")
                        .bind(node.as_str().into())
                        .push(", ")
                        .bind(to_db(list, f, backend))
                        .push(")");
                });
                sql.push(") UPDATE ")
                    .ident(meta.table)
                    .push(" SET ")
                    .ident(f.name)
                    .push(" = v.val FROM v WHERE ")
                    .ident(meta.table)
                    .push(".")
                    .ident(id)
                    .push(" = v.id");
                writes.execute(sql).await?;
            }
        }
        tx.commit().await?;
        Ok(Vec::new())
    }

    /// The rows of `meta` with the given ids, as field values.
    async fn rows(
        &self,
        meta: &ModelMeta,
        ids: &BTreeSet<String>,
    ) -> Result<Vec<(String, Vec<Val>)>, sea_orm::DbErr> {
        let reads = Counted {
            conn: self.state.db.reader(),
            counter: self.counter,
        };
        let ids: Vec<&String> = ids.iter().collect();
        let mut out = Vec::new();
        for chunk in ids.chunks(MAX_PARAMS) {
            let mut sql = Sql::new(self.backend());
            push_select(&mut sql, meta, "t0");
            sql.push(" WHERE t0.").ident(meta.fields[meta.id].name);
            sql.id_in(chunk.iter().map(|s| s.as_str()));
            for row in reads.all(sql).await? {
                let values = node_values(meta, &row)?;
                let id = match &values[meta.id] {
                    Val::String(s) => s.clone(),
                    other => other.to_json().to_string(),
                };
                out.push((id, values));
            }
        }
        Ok(out)
    }

    async fn relations(&self, values: &Elements<'_>) -> Result<Vec<Failure>, sea_orm::DbErr> {
        let mut failures = Failures::default();
        let mut edges = Vec::new();
        for (index, element) in values.iter() {
            match edge_element(self.service, &element) {
                Ok(edge) => edges.push((index, edge)),
                Err(message) => failures.add(index, message),
            }
        }
        // Both nodes of every edge exist.
        let mut wanted: BTreeMap<&'static str, (&'static ModelMeta, BTreeSet<String>)> =
            BTreeMap::new();
        for (_, edge) in &edges {
            for (meta, id) in [
                (edge.this_model, &edge.this),
                (edge.field.target, &edge.other),
            ] {
                wanted
                    .entry(meta.name)
                    .or_insert_with(|| (meta, BTreeSet::new()))
                    .1
                    .insert(id.clone());
            }
        }
        let mut found: BTreeSet<(&'static str, String)> = BTreeSet::new();
        for (name, (meta, ids)) in &wanted {
            for id in self.existing(meta, ids).await? {
                found.insert((*name, id));
            }
        }
        for (index, edge) in &edges {
            for (meta, id) in [
                (edge.this_model, &edge.this),
                (edge.field.target, &edge.other),
            ] {
                if !found.contains(&(meta.name, id.clone())) {
                    failures.add(
                        *index,
                        format!("there is no {} with the id `{id}`", meta.name),
                    );
                }
            }
        }
        // To-one sides keep one partner: no two edges of the request, nor an edge of the
        // database, give one node two.
        let mut partner: HashMap<(usize, &'static str, String), (String, usize)> = HashMap::new();
        for (index, edge) in &edges {
            let field = edge.field;
            let back = &field.target.relations[field.back];
            let rel = &self.service.relations[field.relation];
            let sides = [
                (
                    !field.list,
                    field.own,
                    edge.this.clone(),
                    edge.other.clone(),
                ),
                (!back.list, back.own, edge.other.clone(), edge.this.clone()),
            ];
            for (to_one, column, node, other) in sides {
                if !to_one {
                    continue;
                }
                match partner.get(&(field.relation, column, node.clone())) {
                    Some((existing, first)) if *existing != other => failures.add(
                        *index,
                        format!(
                            "`{node}` can have one partner in relation `{}`, and element {first} gives it `{existing}`",
                            rel.name
                        ),
                    ),
                    _ => {
                        partner.insert((field.relation, column, node), (other, *index));
                    }
                }
            }
        }
        // The partners the to-one sides have in the database: one statement per relation side
        // and chunk of nodes.
        let mut sides: BTreeMap<(usize, &'static str), Vec<Partnered<'_>>> = BTreeMap::new();
        for ((relation, column, node), (other, index)) in &partner {
            sides
                .entry((*relation, *column))
                .or_default()
                .push((node, other, *index));
        }
        let reads = Counted {
            conn: self.state.db.reader(),
            counter: self.counter,
        };
        for ((relation, column), nodes) in &sides {
            let rel = &self.service.relations[*relation];
            let other_column = if *column == "A" { "B" } else { "A" };
            let mut existing: HashMap<String, String> = HashMap::new();
            for chunk in nodes.chunks(MAX_PARAMS / 2) {
                let mut sql = Sql::new(self.backend());
                sql.push("SELECT ")
                    .ident(column)
                    .push(", ")
                    .ident(other_column)
                    .push(" FROM ")
                    .ident(rel.table)
                    .push(" WHERE ")
                    .ident(column)
                    .push(" IN (");
                sql.join(chunk, ", ", |s, (node, _, _)| {
                    s.bind(node.as_str().into());
                });
                sql.push(")");
                for row in reads.all(sql).await? {
                    if let (Some(node), Some(other)) = (row.string(0)?, row.string(1)?) {
                        existing.insert(node, other);
                    }
                }
            }
            for (node, other, index) in nodes {
                if let Some(has) = existing.get(*node)
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
        if !failures.0.is_empty() {
            return Ok(failures.into_sorted());
        }
        let tx = self.begin().await?;
        let writes = self.counted(&tx);
        // The edges per field (the join table and its columns), symmetric ones both ways.
        let mut by_field: BTreeMap<usize, FieldEdges<'_>> = BTreeMap::new();
        for (_, edge) in &edges {
            let key = std::ptr::from_ref(edge.field) as usize;
            let pairs = &mut by_field
                .entry(key)
                .or_insert_with(|| (edge.field, Vec::new()))
                .1;
            pairs.push((&edge.this, &edge.other));
            if edge.field.symmetric && edge.this != edge.other {
                pairs.push((&edge.other, &edge.this));
            }
        }
        for (field, pairs) in by_field.values() {
            for chunk in pairs.chunks(EDGES_PER_INSERT) {
                let mut sql = Sql::new(self.backend());
                push_edge_insert(&mut sql, field);
                sql.push(" VALUES ");
                sql.join(chunk, ", ", |s, (this, other)| {
                    s.push("(")
                        .bind(cuid().into())
                        .push(", ")
                        .bind((*this).into())
                        .push(", ")
                        .bind((*other).into())
                        .push(")");
                });
                // An edge that exists already is skipped.
                sql.push(" ON CONFLICT DO NOTHING");
                writes.execute(sql).await?;
            }
        }
        tx.commit().await?;
        Ok(Vec::new())
    }
}

fn id_text(row: &NodeRow) -> String {
    match &row.values[row.meta.id] {
        Val::String(s) => s.clone(),
        other => other.to_json().to_string(),
    }
}

/// A unique value as the database compares it: text fields case-insensitively (`COLLATE
/// NOCASE` on SQLite, `citext` on PostgreSQL), everything else exactly.
fn unique_key(field: &FieldMeta, val: &Val) -> String {
    match val {
        Val::String(s) if field.kind == Kind::String => s.to_lowercase(),
        Val::String(s) | Val::Enum(s) => s.clone(),
        other => other.to_json().to_string(),
    }
}

/// A list element: its model, node id, list field and values.
fn list_element(
    service: &ServiceMeta,
    element: &Value,
) -> Result<(&'static ModelMeta, String, usize, Vec<Val>), String> {
    let element = element
        .as_object()
        .ok_or("a list element must be an object")?;
    let (meta, id) = type_and_id(service, element)?;
    let mut lists = element
        .iter()
        .filter(|(k, _)| *k != "_typeName" && *k != "id");
    let (key, value) = lists
        .next()
        .ok_or("a list element must give one list field")?;
    if lists.next().is_some() {
        return Err("a list element must give exactly one list field".to_owned());
    }
    let field = meta
        .fields
        .iter()
        .position(|f| f.name == key && f.list)
        .ok_or_else(|| format!("`{}` has no list field `{key}`", meta.name))?;
    let f = &meta.fields[field];
    let items = value
        .as_array()
        .ok_or_else(|| format!("`{}.{key}` must be given as a list", meta.name))?;
    let items = items
        .iter()
        .map(|item| {
            if item.is_null() {
                Err(format!("`{}.{key}` cannot hold null", meta.name))
            } else {
                value_of(meta, f, item)
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((meta, id, field, items))
}

/// A node on a to-one side of an edge of the document: the node, its partner, the element.
type Partnered<'a> = (&'a String, &'a String, usize);

/// The edges to insert through one relation field: (this node, the other).
type FieldEdges<'a> = (&'static RelFieldMeta, Vec<(&'a str, &'a str)>);

/// An edge element, read from the side that names its field.
struct Edge {
    this_model: &'static ModelMeta,
    field: &'static RelFieldMeta,
    this: String,
    other: String,
}

fn edge_element(service: &ServiceMeta, element: &Value) -> Result<Edge, String> {
    let sides = element
        .as_array()
        .filter(|s| s.len() == 2)
        .ok_or("a relation element must be a list of two nodes")?;
    let mut parsed = Vec::new();
    for side in sides {
        let side = side
            .as_object()
            .ok_or("each side of a relation element must be an object")?;
        let (meta, id) = type_and_id(service, side)?;
        let field = match side.get("fieldName") {
            None | Some(Value::Null) => None,
            Some(Value::String(name)) => Some(name.clone()),
            Some(other) => return Err(format!("`fieldName` must be a string, not {other}")),
        };
        parsed.push((meta, id, field));
    }
    let (this, other) = match (&parsed[0].2, &parsed[1].2) {
        (Some(_), _) => (&parsed[0], &parsed[1]),
        (None, Some(_)) => (&parsed[1], &parsed[0]),
        (None, None) => {
            return Err("at least one side of a relation element needs its `fieldName`".to_owned());
        }
    };
    let (meta, id, Some(name)) = this else {
        return Err("at least one side of a relation element needs its `fieldName`".to_owned());
    };
    let field = meta
        .relations
        .iter()
        .find(|f| f.name == name)
        .ok_or_else(|| format!("`{}` has no relation field `{name}`", meta.name))?;
    if !std::ptr::eq(field.target, other.0) {
        return Err(format!(
            "`{}.{name}` relates to {}, not {}",
            meta.name, field.target.name, other.0.name
        ));
    }
    if let Some(back) = &other.2 {
        let expected = field.target.relations[field.back].name;
        if back != expected {
            return Err(format!(
                "`{}.{name}` and `{}.{back}` are not the two sides of one relation",
                meta.name, other.0.name
            ));
        }
    }
    Ok(Edge {
        this_model: meta,
        field,
        this: id.clone(),
        other: other.1.clone(),
    })
}
