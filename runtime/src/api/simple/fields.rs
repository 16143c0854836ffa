//! The relation fields of model types in the Simple API: `f(filter)` for to-one fields,
//! `f(<list args>)` and `_fMeta(<list args>)` for to-many ones. The generated `ComplexObject`
//! impl of every model type registers them with [`relation_fields`] and resolves them with
//! [`relation_field`]; the engine batches them per request.

use async_graphql::registry::{MetaField, Registry};
use async_graphql::{Context, OutputType, ServerResult, Value};

use crate::api::QueryMeta;
use crate::api::registry::{filter_argument, list_arguments, meta_field};
use crate::api::resolve::{Call, resolve_model};
use crate::model::ModelMeta;

/// The relation fields of `meta`'s object type.
pub fn relation_fields(
    registry: &mut Registry,
    meta: &'static ModelMeta,
) -> Vec<(String, MetaField)> {
    let mut out = Vec::new();
    for rel in meta.relations {
        // Every model type is registered by the root types; a relation field names it.
        let target = rel.target.name;
        if rel.list {
            let args = list_arguments(registry, rel.target, true);
            let ty = format!("[{target}!]");
            out.push((
                rel.name.to_owned(),
                meta_field(rel.name, ty, args.clone(), None),
            ));
            let count = svc_names::relation_meta_field(rel.name);
            let ty = <QueryMeta as OutputType>::create_type_info(registry);
            out.push((count.clone(), meta_field(&count, ty, args, None)));
        } else {
            let args = filter_argument(registry, rel.target);
            let ty = if rel.required {
                format!("{target}!")
            } else {
                target.to_owned()
            };
            out.push((rel.name.to_owned(), meta_field(rel.name, ty, args, None)));
        }
    }
    out
}

/// Resolves a relation field of the node `id` of `meta` (batched per request by the engine).
pub async fn relation_field(
    ctx: &Context<'_>,
    meta: &'static ModelMeta,
    id: &str,
) -> ServerResult<Option<Value>> {
    let name = ctx.item.node.name.node.as_str();
    let count_of = svc_names::parse_relation_meta_field(name);
    for (field, rel) in meta.relations.iter().enumerate() {
        let count = if rel.name == name {
            false
        } else if rel.list && count_of == Some(rel.name) {
            true
        } else {
            continue;
        };
        let call = Call::Related {
            parent: meta,
            id,
            field,
            count,
        };
        return resolve_model(ctx, rel.target, call).await;
    }
    Ok(None)
}
