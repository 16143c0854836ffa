//! The Relay API's root query type (reference §3.1): `viewer` and `node(id)`. The viewer holds
//! the query fields: `all<Plural>` connections, `user`, one single-node field per model, and its
//! own `id`, always `viewer-fixed`; `node(id: "viewer-fixed")` is the viewer, so `Viewer`
//! implements `Node` beside the model types.

use std::borrow::Cow;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Arc;

use async_graphql::indexmap::IndexMap;
use async_graphql::registry::{MetaField, MetaType, Registry};
use async_graphql::resolver_utils::ContainerType;
use async_graphql::{Context, ID, InputType, OutputType, ServerError, ServerResult, Value};

use super::connection::{Source, register_connection, resolve_connection};
use crate::api::args::arg;
use crate::api::registry::{empty_field, input_value, list_arguments, meta_field, table_object};
use crate::api::resolve::{Call, output, resolve_model};
use crate::api::resolvers;
use crate::api::roots::{node, register_records, unique_arguments, user_model};
use crate::model::{FunctionMeta, ModelMeta, ResolverMeta, ServiceDef};

/// The root query type of the Relay API.
pub struct Query<S>(PhantomData<fn() -> S>);

impl<S> Default for Query<S> {
    fn default() -> Self {
        Query(PhantomData)
    }
}

