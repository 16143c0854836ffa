//! The root types of the Simple API (`Query`, `Mutation`) and of the permission schema, and the
//! relation mutations' payload types, registered and resolved from the service's data tables.
//!
//! Field order follows the reference (§2.1): `all<Plural>`, `_all<Plural>Meta`, `<Type>` for every
//! model, then `user` and `node`; `create<T>` (except `User`), `update<T>`, `updateOrCreate<T>`,
//! `delete<T>`, then `set<R>`, `unset<R>`, `addTo<R>`, `removeFrom<R>` where the reference
//! generates them, then `createUser`, then the extensions `deleteMany<Plural>` and
//! `updateMany<Plural>`. A field name is resolved by comparing it with the generated names,
//! which the generator guarantees to be unique.

use std::borrow::Cow;
use std::collections::HashMap;
use std::marker::PhantomData;

use crate::storage::Row;
use async_graphql::indexmap::IndexMap;
use async_graphql::parser::types::Field;
use async_graphql::registry::{MetaTypeId, Registry};
use async_graphql::resolver_utils::{ContainerType, resolve_container};
use async_graphql::{
    Context, ContextSelectionSet, ID, InputType, ObjectType, OutputType, Positioned, ServerResult,
    Value,
};

use crate::api::{
    Call, Resolved, WriteArgs, arg, filter_argument, list_arguments, meta_field, node_type, object,
    output, write_arguments, write_input,
};
use crate::cli::ServiceDef;
use crate::filter::{input_value, register_value_type};
use crate::meta::{ModelMeta, RelationMeta, ServiceMeta};
use crate::nested::writable;
use crate::read::{QueryMeta, node_model};
use crate::write::{BatchPayload, RelOp, relate};

/// The root query type of the Simple API.
pub struct Query<S>(PhantomData<fn() -> S>);

/// The root mutation type of the Simple API, with its fields by name (listing them formats a
/// name for every model and operation, so it is done once, not per call).
pub struct Mutation<S> {
    by_name: HashMap<String, MutationField>,
    _service: PhantomData<fn() -> S>,
}

impl<S: ServiceDef> Default for Mutation<S> {
    fn default() -> Self {
        Mutation {
            by_name: Self::fields().into_iter().collect(),
            _service: PhantomData,
        }
    }
}

/// The root query type of the permission schema served at `/permissions`: `Some<Type>Exists`.
pub struct PermissionQuery<S>(PhantomData<fn() -> S>);

macro_rules! root_new {
    ($($t:ident),*) => {$(
        impl<S> Default for $t<S> {
            fn default() -> Self {
                $t(PhantomData)
            }
        }
    )*};
}
root_new!(Query, PermissionQuery);

/// The model named `User`, which has the `user` query field and whose create comes last.
fn user_model(meta: &ServiceMeta) -> Option<&'static ModelMeta> {
    meta.models.iter().copied().find(|m| m.name == "User")
}

/// The field every root needs when the model has no types (an object type needs a field).
fn empty_field() -> (String, async_graphql::registry::MetaField) {
    let ty = "Boolean!".to_owned();
    (
        "_empty".to_owned(),
        meta_field("_empty", ty, IndexMap::new(), None),
    )
}

fn unique_arguments(
    registry: &mut Registry,
    meta: &ModelMeta,
) -> IndexMap<String, async_graphql::registry::MetaInputValue> {
    meta.unique_fields()
        .map(|(_, f)| {
            let ty = register_value_type(registry, f);
            (f.name.to_owned(), input_value(f.name.to_owned(), ty))
        })
        .collect()
}

