//! An NDF document's elements read against the model, without the database: each element
//! becomes a row, a list append or an edge, or a failure with its index. What can be decided
//! within the document (an id or a unique value given twice, a to-one node given two partners)
//! is decided here too.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::{Failure, RequestError};
use crate::engine::check_value;
use crate::model::{
    FieldMeta, Kind, ModelMeta, RelFieldMeta, ServiceMeta, Val, is_valid_id, parse_datetime,
};

/// A document, read: what its valid elements hold, and the failures of the others.
pub(super) struct Parsed {
    pub(super) document: Document,
    pub(super) failures: Failures,
}

/// What a document's valid elements hold.
pub(super) enum Document {
    Nodes(Vec<NodeRow>),
    Lists(Vec<ListAppend>),
    Relations(Vec<Edge>),
}

/// Failures so far.
#[derive(Default)]
pub(super) struct Failures(pub(super) Vec<Failure>);

impl Failures {
    pub(super) fn add(&mut self, index: usize, message: impl Into<String>) {
        self.0.push(Failure {
            index,
            message: message.into(),
        });
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(super) fn into_sorted(mut self) -> Vec<Failure> {
        self.0.sort_by_key(|f| f.index);
        self.0
    }
}

/// A node element, checked: its model, id and a value per field (defaults for what it leaves
/// out).
pub(super) struct NodeRow {
    pub(super) index: usize,
    pub(super) meta: &'static ModelMeta,
    pub(super) id: String,
    pub(super) values: Vec<Val>,
}

/// The values a document appends to one list of one node (its chunks joined in order).
pub(super) struct ListAppend {
    /// The first element naming this list.
    pub(super) index: usize,
    pub(super) meta: &'static ModelMeta,
    pub(super) id: String,
    pub(super) field: usize,
    pub(super) items: Vec<Val>,
}

/// An edge element, read from the side that names its field.
pub(super) struct Edge {
    pub(super) index: usize,
    pub(super) this_model: &'static ModelMeta,
    pub(super) field: &'static RelFieldMeta,
    pub(super) this: String,
    pub(super) other: String,
}

/// Reads the document `body`: `{"valueType": …, "values": [...]}`.
pub(super) fn parse(service: &'static ServiceMeta, body: &[u8]) -> Result<Parsed, RequestError> {
    // The elements are kept as their texts and parsed one at a time, so a document's parse
    // holds the body and what its checked elements become, not a tree of the whole document.
    let document: Envelope<'_> = serde_json::from_slice(body)
        .map_err(|e| RequestError(format!("the body is not a JSON document: {e}")))?;
    let value_type = document
        .value_type
        .as_ref()
        .and_then(Value::as_str)
        .ok_or_else(|| RequestError("the body has no `valueType`".to_owned()))?;
    let values: Vec<&RawValue> = document
        .values
        .and_then(|elements| elements.0)
        .ok_or_else(|| RequestError("the body has no `values` list".to_owned()))?;
    let elements = values.iter().copied().enumerate();
    let mut failures = Failures::default();
    let document = match value_type {
        "nodes" => {
            let now = Val::DateTime(crate::engine::truncate_now());
            let mut rows = Vec::with_capacity(values.len());
            for (index, element) in elements {
                match node_row(service, index, element, &now) {
                    Ok(row) => rows.push(row),
                    Err(message) => failures.add(index, message),
                }
            }
            repeated_nodes(&rows, &mut failures);
            Document::Nodes(rows)
        }
        "lists" => {
            // (model, id, field) → the values to append, in element order.
            let mut appends: BTreeMap<(&'static str, String, usize), ListAppend> = BTreeMap::new();
            for (index, element) in elements {
                match list_element(service, element) {
                    Ok((meta, id, field, items)) => appends
                        .entry((meta.name, id.clone(), field))
                        .or_insert_with(|| ListAppend {
                            index,
                            meta,
                            id,
                            field,
                            items: Vec::new(),
                        })
                        .items
                        .extend(items),
                    Err(message) => failures.add(index, message),
                }
            }
            Document::Lists(appends.into_values().collect())
        }
        "relations" => {
            let mut edges = Vec::with_capacity(values.len());
            for (index, element) in elements {
                match edge_element(service, index, element) {
                    Ok(edge) => edges.push(edge),
                    Err(message) => failures.add(index, message),
                }
            }
            two_partners(service, &edges, &mut failures);
            Document::Relations(edges)
        }
        other => {
            return Err(RequestError(format!(
                "unknown valueType `{other}` (nodes, lists or relations)"
            )));
        }
    };
    Ok(Parsed { document, failures })
}

/// An NDF document with its elements unparsed.
#[derive(serde::Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "valueType")]
    value_type: Option<Value>,
    #[serde(borrow, default)]
    values: Option<Elements<'a>>,
}

/// The texts of a list's items, read in the same pass as the document around them; `None`
/// when the value is no list.
struct Elements<'a>(Option<Vec<&'a RawValue>>);

