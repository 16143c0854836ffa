//! The commands of `svc`, one module each, and what they share: the service and target they
//! work on ([`context`]).
//! `export` and `import` move the service's data as NDF archives ([`ndf`]).

mod context;
mod dependencies;
mod deploy;
mod down;
mod info;
pub mod init;
mod login;
mod logs;
mod ndf;
mod playground;
mod root_token;

pub use context::{TargetArg, status_ok};
pub use deploy::{DeployArgs, deploy};
pub use down::down;
pub use info::info;
pub use login::{LoginArgs, login};
pub use logs::logs;
pub use ndf::export::{ExportArgs, export};
pub use ndf::import::{ImportArgs, import};
pub use playground::playground;
pub use root_token::root_token;
