//! Write arguments: scalar values plus relation arguments (`<f>Id`, `<f>Ids`, and nested creates
//! `<f>: <Owner><f><Related>`), read from input objects with the data tables.
//!
//! Nested create inputs are registered from the data tables like filters
//! ([`crate::api::write_arguments`]); parsing is recursive, so nesting depth is unbounded.

use async_graphql::Value;

use crate::meta::{ModelMeta, RelFieldMeta};
use crate::value::Val;

/// Arguments of one node write.
#[derive(Debug, Default, Clone)]
pub struct Write {
    /// `(column index, value)`; `None` = absent, `Some(Val::Null)` = explicit null.
    pub values: Vec<(usize, Option<Val>)>,
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

/// The input type name of a nested create through `field` of `owner`.
pub fn nested_name(owner: &ModelMeta, field: &RelFieldMeta) -> String {
    format!("{}{}{}", owner.name, field.name, field.target.name)
}

/// Whether column `idx` of `meta` can be written (declared, and not `id`/`createdAt`/`updatedAt`).
pub(crate) fn writable(meta: &ModelMeta, idx: usize) -> bool {
    meta.fields[idx].exposed && idx != meta.id && idx != meta.created_at && idx != meta.updated_at
}

/// Parses a write input object for `meta` (a nested create has no argument for the relation
/// field `skip`).
pub(crate) fn parse_write(
    meta: &ModelMeta,
    value: &Value,
    skip: Option<usize>,
) -> Result<Write, String> {
    let Value::Object(entries) = value else {
        return Err("expected an input object".to_owned());
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
        let (name, part) = if let Some(name) = key.strip_suffix("Ids") {
            (name, Part::Ids)
        } else if let Some(name) = key.strip_suffix("Id") {
            (name, Part::Id)
        } else {
            (key, Part::Nested)
        };
        let Some(rel) = meta.relation_index(name).filter(|&r| Some(r) != skip) else {
            return Err(format!("unknown field `{key}`"));
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
            (Part::Id, Value::String(id)) if !field.list => arg.ids = Some(vec![id.clone()]),
            (Part::Ids, Value::List(items)) if field.list => {
                arg.ids = Some(
                    items
                        .iter()
                        .map(|it| match it {
                            Value::String(id) => Ok(id.clone()),
                            other => Err(format!("expected an ID, found {other}")),
                        })
                        .collect::<Result<_, _>>()?,
                );
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
            _ => return Err(format!("unexpected value for `{key}`")),
        }
    }
    Ok(write)
}

#[derive(Clone, Copy)]
enum Part {
    Id,
    Ids,
    Nested,
}
