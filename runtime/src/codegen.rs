//! The facade generated code uses: everything it names is reached through
//! `::svc_runtime::__codegen`, so a service crate needs no other dependency and generated paths
//! never depend on what the user imported.

pub use async_graphql;
pub use async_graphql::{Context, ID, MaybeUndefined, Result};
pub use sea_orm::{DbErr, QueryResult};
pub use serde_json;

pub use crate::__enum_conversions as enum_conversions;
pub use crate::auth::current_user;
pub use crate::cli::ServiceDef;
pub use crate::filter::{Filter, OrderBy};
pub use crate::meta::{
    ExistsCall, FieldMeta, Kind, Lit, MigrationHint, ModelMeta, Operation, PermValue,
    PermissionMeta, PermissionQuery, PermissionTarget, RelFieldMeta, RelationMeta, ServiceMeta,
    VarSource,
};
pub use crate::nested::{NestedCreate, RelArg, Write, rel, rel_ids};
pub use crate::permissions::ReadGuard;
pub use crate::read::{ListArgs, QueryMeta, all, by_id, count, node_model, one, some_exists};
pub use crate::record::{
    Column, EnumValue, IntoVal, ListItem, Record, get, get_enum, get_opt, opt, req,
};
pub use crate::related::{to_many, to_many_count, to_one, to_one_required};
pub use crate::storage::Backend;
pub use crate::value::{DateTime, Json, Val};
pub use crate::write::{
    BatchPayload, RelOp, create, delete, delete_many, relate, update, update_many, update_or_create,
};
