//! The Relay API's root mutation type (reference §3.2): `create<T>`, `update<T>`,
//! `updateOrCreate<T>` and `delete<T>` in the Simple API's order, each taking one argument
//! `input: <Mutation>Input!` (the Simple API's arguments plus `clientMutationId: String!`) and
//! answering `<Mutation>Payload { viewer, clientMutationId, <node>, edge, <to-one fields> }`
//! (`deletedId` too for deletes). The writes are the engine's, as in the Simple API: the same
//! permissions, one transaction, the same errors.

use std::borrow::Cow;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Arc;

use async_graphql::indexmap::IndexMap;
use async_graphql::registry::{MetaField, MetaInputValue, Registry};
use async_graphql::resolver_utils::ContainerType;
use async_graphql::{
    Context, ContextSelectionSet, ID, InputType, Name, OutputType, Pos, Positioned, ServerError,
    ServerResult, Value,
};

use super::connection::{Edge, register_connection};
use super::query::Viewer;
use crate::api::args::{parse_input, raw_arg};
use crate::api::guard::allow_payload_node;
use crate::api::registry::{
    input_value, meta_field, register_input, register_object, table_object,
};
use crate::api::request;
use crate::api::resolve::{Call, Resolved, output, resolve_model, server_error};
use crate::api::roots::{register_records, user_model};
use crate::api::writes::{WriteArgs, write_arguments, write_input};
use crate::engine::write::{self, payload_fields};
use crate::model::{ApiError, ModelMeta, Record, ServiceDef, Visitor, Write};

/// A model mutation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Create,
    Update,
    UpdateOrCreate,
    Delete,
}

/// The root mutation type of the Relay API, with its fields by name.
pub struct Mutation<S> {
    by_name: HashMap<String, (&'static ModelMeta, Op)>,
    _service: PhantomData<fn() -> S>,
}

impl<S: ServiceDef> Default for Mutation<S> {
    fn default() -> Self {
        Mutation {
            by_name: fields::<S>()
                .into_iter()
                .map(|(name, m, op)| (name, (m, op)))
                .collect(),
            _service: PhantomData,
        }
    }
}

/// Every mutation field in the Simple API's order: `create<T>` (`User` last), `update<T>`,
/// `updateOrCreate<T>`, `delete<T>`.
fn fields<S: ServiceDef>() -> Vec<(String, &'static ModelMeta, Op)> {
    let models = S::META.models;
    let user = user_model(S::META);
    let is_user = |m: &&'static ModelMeta| user.is_some_and(|u| std::ptr::eq(u, *m));
    let mut out = Vec::new();
    for m in models.iter().filter(|m| !is_user(m)) {
        out.push((svc_names::create_field(m.name), *m, Op::Create));
    }
    for m in models {
        out.push((svc_names::update_field(m.name), *m, Op::Update));
    }
    for m in models {
        out.push((
            svc_names::update_or_create_field(m.name),
            *m,
            Op::UpdateOrCreate,
        ));
    }
    for m in models {
        out.push((svc_names::delete_field(m.name), *m, Op::Delete));
    }
    for m in models.iter().filter(|m| is_user(m)) {
        out.push((svc_names::create_field(m.name), *m, Op::Create));
    }
    out
}

table_object!(impl[S: ServiceDef] Mutation<S>, name: Cow::Borrowed("Mutation"), fields: |registry| registered::<S>(registry));

/// The fields of `Mutation`, with their input and payload types.
fn registered<S: ServiceDef>(registry: &mut Registry) -> IndexMap<String, MetaField> {
    register_records::<S>(registry);
    let mut out = IndexMap::new();
    for (name, m, op) in fields::<S>() {
        let input = register_input(registry, svc_names::relay_input_type(&name), |registry| {
            input_fields(registry, m, op)
        });
        let payload = register_payload::<S>(registry, &name, m, op);
        let args = IndexMap::from([(
            "input".to_owned(),
            input_value("input".to_owned(), format!("{input}!")),
        )]);
        out.insert(name.clone(), meta_field(&name, payload, args, None));
    }
    out
}

/// The fields of `<Mutation>Input`: the Simple API's arguments of the mutation, then
/// `clientMutationId: String!`.
fn input_fields(
    registry: &mut Registry,
    m: &'static ModelMeta,
    op: Op,
) -> IndexMap<String, MetaInputValue> {
    let id = <ID as InputType>::create_type_info(registry);
    let mut out = IndexMap::new();
    match op {
        Op::Create => out.extend(write_arguments(
            registry,
            m,
            WriteArgs::Create { skip: None },
        )),
        Op::Update => {
            out.insert("id".to_owned(), input_value("id".to_owned(), id));
            out.extend(write_arguments(registry, m, WriteArgs::Update));
        }
        Op::UpdateOrCreate => {
            let update = write_input(registry, m, WriteArgs::Update);
            let ty = format!("{update}!");
            out.insert("update".to_owned(), input_value("update".to_owned(), ty));
            if !write_arguments(registry, m, WriteArgs::Create { skip: None }).is_empty() {
                let create = write_input(registry, m, WriteArgs::Create { skip: None });
                let ty = format!("{create}!");
                out.insert("create".to_owned(), input_value("create".to_owned(), ty));
            }
        }
        Op::Delete => {
            out.insert("id".to_owned(), input_value("id".to_owned(), id));
        }
    }
    let text = <String as InputType>::create_type_info(registry);
    out.insert(
        CLIENT_MUTATION_ID.to_owned(),
        input_value(CLIENT_MUTATION_ID.to_owned(), text),
    );
    out
}

const CLIENT_MUTATION_ID: &str = "clientMutationId";

/// Registers `<Mutation>Payload` of the mutation `name` of `m`; its name.
fn register_payload<S: ServiceDef>(
    registry: &mut Registry,
    name: &str,
    m: &'static ModelMeta,
    op: Op,
) -> String {
    register_object(registry, svc_names::relay_payload_type(name), |registry| {
        let viewer = <Viewer<S> as OutputType>::create_type_info(registry);
        let text = <String as OutputType>::create_type_info(registry);
        let none = IndexMap::new;
        let mut fields = IndexMap::new();
        fields.insert(
            "viewer".to_owned(),
            meta_field("viewer", viewer, none(), None),
        );
        fields.insert(
            CLIENT_MUTATION_ID.to_owned(),
            meta_field(CLIENT_MUTATION_ID, text, none(), None),
        );
        let node = svc_names::payload_node_field(m.name);
        fields.insert(
            node.clone(),
            meta_field(&node, m.name.to_owned(), none(), None),
        );
        register_connection(registry, m);
        let edge = svc_names::edge_type(m.name);
        fields.insert("edge".to_owned(), meta_field("edge", edge, none(), None));
        for rel in m.relations.iter().filter(|r| !r.list) {
            let key = svc_names::payload_relation_field(rel.name, m.name);
            let ty = rel.target.name.to_owned();
            fields.insert(key.clone(), meta_field(&key, ty, none(), None));
        }
        if op == Op::Delete {
            let id = <ID as OutputType>::create_type_info(registry);
            let id = id.trim_end_matches('!').to_owned();
            fields.insert(
                "deletedId".to_owned(),
                meta_field("deletedId", id, none(), None),
            );
        }
        fields
    })
}

impl<S: ServiceDef> ContainerType for Mutation<S> {
    async fn resolve_field(&self, ctx: &Context<'_>) -> ServerResult<Option<Value>> {
        let name = ctx.item.node.name.node.as_str();
        let Some((m, op)) = self.by_name.get(name) else {
            return Ok(None);
        };
        let write = ctx
            .data_opt::<Arc<Writes>>()
            .and_then(|w| w.models.iter().find(|(meta, _)| std::ptr::eq(*meta, *m)))
            .map(|(_, f)| *f)
            .ok_or_else(|| ServerError::new(format!("no writes for `{}`", m.name), None))?;
        write(ctx, *op).await
    }
}

/// The mutation resolvers of every model, monomorphised for its record type, built once per
/// schema from [`ServiceDef::visit`] and kept in the schema's data.
pub struct Writes {
    models: Vec<(&'static ModelMeta, WriteFn)>,
}

type WriteFn = for<'a> fn(&'a Context<'a>, Op) -> Resolved<'a>;

impl std::fmt::Debug for Writes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writes").finish_non_exhaustive()
    }
}