impl<'de: 'a, 'a> Deserialize<'de> for Elements<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct List<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for List<'a> {
            type Value = Elements<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Elements<'a>, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(1024));
                while let Some(item) = seq.next_element::<&'de RawValue>()? {
                    out.push(item);
                }
                Ok(Elements(Some(out)))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Elements<'a>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Elements(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Elements<'a>, E> {
                Ok(Elements(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Elements<'a>, E> {
                Ok(Elements(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Elements<'a>, E> {
                Ok(Elements(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Elements<'a>, E> {
                Ok(Elements(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<Elements<'a>, E> {
                Ok(Elements(None))
            }
            fn visit_unit<E>(self) -> Result<Elements<'a>, E> {
                Ok(Elements(None))
            }
        }
        deserializer.deserialize_any(List(std::marker::PhantomData))
    }
}

/// An object element's keys and values, in document order, read in one pass over its text; the
/// keys are borrowed from the body unless they hold escapes. Only one element's values are held
/// at a time, never a tree of the whole document.
struct Fields<'a>(Vec<(Cow<'a, str>, Value)>);

impl<'a> Fields<'a> {
    /// The object `raw`, or `None` when it is no object.
    fn of(raw: &'a RawValue) -> Option<Fields<'a>> {
        serde_json::from_str(raw.get()).ok()
    }

    /// The value of `key` (its last, as a JSON object's reader keeps).
    fn value(&self, key: &str) -> Option<&Value> {
        let (_, value) = self.0.iter().rev().find(|(k, _)| k == key)?;
        Some(value)
    }

    /// The keys other than `_typeName` and `id`, with their values.
    fn rest(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.0
            .iter()
            .filter(|(k, _)| k != "_typeName" && k != "id")
            .map(|(k, v)| (k.as_ref(), v))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Fields<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Object<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Object<'a> {
            type Value = Fields<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'a>, A::Error> {
                let mut out = Vec::with_capacity(map.size_hint().unwrap_or(8));
                while let Some((Key(key), value)) = map.next_entry::<Key<'de>, Value>()? {
                    out.push((key, value));
                }
                Ok(Fields(out))
            }
        }
        deserializer.deserialize_map(Object(std::marker::PhantomData))
    }
}

/// An object's key, borrowed from the body when it holds no escape.
struct Key<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Key<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Text<'a> {
            type Value = Key<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'a>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'a>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        deserializer.deserialize_str(Text(std::marker::PhantomData))
    }
}

