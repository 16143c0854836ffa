//! Rules about type definitions: `@model`, the legacy `implements Node`, duplicate names, the
//! mandatory `id` field, and definitions that have no place in a data model.

use std::collections::HashSet;

use apollo_compiler::ast::{Definition, Value};

use crate::diagnostics::{Diagnostic, Diagnostics};
use crate::model::lower::{Ast, argument, name_span, node_span};
use crate::source::FileId;

const ISSUE_817: &str = "See: https://github.com/graphcool/framework/issues/817";

/// Reports every type definition that breaks a rule of this module.
pub fn check(ast: &Ast, diags: &mut Diagnostics) {
    for o in &ast.objects {
        let name = o.def.name.as_str();
        let span = name_span(o.file, &o.def.name);
        if o.def.implements_interfaces.iter().any(|i| i == "Node") {
            diags.push(
                Diagnostic::new(
                    span,
                    format!(
                        "The model `{name}` has the implements Node annotation. This is deprecated. Please use '@model' instead. {ISSUE_817}"
                    ),
                )
                .with_help(format!("write `type {name} @model {{ … }}`")),
            );
        } else if o.def.directives.get("model").is_none() {
            diags.push(
                Diagnostic::new(
                    span,
                    format!(
                        "The model `{name}` is missing the @model directive. Please add it. {ISSUE_817}"
                    ),
                )
                .with_help(format!("write `type {name} @model {{ … }}`")),
            );
        }
        if !o.def.fields.iter().any(|f| f.name == "id") {
            diags.push(
                Diagnostic::new(
                    span,
                    "All models must specify the `id` field: `id: ID! @isUnique`",
                )
                .with_help(format!("add `id: ID! @isUnique` to `{name}`")),
            );
        }
        rename_argument(o.file, &o.def.directives, "type", name, diags);
    }
    for e in &ast.enums {
        rename_argument(
            e.file,
            &e.def.directives,
            "enum",
            e.def.name.as_str(),
            diags,
        );
    }
    duplicates_and_strays(ast, diags);
}

/// `@rename(oldName: "X")` on a type or enum needs its string argument.
pub(super) fn rename_argument(
    file: FileId,
    directives: &apollo_compiler::ast::DirectiveList,
    what: &str,
    name: &str,
    diags: &mut Diagnostics,
) {
    let Some(rename) = directives.get("rename") else {
        return;
    };
    match argument(rename, "oldName").map(|v| v.as_ref()) {
        None => diags.push(
            Diagnostic::new(
                node_span(file, rename),
                format!(
                    "the {what} `{name}` specifies the directive `@rename` but it's missing the required argument `oldName`"
                ),
            )
            .with_help("write `@rename(oldName: \"PreviousName\")`"),
        ),
        Some(Value::String(_)) => {}
        Some(_) => diags.push(
            Diagnostic::new(
                node_span(file, rename),
                format!("the argument `oldName` of `@rename` on the {what} `{name}` must be a string literal"),
            )
            .with_help("write `@rename(oldName: \"PreviousName\")`"),
        ),
    }
}

/// Duplicate type and enum names (they share one namespace), and definitions a data model cannot
/// use in a way that would silently drop what the user wrote.
fn duplicates_and_strays(ast: &Ast, diags: &mut Diagnostics) {
    let mut seen = HashSet::new();
    for f in ast.files {
        for def in &f.document.definitions {
            let name = match def {
                Definition::ObjectTypeDefinition(d) => &d.name,
                Definition::EnumTypeDefinition(d) => &d.name,
                Definition::ObjectTypeExtension(d) => {
                    stray(f.file, def, &format!("`extend type {}`", d.name), diags);
                    continue;
                }
                Definition::EnumTypeExtension(d) => {
                    stray(f.file, def, &format!("`extend enum {}`", d.name), diags);
                    continue;
                }
                Definition::OperationDefinition(_) | Definition::FragmentDefinition(_) => {
                    stray(f.file, def, "an operation or fragment", diags);
                    continue;
                }
                // Interfaces, inputs, scalars, unions, directive and schema definitions are
                // allowed in the file but are not part of the model (reference §1.1).
                _ => continue,
            };
            if !seen.insert(name.as_str()) {
                diags.push(
                    Diagnostic::new(
                        name_span(f.file, name),
                        format!("The name of the type `{name}` occurs more than once."),
                    )
                    .with_help("rename or remove one of the definitions"),
                );
            }
        }
    }
}

fn stray(file: FileId, def: &Definition, what: &str, diags: &mut Diagnostics) {
    let span = crate::syntax::sdl::span_in(file, def.location());
    diags.push(
        Diagnostic::new(span, format!("{what} cannot be part of the data model"))
            .with_help("a types file holds `type X @model { … }` and `enum E { … }` definitions; declare every field in the type itself"),
    );
}
