//! The commands of `svc`, one module each, and what they share: the service and target they
//! work on ([`context`]).

mod context;
mod deploy;
mod down;
mod info;
pub mod init;
mod login;
mod logs;
mod playground;
mod root_token;

pub use context::{TargetArg, status_ok};
pub use deploy::{DeployArgs, deploy};
pub use down::down;
pub use info::info;
pub use login::{LoginArgs, login};
pub use logs::logs;
pub use playground::playground;
pub use root_token::root_token;
