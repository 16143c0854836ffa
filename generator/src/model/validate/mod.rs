//! The rules of reference §1 that can be checked without a database, one file per rule family.
//!
//! [`rules`] runs every rule over the whole input, collects all problems (each with a span), and
//! lowers to a model only when there are none; the front end's `validate` adds the functions and
//! permission queries, and is the only way to a [`crate::model::Valid`] model.
//! Rules read the [`Ast`] view; none of them stops at the first error, and none may panic.

pub mod cascades;
pub mod collisions;
pub mod defaults;
pub mod enums;
pub mod fields;
pub mod names;
pub mod relations;
pub mod service;
pub mod system;
pub mod types;

use crate::diagnostics::Diagnostics;
use crate::model::Model;
use crate::model::lower::{Ast, lower};
use crate::syntax::config::Config;
use crate::syntax::sdl::SdlFile;

/// Runs every rule over the types files `files` and `svc.yml`, into `diags`, and lowers them to
/// a model when `diags` holds no problem, theirs or any reported before.
pub fn rules(files: &[SdlFile], config: &Config, diags: &mut Diagnostics) -> Option<Model> {
    let ast = Ast::new(files);
    types::check(&ast, diags);
    fields::check(&ast, diags);
    relations::check(&ast, diags);
    cascades::check(&ast, diags);
    names::check(&ast, diags);
    enums::check(&ast, diags);
    defaults::check(&ast, diags);
    collisions::check(&ast, diags);
    service::check(&ast, config, diags);
    system::check(&ast, diags);
    diags.is_empty().then(|| lower(&ast, config))
}

/// Backticked, comma-separated list for messages: `` `a`, `b` ``.
fn ticked<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    items
        .into_iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
