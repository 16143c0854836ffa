//! The relation fields of model types in the Relay API: to-one fields as in the Simple API
//! (`f(filter)`), to-many fields as connections with the list arguments (`f(<list args>):
//! <Type>Connection`, nullable like the Simple API's lists), and no `_<field>Meta` fields
//! (reference §3.1). The generated code reaches them through the runtime's facade when the
//! schema is the Relay API's ([`crate::api::shape`]).

use async_graphql::registry::{MetaField, Registry};
use async_graphql::{Context, ServerResult, Value};

use super::connection::{Source, register_connection, resolve_connection};
use crate::api::registry::{filter_argument, list_arguments, meta_field};
use crate::api::resolve::{Call, resolve_model};
use crate::engine::related::Related;
use crate::model::ModelMeta;

/// The relation fields of `meta`'s object type.
pub fn relation_fields(
    registry: &mut Registry,
    meta: &'static ModelMeta,
) -> Vec<(String, MetaField)> {
    meta.relations
        .iter()
        .map(|rel| {
            let field = if rel.list {
                let args = list_arguments(registry, rel.target, true);
                let ty = register_connection(registry, rel.target);
                meta_field(rel.name, ty, args, None)
            } else {
                let args = filter_argument(registry, rel.target);
                let target = rel.target.name;
                let ty = if rel.required {
                    format!("{target}!")
                } else {
                    target.to_owned()
                };
                meta_field(rel.name, ty, args, None)
            };
            (rel.name.to_owned(), field)
        })
        .collect()
}

/// Resolves a relation field of the node `id` of `meta` (batched per request by the engine).
pub async fn relation_field(
    ctx: &Context<'_>,
    meta: &'static ModelMeta,
    id: &str,
) -> ServerResult<Option<Value>> {
    let name = ctx.item.node.name.node.as_str();
    let Some((field, rel)) = meta
        .relations
        .iter()
        .enumerate()
        .find(|(_, r)| r.name == name)
    else {
        return Ok(None);
    };
    if rel.list {
        let at = Related {
            owner: meta,
            parent: id,
            field,
        };
        return resolve_connection(ctx, rel.target, Source::Related(at)).await;
    }
    let call = Call::Related {
        parent: meta,
        id,
        field,
        count: false,
    };
    resolve_model(ctx, rel.target, call).await
}