/// Ids given twice, and values of unique fields given twice, within the document (an id names
/// one node of the service, whatever its model).
fn repeated_nodes(rows: &[NodeRow], failures: &mut Failures) {
    let mut seen: HashMap<&str, usize> = HashMap::with_capacity(rows.len());
    for row in rows {
        if let Some(first) = seen.insert(&row.id, row.index) {
            failures.add(
                row.index,
                format!(
                    "the id `{}` is given twice (elements {first} and {})",
                    row.id, row.index
                ),
            );
        }
    }
    let mut unique: HashMap<(&str, usize, String), usize> = HashMap::new();
    for row in rows {
        for (i, field) in row.meta.fields.iter().enumerate() {
            if !field.unique || i == row.meta.id || field.list || row.values[i].is_null() {
                continue;
            }
            let key = (row.meta.name, i, unique_key(field, &row.values[i]));
            if let Some(first) = unique.insert(key, row.index) {
                failures.add(
                    row.index,
                    format!(
                        "`{}.{}` is unique, and element {first} has the same value",
                        row.meta.name, field.name
                    ),
                );
            }
        }
    }
}

/// To-one sides keep one partner: no two edges of the document give one node two.
fn two_partners(service: &ServiceMeta, edges: &[Edge], failures: &mut Failures) {
    let mut partner: HashMap<(usize, &'static str, &str), (&str, usize)> = HashMap::new();
    for edge in edges {
        for (to_one, column, node, other) in edge.to_one_sides() {
            if !to_one {
                continue;
            }
            let key = (edge.field.relation, column, node);
            match partner.get(&key) {
                Some((existing, first)) if *existing != other => failures.add(
                    edge.index,
                    format!(
                        "`{node}` can have one partner in relation `{}`, and element {first} gives it `{existing}`",
                        service.relations[edge.field.relation].name
                    ),
                ),
                Some(_) => {}
                None => {
                    partner.insert(key, (other, edge.index));
                }
            }
        }
    }
}

impl Edge {
    /// Both sides of the edge: (whether the side is to-one, its join column, its node, the
    /// node at the other end).
    pub(super) fn to_one_sides(&self) -> [(bool, &'static str, &str, &str); 2] {
        let field = self.field;
        let back = &field.target.relations[field.back];
        [
            (!field.list, field.own, &self.this, &self.other),
            (!back.list, back.own, &self.other, &self.this),
        ]
    }
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
    element: &Fields<'_>,
) -> Result<(&'static ModelMeta, String), String> {
    let name = element
        .value("_typeName")
        .and_then(Value::as_str)
        .ok_or("the element has no `_typeName`")?;
    let meta = model_named(service, name).ok_or_else(|| format!("unknown `_typeName` `{name}`"))?;
    let id = match element.value("id") {
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

/// A node element's model and values (defaults for what it leaves out).
fn node_row(
    service: &ServiceMeta,
    index: usize,
    element: &RawValue,
    now: &Val,
) -> Result<NodeRow, String> {
    let element = Fields::of(element).ok_or("a node element must be an object")?;
    let (meta, id) = type_and_id(service, &element)?;
    let mut values: Vec<Val> = meta
        .fields
        .iter()
        .map(|f| f.default.as_ref().map_or(Val::Null, Val::from_lit))
        .collect();
    values[meta.id] = Val::String(id.clone());
    values[meta.created_at] = now.clone();
    values[meta.updated_at] = now.clone();
    for (key, value) in element.rest() {
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
        id,
        values,
    })
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
    element: &RawValue,
) -> Result<(&'static ModelMeta, String, usize, Vec<Val>), String> {
    let element = Fields::of(element).ok_or("a list element must be an object")?;
    let (meta, id) = type_and_id(service, &element)?;
    let mut lists = element.rest();
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

fn edge_element(service: &ServiceMeta, index: usize, element: &RawValue) -> Result<Edge, String> {
    let sides = serde_json::from_str::<Vec<&RawValue>>(element.get())
        .ok()
        .filter(|s| s.len() == 2)
        .ok_or("a relation element must be a list of two nodes")?;
    let mut parsed = Vec::new();
    for side in sides {
        let side = Fields::of(side).ok_or("each side of a relation element must be an object")?;
        let (meta, id) = type_and_id(service, &side)?;
        let field = match side.value("fieldName") {
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
        index,
        this_model: meta,
        field,
        this: id.clone(),
        other: other.1.clone(),
    })
}
