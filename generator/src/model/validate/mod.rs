//! The rules of reference §1 that can be checked without a database, one file per rule family.
//!
//! [`validate`] is the only way to a [`Valid<Model>`]: it runs every rule over the whole input,
//! collects all problems (each with a span), and lowers to a model only when there are none.
//! Rules read the [`Ast`] view; none of them stops at the first error, and none may panic.

pub mod cascades;
pub mod collisions;
pub mod defaults;
pub mod enums;
pub mod fields;
pub mod names;
pub mod relations;
pub mod service;
pub mod types;

use crate::diagnostics::Diagnostics;
use crate::model::lower::{Ast, lower};
use crate::model::{Model, Valid};
use crate::syntax::config::Config;
use crate::syntax::sdl::SdlFile;

/// Checks the parsed types files and `svc.yml` together and builds the model.
///
/// `files` are in the order `svc.yml` lists them (their concatenation is the schema).
pub fn validate(files: &[SdlFile], config: &Config) -> Result<Valid<Model>, Diagnostics> {
    let ast = Ast::new(files);
    let mut diags = Diagnostics::new();
    types::check(&ast, &mut diags);
    fields::check(&ast, &mut diags);
    relations::check(&ast, &mut diags);
    cascades::check(&ast, &mut diags);
    names::check(&ast, &mut diags);
    enums::check(&ast, &mut diags);
    defaults::check(&ast, &mut diags);
    collisions::check(&ast, &mut diags);
    service::check(&ast, config, &mut diags);
    if diags.is_empty() {
        Ok(Valid::assume_valid(lower(&ast, config)))
    } else {
        diags.sort();
        Err(diags)
    }
}

/// Backticked, comma-separated list for messages: `` `a`, `b` ``.
fn ticked<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    items
        .into_iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
