//! The Simple API's root mutation type, registered and resolved from the service's data tables.
//!
//! Its fields, in the reference's order, and their arguments are those of
//! [`crate::api::mutations`]; model mutations answer the node (or `_BatchPayload`), relation
//! mutations their payloads ([`super::payloads`]).

use std::borrow::Cow;
use std::collections::HashMap;
use std::marker::PhantomData;

use async_graphql::indexmap::IndexMap;
use async_graphql::registry::{MetaField, Registry};
use async_graphql::resolver_utils::ContainerType;
use async_graphql::{Context, ID, OutputType, ServerResult, Value};

use super::payloads::Payloads;
use crate::api::BatchPayload;
use crate::api::args::arg;
use crate::api::mutations::{
    MutationField, model_arguments, mutation_fields, op_index, relation_arguments, run_relation,
};
use crate::api::registry::{meta_field, table_object};
use crate::api::request;
use crate::api::resolve::{Call, resolve_model};
use crate::api::resolvers;
use crate::api::roots::register_records;
use crate::engine::write::RelOp;
use crate::model::{FunctionKind, FunctionMeta, ResolverMeta, ServiceDef};

/// The root mutation type of the Simple API, with its fields by name and its relations' payload
/// types (listing them formats a name for every model and operation, so it is done once, not per
/// call).
pub struct Mutation<S> {
    by_name: HashMap<String, MutationField>,
    resolvers: HashMap<&'static str, (&'static FunctionMeta, &'static ResolverMeta)>,
    payloads: Vec<Payloads>,
    _service: PhantomData<fn() -> S>,
}

impl<S: ServiceDef> Default for Mutation<S> {
    fn default() -> Self {
        Mutation {
            by_name: mutation_fields(S::META).into_iter().collect(),
            resolvers: resolvers::resolvers(S::META, true),
            payloads: Payloads::all::<S>(),
            _service: PhantomData,
        }
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
        for (name, field) in mutation_fields(service) {
            let (ty, args) = match field {
                MutationField::Model(m, call) => {
                    let ty = match call {
                        Call::DeleteMany | Call::UpdateMany => {
                            <BatchPayload as OutputType>::create_type_info(registry)
                        }
                        _ => m.name.to_owned(),
                    };
                    (ty, model_arguments(registry, m, call))
                }
                MutationField::Relation(r, op) => {
                    let ty = (payloads[r].register[op_index(op)])(registry);
                    let args = relation_arguments(registry, &service.relations[r]);
                    (ty.trim_end_matches('!').to_owned(), args)
                }
            };
            fields.insert(name.clone(), meta_field(&name, ty, args, None));
        }
        fields.extend(resolvers::register(registry, service, true));
        fields
    }
}

impl<S: ServiceDef> ContainerType for Mutation<S> {
    fn is_empty() -> bool {
        S::META.models.is_empty()
            && !S::META
                .functions
                .iter()
                .any(|f| matches!(&f.kind, FunctionKind::Resolver(r) if r.mutation))
    }

    async fn resolve_field(&self, ctx: &Context<'_>) -> ServerResult<Option<Value>> {
        let name = ctx.item.node.name.node.as_str();
        match self.by_name.get(name).copied() {
            Some(MutationField::Model(m, call)) => resolve_model(ctx, m, call).await,
            Some(MutationField::Relation(r, op)) => self.relation_mutation(ctx, r, op).await,
            None => match self.resolvers.get(name) {
                Some((f, r)) => resolvers::resolve(ctx, f, r).await,
                None => Ok(None),
            },
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
        let rows = async {
            let req = request(ctx)?;
            let b_id = arg::<ID>(ctx, &svc_names::relation_id_argument(rel.a_name))?;
            let a_id = arg::<ID>(ctx, &svc_names::relation_id_argument(rel.b_name))?;
            run_relation(req, service, r, op, &a_id, &b_id)
                .await
                .map_err(|e| async_graphql::Error::from(e).into_server_error(ctx.item.pos))
        };
        match rows.await {
            Ok((a, b)) => (self.payloads[r].resolve[op_index(op)])(ctx, a, b).await,
            Err(e) => Err(ctx.set_error_path(e)),
        }
    }
}
