//! The Relay API's root mutation type (reference §3.2): the Simple API's mutation fields in its
//! order ([`crate::api::mutations`]), each taking one argument `input: <Mutation>Input!` (the
//! Simple API's arguments plus `clientMutationId: String!`). Model mutations answer
//! `<Mutation>Payload { viewer, clientMutationId, <node>, edge, <to-one fields> }` (`deletedId`
//! too for deletes); relation mutations `{ viewer, clientMutationId, <bName>, <aName>,
//! <bName>Edge, <aName>Edge }`; the extensions `deleteMany`/`updateMany` `{ viewer,
//! clientMutationId, count }`. The writes are the engine's, as in the Simple API: the same
//! permissions, one transaction, the same errors.

use std::borrow::Cow;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Arc;

use async_graphql::indexmap::IndexMap;
use async_graphql::registry::{MetaField, MetaInputValue, Registry};
use async_graphql::resolver_utils::ContainerType;
use async_graphql::{
    Context, ID, InputType, Name, OutputType, Pos, ServerError, ServerResult, Value,
};

use super::connection::{Edge, register_connection, resolve_edge_row};
use super::query::Viewer;
use crate::api::args::{parse_input, raw_arg};
use crate::api::guard::allow_payload_node;
use crate::api::inputs::Filter;
use crate::api::mutations::{
    MutationField, field_name, model_arguments, model_named, mutation_fields, payload_name,
    relation_arguments, run_relation,
};
use crate::api::registry::{
    input_value, meta_field, named_object, register_input, register_object, table_object,
};
use crate::api::request;
use crate::api::resolve::{Call, Resolved, output, resolve_model, server_error};
use crate::api::resolvers;
use crate::api::roots::register_records;
use crate::engine::write::{self, RelOp, payload_fields};
use crate::model::{
    ApiError, FunctionMeta, ModelMeta, Record, RelationMeta, ResolverMeta, ServiceDef, Visitor,
    Write,
};
use crate::storage::Row;

/// The root mutation type of the Relay API, with its fields by name.
pub struct Mutation<S> {
    by_name: HashMap<String, MutationField>,
    resolvers: HashMap<&'static str, (&'static FunctionMeta, &'static ResolverMeta)>,
    _service: PhantomData<fn() -> S>,
}

impl<S: ServiceDef> Default for Mutation<S> {
    fn default() -> Self {
        Mutation {
            by_name: mutation_fields(S::META).into_iter().collect(),
            resolvers: resolvers::resolvers(S::META, true),
            _service: PhantomData,
        }
    }
}

table_object!(impl[S: ServiceDef] Mutation<S>, name: Cow::Borrowed("Mutation"), fields: |registry| registered::<S>(registry));

/// The fields of `Mutation`, with their input and payload types.
fn registered<S: ServiceDef>(registry: &mut Registry) -> IndexMap<String, MetaField> {
    register_records::<S>(registry);
    let service = S::META;
    let mut out = IndexMap::new();
    for (name, field) in mutation_fields(service) {
        let (input, payload) = match field {
            MutationField::Model(m, call) => {
                let input = register_input(registry, svc_names::relay_input_type(&name), |r| {
                    let args = model_arguments(r, m, call);
                    with_client_mutation_id(r, args)
                });
                (input, register_payload::<S>(registry, &name, m, call))
            }
            MutationField::Relation(r, op) => {
                let rel = &service.relations[r];
                let input = register_input(registry, relation_input(rel, op), |registry| {
                    let args = relation_arguments(registry, rel);
                    with_client_mutation_id(registry, args)
                });
                (input, register_relation_payload::<S>(registry, rel, op))
            }
        };
        let args = IndexMap::from([(
            "input".to_owned(),
            input_value("input".to_owned(), format!("{input}!")),
        )]);
        out.insert(name.clone(), meta_field(&name, payload, args, None));
    }
    out.extend(resolvers::register(registry, service, true));
    out
}

/// The input type of a relation mutation: `<Op><R><ModelA>Input`, where `set<R>` takes the name
/// `addTo<R>` would have.
fn relation_input(rel: &RelationMeta, op: RelOp) -> String {
    let named_as = if op == RelOp::Set { RelOp::AddTo } else { op };
    svc_names::relay_relation_input(&field_name(named_as, rel.name), rel.a)
}

/// An input type's fields: `args`, then `clientMutationId: String!`.
fn with_client_mutation_id(
    registry: &mut Registry,
    mut args: IndexMap<String, MetaInputValue>,
) -> IndexMap<String, MetaInputValue> {
    let text = <String as InputType>::create_type_info(registry);
    args.insert(
        CLIENT_MUTATION_ID.to_owned(),
        input_value(CLIENT_MUTATION_ID.to_owned(), text),
    );
    args
}

