//! The facade generated code uses: everything it names is reached through
//! `::svc_runtime::__codegen` (imported once as `__rt`), so a service crate needs no other
//! dependency and generated paths never depend on what the user imported. The standard names
//! the generated code needs are re-exported too, so it compiles under `#![no_implicit_prelude]`
//! and whatever types the model declares.

pub use ::core::option::Option::{self, None, Some};
pub use ::core::result::Result::{self, Ok};
pub use ::std::string::String;
pub use ::std::vec::Vec;

pub use async_graphql;
pub use async_graphql::registry::{MetaField, Registry};
pub use async_graphql::{ComplexObject, Context, ID, InputType, OutputType, ServerResult, Value};
pub use sea_orm::DbErr;
pub use serde;
pub use serde_json;

pub use crate::functions::rust::{FunctionResult, call as call_handler};
pub use crate::model::{Context as FunctionContext, Event};

pub use crate::__enum_conversions as enum_conversions;
pub use crate::api::{QueryMeta, ReadGuard};
pub use crate::model::{
    Cells, Column, DateTime, EnumMeta, EnumValue, ExistsCall, FieldMeta, FunctionKind,
    FunctionMeta, HandlerMeta, IntoVal, Json, Kind, ListItem, Lit, MigrationHint, ModelMeta,
    Operation, PermValue, PermissionMeta, PermissionQuery, PermissionTarget, Record, RelFieldMeta,
    RelationMeta, ResolverField, ResolverMeta, RustReply, ServiceDef, ServiceMeta, Val, VarSource,
    Visitor, get, get_enum, get_opt,
};

/// The relation fields of `meta`'s object type, in the shape of the API whose schema is being
/// built (`crate::api::shape`).
pub fn relation_fields(
    registry: &mut Registry,
    meta: &'static ModelMeta,
) -> Vec<(String, MetaField)> {
    match crate::api::shape::Shape::building() {
        crate::api::shape::Shape::Simple => crate::api::simple::relation_fields(registry, meta),
        crate::api::shape::Shape::Relay => crate::api::relay::relation_fields(registry, meta),
    }
}

/// Resolves a relation field of the node `id` of `meta`, in the shape of the API resolving it.
pub async fn relation_field(
    ctx: &Context<'_>,
    meta: &'static ModelMeta,
    id: &str,
) -> ServerResult<Option<Value>> {
    match crate::api::shape::Shape::of(ctx) {
        crate::api::shape::Shape::Simple => crate::api::simple::relation_field(ctx, meta, id).await,
        crate::api::shape::Shape::Relay => crate::api::relay::relation_field(ctx, meta, id).await,
    }
}
