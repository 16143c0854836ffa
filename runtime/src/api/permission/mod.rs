//! The permission schema served at `/permissions` to admins (reference §5.5): one
//! `Some<Type>Exists(<list args>): Boolean` per model, the calls permission queries are written
//! with.

use std::borrow::Cow;
use std::marker::PhantomData;

use async_graphql::indexmap::IndexMap;
use async_graphql::registry::{MetaField, Registry};
use async_graphql::resolver_utils::ContainerType;
use async_graphql::{Context, OutputType, ServerResult, Value};

use crate::api::registry::{empty_field, list_arguments, meta_field, table_object};
use crate::api::resolve::{Call, resolve_model};
use crate::model::ServiceDef;

/// The root query type of the permission schema.
pub struct PermissionQuery<S>(PhantomData<fn() -> S>);

impl<S> Default for PermissionQuery<S> {
    fn default() -> Self {
        PermissionQuery(PhantomData)
    }
}

table_object!(impl[S: ServiceDef] PermissionQuery<S>, name: Cow::Borrowed("Query"), fields: |registry| exists_fields::<S>(registry));

/// One `Some<Type>Exists` per model.
fn exists_fields<S: ServiceDef>(registry: &mut Registry) -> IndexMap<String, MetaField> {
    let models = S::META.models;
    let mut fields = IndexMap::new();
    for m in models {
        let name = svc_names::some_exists_field(m.name);
        let args = list_arguments(registry, m, false);
        let ty = <bool as OutputType>::create_type_info(registry);
        fields.insert(name.clone(), meta_field(&name, ty, args, None));
    }
    if models.is_empty() {
        fields.extend([empty_field()]);
    }
    fields
}

impl<S: ServiceDef> ContainerType for PermissionQuery<S> {
    async fn resolve_field(&self, ctx: &Context<'_>) -> ServerResult<Option<Value>> {
        let name = ctx.item.node.name.node.as_str();
        if name == "_empty" {
            return Ok(Some(Value::Boolean(false)));
        }
        match S::META
            .models
            .iter()
            .find(|m| svc_names::some_exists_field(m.name) == name)
        {
            Some(m) => resolve_model(ctx, m, Call::SomeExists).await,
            None => Ok(None),
        }
    }
}
