//! What the two APIs' mutation roots share: the mutation fields in the reference's order (§2.1),
//! the arguments of each (the Simple API's arguments, the Relay API's input fields), and the
//! relation mutations (§2.7): which exist for a relation, their names, and running one.
//!
//! Order: `create<T>` (except `User`), `update<T>`, `updateOrCreate<T>`, `delete<T>`, then
//! `set<R>`, `unset<R>`, `addTo<R>`, `removeFrom<R>` where the reference generates them, then
//! `createUser`, then the extensions `deleteMany<Plural>` and `updateMany<Plural>`. `File` has
//! neither `create<T>` nor `updateOrCreate<T>`: its nodes come from uploads.

use async_graphql::indexmap::IndexMap;
use async_graphql::registry::{MetaInputValue, Registry};
use async_graphql::{ID, InputType};

use super::registry::{filter_argument, input_value};
use super::resolve::Call;
use super::roots::user_model;
use super::writes::{WriteArgs, write_arguments, write_input};
use crate::engine::Request;
use crate::engine::write::{RelOp, relate};
use crate::model::{ApiResult, ModelMeta, RelationMeta, ServiceMeta, writable};
use crate::storage::Row;

/// A mutation field: what it writes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum MutationField {
    /// A write of one model's nodes: [`Call::Create`], [`Call::Update`],
    /// [`Call::UpdateOrCreate`], [`Call::Delete`], [`Call::DeleteMany`] or [`Call::UpdateMany`].
    Model(&'static ModelMeta, Call<'static>),
    /// A relation mutation of the relation with this index.
    Relation(usize, RelOp),
}

/// Every mutation field of `service`, named, in the reference's order.
pub(crate) fn mutation_fields(service: &ServiceMeta) -> Vec<(String, MutationField)> {
    let models = service.models;
    let user = user_model(service);
    let is_user = |m: &&&ModelMeta| user.is_some_and(|u| std::ptr::eq(u, **m));
    let mut out = Vec::new();
    let model = |out: &mut Vec<_>, name: String, m: &'static ModelMeta, call| {
        out.push((name, MutationField::Model(m, call)));
    };
    // `File` nodes are made by the File API only (seed §4.5): no `createFile`, and no
    // `updateOrCreateFile`, which could create one.
    for m in models.iter().filter(|m| !is_user(m) && !m.is_file()) {
        model(&mut out, svc_names::create_field(m.name), m, Call::Create);
    }
    for m in models {
        model(&mut out, svc_names::update_field(m.name), m, Call::Update);
    }
    for m in models.iter().filter(|m| !m.is_file()) {
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

/// The arguments of a model's mutation field `call` (registering the input types they name).
pub(crate) fn model_arguments(
    registry: &mut Registry,
    m: &'static ModelMeta,
    call: Call<'_>,
) -> IndexMap<String, MetaInputValue> {
    let id_arg = |registry: &mut Registry| {
        let id = <ID as InputType>::create_type_info(registry);
        IndexMap::from([("id".to_owned(), input_value("id".to_owned(), id))])
    };
    match call {
        Call::Create => write_arguments(registry, m, WriteArgs::Create { skip: None }),
        Call::Update => {
            let mut args = id_arg(registry);
            args.extend(write_arguments(registry, m, WriteArgs::Update));
            args
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
            args
        }
        Call::Delete => id_arg(registry),
        Call::DeleteMany => filter_argument(registry, m),
        _ => {
            let mut args = filter_argument(registry, m);
            let data = write_input(registry, m, WriteArgs::Data);
            args.insert(
                "data".to_owned(),
                input_value("data".to_owned(), format!("{data}!")),
            );
            args
        }
    }
}

/// The arguments of a relation mutation: `<aName>Id: ID!` (the B node), then `<bName>Id: ID!`
/// (the A node).
pub(crate) fn relation_arguments(
    registry: &mut Registry,
    rel: &RelationMeta,
) -> IndexMap<String, MetaInputValue> {
    let id = <ID as InputType>::create_type_info(registry);
    let mut args = IndexMap::new();
    for side in [rel.a_name, rel.b_name] {
        let key = svc_names::relation_id_argument(side);
        args.insert(key.clone(), input_value(key, id.clone()));
    }
    args
}

/// The relation mutations in the order the reference generates them.
pub(crate) const REL_OPS: [RelOp; 4] = [RelOp::Set, RelOp::Unset, RelOp::AddTo, RelOp::RemoveFrom];

/// The index of `op` in [`REL_OPS`].
pub(crate) fn op_index(op: RelOp) -> usize {
    REL_OPS.iter().position(|o| *o == op).unwrap_or(0)
}

/// The mutation field of `op` on `relation`: `set<R>`, `unset<R>`, `addTo<R>`, `removeFrom<R>`.
pub(crate) fn field_name(op: RelOp, relation: &str) -> String {
    match op {
        RelOp::Set => svc_names::set_field(relation),
        RelOp::Unset => svc_names::unset_field(relation),
        RelOp::AddTo => svc_names::add_to_field(relation),
        RelOp::RemoveFrom => svc_names::remove_from_field(relation),
    }
}

/// The payload type of `op` on `relation` (the same name in both APIs).
pub(crate) fn payload_name(op: RelOp, relation: &str) -> String {
    match op {
        RelOp::Set => svc_names::set_payload(relation),
        RelOp::Unset => svc_names::unset_payload(relation),
        RelOp::AddTo => svc_names::add_to_payload(relation),
        RelOp::RemoveFrom => svc_names::remove_from_payload(relation),
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

/// The model named `name` (the data tables name a relation's sides by their models' names).
pub(crate) fn model_named(service: &ServiceMeta, name: &str) -> &'static ModelMeta {
    service
        .models
        .iter()
        .copied()
        .find(|m| m.name == name)
        .unwrap_or(service.models[0])
}

/// Runs `op` on relation `r` between the A node `a_id` (the `<bName>Id` argument) and the B node
/// `b_id` (the `<aName>Id` argument); the rows of the A and B nodes after it.
pub(crate) async fn run_relation(
    req: &Request,
    service: &ServiceMeta,
    r: usize,
    op: RelOp,
    a_id: &str,
    b_id: &str,
) -> ApiResult<(Option<Row>, Option<Row>)> {
    let a_meta = model_named(service, service.relations[r].a);
    let field = a_meta
        .relations
        .iter()
        .position(|f| f.relation == r && f.own == "A")
        .unwrap_or(0);
    relate(req, a_meta, field, op, b_id, a_id).await
}