impl<S: ServiceDef> OutputType for Query<S> {
    fn type_name() -> Cow<'static, str> {
        Cow::Borrowed("Query")
    }

    fn create_type_info(registry: &mut Registry) -> String {
        registry.create_output_type::<Self, _>(MetaTypeId::Object, |registry| {
            let models = S::META.models;
            let mut fields = IndexMap::new();
            for m in models {
                let name = format!("all{}", m.plural);
                let node = node_type(registry, m);
                let args = list_arguments(registry, m, true);
                let field = meta_field(&name, format!("[{node}!]!"), args, None);
                fields.insert(name, field);
            }
            for m in models {
                let name = format!("_all{}Meta", m.plural);
                let ty = <QueryMeta as OutputType>::create_type_info(registry);
                let args = list_arguments(registry, m, true);
                fields.insert(name.clone(), meta_field(&name, ty, args, None));
            }
            for m in models {
                let node = node_type(registry, m);
                let args = unique_arguments(registry, m);
                fields.insert(m.name.to_owned(), meta_field(m.name, node, args, None));
            }
            if let Some(user) = user_model(S::META) {
                let node = node_type(registry, user);
                let field = meta_field("user", node, IndexMap::new(), None);
                fields.insert("user".to_owned(), field);
            }
            if models.is_empty() {
                fields.extend([empty_field()]);
            } else {
                let ty = <S::Node as OutputType>::create_type_info(registry);
                let id = <ID as InputType>::create_type_info(registry);
                let args = IndexMap::from([("id".to_owned(), input_value("id".to_owned(), id))]);
                let ty = ty.trim_end_matches('!').to_owned();
                fields.insert("node".to_owned(), meta_field("node", ty, args, None));
            }
            object::<Self>("Query".to_owned(), fields)
        })
    }

    async fn resolve(
        &self,
        ctx: &ContextSelectionSet<'_>,
        _field: &Positioned<Field>,
    ) -> ServerResult<Value> {
        resolve_container(ctx, self).await
    }
}

impl<S: ServiceDef> ContainerType for Query<S> {
    async fn resolve_field(&self, ctx: &Context<'_>) -> ServerResult<Option<Value>> {
        let name = ctx.item.node.name.node.as_str();
        let models = S::META.models;
        if name == "node" {
            return node(ctx, models).await;
        }
        if name == "user"
            && let Some(user) = user_model(S::META)
        {
            return (user.ops.resolve)(ctx, Call::CurrentUser).await;
        }
        if name == "_empty" {
            return Ok(Some(Value::Boolean(false)));
        }
        let meta_of = name
            .strip_prefix("_all")
            .and_then(|n| n.strip_suffix("Meta"));
        for m in models {
            let call = if name.strip_prefix("all") == Some(m.plural) {
                Call::All
            } else if meta_of == Some(m.plural) {
                Call::Count
            } else if name == m.name {
                Call::One
            } else {
                continue;
            };
            return (m.ops.resolve)(ctx, call).await;
        }
        Ok(None)
    }
}

impl<S: ServiceDef> ObjectType for Query<S> {}

/// `node(id)`: finds the model that has the id, then reads the typed node.
async fn node(ctx: &Context<'_>, models: &[&'static ModelMeta]) -> ServerResult<Option<Value>> {
    let found = async {
        let id = arg::<ID>(ctx, "id")?;
        let model = node_model(ctx, &id, models)
            .await
            .map_err(|e| e.into_server_error(ctx.item.pos))?;
        Ok((id, model))
    };
    match found.await {
        Ok((id, Some(i))) => (models[i].ops.resolve)(ctx, Call::Node(&id)).await,
        Ok((_, None)) => Ok(Some(Value::Null)),
        Err(e) => Err(ctx.set_error_path(e)),
    }
}

impl<S: ServiceDef> OutputType for PermissionQuery<S> {
    fn type_name() -> Cow<'static, str> {
        Cow::Borrowed("Query")
    }

    fn create_type_info(registry: &mut Registry) -> String {
        registry.create_output_type::<Self, _>(MetaTypeId::Object, |registry| {
            let models = S::META.models;
            let mut fields = IndexMap::new();
            for m in models {
                let name = format!("Some{}Exists", m.name);
                let args = list_arguments(registry, m, false);
                let ty = <bool as OutputType>::create_type_info(registry);
                fields.insert(name.clone(), meta_field(&name, ty, args, None));
            }
            if models.is_empty() {
                fields.extend([empty_field()]);
            }
            object::<Self>("Query".to_owned(), fields)
        })
    }

    async fn resolve(
        &self,
        ctx: &ContextSelectionSet<'_>,
        _field: &Positioned<Field>,
    ) -> ServerResult<Value> {
        resolve_container(ctx, self).await
    }
}

impl<S: ServiceDef> ContainerType for PermissionQuery<S> {
    async fn resolve_field(&self, ctx: &Context<'_>) -> ServerResult<Option<Value>> {
        let name = ctx.item.node.name.node.as_str();
        if name == "_empty" {
            return Ok(Some(Value::Boolean(false)));
        }
        let of = name
            .strip_prefix("Some")
            .and_then(|n| n.strip_suffix("Exists"));
        match S::META.models.iter().find(|m| of == Some(m.name)) {
            Some(m) => (m.ops.resolve)(ctx, Call::SomeExists).await,
            None => Ok(None),
        }
    }
}