const CLIENT_MUTATION_ID: &str = "clientMutationId";

/// The fields every payload starts with: `viewer: Viewer!`, `clientMutationId: String!`.
fn payload_head<S: ServiceDef>(registry: &mut Registry) -> IndexMap<String, MetaField> {
    let viewer = <Viewer<S> as OutputType>::create_type_info(registry);
    let text = <String as OutputType>::create_type_info(registry);
    IndexMap::from([
        (
            "viewer".to_owned(),
            meta_field("viewer", viewer, IndexMap::new(), None),
        ),
        (
            CLIENT_MUTATION_ID.to_owned(),
            meta_field(CLIENT_MUTATION_ID, text, IndexMap::new(), None),
        ),
    ])
}

/// Registers `<Mutation>Payload` of the model mutation `name` of `m`; its name.
fn register_payload<S: ServiceDef>(
    registry: &mut Registry,
    name: &str,
    m: &'static ModelMeta,
    call: Call<'_>,
) -> String {
    register_object(registry, svc_names::relay_payload_type(name), |registry| {
        let none = IndexMap::new;
        let mut fields = payload_head::<S>(registry);
        if matches!(call, Call::DeleteMany | Call::UpdateMany) {
            let count = <i32 as OutputType>::create_type_info(registry);
            fields.insert("count".to_owned(), meta_field("count", count, none(), None));
            return fields;
        }
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
        if matches!(call, Call::Delete) {
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

/// Registers `<Op><R>Payload { viewer, clientMutationId, <bName>: A, <aName>: B, <bName>Edge,
/// <aName>Edge }`; its name.
fn register_relation_payload<S: ServiceDef>(
    registry: &mut Registry,
    rel: &'static RelationMeta,
    op: RelOp,
) -> String {
    register_object(registry, payload_name(op, rel.name), |registry| {
        let mut fields = payload_head::<S>(registry);
        let sides = [(rel.b_name, rel.a), (rel.a_name, rel.b)];
        for (side, model) in sides {
            let field = meta_field(side, model.to_owned(), IndexMap::new(), None);
            fields.insert(side.to_owned(), field);
        }
        for (side, model) in sides {
            register_connection(registry, model_named(S::META, model));
            let key = svc_names::relay_relation_edge_field(side);
            let ty = svc_names::edge_type(model);
            fields.insert(key.clone(), meta_field(&key, ty, IndexMap::new(), None));
        }
        fields
    })
}

impl<S: ServiceDef> ContainerType for Mutation<S> {
    async fn resolve_field(&self, ctx: &Context<'_>) -> ServerResult<Option<Value>> {
        let name = ctx.item.node.name.node.as_str();
        match self.by_name.get(name).copied() {
            Some(MutationField::Model(m, call)) => {
                let write = ctx
                    .data_opt::<Arc<Writes>>()
                    .and_then(|w| w.models.iter().find(|(meta, _)| std::ptr::eq(*meta, m)))
                    .map(|(_, f)| *f)
                    .ok_or_else(|| ServerError::new(format!("no writes for `{}`", m.name), None))?;
                write(ctx, call).await
            }
            Some(MutationField::Relation(r, op)) => relation_mutation::<S>(ctx, r, op).await,
            // Resolvers take their arguments as they are, not wrapped in `input`.
            None => match self.resolvers.get(name) {
                Some((f, r)) => resolvers::resolve(ctx, f, r).await,
                None => Ok(None),
            },
        }
    }
}

/// The mutation resolvers of every model, monomorphised for its record type, built once per
/// schema from [`ServiceDef::visit`] and kept in the schema's data.
pub struct Writes {
    models: Vec<(&'static ModelMeta, WriteFn)>,
}

type WriteFn = for<'a> fn(&'a Context<'a>, Call<'static>) -> Resolved<'a>;

impl std::fmt::Debug for Writes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writes").finish_non_exhaustive()
    }
}

impl Writes {
    /// The mutation resolvers of every model of the service `S`, collected by visiting its
    /// records.
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

/// The `input` argument of the mutation resolving now, without its `clientMutationId`; that id.
fn read_input(
    ctx: &Context<'_>,
    input_name: &dyn Fn() -> String,
) -> ServerResult<(Pos, IndexMap<Name, Value>, String)> {
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
    match input.shift_remove(CLIENT_MUTATION_ID) {
        Some(Value::String(id)) => Ok((pos, input, id)),
        _ => {
            let message = format!(
                r#"Failed to parse "{}": `clientMutationId` is required"#,
                input_name()
            );
            Err(ServerError::new(message, Some(pos)))
        }
    }
}

/// Resolves the model mutation `call` of `R`'s model: reads `input`, writes through the engine,
/// and outputs the payload.
fn mutate<'a, S: ServiceDef, R: Record + OutputType>(
    ctx: &'a Context<'a>,
    call: Call<'static>,
) -> Resolved<'a> {
    Box::pin(async move {
        let name = ctx.item.node.name.node.as_str();
        let type_name = svc_names::relay_payload_type(name);
        if matches!(call, Call::DeleteMany | Call::UpdateMany) {
            let payload = write_many::<R>(ctx, call)
                .await
                .map(|(count, id)| Batch::<S> {
                    type_name,
                    count,
                    client_mutation_id: id,
                    _service: PhantomData,
                });
            return output(ctx, payload).await;
        }
        let payload = write_one::<R>(ctx, call)
            .await
            .map(|(node, id)| Payload::<S, R> {
                type_name,
                node,
                client_mutation_id: id,
                deleted: matches!(call, Call::Delete),
                _service: PhantomData,
            });
        output(ctx, payload).await
    })
}

/// Runs a create, update, updateOrCreate or delete from `input`, and whitelists the payload's
/// node; the node and the `clientMutationId`.
async fn write_one<R: Record>(ctx: &Context<'_>, call: Call<'_>) -> ServerResult<(R, String)> {
    let req = request(ctx)?;
    let meta = R::META;
    let fail = |e: ApiError| server_error(ctx, e);
    let name = ctx.item.node.name.node.as_str();
    let input_name = || svc_names::relay_input_type(name);
    let (pos, mut input, client_mutation_id) = read_input(ctx, &input_name)?;
    let read = |value: &Value, type_name: String| {
        parse_input(meta, value, None, pos, || type_name.clone())
    };
    let (node, fields) = match call {
        Call::Create => {
            let write = read(&Value::Object(input), input_name())?;
            let fields = payload_fields(meta, &write);
            (write::create::<R>(req, write).await.map_err(fail)?, fields)
        }
        Call::Update => {
            let id = take_id(&mut input, "id", pos, &input_name)?;
            let write = read(&Value::Object(input), input_name())?;
            let fields = payload_fields(meta, &write);
            (
                write::update::<R>(req, &id, write).await.map_err(fail)?,
                fields,
            )
        }
        Call::UpdateOrCreate => {
            let update_name = || svc_names::update_input(meta.name);
            let mut update = match input.shift_remove("update") {
                Some(Value::Object(update)) => update,
                _ => IndexMap::new(),
            };
            let id = take_id(&mut update, "id", pos, &update_name)?;
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
        _ => {
            let id = take_id(&mut input, "id", pos, &input_name)?;
            let node = write::delete::<R>(req, &id).await.map_err(fail)?;
            (node, vec![meta.fields[meta.id].name])
        }
    };
    allow_payload_node(ctx, fields, node.id());
    Ok((node, client_mutation_id))
}

/// Runs a `deleteMany`/`updateMany` from `input`; the count of nodes it touched and the
/// `clientMutationId`.
async fn write_many<R: Record>(ctx: &Context<'_>, call: Call<'_>) -> ServerResult<(i32, String)> {
    let req = request(ctx)?;
    let meta = R::META;
    let fail = |e: ApiError| server_error(ctx, e);
    let name = ctx.item.node.name.node.as_str();
    let input_name = || svc_names::relay_input_type(name);
    let (pos, mut input, client_mutation_id) = read_input(ctx, &input_name)?;
    let filter = input.shift_remove("filter");
    let filter = <Option<Filter<R>> as InputType>::parse(filter)
        .map_err(|e| ServerError::new(e.into_server_error(pos).message, Some(pos)))?
        .map(|f| f.cond);
    let count = if matches!(call, Call::DeleteMany) {
        write::delete_many(req, meta, filter).await
    } else {
        let data = match input.shift_remove("data") {
            Some(data) => {
                parse_input(meta, &data, None, pos, || {
                    svc_names::update_many_data(meta.name)
                })?
                .values
            }
            None => Vec::new(),
        };
        write::update_many(req, meta, filter, data).await
    };
    Ok((count.map_err(fail)?, client_mutation_id))
}

/// Takes the required ID field `key` out of an input object.
fn take_id(
    input: &mut IndexMap<Name, Value>,
    key: &str,
    pos: Pos,
    type_name: &dyn Fn() -> String,
) -> ServerResult<String> {
    match <ID as InputType>::parse(input.shift_remove(key)) {
        Ok(id) => Ok(id.0),
        Err(_) => Err(ServerError::new(
            format!(r#"Failed to parse "{}": `{key}` is required"#, type_name()),
            Some(pos),
        )),
    }
}

/// `<op><R>(input: { <aName>Id, <bName>Id, clientMutationId })`: the `aName` field holds the id
/// of the B node, the `bName` field the id of the A node (reference §2.7).
async fn relation_mutation<S: ServiceDef>(
    ctx: &Context<'_>,
    r: usize,
    op: RelOp,
) -> ServerResult<Option<Value>> {
    let service = S::META;
    let rel = &service.relations[r];
    let payload = async {
        let req = request(ctx)?;
        let input_name = || relation_input(rel, op);
        let (pos, mut input, client_mutation_id) = read_input(ctx, &input_name)?;
        let b_key = svc_names::relation_id_argument(rel.a_name);
        let a_key = svc_names::relation_id_argument(rel.b_name);
        let b_id = take_id(&mut input, &b_key, pos, &input_name)?;
        let a_id = take_id(&mut input, &a_key, pos, &input_name)?;
        let (a, b) = run_relation(req, service, r, op, &a_id, &b_id)
            .await
            .map_err(|e| server_error(ctx, e))?;
        Ok(RelationPayload::<S> {
            type_name: payload_name(op, rel.name),
            rel,
            a,
            b,
            client_mutation_id,
            _service: PhantomData,
        })
    };
    output(ctx, payload.await).await
}

/// The fields every payload starts with, or `None` for the payload's own fields.
async fn resolve_head<S: ServiceDef>(
    ctx: &Context<'_>,
    client_mutation_id: &str,
) -> Option<ServerResult<Option<Value>>> {
    match ctx.item.node.name.node.as_str() {
        "viewer" => Some(output(ctx, Ok(Viewer::<S>::default())).await),
        CLIENT_MUTATION_ID => Some(Ok(Some(Value::String(client_mutation_id.to_owned())))),
        _ => None,
    }
}

/// A model mutation's payload.
struct Payload<S, R> {
    type_name: String,
    node: R,
    client_mutation_id: String,
    deleted: bool,
    _service: PhantomData<fn() -> S>,
}

named_object!(impl[S: ServiceDef, R: Record + OutputType] Payload<S, R>, name: |this| this.type_name.clone());

impl<S: ServiceDef, R: Record + OutputType> ContainerType for Payload<S, R> {
    async fn resolve_field(&self, ctx: &Context<'_>) -> ServerResult<Option<Value>> {
        if let Some(head) = resolve_head::<S>(ctx, &self.client_mutation_id).await {
            return head;
        }
        let meta = R::META;
        let name = ctx.item.node.name.node.as_str();
        match name {
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

/// A `deleteMany`/`updateMany` payload.
struct Batch<S> {
    type_name: String,
    count: i32,
    client_mutation_id: String,
    _service: PhantomData<fn() -> S>,
}

named_object!(impl[S: ServiceDef] Batch<S>, name: |this| this.type_name.clone());

impl<S: ServiceDef> ContainerType for Batch<S> {
    async fn resolve_field(&self, ctx: &Context<'_>) -> ServerResult<Option<Value>> {
        if let Some(head) = resolve_head::<S>(ctx, &self.client_mutation_id).await {
            return head;
        }
        match ctx.item.node.name.node.as_str() {
            "count" => Ok(Some(Value::from(self.count))),
            _ => Ok(None),
        }
    }
}

/// A relation mutation's payload: the A and B nodes after it.
struct RelationPayload<S> {
    type_name: String,
    rel: &'static RelationMeta,
    a: Option<Row>,
    b: Option<Row>,
    client_mutation_id: String,
    _service: PhantomData<fn() -> S>,
}

named_object!(impl[S: ServiceDef] RelationPayload<S>, name: |this| this.type_name.clone());

impl<S: ServiceDef> ContainerType for RelationPayload<S> {
    async fn resolve_field(&self, ctx: &Context<'_>) -> ServerResult<Option<Value>> {
        if let Some(head) = resolve_head::<S>(ctx, &self.client_mutation_id).await {
            return head;
        }
        let rel = self.rel;
        let name = ctx.item.node.name.node.as_str();
        let sides = [
            (rel.b_name, rel.a, self.a.as_ref()),
            (rel.a_name, rel.b, self.b.as_ref()),
        ];
        for (side, model, row) in sides {
            let meta = model_named(S::META, model);
            if name == side {
                return resolve_model(ctx, meta, Call::Row(row)).await;
            }
            if name == svc_names::relay_relation_edge_field(side) {
                return resolve_edge_row(ctx, meta, row).await;
            }
        }
        Ok(None)
    }
}
