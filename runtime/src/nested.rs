//! Write arguments: scalar values plus relation arguments (`<f>Id`, `<f>Ids`, and nested creates
//! `<f>: <Owner><f><Related>`), and the generic input type of nested creates.
//!
//! A nested create input is registered from the data tables, like filters: the generator emits
//! no per-relation input struct, only a type `NestedCreate<Service, M, F>` naming the owning
//! model and field by index. Parsing is recursive, so nesting depth is unbounded.

use std::borrow::Cow;
use std::marker::PhantomData;

use async_graphql::indexmap::IndexMap;
use async_graphql::registry::{MetaInputValue, MetaTypeId, Registry};
use async_graphql::{ID, InputType, InputValueError, InputValueResult, MaybeUndefined, Value};

use crate::cli::ServiceDef;
use crate::filter::{input_object, input_value, register_value_type};
use crate::meta::{ModelMeta, RelFieldMeta};
use crate::value::Val;

/// Arguments of one node write.
#[derive(Debug, Default)]
pub struct Write {
    /// `(column index, value)`; `None` = absent, `Some(Val::Null)` = explicit null.
    pub values: Vec<(usize, Option<Val>)>,
    pub rels: Vec<RelArg>,
}

/// The arguments given for one relation field.
#[derive(Debug)]
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

/// The ids of an `<f>Id` or `<f>Ids` argument.
pub trait IntoIds {
    fn into_ids(self) -> Vec<String>;
}

impl IntoIds for ID {
    fn into_ids(self) -> Vec<String> {
        vec![self.0]
    }
}

impl IntoIds for Vec<ID> {
    fn into_ids(self) -> Vec<String> {
        self.into_iter().map(|id| id.0).collect()
    }
}

/// The writes of a nested create argument (one node or a list).
pub trait IntoNested {
    fn into_writes(self) -> Vec<Write>;
}

impl<S: ServiceDef, const M: usize, const F: usize> IntoNested for NestedCreate<S, M, F> {
    fn into_writes(self) -> Vec<Write> {
        vec![self.write]
    }
}

impl<S: ServiceDef, const M: usize, const F: usize> IntoNested for Vec<NestedCreate<S, M, F>> {
    fn into_writes(self) -> Vec<Write> {
        self.into_iter().map(|n| n.write).collect()
    }
}

/// A relation argument with ids only (the related model has nothing else to write).
pub fn rel_ids<I: IntoIds>(field: usize, ids: MaybeUndefined<I>) -> RelArg {
    RelArg {
        field,
        // An explicit null connects nothing, like an absent argument.
        ids: ids.take().map(IntoIds::into_ids),
        nested: None,
    }
}

/// A relation argument with ids and nested creates.
pub fn rel<I: IntoIds, N: IntoNested>(
    field: usize,
    ids: MaybeUndefined<I>,
    nested: MaybeUndefined<N>,
) -> RelArg {
    RelArg {
        field,
        ids: ids.take().map(IntoIds::into_ids),
        nested: nested.take().map(IntoNested::into_writes),
    }
}

/// `<Owner><field><Related>`: creates a node of the model `field` points at, connected to the
/// node being written. Names the owning model and field by index into `S::META`.
pub struct NestedCreate<S, const M: usize, const F: usize> {
    pub write: Write,
    _service: PhantomData<fn() -> S>,
}

impl<S: ServiceDef, const M: usize, const F: usize> NestedCreate<S, M, F> {
    fn owner() -> &'static ModelMeta {
        S::META.models[M]
    }

    fn field() -> &'static RelFieldMeta {
        &Self::owner().relations[F]
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

/// The create arguments of `meta` except the relation field `skip` (the back side of the
/// relation a nested create comes through), in the reference's order: scalars, to-one relation
/// arguments, to-many relation arguments.
pub(crate) fn create_arguments(
    registry: &mut Registry,
    meta: &ModelMeta,
    skip: Option<usize>,
) -> IndexMap<String, MetaInputValue> {
    let mut out = IndexMap::new();
    for (i, f) in meta.fields.iter().enumerate() {
        if !writable(meta, i) {
            continue;
        }
        let ty = register_value_type(registry, f);
        let ty = if f.list {
            format!("[{ty}!]")
        } else if f.required && f.default.is_none() {
            format!("{ty}!")
        } else {
            ty
        };
        out.insert(f.name.to_owned(), input_value(f.name.to_owned(), ty));
    }
    for list in [false, true] {
        for (i, f) in meta.relations.iter().enumerate() {
            if f.list != list || Some(i) == skip {
                continue;
            }
            let id = <ID as InputType>::create_type_info(registry);
            let id = id.trim_end_matches('!');
            let (key, ty) = if list {
                (format!("{}Ids", f.name), format!("[{id}!]"))
            } else {
                (format!("{}Id", f.name), id.to_owned())
            };
            out.insert(key.clone(), input_value(key, ty));
            if let Some(register) = f.register_nested {
                let name = register(registry);
                let name = name.trim_end_matches('!');
                let ty = if list {
                    format!("[{name}!]")
                } else {
                    name.to_owned()
                };
                out.insert(f.name.to_owned(), input_value(f.name.to_owned(), ty));
            }
        }
    }
    out
}

/// Parses a nested create object for `meta`, which has no argument for the relation field
/// `skip`.
pub(crate) fn parse_write(meta: &ModelMeta, value: &Value, skip: usize) -> Result<Write, String> {
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
        let Some(rel) = meta.relation_index(name).filter(|&r| r != skip) else {
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
                        .map(|it| parse_write(field.target, it, field.back))
                        .collect::<Result<_, _>>()?,
                );
            }
            (Part::Nested, single) if !field.list && field.register_nested.is_some() => {
                arg.nested = Some(vec![parse_write(field.target, single, field.back)?]);
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

impl<S: ServiceDef, const M: usize, const F: usize> InputType for NestedCreate<S, M, F> {
    type RawValueType = Self;

    fn type_name() -> Cow<'static, str> {
        Cow::Owned(nested_name(Self::owner(), Self::field()))
    }

    fn create_type_info(registry: &mut Registry) -> String {
        registry.create_input_type::<Self, _>(MetaTypeId::InputObject, |registry| {
            let field = Self::field();
            let fields = create_arguments(registry, field.target, Some(field.back));
            input_object::<Self>(Self::type_name().into_owned(), fields)
        })
    }

    fn parse(value: Option<Value>) -> InputValueResult<Self> {
        let field = Self::field();
        let value = value.unwrap_or(Value::Null);
        let write =
            parse_write(field.target, &value, field.back).map_err(InputValueError::custom)?;
        Ok(NestedCreate {
            write,
            _service: PhantomData,
        })
    }

    fn to_value(&self) -> Value {
        // Inputs are only ever read from requests.
        Value::Null
    }

    fn as_raw_value(&self) -> Option<&Self::RawValueType> {
        Some(self)
    }
}