/// A field of the viewer.
#[derive(Debug, Clone, Copy)]
pub(super) enum ViewerField {
    All(&'static ModelMeta),
    One(&'static ModelMeta),
    User(&'static ModelMeta),
    Id,
    /// A resolver function's field (reference §7.4).
    Resolver(&'static FunctionMeta, &'static ResolverMeta),
}

/// The viewer: the query fields of the Relay API (resolved by name through [`ViewerFields`]).
pub(super) struct Viewer<S>(PhantomData<fn() -> S>);

impl<S> Default for Viewer<S> {
    fn default() -> Self {
        Viewer(PhantomData)
    }
}

/// The viewer's fields by name, built once per schema and kept in its data (a request's
/// viewers, in the query and in every mutation payload, look them up there).
#[derive(Debug)]
pub struct ViewerFields(HashMap<String, ViewerField>);

impl ViewerFields {
    /// The viewer's fields of the service `S`: `all<Plural>` and `<Type>` per model, `user`
    /// when the service has a model named `User`, `id`, and the resolver functions' fields.
    pub fn of<S: ServiceDef>() -> Arc<ViewerFields> {
        let mut by_name = HashMap::new();
        for m in S::META.models {
            by_name.insert(svc_names::all_field(m.name), ViewerField::All(m));
            by_name.insert(m.name.to_owned(), ViewerField::One(m));
        }
        if let Some(user) = user_model(S::META) {
            by_name.insert(svc_names::USER_FIELD.to_owned(), ViewerField::User(user));
        }
        by_name.insert("id".to_owned(), ViewerField::Id);
        for (name, (f, r)) in resolvers::resolvers(S::META, false) {
            by_name.insert(name.to_owned(), ViewerField::Resolver(f, r));
        }
        Arc::new(ViewerFields(by_name))
    }
}

table_object!(impl[S: ServiceDef] Query<S>, name: Cow::Borrowed("Query"), fields: |registry| query_fields::<S>(registry));

table_object!(impl[S: ServiceDef] Viewer<S>, name: Cow::Borrowed(svc_names::VIEWER_TYPE), fields: |registry| viewer_fields::<S>(registry));

/// `viewer: Viewer!` and, when the service has a model, `node(id: ID!): Node`.
fn query_fields<S: ServiceDef>(registry: &mut Registry) -> IndexMap<String, MetaField> {
    register_records::<S>(registry);
    let mut fields = IndexMap::new();
    // `create_type_info` names the non-null type (`Viewer!`).
    let viewer = <Viewer<S> as OutputType>::create_type_info(registry);
    let viewer = viewer.trim_end_matches('!').to_owned();
    let name = svc_names::VIEWER_FIELD;
    fields.insert(
        name.to_owned(),
        meta_field(name, format!("{viewer}!"), IndexMap::new(), None),
    );
    if !S::META.models.is_empty() {
        let node = <S::Node as OutputType>::create_type_info(registry);
        let node = node.trim_end_matches('!').to_owned();
        // The viewer is a node too.
        if let Some(MetaType::Interface { possible_types, .. }) = registry.types.get_mut(&node) {
            possible_types.insert(viewer.clone());
        }
        registry.add_implements(&viewer, &node);
        let id = <ID as InputType>::create_type_info(registry);
        let args = IndexMap::from([("id".to_owned(), input_value("id".to_owned(), id))]);
        let name = svc_names::NODE_FIELD;
        fields.insert(name.to_owned(), meta_field(name, node, args, None));
    }
    fields
}

/// The viewer's fields in the reference's order: `all<Plural>` for every model, `user`, one
/// single-node field per model, `id`.
fn viewer_fields<S: ServiceDef>(registry: &mut Registry) -> IndexMap<String, MetaField> {
    let models = S::META.models;
    let mut fields = IndexMap::new();
    for m in models {
        let name = svc_names::all_field(m.name);
        let args = list_arguments(registry, m, true);
        let ty = register_connection(registry, m);
        fields.insert(
            name.clone(),
            meta_field(&name, format!("{ty}!"), args, None),
        );
    }
    if let Some(user) = user_model(S::META) {
        let name = svc_names::USER_FIELD;
        let field = meta_field(name, user.name.to_owned(), IndexMap::new(), None);
        fields.insert(name.to_owned(), field);
    }
    for m in models {
        let args = unique_arguments(registry, m);
        let field = meta_field(m.name, m.name.to_owned(), args, None);
        fields.insert(m.name.to_owned(), field);
    }
    // `ID!`: `create_type_info` names the non-null type.
    let id = <ID as OutputType>::create_type_info(registry);
    fields.insert("id".to_owned(), meta_field("id", id, IndexMap::new(), None));
    fields.extend(resolvers::register(registry, S::META, false));
    if models.is_empty() {
        fields.extend([empty_field()]);
    }
    fields
}

impl<S: ServiceDef> ContainerType for Query<S> {
    async fn resolve_field(&self, ctx: &Context<'_>) -> ServerResult<Option<Value>> {
        let name = ctx.item.node.name.node.as_str();
        if name == svc_names::VIEWER_FIELD {
            return output(ctx, Ok(Viewer::<S>::default())).await;
        }
        let models = S::META.models;
        if name == svc_names::NODE_FIELD && !models.is_empty() {
            let id = match arg::<ID>(ctx, "id") {
                Ok(id) => id,
                Err(e) => return Err(ctx.set_error_path(e)),
            };
            if id.as_str() == svc_names::VIEWER_ID {
                return output(ctx, Ok(Viewer::<S>::default())).await;
            }
            return node(ctx, models).await;
        }
        Ok(None)
    }
}

impl<S: ServiceDef> ContainerType for Viewer<S> {
    async fn resolve_field(&self, ctx: &Context<'_>) -> ServerResult<Option<Value>> {
        let name = ctx.item.node.name.node.as_str();
        let fields = ctx
            .data_opt::<Arc<ViewerFields>>()
            .ok_or_else(|| ServerError::new("the schema has no viewer fields", None))?;
        match fields.0.get(name) {
            Some(ViewerField::All(m)) => resolve_connection(ctx, m, Source::Root).await,
            Some(ViewerField::One(m)) => resolve_model(ctx, m, Call::One).await,
            Some(ViewerField::User(m)) => resolve_model(ctx, m, Call::CurrentUser).await,
            Some(ViewerField::Id) => Ok(Some(Value::String(svc_names::VIEWER_ID.to_owned()))),
            Some(ViewerField::Resolver(f, r)) => resolvers::resolve(ctx, f, r).await,
            None if name == "_empty" => Ok(Some(Value::Boolean(false))),
            None => Ok(None),
        }
    }
}