impl Writes {
    pub fn of<S: ServiceDef>() -> Arc<Writes> {
        struct Collect<S>(Vec<(&'static ModelMeta, WriteFn)>, PhantomData<fn() -> S>);
        impl<S: ServiceDef> Visitor for Collect<S> {
            fn record<R: Record + OutputType>(&mut self) {
                self.0.push((R::META, mutate::<S, R>));
            }
            fn relation<const R: usize>(&mut self) {}
        }
        let mut collect = Collect::<S>(Vec::new(), PhantomData);
        S::visit(&mut collect);
        Arc::new(Writes { models: collect.0 })
    }
}

/// Resolves the mutation `op` of `R`'s model: reads `input`, writes through the engine, and
/// outputs the payload.
fn mutate<'a, S: ServiceDef, R: Record + OutputType>(ctx: &'a Context<'a>, op: Op) -> Resolved<'a> {
    Box::pin(async move {
        let payload = async {
            let req = request(ctx)?;
            let meta = R::META;
            let fail = |e: ApiError| server_error(ctx, e);
            let name = ctx.item.node.name.node.as_str();
            let input_name = || svc_names::relay_input_type(name);
            let (pos, mut input) = match raw_arg(ctx, "input")? {
                Some((pos, Value::Object(fields))) => (pos, fields),
                _ => {
                    let message = format!(
                        r#"Failed to parse "{}": expected an input object"#,
                        input_name()
                    );
                    return Err(ServerError::new(message, Some(ctx.item.pos)));
                }
            };
            let client_mutation_id = match input.shift_remove(CLIENT_MUTATION_ID) {
                Some(Value::String(id)) => id,
                _ => {
                    let message = format!(
                        r#"Failed to parse "{}": `clientMutationId` is required"#,
                        input_name()
                    );
                    return Err(ServerError::new(message, Some(pos)));
                }
            };
            let read = |value: &Value, type_name: String| {
                parse_input(meta, value, None, pos, || type_name.clone())
            };
            let (node, fields) = match op {
                Op::Create => {
                    let write = read(&Value::Object(input), input_name())?;
                    let fields = payload_fields(meta, &write);
                    (write::create::<R>(req, write).await.map_err(fail)?, fields)
                }
                Op::Update => {
                    let id = take_id(&mut input, pos, &input_name)?;
                    let write = read(&Value::Object(input), input_name())?;
                    let fields = payload_fields(meta, &write);
                    (
                        write::update::<R>(req, &id, write).await.map_err(fail)?,
                        fields,
                    )
                }
                Op::UpdateOrCreate => {
                    let update_name = || svc_names::update_input(meta.name);
                    let mut update = match input.shift_remove("update") {
                        Some(Value::Object(update)) => update,
                        _ => IndexMap::new(),
                    };
                    let id = take_id(&mut update, pos, &update_name)?;
                    let update = read(&Value::Object(update), update_name())?;
                    let create = match input.shift_remove("create") {
                        Some(create) => read(&create, svc_names::create_input(meta.name))?,
                        None => Write::default(),
                    };
                    let fields = (payload_fields(meta, &update), payload_fields(meta, &create));
                    let (node, created) = write::update_or_create::<R>(req, &id, update, create)
                        .await
                        .map_err(fail)?;
                    (node, if created { fields.1 } else { fields.0 })
                }
                Op::Delete => {
                    let id = take_id(&mut input, pos, &input_name)?;
                    let node = write::delete::<R>(req, &id).await.map_err(fail)?;
                    (node, vec![meta.fields[meta.id].name])
                }
            };
            allow_payload_node(ctx, fields, node.id());
            Ok(Payload::<S, R> {
                type_name: svc_names::relay_payload_type(name),
                node,
                client_mutation_id,
                deleted: op == Op::Delete,
                _service: PhantomData,
            })
        };
        output(ctx, payload.await).await
    })
}

/// Takes the required `id` out of an input object.
fn take_id(
    input: &mut IndexMap<Name, Value>,
    pos: Pos,
    type_name: &dyn Fn() -> String,
) -> ServerResult<String> {
    match input.shift_remove("id") {
        Some(Value::String(id)) => Ok(id),
        _ => Err(ServerError::new(
            format!(r#"Failed to parse "{}": `id` is required"#, type_name()),
            Some(pos),
        )),
    }
}

/// A mutation's payload.
struct Payload<S, R> {
    type_name: String,
    node: R,
    client_mutation_id: String,
    deleted: bool,
    _service: PhantomData<fn() -> S>,
}

impl<S: ServiceDef, R: Record + OutputType> OutputType for Payload<S, R> {
    fn type_name() -> Cow<'static, str> {
        Cow::Borrowed("Payload")
    }

    /// The payload's own type (`CreatePostPayload`); payload types are registered by name from
    /// the data tables, with the mutation root.
    fn introspection_type_name(&self) -> Cow<'static, str> {
        Cow::Owned(self.type_name.clone())
    }

    fn create_type_info(_registry: &mut Registry) -> String {
        Self::type_name().into_owned()
    }

    async fn resolve(
        &self,
        ctx: &ContextSelectionSet<'_>,
        _field: &Positioned<async_graphql::parser::types::Field>,
    ) -> ServerResult<Value> {
        async_graphql::resolver_utils::resolve_container(ctx, self).await
    }
}

impl<S: ServiceDef, R: Record + OutputType> async_graphql::ObjectType for Payload<S, R> {}

impl<S: ServiceDef, R: Record + OutputType> ContainerType for Payload<S, R> {
    async fn resolve_field(&self, ctx: &Context<'_>) -> ServerResult<Option<Value>> {
        let meta = R::META;
        let name = ctx.item.node.name.node.as_str();
        match name {
            "viewer" => return output(ctx, Ok(Viewer::<S>::default())).await,
            CLIENT_MUTATION_ID => return Ok(Some(Value::String(self.client_mutation_id.clone()))),
            "edge" => return output(ctx, Ok(Edge(self.node.clone()))).await,
            "deletedId" if self.deleted => {
                return Ok(Some(Value::String(self.node.id().to_owned())));
            }
            _ => {}
        }
        if name == svc_names::payload_node_field(meta.name) {
            return output(ctx, Ok(&self.node)).await;
        }
        let to_one =
            meta.relations.iter().enumerate().find(|(_, r)| {
                !r.list && svc_names::payload_relation_field(r.name, meta.name) == name
            });
        let Some((field, rel)) = to_one else {
            return Ok(None);
        };
        // A deleted node's edges went with it.
        if self.deleted {
            return Ok(Some(Value::Null));
        }
        let call = Call::Related {
            parent: meta,
            id: self.node.id(),
            field,
            count: false,
        };
        resolve_model(ctx, rel.target, call).await
    }
}
