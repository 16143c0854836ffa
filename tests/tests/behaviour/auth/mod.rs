//! Who may do what: tokens, the service's secret, the System API, permissions and the permission
//! schema (reference §5, §6, §10.1).

mod permission_schema;
mod permissions;
pub(crate) mod secret;
mod system_api;
mod tokens;
