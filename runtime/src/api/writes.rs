//! The write arguments of mutations, registered from the data tables: the arguments of
//! `create<T>` and `update<T>` (the Simple API's arguments, the Relay API's input fields), and
//! the input types `Create<T>`, `Update<T>`, `UpdateMany<Plural>Data` and the nested creates
//! `<Owner><field><Related>`.

use async_graphql::indexmap::IndexMap;
use async_graphql::registry::{MetaInputValue, Registry};
use async_graphql::{ID, InputType};

use crate::api::registry::{input_value, nullable, register_input, register_value_type};
use crate::model::{ModelMeta, writable};

/// Which write a set of arguments is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriteArgs {
    /// `create<T>`, `Create<T>`, and nested creates (without the relation field `skip`).
    Create { skip: Option<usize> },
    /// `update<T>`, `Update<T>`: every argument optional.
    Update,
    /// `UpdateMany<Plural>Data`: scalars only, every one optional.
    Data,
}

/// The arguments of a write of `meta`, in the reference's order: scalars, to-one relation
/// arguments, to-many relation arguments.
pub(crate) fn write_arguments(
    registry: &mut Registry,
    meta: &'static ModelMeta,
    which: WriteArgs,
) -> IndexMap<String, MetaInputValue> {
    let mut out = IndexMap::new();
    for (i, f) in meta.fields.iter().enumerate() {
        if !writable(meta, i) {
            continue;
        }
        let ty = register_value_type(registry, f);
        let ty = if f.list {
            format!("[{ty}!]")
        } else if f.required && f.default.is_none() && matches!(which, WriteArgs::Create { .. }) {
            format!("{ty}!")
        } else {
            ty
        };
        out.insert(f.name.to_owned(), input_value(f.name.to_owned(), ty));
    }
    let skip = match which {
        WriteArgs::Create { skip } => skip,
        WriteArgs::Update => None,
        WriteArgs::Data => return out,
    };
    let id = nullable(<ID as InputType>::create_type_info(registry));
    for list in [false, true] {
        for (i, f) in meta.relations.iter().enumerate() {
            if f.list != list || Some(i) == skip {
                continue;
            }
            let (key, ty) = if list {
                (svc_names::connect_list_argument(f.name), format!("[{id}!]"))
            } else {
                (svc_names::connect_argument(f.name), id.clone())
            };
            out.insert(key.clone(), input_value(key, ty));
            if f.nested {
                let nested = svc_names::nested_input(meta.name, f.name, f.target.name);
                let name = register_input(registry, nested, |registry| {
                    write_arguments(registry, f.target, WriteArgs::Create { skip: Some(f.back) })
                });
                let ty = if list { format!("[{name}!]") } else { name };
                out.insert(f.name.to_owned(), input_value(f.name.to_owned(), ty));
            }
        }
    }
    out
}

/// `Create<T>`, `Update<T>` or `UpdateMany<Plural>Data` of `meta`.
pub(crate) fn write_input(
    registry: &mut Registry,
    meta: &'static ModelMeta,
    which: WriteArgs,
) -> String {
    let name = match which {
        WriteArgs::Create { .. } => svc_names::create_input(meta.name),
        WriteArgs::Update => svc_names::update_input(meta.name),
        WriteArgs::Data => svc_names::update_many_data(meta.name),
    };
    register_input(registry, name, |registry| {
        let mut fields = IndexMap::new();
        if which == WriteArgs::Update {
            let id = <ID as InputType>::create_type_info(registry);
            fields.insert("id".to_owned(), input_value("id".to_owned(), id));
        }
        fields.extend(write_arguments(registry, meta, which));
        fields
    })
}
