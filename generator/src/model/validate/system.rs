//! Rules about the system types (reference §1.5): every service has a `File` type, the type of the
//! nodes the File API creates. A service that leaves it out gets the built-in definition
//! ([`SYSTEM_TYPES`]); one that declares `type File @model` itself, to add fields and relations,
//! declares the system fields exactly as the built-in definition does, since the File API writes
//! them. No other kind of definition may take the name.

use apollo_compiler::Node;
use apollo_compiler::ast::{Definition, Document, FieldDefinition};

use crate::diagnostics::{Diagnostic, Diagnostics};
use crate::model::lower::{Ast, Shape, name_span, node_span};
use crate::source::{FileId, SYSTEM_TYPES};

/// The name of the system type of uploaded files.
pub const FILE: &str = "File";

/// Reports a definition other than an object type named `File` (an enum, an input, an
/// interface, a scalar or a union: any of them would take the place of the built-in type), and
/// a `File` type of the service's own that lacks a system field or declares one otherwise than
/// the built-in definition.
pub fn check(ast: &Ast, diags: &mut Diagnostics) {
    for f in ast.files {
        for def in &f.document.definitions {
            let (article, what, name) = match def {
                Definition::EnumTypeDefinition(d) => ("an", "enum", &d.name),
                Definition::InputObjectTypeDefinition(d) => ("an", "input", &d.name),
                Definition::InterfaceTypeDefinition(d) => ("an", "interface", &d.name),
                Definition::ScalarTypeDefinition(d) => ("a", "scalar", &d.name),
                Definition::UnionTypeDefinition(d) => ("a", "union", &d.name),
                _ => continue,
            };
            if name != FILE {
                continue;
            }
            diags.push(
                Diagnostic::new(
                    name_span(f.file, name),
                    format!(
                        "`File` is the system type of uploaded files; {article} {what} cannot take its name"
                    ),
                )
                .with_help(format!("rename the {what}")),
            );
        }
    }
    let system = system_fields();
    for o in ast.objects.iter().filter(|o| o.def.name == FILE) {
        if o.file == FileId::SYSTEM {
            continue;
        }
        let mut missing = Vec::new();
        for expected in &system {
            let Some(field) = o.def.fields.iter().find(|f| f.name == expected.name) else {
                missing.push(declaration(expected));
                continue;
            };
            // `createdAt` and `updatedAt` have a rule of their own for every type (4050).
            if matches!(expected.name.as_str(), "id" | "createdAt" | "updatedAt") {
                continue;
            }
            if !same_declaration(field, expected) {
                diags.push(
                    Diagnostic::new(
                        node_span(o.file, field),
                        format!(
                            "The field `{}` of `File` is a system field: the File API writes it, so it has to be declared exactly as `{}`",
                            expected.name,
                            declaration(expected)
                        ),
                    )
                    .with_help(format!("declare `{}`", declaration(expected))),
                );
            }
        }
        if !missing.is_empty() {
            diags.push(
                Diagnostic::new(
                    name_span(o.file, &o.def.name),
                    format!(
                        "The type `File` is the system type of uploaded files and has to declare its system fields; missing: {}",
                        missing.join(", ")
                    ),
                )
                .with_help(
                    "add the missing fields, or leave `File` out of the types files to get the built-in one",
                ),
            );
        }
    }
}

/// The fields of the built-in `File`.
fn system_fields() -> Vec<Node<FieldDefinition>> {
    let Ok(document) = Document::parse(SYSTEM_TYPES, "system.graphql") else {
        return Vec::new();
    };
    document
        .definitions
        .into_iter()
        .find_map(|d| match d {
            Definition::ObjectTypeDefinition(o) if o.name == FILE => Some(o.fields.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// `name: Type` and its `@isUnique`, as the built-in definition writes it.
fn declaration(field: &FieldDefinition) -> String {
    let unique = if field.directives.get("isUnique").is_some() {
        " @isUnique"
    } else {
        ""
    };
    format!("{}: {}{unique}", field.name, field.ty)
}

/// The same type, the same uniqueness, and no default value (the File API always writes it).
fn same_declaration(field: &FieldDefinition, expected: &FieldDefinition) -> bool {
    Shape::of(&field.ty) == Shape::of(&expected.ty)
        && field.directives.get("isUnique").is_some()
            == expected.directives.get("isUnique").is_some()
        && field.directives.get("defaultValue").is_none()
}
