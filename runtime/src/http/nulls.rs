//! GraphQL null propagation for field errors. The executor leaves a failed field out of its
//! parent; the specification says the failed field is `null` and, when its type is non-null,
//! the `null` moves to the nearest nullable enclosing field or list item (or makes all of
//! `data` null). [`Nullability`] knows every field's type, and [`propagate`] walks an error's
//! path through the query to find where the `null` lands.

use std::collections::HashMap;

use async_graphql::parser::types::{
    DocumentOperations, ExecutableDocument, OperationType, Selection, SelectionSet,
};
use async_graphql::registry::{MetaType, Registry};
use async_graphql::{ObjectType, OutputType, PathSegment};

/// The declared type (`"[Post!]!"`) of every field of every object and interface type.
#[derive(Debug, Default)]
pub struct Nullability {
    fields: HashMap<String, HashMap<String, String>>,
    query: String,
    mutation: String,
}

impl Nullability {
    /// The types reachable from the roots `Q` and `M`.
    pub fn of<Q: ObjectType, M: ObjectType>() -> Nullability {
        let mut registry = Registry::default();
        let query = <Q as OutputType>::create_type_info(&mut registry);
        let mutation = <M as OutputType>::create_type_info(&mut registry);
        let mut fields = HashMap::new();
        for (name, ty) in &registry.types {
            let map = match ty {
                MetaType::Object { fields, .. } | MetaType::Interface { fields, .. } => fields
                    .iter()
                    .map(|(f, meta)| (f.clone(), meta.ty.clone()))
                    .collect(),
                _ => continue,
            };
            fields.insert(name.clone(), map);
        }
        Nullability {
            fields,
            query: query.trim_end_matches('!').to_owned(),
            mutation: mutation.trim_end_matches('!').to_owned(),
        }
    }

    fn field_type(&self, parent: &str, field: &str) -> Option<&str> {
        if field == "__typename" {
            return Some("String!");
        }
        self.fields.get(parent)?.get(field).map(String::as_str)
    }
}

/// `(non-null, inner type)` of a type string.
fn strip(ty: &str) -> (bool, &str) {
    match ty.strip_suffix('!') {
        Some(inner) => (true, inner),
        None => (false, ty),
    }
}

/// The named type inside list and non-null wrappers.
fn named(ty: &str) -> &str {
    ty.trim_start_matches('[').trim_end_matches(['!', ']'])
}

/// Where the `null` of an error at `path` lands: the length of the path prefix to set to `null`
/// (0: all of `data`). `None` when the path cannot be followed through the query.
pub fn landing(
    types: &Nullability,
    doc: &ExecutableDocument,
    operation: Option<&str>,
    path: &[PathSegment],
) -> Option<usize> {
    let op = match (&doc.operations, operation) {
        (DocumentOperations::Single(op), _) => &op.node,
        (DocumentOperations::Multiple(ops), Some(name)) => &ops.get(name)?.node,
        (DocumentOperations::Multiple(ops), None) if ops.len() == 1 => &ops.values().next()?.node,
        _ => return None,
    };
    let root = match op.ty {
        OperationType::Query => types.query.as_str(),
        OperationType::Mutation => types.mutation.as_str(),
        OperationType::Subscription => return None,
    };
    let mut sets: Vec<(&SelectionSet, String)> = vec![(&op.selection_set.node, root.to_owned())];
    let mut current = String::new();
    let mut non_null = Vec::with_capacity(path.len());
    for segment in path {
        match segment {
            PathSegment::Field(key) => {
                let mut found: Vec<Found<'_>> = Vec::new();
                for (set, parent) in &sets {
                    collect(doc, set, parent, key, &mut found);
                }
                // The field's name is the same for every match (GraphQL validation); its
                // parent type is the first one that declares it.
                let ty = found
                    .iter()
                    .find_map(|f| types.field_type(&f.parent, f.name))?;
                current = ty.to_owned();
                non_null.push(strip(&current).0);
                let inner = named(&current).to_owned();
                sets = found.into_iter().map(|f| (f.set, inner.clone())).collect();
            }
            PathSegment::Index(_) => {
                let (_, list) = strip(&current);
                let item = list.strip_prefix('[')?.strip_suffix(']')?.to_owned();
                non_null.push(strip(&item).0);
                current = item;
            }
        }
    }
    // The error's own position is null; a non-null position passes the null to its parent.
    let mut len = path.len();
    while len > 0 && non_null[len - 1] {
        len -= 1;
    }
    Some(len)
}

