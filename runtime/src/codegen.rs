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
pub use serde_json;

pub use crate::__enum_conversions as enum_conversions;
pub use crate::api::{Ops, relation_field, relation_fields};
pub use crate::cli::ServiceDef;
pub use crate::meta::{
    EnumMeta, ExistsCall, FieldMeta, Kind, Lit, MigrationHint, ModelMeta, Operation, PermValue,
    PermissionMeta, PermissionQuery, PermissionTarget, RelFieldMeta, RelationMeta, ServiceMeta,
    VarSource,
};
pub use crate::permissions::ReadGuard;
pub use crate::read::QueryMeta;
pub use crate::record::{Column, EnumValue, IntoVal, ListItem, Record, get, get_enum, get_opt};
pub use crate::roots::Payloads;
pub use crate::storage::{Backend, Cells, Row};
pub use crate::value::{DateTime, Json, Val};
