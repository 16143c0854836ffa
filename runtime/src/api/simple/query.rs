//! The Simple API's root query type, registered and resolved from the service's data tables.
//!
//! Field order follows the reference (§2.1): `all<Plural>`, `_all<Plural>Meta`, `<Type>` for every
//! model, then `user` and `node`. A field name is resolved by looking it up among the names the
//! generator guarantees to be unique.

use std::borrow::Cow;
use std::collections::HashMap;
use std::marker::PhantomData;

use async_graphql::indexmap::IndexMap;
use async_graphql::registry::{MetaField, Registry};
use async_graphql::resolver_utils::ContainerType;
use async_graphql::{Context, ID, InputType, OutputType, ServerResult, Value};

use crate::api::QueryMeta;
use crate::api::registry::{empty_field, input_value, list_arguments, meta_field, table_object};
use crate::api::resolve::{Call, resolve_model};
use crate::api::resolvers;
use crate::api::roots::{node, register_records, unique_arguments, user_model};
use crate::model::{FunctionMeta, ModelMeta, ResolverMeta, ServiceDef};

/// The root query type of the Simple API, with its fields by name.
pub struct Query<S> {
    by_name: HashMap<String, (&'static ModelMeta, Call<'static>)>,
    resolvers: HashMap<&'static str, (&'static FunctionMeta, &'static ResolverMeta)>,
    _service: PhantomData<fn() -> S>,
}

impl<S: ServiceDef> Default for Query<S> {
    fn default() -> Self {
        let mut by_name = HashMap::new();
        for m in S::META.models {
            by_name.insert(svc_names::all_field(m.name), (*m, Call::All));
            by_name.insert(svc_names::meta_field(m.name), (*m, Call::Count));
            by_name.insert(m.name.to_owned(), (*m, Call::One));
        }
        Query {
            by_name,
            resolvers: resolvers::resolvers(S::META, false),
            _service: PhantomData,
        }
    }
}

table_object!(impl[S: ServiceDef] Query<S>, name: Cow::Borrowed("Query"), fields: |registry| query_fields::<S>(registry));

/// The fields of `Query`, in the reference's order.
fn query_fields<S: ServiceDef>(registry: &mut Registry) -> IndexMap<String, MetaField> {
    register_records::<S>(registry);
    let models = S::META.models;
    let mut fields = IndexMap::new();
    for m in models {
        let name = svc_names::all_field(m.name);
        let args = list_arguments(registry, m, true);
        let field = meta_field(&name, format!("[{}!]!", m.name), args, None);
        fields.insert(name, field);
    }
    for m in models {
        let name = svc_names::meta_field(m.name);
        let ty = <QueryMeta as OutputType>::create_type_info(registry);
        let args = list_arguments(registry, m, true);
        fields.insert(name.clone(), meta_field(&name, ty, args, None));
    }
    for m in models {
        let args = unique_arguments(registry, m);
        let field = meta_field(m.name, m.name.to_owned(), args, None);
        fields.insert(m.name.to_owned(), field);
    }
    if let Some(user) = user_model(S::META) {
        let name = svc_names::USER_FIELD;
        let field = meta_field(name, user.name.to_owned(), IndexMap::new(), None);
        fields.insert(name.to_owned(), field);
    }
    if models.is_empty() {
        fields.extend([empty_field()]);
    } else {
        let ty = <S::Node as OutputType>::create_type_info(registry);
        let id = <ID as InputType>::create_type_info(registry);
        let args = IndexMap::from([("id".to_owned(), input_value("id".to_owned(), id))]);
        let ty = ty.trim_end_matches('!').to_owned();
        let name = svc_names::NODE_FIELD;
        fields.insert(name.to_owned(), meta_field(name, ty, args, None));
    }
    fields.extend(resolvers::register(registry, S::META, false));
    fields
}

impl<S: ServiceDef> ContainerType for Query<S> {
    async fn resolve_field(&self, ctx: &Context<'_>) -> ServerResult<Option<Value>> {
        let name = ctx.item.node.name.node.as_str();
        if let Some((meta, call)) = self.by_name.get(name) {
            return resolve_model(ctx, meta, *call).await;
        }
        let models = S::META.models;
        if name == svc_names::NODE_FIELD && !models.is_empty() {
            return node(ctx, models).await;
        }
        if name == svc_names::USER_FIELD
            && let Some(user) = user_model(S::META)
        {
            return resolve_model(ctx, user, Call::CurrentUser).await;
        }
        if let Some((f, r)) = self.resolvers.get(name) {
            return resolvers::resolve(ctx, f, r).await;
        }
        if name == "_empty" {
            return Ok(Some(Value::Boolean(false)));
        }
        Ok(None)
    }
}
