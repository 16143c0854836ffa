//! The payload types of the relation mutations: `<Op><R>Payload { <bName>: A, <aName>: B }`,
//! monomorphised per relation and operation (from [`crate::model::ServiceDef::visit`]) so that
//! each is a Rust type with its own GraphQL name.

use std::borrow::Cow;
use std::marker::PhantomData;

use async_graphql::indexmap::IndexMap;
use async_graphql::registry::{MetaField, Registry};
use async_graphql::resolver_utils::ContainerType;
use async_graphql::{Context, OutputType, ServerResult, Value};

use crate::api::mutations::{REL_OPS, model_named, payload_name};
use crate::api::registry::{meta_field, table_object};
use crate::api::resolve::{Call, Resolved, output, resolve_model};
use crate::model::{Record, RelationMeta, ServiceDef, Visitor};
use crate::storage::Row;

/// The payload types of one relation's mutations.
pub(crate) struct Payloads {
    pub(crate) register: [fn(&mut Registry) -> String; 4],
    #[allow(clippy::type_complexity)]
    pub(crate) resolve: [for<'a> fn(&'a Context<'a>, Option<Row>, Option<Row>) -> Resolved<'a>; 4],
}

impl Payloads {
    /// The payloads of relation `R` of service `S`.
    const fn of<S: ServiceDef, const R: usize>() -> Payloads {
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

    /// The payloads of every relation of `S`, by relation index.
    pub(crate) fn all<S: ServiceDef>() -> Vec<Payloads> {
        struct Collect<S>(Vec<Payloads>, PhantomData<fn() -> S>);
        impl<S: ServiceDef> Visitor for Collect<S> {
            fn record<R: Record + OutputType>(&mut self) {}
            fn relation<const R: usize>(&mut self) {
                self.0.push(Payloads::of::<S, R>());
            }
        }
        let mut collect = Collect::<S>(Vec::new(), PhantomData);
        S::visit(&mut collect);
        collect.0
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
struct RelationPayload<S, const R: usize, const OP: usize> {
    a: Option<Row>,
    b: Option<Row>,
    _service: PhantomData<fn() -> S>,
}

impl<S: ServiceDef, const R: usize, const OP: usize> RelationPayload<S, R, OP> {
    fn relation() -> &'static RelationMeta {
        &S::META.relations[R]
    }
}

table_object!(
    impl[S: ServiceDef, const R: usize, const OP: usize] RelationPayload<S, R, OP>,
    name: Cow::Owned(payload_name(REL_OPS[OP], Self::relation().name)),
    fields: |_registry| Self::fields()
);

impl<S: ServiceDef, const R: usize, const OP: usize> RelationPayload<S, R, OP> {
    /// `<bName>` (the node on side A) and `<aName>` (the node on side B).
    fn fields() -> IndexMap<String, MetaField> {
        let rel = Self::relation();
        let mut fields = IndexMap::new();
        for (name, model, doc) in [
            (rel.b_name, rel.a, "The node on side A."),
            (rel.a_name, rel.b, "The node on side B."),
        ] {
            let field = meta_field(name, model.to_owned(), IndexMap::new(), Some(doc));
            fields.insert(name.to_owned(), field);
        }
        fields
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
        resolve_model(ctx, model_named(S::META, model), Call::Row(row)).await
    }
}
