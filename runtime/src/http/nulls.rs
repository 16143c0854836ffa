//! GraphQL null propagation for field errors. The executor leaves a failed field out of its
//! parent; the specification says the failed field is `null` and, when its type is non-null,
//! the `null` moves to the nearest nullable enclosing field or list item (or makes all of
//! `data` null). [`Nullability`] knows every field's type, and [`propagate`] walks an error's
//! path through the query to find where the `null` lands.

use std::collections::{HashMap, HashSet};

use async_graphql::parser::types::{
    DocumentOperations, ExecutableDocument, Field, OperationDefinition, OperationType, Selection,
    SelectionSet,
};
use async_graphql::registry::{MetaType, Registry};
use async_graphql::{ObjectType, OutputType, PathSegment, SubscriptionType};

/// The declared type (`"[Post!]!"`) of every field of every object and interface type, and
/// which types are object types and which object types each interface and union stands for
/// (for [`super::order`]'s fragments).
#[derive(Debug, Default)]
pub struct Nullability {
    fields: HashMap<String, HashMap<String, String>>,
    objects: HashSet<String>,
    /// Sorted, so that a choice among them is the same every time.
    possible: HashMap<String, Vec<String>>,
    query: String,
    mutation: String,
    subscription: String,
}

impl Nullability {
    /// The types reachable from the roots `Q`, `M` and `S`.
    pub fn of<Q: ObjectType, M: ObjectType, S: SubscriptionType>() -> Nullability {
        let mut registry = Registry::default();
        let query = <Q as OutputType>::create_type_info(&mut registry);
        let mutation = <M as OutputType>::create_type_info(&mut registry);
        let subscription = S::create_type_info(&mut registry);
        let mut fields = HashMap::new();
        let mut objects = HashSet::new();
        let mut possible = HashMap::new();
        for (name, ty) in &registry.types {
            match ty {
                MetaType::Object { .. } => {
                    objects.insert(name.clone());
                }
                MetaType::Interface { possible_types, .. }
                | MetaType::Union { possible_types, .. } => {
                    let mut types: Vec<String> = possible_types.iter().cloned().collect();
                    types.sort();
                    possible.insert(name.clone(), types);
                }
                _ => {}
            }
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
            objects,
            possible,
            query: query.trim_end_matches('!').to_owned(),
            mutation: mutation.trim_end_matches('!').to_owned(),
            subscription: subscription.trim_end_matches('!').to_owned(),
        }
    }

    pub(super) fn field_type(&self, parent: &str, field: &str) -> Option<&str> {
        if field == "__typename" {
            return Some("String!");
        }
        self.fields.get(parent)?.get(field).map(String::as_str)
    }

    /// The operation `operation` of `doc` (its only one when no name is given) and the name of
    /// its root type.
    pub(super) fn operation<'d>(
        &'d self,
        doc: &'d ExecutableDocument,
        operation: Option<&str>,
    ) -> Option<(&'d OperationDefinition, &'d str)> {
        let op = match (&doc.operations, operation) {
            (DocumentOperations::Single(op), _) => &op.node,
            (DocumentOperations::Multiple(ops), Some(name)) => &ops.get(name)?.node,
            (DocumentOperations::Multiple(ops), None) if ops.len() == 1 => {
                &ops.values().next()?.node
            }
            _ => return None,
        };
        let root = match op.ty {
            OperationType::Query => &self.query,
            OperationType::Mutation => &self.mutation,
            OperationType::Subscription => &self.subscription,
        };
        Some((op, root))
    }

    /// Whether `ty` is an object type (not an interface, a union or a scalar).
    pub(super) fn is_object(&self, ty: &str) -> bool {
        self.objects.contains(ty)
    }

    /// The object type named `name`, as these types hold its name.
    pub(super) fn object_name(&self, name: &str) -> Option<&str> {
        self.objects.get(name).map(String::as_str)
    }

    /// Whether the interface or union `abstract_ty` stands for the object type `object`.
    pub(super) fn is_possible(&self, abstract_ty: &str, object: &str) -> bool {
        self.possible
            .get(abstract_ty)
            .is_some_and(|types| types.iter().any(|t| t == object))
    }

    /// The object types the interface or union `abstract_ty` stands for, by name.
    pub(super) fn possible_types(&self, abstract_ty: &str) -> impl Iterator<Item = &str> {
        self.possible
            .get(abstract_ty)
            .into_iter()
            .flatten()
            .map(String::as_str)
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
pub(super) fn named(ty: &str) -> &str {
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
    let (op, root) = types.operation(doc, operation)?;
    if op.ty == OperationType::Subscription {
        return None;
    }
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
    fields(doc, set, parent, &|_| true, &mut |f, on| {
        if f.response_key().node.as_str() == key {
            out.push(Found {
                parent: on.to_owned(),
                name: f.name.node.as_str(),
                set: &f.selection_set.node,
            });
        }
    });
}

/// Calls `visit` with every field `set` selects on the type `parent`, in order, with the type
/// it is selected on, spreading the fragments whose type condition `applies` accepts.
pub(super) fn fields<'d: 'p, 'p>(
    doc: &'d ExecutableDocument,
    set: &'d SelectionSet,
    parent: &'p str,
    applies: &dyn Fn(&str) -> bool,
    visit: &mut dyn FnMut(&'d Field, &'p str),
) {
    for item in &set.items {
        let (inner, on) = match &item.node {
            Selection::Field(f) => {
                visit(&f.node, parent);
                continue;
            }
            Selection::InlineFragment(frag) => {
                let on = frag
                    .node
                    .type_condition
                    .as_ref()
                    .map_or(parent, |c| c.node.on.node.as_str());
                (&frag.node.selection_set.node, on)
            }
            Selection::FragmentSpread(spread) => {
                match doc.fragments.get(&spread.node.fragment_name.node) {
                    Some(def) => (
                        &def.node.selection_set.node,
                        def.node.type_condition.node.on.node.as_str(),
                    ),
                    None => continue,
                }
            }
        };
        if applies(on) {
            fields(doc, inner, on, applies, visit);
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
/// fields themselves are already `null` in `data`). `doc` is the query, parsed (`None` when it
/// does not parse, and then each `null` stays where it is).
pub fn propagate(
    types: &Nullability,
    doc: Option<&ExecutableDocument>,
    operation: Option<&str>,
    data: &mut serde_json::Value,
    errors: &[async_graphql::ServerError],
) {
    for e in errors.iter().filter(|e| !e.path.is_empty()) {
        let len = doc
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
