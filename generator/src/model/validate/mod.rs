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
pub mod system;
pub mod types;

use crate::diagnostics::Diagnostics;
use crate::model::lower::{Ast, lower};
use crate::model::{Model, Valid};
use crate::source::Sources;
use crate::syntax::config::Config;
use crate::syntax::sdl::SdlFile;
use crate::{functions, permissions};

/// Checks the parsed types files and `svc.yml` together and builds the model.
///
/// `files` are in the order `svc.yml` lists them (their concatenation is the schema); the
/// permission query files are looked up in `sources` (see [`permissions`]). Query files are
/// loaded and parsed even when the model has errors; they are checked against the permission
/// schema only when it has none.
pub fn validate(
    sources: &Sources,
    files: &[SdlFile],
    config: &Config,
) -> Result<Valid<Model>, Diagnostics> {
    let ast = Ast::new(files);
    let mut diags = Diagnostics::new();
    let mut query_diags = Diagnostics::new();
    let queries = permissions::select_queries(sources, config, &mut query_diags);
    let resolvers = functions::resolvers(sources, config, &mut diags);
    types::check(&ast, &mut diags);
    fields::check(&ast, &mut diags);
    relations::check(&ast, &mut diags);
    cascades::check(&ast, &mut diags);
    names::check(&ast, &mut diags);
    enums::check(&ast, &mut diags);
    defaults::check(&ast, &mut diags);
    collisions::check(&ast, &mut diags);
    service::check(&ast, config, &mut diags);
    system::check(&ast, &mut diags);
    if diags.is_empty() {
        let mut model = lower(&ast, config);
        functions::lower(&mut model, sources, config, resolvers, &mut query_diags);
        permissions::compile(&mut model, config, &queries, &mut query_diags);
        if query_diags.is_empty() {
            return Ok(Valid::assume_valid(model));
        }
    }
    diags.extend(query_diags);
    diags.sort();
    Err(diags)
}

/// Backticked, comma-separated list for messages: `` `a`, `b` ``.
fn ticked<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    items
        .into_iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