impl<S: ServiceDef> ObjectType for PermissionQuery<S> {}

/// The relation mutations in the order of [`Payloads`].
const REL_OPS: [RelOp; 4] = [RelOp::Set, RelOp::Unset, RelOp::AddTo, RelOp::RemoveFrom];

/// The prefixes of a relation mutation's field and payload type.
fn rel_op_names(op: RelOp) -> (&'static str, &'static str) {
    match op {
        RelOp::Set => ("set", "Set"),
        RelOp::Unset => ("unset", "Unset"),
        RelOp::AddTo => ("addTo", "AddTo"),
        RelOp::RemoveFrom => ("removeFrom", "RemoveFrom"),
    }
}

/// Whether the reference generates `op` for relation `r`: `set` for 1:1, `unset` for 1:1 with
/// neither field required, `addTo` for 1:n and n:m, `removeFrom` for those with no required
/// to-one field.
fn rel_op_exists(service: &ServiceMeta, r: usize, op: RelOp) -> bool {
    let rel = &service.relations[r];
    let one = !rel.a_list && !rel.b_list;
    let any_required = service
        .models
        .iter()
        .flat_map(|m| m.relations)
        .any(|f| f.relation == r && f.required);
    match op {
        RelOp::Set => one,
        RelOp::Unset => one && !any_required,
        RelOp::AddTo => !one,
        RelOp::RemoveFrom => !one && !any_required,
    }
}

fn model_named(service: &ServiceMeta, name: &str) -> &'static ModelMeta {
    service
        .models
        .iter()
        .copied()
        .find(|m| m.name == name)
        .unwrap_or(service.models[0])
}

/// A mutation field: what it writes.
#[derive(Clone, Copy)]
enum MutationField {
    Model(&'static ModelMeta, Call<'static>),
    Relation(usize, RelOp),
}

impl<S: ServiceDef> Mutation<S> {
    /// Every mutation field in the reference's order.
    fn fields() -> Vec<(String, MutationField)> {
        let service = S::META;
        let models = service.models;
        let is_user = |m: &&&ModelMeta| m.name == "User";
        let mut out = Vec::new();
        let model = |out: &mut Vec<_>, name: String, m: &'static ModelMeta, call| {
            out.push((name, MutationField::Model(m, call)));
        };
        for m in models.iter().filter(|m| !is_user(m)) {
            model(&mut out, format!("create{}", m.name), m, Call::Create);
        }
        for m in models {
            model(&mut out, format!("update{}", m.name), m, Call::Update);
        }
        for m in models {
            model(
                &mut out,
                format!("updateOrCreate{}", m.name),
                m,
                Call::UpdateOrCreate,
            );
        }
        for m in models {
            model(&mut out, format!("delete{}", m.name), m, Call::Delete);
        }
        for op in REL_OPS {
            for (r, rel) in service.relations.iter().enumerate() {
                if rel_op_exists(service, r, op) {
                    let name = format!("{}{}", rel_op_names(op).0, rel.name);
                    out.push((name, MutationField::Relation(r, op)));
                }
            }
        }
        for m in models.iter().filter(|m| is_user(m)) {
            model(&mut out, format!("create{}", m.name), m, Call::Create);
        }
        for m in models {
            model(
                &mut out,
                format!("deleteMany{}", m.plural),
                m,
                Call::DeleteMany,
            );
            if (0..m.fields.len()).any(|i| writable(m, i)) {
                model(
                    &mut out,
                    format!("updateMany{}", m.plural),
                    m,
                    Call::UpdateMany,
                );
            }
        }
        out
    }
}

