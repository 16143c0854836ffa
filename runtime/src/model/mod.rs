//! The model: the data tables the generator emits for a service and the traits its generated
//! types implement, the values that travel between arguments, SQL parameters and rows, and the
//! errors the client APIs report.
//!
//! The bottom layer: it imports no other module of the runtime (architecture invariant). It defines [`Cells`], what a
//! record is decoded from, and the storage layer implements it for each driver's rows.

mod cells;
mod error;
mod functions;
mod permission;
mod record;
mod service;
mod tables;
mod value;
mod write;

pub use cells::{Cells, ValRow};
pub use error::{ApiError, ApiResult, FUNCTION_ERROR, INTERNAL, InputError};
pub use functions::{
    Caller, Context, DEFAULT_TIMEOUT_MS, Endpoints, Event, FunctionKind, FunctionMeta, HandlerMeta,
    RequestContext, ResolverField, ResolverMeta, RustHandler, RustReply, ServiceContext,
};
pub use permission::{
    ExistsCall, Operation, PermValue, PermissionMeta, PermissionQuery, PermissionTarget, VarSource,
};
pub use record::{
    Column, EnumValue, IntoVal, ListItem, Record, get, get_enum, get_opt, node_values, opt,
};
pub use service::{ServiceDef, Visitor};
pub use tables::{
    EnumMeta, FILE_MODEL, FILE_READ_ONLY, FieldMeta, Kind, Lit, MigrationHint, ModelMeta,
    RelFieldMeta, RelationMeta, ServiceMeta,
};
pub use value::{
    DateText, DateTime, Json, Val, cuid, format_datetime, is_formatted_datetime, is_valid_id,
    parse_datetime,
};
pub use write::{RelArg, Write, id_input, parse_write, writable};
