//! The Simple API's root mutation type, registered and resolved from the service's data tables.
//!
//! Field order follows the reference (§2.1): `create<T>` (except `User`), `update<T>`,
//! `updateOrCreate<T>`, `delete<T>`, then `set<R>`, `unset<R>`, `addTo<R>`, `removeFrom<R>`
//! where the reference generates them, then `createUser`, then the extensions
//! `deleteMany<Plural>` and `updateMany<Plural>`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::marker::PhantomData;

use async_graphql::indexmap::IndexMap;
use async_graphql::registry::{MetaField, MetaInputValue, Registry};
use async_graphql::resolver_utils::ContainerType;
use async_graphql::{Context, ID, InputType, OutputType, ServerResult, Value};

use super::payloads::{Payloads, REL_OPS, field_name, model_named, op_index};
use crate::api::args::arg;
use crate::api::registry::{filter_argument, input_value, meta_field, table_object};
use crate::api::resolve::{Call, resolve_model};
use crate::api::roots::{register_records, user_model};
use crate::api::writes::{WriteArgs, write_arguments, write_input};
use crate::api::{BatchPayload, request};
use crate::engine::write::{RelOp, relate};
use crate::model::{ModelMeta, ServiceDef, ServiceMeta, writable};

/// The root mutation type of the Simple API, with its fields by name and its relations' payload
/// types (listing them formats a name for every model and operation, so it is done once, not per
/// call).
pub struct Mutation<S> {
    by_name: HashMap<String, MutationField>,
    payloads: Vec<Payloads>,
    _service: PhantomData<fn() -> S>,
}

impl<S: ServiceDef> Default for Mutation<S> {
    fn default() -> Self {
        Mutation {
            by_name: Self::fields().into_iter().collect(),
            payloads: Payloads::all::<S>(),
            _service: PhantomData,
        }
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
        let user = user_model(service);
        let is_user = |m: &&&ModelMeta| user.is_some_and(|u| std::ptr::eq(u, **m));
        let mut out = Vec::new();
        let model = |out: &mut Vec<_>, name: String, m: &'static ModelMeta, call| {
            out.push((name, MutationField::Model(m, call)));
        };
        for m in models.iter().filter(|m| !is_user(m)) {
            model(&mut out, svc_names::create_field(m.name), m, Call::Create);
        }
        for m in models {
            model(&mut out, svc_names::update_field(m.name), m, Call::Update);
        }
        for m in models {
            let name = svc_names::update_or_create_field(m.name);
            model(&mut out, name, m, Call::UpdateOrCreate);
        }
        for m in models {
            model(&mut out, svc_names::delete_field(m.name), m, Call::Delete);
        }
        for op in REL_OPS {
            for (r, rel) in service.relations.iter().enumerate() {
                if rel_op_exists(service, r, op) {
                    out.push((field_name(op, rel.name), MutationField::Relation(r, op)));
                }
            }
        }
        for m in models.iter().filter(|m| is_user(m)) {
            model(&mut out, svc_names::create_field(m.name), m, Call::Create);
        }
        for m in models {
            let name = svc_names::delete_many_field(m.name);
            model(&mut out, name, m, Call::DeleteMany);
            if (0..m.fields.len()).any(|i| writable(m, i)) {
                let name = svc_names::update_many_field(m.name);
                model(&mut out, name, m, Call::UpdateMany);
            }
        }
        out
    }
}

table_object!(impl[S: ServiceDef] Mutation<S>, name: Cow::Borrowed("Mutation"), fields: |registry| Mutation::<S>::registered(registry));

impl<S: ServiceDef> Mutation<S> {
    /// Registers the fields of `Mutation`, with their payload and input types.
    fn registered(registry: &mut Registry) -> IndexMap<String, MetaField> {
        register_records::<S>(registry);
        let service = S::META;
        let payloads = Payloads::all::<S>();
        let mut fields = IndexMap::new();
        for (name, field) in Self::fields() {
            let (ty, args) = match field {
                MutationField::Model(m, call) => mutation_field(registry, m, call),
                MutationField::Relation(r, op) => {
                    let rel = &service.relations[r];
                    let ty = (payloads[r].register[op_index(op)])(registry);
                    let id = <ID as InputType>::create_type_info(registry);
                    let mut args = IndexMap::new();
                    for side in [rel.a_name, rel.b_name] {
                        let key = svc_names::relation_id_argument(side);
                        args.insert(key.clone(), input_value(key, id.clone()));
                    }
                    (ty.trim_end_matches('!').to_owned(), args)
                }
            };
            fields.insert(name.clone(), meta_field(&name, ty, args, None));
        }
        fields
    }
}

/// The type and arguments of a model's mutation field.
fn mutation_field(
    registry: &mut Registry,
    m: &'static ModelMeta,
    call: Call<'_>,
) -> (String, IndexMap<String, MetaInputValue>) {
    let node = m.name.to_owned();
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
            Some(MutationField::Model(m, call)) => resolve_model(ctx, m, call).await,
            Some(MutationField::Relation(r, op)) => self.relation_mutation(ctx, r, op).await,
            None => Ok(None),
        }
    }
}

impl<S: ServiceDef> Mutation<S> {
    /// `<op><R>(<aName>Id: ID!, <bName>Id: ID!)`: the `aName` argument holds the id of the B
    /// node, the `bName` argument the id of the A node (reference §2.7).
    async fn relation_mutation(
        &self,
        ctx: &Context<'_>,
        r: usize,
        op: RelOp,
    ) -> ServerResult<Option<Value>> {
        let service = S::META;
        let rel = &service.relations[r];
        let a_meta = model_named(service, rel.a);
        let rows = async {
            let req = request(ctx)?;
            let b_id = arg::<ID>(ctx, &svc_names::relation_id_argument(rel.a_name))?;
            let a_id = arg::<ID>(ctx, &svc_names::relation_id_argument(rel.b_name))?;
            let field = a_side_field(a_meta, r);
            relate(req, a_meta, field, op, &b_id, &a_id)
                .await
                .map_err(|e| async_graphql::Error::from(e).into_server_error(ctx.item.pos))
        };
        match rows.await {
            Ok((a, b)) => (self.payloads[r].resolve[op_index(op)])(ctx, a, b).await,
            Err(e) => Err(ctx.set_error_path(e)),
        }
    }
}

/// The index in `a.relations` of side A's field of relation `r`.
fn a_side_field(a: &ModelMeta, r: usize) -> usize {
    a.relations
        .iter()
        .position(|f| f.relation == r && f.own == "A")
        .unwrap_or(0)
}
