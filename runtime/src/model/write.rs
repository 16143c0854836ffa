//! Write arguments: scalar values plus relation arguments (`<f>Id`, `<f>Ids`, and nested creates
//! `<f>: <Owner><f><Related>`), read from input objects with the data tables.
//!
//! The GraphQL layer registers the input types from the data tables and reads the arguments
//! into a [`Write`]; parsing is recursive, so nesting depth is unbounded.

use async_graphql::Value;

use super::error::InputError;
use super::tables::ModelMeta;
use super::value::Val;

/// Arguments of one node write.
#[derive(Debug, Default, Clone)]
pub struct Write {
    /// `(column index, value)`; `None` = absent, `Some(Val::Null)` = explicit null.
    pub values: Vec<(usize, Option<Val>)>,
    /// The relation arguments: at most one [`RelArg`] per relation field.
    pub rels: Vec<RelArg>,
}

/// The arguments given for one relation field.
#[derive(Debug, Clone)]
pub struct RelArg {
    /// Index in the model's `relations`.
    pub field: usize,
    /// `<f>Id` / `<f>Ids`: the nodes to connect.
    pub ids: Option<Vec<String>>,
    /// `<f>`: the nodes to create and connect.
    pub nested: Option<Vec<Write>>,
}

impl RelArg {
    /// Whether the argument names at least one node.
    pub fn connects_any(&self) -> bool {
        self.ids.as_ref().is_some_and(|v| !v.is_empty())
            || self.nested.as_ref().is_some_and(|v| !v.is_empty())
    }
}

/// Whether column `idx` of `meta` can be written (declared, and not `id`/`createdAt`/`updatedAt`).
pub fn writable(meta: &ModelMeta, idx: usize) -> bool {
    meta.fields[idx].exposed && idx != meta.id && idx != meta.created_at && idx != meta.updated_at
}

/// Parses a write input object for `meta` (a nested create has no argument for the relation
/// field `skip`).
pub fn parse_write(
    meta: &ModelMeta,
    value: &Value,
    skip: Option<usize>,
) -> Result<Write, InputError> {
    let Value::Object(entries) = value else {
        return Err(InputError::NotAnInputObject);
    };
    let mut write = Write::default();
    for (key, v) in entries {
        let key = key.as_str();
        if let Some(idx) = meta.field_index(key).filter(|&i| writable(meta, i)) {
            let field = &meta.fields[idx];
            write
                .values
                .push((idx, Some(Val::from_graphql(v, field.kind)?)));
            continue;
        }
        let (name, part) = match svc_names::parse_connect_argument(key) {
            Some((name, true)) => (name, Part::Ids),
            Some((name, false)) => (name, Part::Id),
            None => (key, Part::Nested),
        };
        let Some(rel) = meta.relation_index(name).filter(|&r| Some(r) != skip) else {
            return Err(InputError::UnknownField(key.to_owned()));
        };
        let field = &meta.relations[rel];
        let pos = match write.rels.iter().position(|r| r.field == rel) {
            Some(pos) => pos,
            None => {
                write.rels.push(RelArg {
                    field: rel,
                    ids: None,
                    nested: None,
                });
                write.rels.len() - 1
            }
        };
        let arg = &mut write.rels[pos];
        match (part, v) {
            (_, Value::Null) => {}
            (Part::Id, id) if !field.list => arg.ids = Some(vec![expect_id(id)?]),
            (Part::Ids, Value::List(items)) if field.list => {
                arg.ids = Some(items.iter().map(expect_id).collect::<Result<_, _>>()?);
            }
            (Part::Nested, Value::List(items)) if field.list => {
                arg.nested = Some(
                    items
                        .iter()
                        .map(|it| parse_write(field.target, it, Some(field.back)))
                        .collect::<Result<_, _>>()?,
                );
            }
            (Part::Nested, single) if !field.list && field.nested => {
                arg.nested = Some(vec![parse_write(field.target, single, Some(field.back))?]);
            }
            _ => return Err(InputError::UnexpectedValueFor(key.to_owned())),
        }
    }
    Ok(write)
}

/// An `ID` input value as GraphQL reads one: a string, or an integer literal as its digits.
pub fn id_input(value: &Value) -> Option<String> {
    match value {
        Value::String(id) => Some(id.clone()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

fn expect_id(value: &Value) -> Result<String, InputError> {
    id_input(value).ok_or_else(|| InputError::NotAnId(value.to_string()))
}

#[derive(Clone, Copy)]
enum Part {
    Id,
    Ids,
    Nested,
}