impl<S: ServiceDef> OutputType for Mutation<S> {
    fn type_name() -> Cow<'static, str> {
        Cow::Borrowed("Mutation")
    }

    fn create_type_info(registry: &mut Registry) -> String {
        registry.create_output_type::<Self, _>(MetaTypeId::Object, |registry| {
            let service = S::META;
            let mut fields = IndexMap::new();
            for (name, field) in Self::fields() {
                let (ty, args) = match field {
                    MutationField::Model(m, call) => mutation_field(registry, m, call),
                    MutationField::Relation(r, op) => {
                        let rel = &service.relations[r];
                        let ty = (rel.payloads.register[op_index(op)])(registry);
                        let id = <ID as InputType>::create_type_info(registry);
                        let mut args = IndexMap::new();
                        for side in [rel.a_name, rel.b_name] {
                            let key = format!("{side}Id");
                            args.insert(key.clone(), input_value(key, id.clone()));
                        }
                        (ty.trim_end_matches('!').to_owned(), args)
                    }
                };
                fields.insert(name.clone(), meta_field(&name, ty, args, None));
            }
            object::<Self>("Mutation".to_owned(), fields)
        })
    }

    async fn resolve(
        &self,
        ctx: &ContextSelectionSet<'_>,
        _field: &Positioned<Field>,
    ) -> ServerResult<Value> {
        resolve_container(ctx, self).await
    }
}

/// The type and arguments of a model's mutation field.
fn mutation_field(
    registry: &mut Registry,
    m: &'static ModelMeta,
    call: Call<'_>,
) -> (
    String,
    IndexMap<String, async_graphql::registry::MetaInputValue>,
) {
    let node = node_type(registry, m);
    let id_arg = |registry: &mut Registry| {
        let id = <ID as InputType>::create_type_info(registry);
        IndexMap::from([("id".to_owned(), input_value("id".to_owned(), id))])
    };
    let batch = <BatchPayload as OutputType>::create_type_info;
    match call {
        Call::Create => (
            node,
            write_arguments(registry, m, WriteArgs::Create { skip: None }),
        ),
        Call::Update => {
            let mut args = id_arg(registry);
            args.extend(write_arguments(registry, m, WriteArgs::Update));
            (node, args)
        }
        Call::UpdateOrCreate => {
            let mut args = IndexMap::new();
            let update = write_input(registry, m, WriteArgs::Update);
            args.insert(
                "update".to_owned(),
                input_value("update".to_owned(), format!("{update}!")),
            );
            // Without any create argument `Create<T>` would be empty: only `update` is taken.
            if !write_arguments(registry, m, WriteArgs::Create { skip: None }).is_empty() {
                let create = write_input(registry, m, WriteArgs::Create { skip: None });
                let ty = format!("{create}!");
                args.insert("create".to_owned(), input_value("create".to_owned(), ty));
            }
            (node, args)
        }
        Call::Delete => (node, id_arg(registry)),
        Call::DeleteMany => {
            let args = filter_argument(registry, m);
            (batch(registry), args)
        }
        _ => {
            let mut args = filter_argument(registry, m);
            let data = write_input(registry, m, WriteArgs::Data);
            args.insert(
                "data".to_owned(),
                input_value("data".to_owned(), format!("{data}!")),
            );
            (batch(registry), args)
        }
    }
}

impl<S: ServiceDef> ContainerType for Mutation<S> {
    fn is_empty() -> bool {
        S::META.models.is_empty()
    }

    async fn resolve_field(&self, ctx: &Context<'_>) -> ServerResult<Option<Value>> {
        let name = ctx.item.node.name.node.as_str();
        match self.by_name.get(name).copied() {
            Some(MutationField::Model(m, call)) => (m.ops.resolve)(ctx, call).await,
            Some(MutationField::Relation(r, op)) => relation_mutation::<S>(ctx, r, op).await,
            None => Ok(None),
        }
    }
}

impl<S: ServiceDef> ObjectType for Mutation<S> {}

/// `<op><R>(<aName>Id: ID!, <bName>Id: ID!)`: the `aName` argument holds the id of the B node,
/// the `bName` argument the id of the A node (reference §2.7).
async fn relation_mutation<S: ServiceDef>(
    ctx: &Context<'_>,
    r: usize,
    op: RelOp,
) -> ServerResult<Option<Value>> {
    let service = S::META;
    let rel = &service.relations[r];
    let a_meta = model_named(service, rel.a);
    let rows = async {
        let b_id = arg::<ID>(ctx, &format!("{}Id", rel.a_name))?;
        let a_id = arg::<ID>(ctx, &format!("{}Id", rel.b_name))?;
        let field = a_side_field(a_meta, r);
        relate(ctx, a_meta, field, op, b_id, a_id)
            .await
            .map_err(|e| e.into_server_error(ctx.item.pos))
    };
    match rows.await {
        Ok((a, b)) => (rel.payloads.resolve[op_index(op)])(ctx, a, b).await,
        Err(e) => Err(ctx.set_error_path(e)),
    }
}

