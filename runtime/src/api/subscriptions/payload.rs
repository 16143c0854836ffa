//! `<Type>SubscriptionPayload { mutation, node, updatedFields, previousValues }` and
//! `<Type>PreviousValues` (reference §4.3).
//!
//! `node` is the node as it is after the commit, read with the subscriber's read permissions
//! (null for `DELETED`); `updatedFields` the scalar fields an update supplied (null for the other
//! kinds); `previousValues` the node's scalar fields before an update or delete (null for
//! `CREATED`). A previous value the subscriber may read only through a permission query is an
//! `Insufficient Permissions` error at its path: the node it would be checked against may be
//! gone.
//!
//! The node of a `CREATED` or `UPDATED` event is read by the caller before the payload is made
//! (one read, whatever the selection): when it is gone by then (deleted since), nothing is sent
//! (reference §4.3: the original re-reads the node by id for every event, and "if the result for
//! the top field is null, nothing is sent").

use std::sync::Arc;

use async_graphql::indexmap::IndexMap;
use async_graphql::registry::Registry;
use async_graphql::resolver_utils::ContainerType;
use async_graphql::{Context, Enum, Name, OutputType, ServerResult, Value};

use crate::api::registry::{meta_field, named_object, register_object, register_value_type};
use crate::api::request;
use crate::api::resolve::{Call, output, resolve_model};
use crate::engine::ChangeKind;
use crate::events::Event;
use crate::model::{ApiError, FieldMeta, ModelMeta, Val, format_datetime};
use crate::storage::Row;

/// `_ModelMutationType`: what happened to the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[graphql(name = "_ModelMutationType")]
pub enum ModelMutationType {
    // Only for rustdoc: a `///` comment would become the value's description in the schema;
    // outside rustdoc the lint cannot see these docs, hence the `allow`.
    #[cfg_attr(doc, doc = "`CREATED`: the node was created.")]
    #[cfg_attr(not(doc), allow(missing_docs))]
    #[graphql(name = "CREATED")]
    Created,
    #[cfg_attr(doc, doc = "`UPDATED`: the node was updated.")]
    #[cfg_attr(not(doc), allow(missing_docs))]
    #[graphql(name = "UPDATED")]
    Updated,
    #[cfg_attr(doc, doc = "`DELETED`: the node was deleted.")]
    #[cfg_attr(not(doc), allow(missing_docs))]
    #[graphql(name = "DELETED")]
    Deleted,
}

impl From<ChangeKind> for ModelMutationType {
    fn from(kind: ChangeKind) -> Self {
        match kind {
            ChangeKind::Created => ModelMutationType::Created,
            ChangeKind::Updated => ModelMutationType::Updated,
            ChangeKind::Deleted => ModelMutationType::Deleted,
        }
    }
}

/// The fields of `<Type>PreviousValues`: every exposed scalar field.
fn previous_fields(meta: &'static ModelMeta) -> impl Iterator<Item = (usize, &'static FieldMeta)> {
    meta.fields.iter().enumerate().filter(|(_, f)| f.exposed)
}

/// Registers `<Type>SubscriptionPayload` (and `<Type>PreviousValues`); its name.
pub(super) fn register(registry: &mut Registry, meta: &'static ModelMeta) -> String {
    let previous = register_object(
        registry,
        svc_names::previous_values(meta.name),
        |registry| {
            previous_fields(meta)
                .map(|(_, f)| {
                    let ty = register_value_type(registry, f);
                    let ty = if f.list {
                        format!("[{ty}!]")
                    } else if f.required {
                        format!("{ty}!")
                    } else {
                        ty
                    };
                    (
                        f.name.to_owned(),
                        meta_field(f.name, ty, IndexMap::new(), None),
                    )
                })
                .collect()
        },
    );
    register_object(
        registry,
        svc_names::subscription_payload(meta.name),
        |registry| {
            let kind = <ModelMutationType as OutputType>::create_type_info(registry);
            let none = IndexMap::new;
            IndexMap::from([
                (
                    "mutation".to_owned(),
                    meta_field("mutation", kind, none(), None),
                ),
                (
                    "node".to_owned(),
                    meta_field("node", meta.name.to_owned(), none(), None),
                ),
                (
                    "updatedFields".to_owned(),
                    meta_field("updatedFields", "[String!]".to_owned(), none(), None),
                ),
                (
                    "previousValues".to_owned(),
                    meta_field("previousValues", previous.clone(), none(), None),
                ),
            ])
        },
    )
}