/// One selection of a response key: the type it is selected on, the field's name and its
/// sub-selection.
struct Found<'d> {
    parent: String,
    name: &'d str,
    set: &'d SelectionSet,
}

/// The fields with response key `key` in `set` (through fragments).
fn collect<'d>(
    doc: &'d ExecutableDocument,
    set: &'d SelectionSet,
    parent: &str,
    key: &str,
    out: &mut Vec<Found<'d>>,
) {
    for item in &set.items {
        match &item.node {
            Selection::Field(f) => {
                if f.node.response_key().node.as_str() == key {
                    out.push(Found {
                        parent: parent.to_owned(),
                        name: f.node.name.node.as_str(),
                        set: &f.node.selection_set.node,
                    });
                }
            }
            Selection::InlineFragment(frag) => {
                let on = frag
                    .node
                    .type_condition
                    .as_ref()
                    .map_or(parent, |c| c.node.on.node.as_str());
                collect(doc, &frag.node.selection_set.node, on, key, out);
            }
            Selection::FragmentSpread(spread) => {
                if let Some(def) = doc.fragments.get(&spread.node.fragment_name.node) {
                    let on = def.node.type_condition.node.on.node.as_str();
                    collect(doc, &def.node.selection_set.node, on, key, out);
                }
            }
        }
    }
}

/// The value at one step of a response path below `node`.
pub(crate) fn child<'a>(
    node: &'a mut serde_json::Value,
    segment: &PathSegment,
) -> Option<&'a mut serde_json::Value> {
    match (segment, node) {
        (PathSegment::Field(name), serde_json::Value::Object(map)) => map.get_mut(name),
        (PathSegment::Index(i), serde_json::Value::Array(items)) => items.get_mut(*i),
        _ => None,
    }
}

/// Sets the value at `path` to `null` (all of `data` for an empty path). Missing parents (already
/// nulled by another error) leave `data` as it is.
fn set_null(data: &mut serde_json::Value, path: &[PathSegment]) {
    let Some((last, parents)) = path.split_last() else {
        *data = serde_json::Value::Null;
        return;
    };
    let mut node = data;
    for segment in parents {
        match child(node, segment) {
            Some(next) => node = next,
            None => return,
        }
    }
    match (last, node) {
        (PathSegment::Field(name), serde_json::Value::Object(map)) => {
            map.insert(name.clone(), serde_json::Value::Null);
        }
        (PathSegment::Index(i), serde_json::Value::Array(items)) => {
            if let Some(item) = items.get_mut(*i) {
                *item = serde_json::Value::Null;
            }
        }
        _ => {}
    }
}

/// Moves the `null` of every failed non-null field up to where GraphQL puts it (the failed
/// fields themselves are already `null` in `data`).
pub fn propagate(
    types: &Nullability,
    query: &str,
    operation: Option<&str>,
    data: &mut serde_json::Value,
    errors: &[async_graphql::ServerError],
) {
    let mut failed = errors.iter().filter(|e| !e.path.is_empty()).peekable();
    if failed.peek().is_none() {
        // The common case: nothing to move, and no need to parse the query again.
        return;
    }
    let doc = async_graphql::parser::parse_query(query).ok();
    for e in failed {
        let len = doc
            .as_ref()
            .and_then(|doc| landing(types, doc, operation, &e.path))
            .unwrap_or(e.path.len());
        if len == 0 {
            *data = serde_json::Value::Null;
            return;
        }
        if len < e.path.len() {
            set_null(data, &e.path[..len]);
        }
    }
}