/// The index in `a.relations` of side A's field of relation `r`.
fn a_side_field(a: &ModelMeta, r: usize) -> usize {
    a.relations
        .iter()
        .position(|f| f.relation == r && f.own == "A")
        .unwrap_or(0)
}

fn op_index(op: RelOp) -> usize {
    REL_OPS.iter().position(|o| *o == op).unwrap_or(0)
}

/// The payload types of one relation's mutations, monomorphised per relation so that each is
/// a Rust type with its own GraphQL name.
pub struct Payloads {
    register: [fn(&mut Registry) -> String; 4],
    #[allow(clippy::type_complexity)]
    resolve: [for<'a> fn(&'a Context<'a>, Option<Row>, Option<Row>) -> Resolved<'a>; 4],
}

impl std::fmt::Debug for Payloads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Payloads").finish_non_exhaustive()
    }
}

impl Payloads {
    /// The payloads of relation `R` of service `S`.
    pub const fn of<S: ServiceDef, const R: usize>() -> Payloads {
        Payloads {
            register: [
                <RelationPayload<S, R, 0> as OutputType>::create_type_info,
                <RelationPayload<S, R, 1> as OutputType>::create_type_info,
                <RelationPayload<S, R, 2> as OutputType>::create_type_info,
                <RelationPayload<S, R, 3> as OutputType>::create_type_info,
            ],
            resolve: [
                payload::<S, R, 0>,
                payload::<S, R, 1>,
                payload::<S, R, 2>,
                payload::<S, R, 3>,
            ],
        }
    }
}

fn payload<'a, S: ServiceDef, const R: usize, const OP: usize>(
    ctx: &'a Context<'a>,
    a: Option<Row>,
    b: Option<Row>,
) -> Resolved<'a> {
    Box::pin(async move {
        let payload = RelationPayload::<S, R, OP> {
            a,
            b,
            _service: PhantomData,
        };
        output(ctx, Ok(Some(payload))).await
    })
}

/// `<Op><R>Payload { <bName>: A, <aName>: B }`: the two nodes after a relation mutation (`OP`
/// indexes [`REL_OPS`]).
pub struct RelationPayload<S, const R: usize, const OP: usize> {
    a: Option<Row>,
    b: Option<Row>,
    _service: PhantomData<fn() -> S>,
}

impl<S: ServiceDef, const R: usize, const OP: usize> RelationPayload<S, R, OP> {
    fn relation() -> &'static RelationMeta {
        &S::META.relations[R]
    }
}

impl<S: ServiceDef, const R: usize, const OP: usize> OutputType for RelationPayload<S, R, OP> {
    fn type_name() -> Cow<'static, str> {
        let prefix = rel_op_names(REL_OPS[OP]).1;
        Cow::Owned(format!("{prefix}{}Payload", Self::relation().name))
    }

    fn create_type_info(registry: &mut Registry) -> String {
        registry.create_output_type::<Self, _>(MetaTypeId::Object, |registry| {
            let rel = Self::relation();
            let mut fields = IndexMap::new();
            for (name, model, doc) in [
                (rel.b_name, rel.a, "The node on side A."),
                (rel.a_name, rel.b, "The node on side B."),
            ] {
                let ty = node_type(registry, model_named(S::META, model));
                let field = meta_field(name, ty, IndexMap::new(), Some(doc));
                fields.insert(name.to_owned(), field);
            }
            object::<Self>(Self::type_name().into_owned(), fields)
        })
    }

    async fn resolve(
        &self,
        ctx: &ContextSelectionSet<'_>,
        _field: &Positioned<Field>,
    ) -> ServerResult<Value> {
        resolve_container(ctx, self).await
    }
}

impl<S: ServiceDef, const R: usize, const OP: usize> ContainerType for RelationPayload<S, R, OP> {
    async fn resolve_field(&self, ctx: &Context<'_>) -> ServerResult<Option<Value>> {
        let rel = Self::relation();
        let name = ctx.item.node.name.node.as_str();
        let (model, row) = if name == rel.b_name {
            (rel.a, self.a.as_ref())
        } else if name == rel.a_name {
            (rel.b, self.b.as_ref())
        } else {
            return Ok(None);
        };
        let ops = model_named(S::META, model).ops;
        (ops.resolve)(ctx, Call::Row(row)).await
    }
}

impl<S: ServiceDef, const R: usize, const OP: usize> ObjectType for RelationPayload<S, R, OP> {}