/// One event as its subscription payload.
pub(super) struct Payload {
    meta: &'static ModelMeta,
    event: Event,
    /// The node's row as read after the commit (`None` for a `DELETED` event).
    row: Option<Arc<Row>>,
}

impl Payload {
    /// The payload of `event`, whose node (for a `CREATED` or `UPDATED` event) is `row`.
    pub(super) fn new(meta: &'static ModelMeta, event: Event, row: Option<Arc<Row>>) -> Payload {
        Payload { meta, event, row }
    }
}

named_object!(impl[] Payload, name: |this| svc_names::subscription_payload(this.meta.name));
named_object!(impl['a] Previous<'a>, name: |this| svc_names::previous_values(this.meta.name));

impl ContainerType for Payload {
    async fn resolve_field(&self, ctx: &Context<'_>) -> ServerResult<Option<Value>> {
        let event = &self.event;
        match ctx.item.node.name.node.as_str() {
            "mutation" => output(ctx, Ok(ModelMutationType::from(event.kind))).await,
            "node" if event.kind == ChangeKind::Deleted => Ok(Some(Value::Null)),
            // Resolved from the row the caller read, with the subscriber's permissions: fields
            // it may not read are null, with errors.
            "node" => resolve_model(ctx, self.meta, Call::Row(self.row.as_deref())).await,
            "updatedFields" if event.kind == ChangeKind::Updated => {
                let names = event.updated_fields.iter().map(|n| (*n).to_owned());
                Ok(Some(Value::List(names.map(Value::String).collect())))
            }
            "previousValues" => match &event.previous {
                Some(values) => {
                    let previous = Previous {
                        meta: self.meta,
                        values,
                    };
                    output(ctx, Ok(previous)).await
                }
                None => Ok(Some(Value::Null)),
            },
            "updatedFields" => Ok(Some(Value::Null)),
            _ => Ok(None),
        }
    }
}

/// `<Type>PreviousValues` of one event.
struct Previous<'a> {
    meta: &'static ModelMeta,
    values: &'a [Val],
}

impl ContainerType for Previous<'_> {
    async fn resolve_field(&self, ctx: &Context<'_>) -> ServerResult<Option<Value>> {
        let name = ctx.item.node.name.node.as_str();
        let Some((i, _)) = previous_fields(self.meta).find(|(_, f)| f.name == name) else {
            return Ok(None);
        };
        let req = request(ctx)?;
        let principal = req.principal();
        let readable = principal.is_admin()
            || req
                .state()
                .reads
                .of(self.meta, principal)
                .is_some_and(|rules| rules.passes(name));
        if !readable {
            let error = async_graphql::Error::from(ApiError::InsufficientPermissions(
                "Insufficient Permissions",
            ));
            return Err(ctx.set_error_path(error.into_server_error(ctx.item.pos)));
        }
        Ok(Some(self.values.get(i).map_or(Value::Null, graphql_value)))
    }
}

/// A stored value as GraphQL outputs it.
fn graphql_value(val: &Val) -> Value {
    match val {
        Val::Null => Value::Null,
        Val::String(s) => Value::String(s.clone()),
        Val::Enum(s) => Value::Enum(Name::new(s)),
        Val::Int(i) => Value::from(*i),
        Val::Float(f) => Value::from(*f),
        Val::Bool(b) => Value::Boolean(*b),
        Val::DateTime(d) => Value::String(format_datetime(d)),
        Val::Json(j) => Value::from_json(j.clone()).unwrap_or(Value::Null),
        Val::List(items) => Value::List(items.iter().map(graphql_value).collect()),
    }
}
