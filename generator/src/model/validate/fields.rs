//! Rules about single fields: duplicates, known types, the allowed shapes of scalar and relation
//! fields, which directives a field may carry and with which arguments (including the literal of
//! the `@relation(onDelete:)` extension), and the fixed format of the system fields `id`,
//! `createdAt` and `updatedAt`.

use std::collections::HashSet;

use apollo_compiler::Node;
use apollo_compiler::ast::{FieldDefinition, Value};

use crate::diagnostics::{Diagnostic, Diagnostics};
use crate::model::ScalarType;
use crate::model::lower::{
    Ast, ObjectDecl, Shape, Target, argument, name_span, node_span, on_delete_value,
};

/// Directives the data model gives meaning to, with their required argument.
const KNOWN: [(&str, Option<&str>); 6] = [
    ("isUnique", None),
    ("search", None),
    ("relation", Some("name")),
    ("defaultValue", Some("value")),
    ("migrationValue", Some("value")),
    ("rename", Some("oldName")),
];

/// Reports every field that breaks a rule of this module, type by type.
pub fn check(ast: &Ast, diags: &mut Diagnostics) {
    for o in &ast.objects {
        let mut seen = HashSet::new();
        for f in &o.def.fields {
            if !seen.insert(f.name.as_str()) {
                diags.push(
                    Diagnostic::new(
                        name_span(o.file, &f.name),
                        format!("The type `{}` has a duplicate fieldName.", o.def.name),
                    )
                    .with_help("rename or remove one of the fields"),
                );
            }
            field(ast, *o, f, diags);
        }
    }
}

fn field(ast: &Ast, o: ObjectDecl, f: &Node<FieldDefinition>, diags: &mut Diagnostics) {
    let name = f.name.as_str();
    let span = name_span(o.file, &f.name);
    let shape = Shape::of(&f.ty);
    if !f.arguments.is_empty() {
        diags.push(
            Diagnostic::new(
                span,
                format!("the field `{name}` declares arguments, which model fields cannot have"),
            )
            .with_help("remove the argument list"),
        );
    }
    directives(o, f, diags);
    let is_unique = f.directives.get("isUnique").is_some();
    if let Some(d) = f.directives.get("search")
        && (shape.list || !matches!(ast.target(shape.name), Target::Scalar(ScalarType::String)))
    {
        diags.push(
            Diagnostic::new(
                node_span(o.file, d),
                format!(
                    "the field `{name}` of the type `{}` cannot be `@search`: only single `String` values are indexed for substring filters",
                    f.ty
                ),
            )
            .with_help("remove `@search`, or use it on a `String` or `String!` field"),
        );
    }
    match ast.target(shape.name) {
        Target::Unknown => diags.push(
            Diagnostic::new(
                span,
                format!(
                    "The field `{name}` has the type `{}` but there's no type or enum declaration with that name.",
                    shape.name
                ),
            )
            .with_help(format!(
                "declare `type {0} @model {{ … }}` or `enum {0} {{ … }}`, or use one of `ID`, `String`, `Int`, `Float`, `Boolean`, `DateTime`, `Json`",
                shape.name
            )),
        ),
        Target::Scalar(_) | Target::Enum(_) => {
            if !shape.is_valid_scalar() {
                diags.push(
                    Diagnostic::new(
                        span,
                        format!(
                            "The scalar field `{name}` has the wrong format: `{}` Possible Formats: `S`, `S!`, `[S!]` or `[S!]!`",
                            f.ty
                        ),
                    )
                    .with_help(format!("write `{0}`, `{0}!`, `[{0}!]` or `[{0}!]!`", shape.name)),
                );
            }
            if let Some(d) = f.directives.get("relation") {
                diags.push(
                    Diagnostic::new(
                        node_span(o.file, d),
                        format!("The field `{name}` is a scalar field and cannot specify the `@relation` directive."),
                    )
                    .with_help("remove `@relation`, or change the field's type to a model"),
                );
            }
            if is_unique && shape.list {
                diags.push(
                    Diagnostic::new(span, format!("the list field `{name}` cannot be `@isUnique`"))
                        .with_help("remove `@isUnique`; uniqueness applies to single values"),
                );
            }
        }
        Target::Object(_) => {
            if !shape.is_valid_relation() {
                diags.push(
                    Diagnostic::new(
                        span,
                        format!(
                            "The relation field `{name}` has the wrong format: `{}` Possible Formats: `M`, `M!`, `[M!]!`",
                            f.ty
                        ),
                    )
                    .with_help(format!("write `{0}`, `{0}!` or `[{0}!]!`", shape.name)),
                );
            }
            if f.directives.get("relation").is_none() {
                diags.push(
                    Diagnostic::new(
                        span,
                        format!(
                            "The relation field `{name}` must specify a `@relation` directive: `@relation(name: \"MyRelation\")`"
                        ),
                    )
                    .with_help("name the relation on both of its fields with the same `@relation(name:)`"),
                );
            }
            if let Some(d) = f.directives.get("isUnique") {
                diags.push(
                    Diagnostic::new(node_span(o.file, d), format!("the relation field `{name}` cannot be `@isUnique`"))
                        .with_help("remove `@isUnique`"),
                );
            }
            for directive in ["defaultValue", "migrationValue"] {
                if let Some(d) = f.directives.get(directive) {
                    diags.push(
                        Diagnostic::new(
                            node_span(o.file, d),
                            format!("the relation field `{name}` cannot specify `@{directive}`"),
                        )
                        .with_help(format!("remove `@{directive}`; only scalar and enum fields have values")),
                    );
                }
            }
        }
    }
    system_field(o, f, shape, is_unique, diags);
}

/// Repeated directives and missing or mistyped directive arguments.
fn directives(o: ObjectDecl, f: &Node<FieldDefinition>, diags: &mut Diagnostics) {
    let name = f.name.as_str();
    let mut repeated = false;
    for (directive, required) in KNOWN {
        let mut all = f.directives.get_all(directive);
        let Some(first) = all.next() else {
            continue;
        };
        if let Some(second) = all.next()
            && !repeated
        {
            // Reported once per field, as the reference's text speaks of the field as a whole.
            repeated = true;
            diags.push(
                Diagnostic::new(
                    node_span(o.file, second),
                    format!(
                        "The field `{name}` specifies a directive more than once. Directives must appear exactly once on a field."
                    ),
                )
                .with_help(format!("remove the second `@{directive}`")),
            );
        }
        let Some(arg) = required else {
            continue;
        };
        let span = node_span(o.file, first);
        match argument(first, arg) {
            None => diags.push(
                Diagnostic::new(
                    span,
                    format!(
                        "The field `{name}` specifies the directive `@{directive}` but it's missing the required argument `{arg}`."
                    ),
                )
                .with_help(match directive {
                    "relation" => "write `@relation(name: \"MyRelation\")`".to_owned(),
                    "rename" => "write `@rename(oldName: \"previousName\")`".to_owned(),
                    _ => format!("write `@{directive}(value: \"…\")`"),
                }),
            ),
            Some(value) => {
                // `name` and `oldName` identify things and must be string literals; `value` may be
                // any literal and is checked against the field type in `defaults`.
                let must_be_string = arg != "value";
                if must_be_string && !matches!(value.as_ref(), Value::String(_)) {
                    diags.push(
                        Diagnostic::new(
                            node_span(o.file, value),
                            format!("the argument `{arg}` of `@{directive}` on the field `{name}` must be a string literal"),
                        )
                        .with_help(format!("write `@{directive}({arg}: \"{}\")`", value_text(value))),
                    );
                }
            }
        }
    }
    if let Some(relation) = f.directives.get("relation")
        && let Some(old) = argument(relation, "oldName")
        && !matches!(old.as_ref(), Value::String(_))
    {
        diags.push(
            Diagnostic::new(
                node_span(o.file, old),
                format!("the argument `oldName` of `@relation` on the field `{name}` must be a string literal"),
            )
            .with_help(format!("write `oldName: \"{}\"`", value_text(old))),
        );
    }
    if let Some(relation) = f.directives.get("relation")
        && let Some(value) = argument(relation, "onDelete")
        && on_delete_value(value).is_none()
    {
        diags.push(
            Diagnostic::new(
                node_span(o.file, value),
                format!(
                    "the argument `onDelete` of `@relation` on the field `{name}` is `{}`, but it must be `CASCADE` or `SET_NULL`",
                    value.serialize().no_indent()
                ),
            )
            .with_help("write `onDelete: CASCADE` to delete the related nodes with this one, or `onDelete: SET_NULL` (the default) to only disconnect them"),
        );
    }
}

/// The text of a literal without quotes, for suggesting the quoted form.
fn value_text(value: &Value) -> String {
    crate::model::lower::value_as_string(value).unwrap_or_else(|| "Name".to_owned())
}

/// `id` must be `ID! @isUnique`; `createdAt`/`updatedAt` must be exactly `DateTime!` (4050).
fn system_field(
    o: ObjectDecl,
    f: &Node<FieldDefinition>,
    shape: Shape,
    is_unique: bool,
    diags: &mut Diagnostics,
) {
    let name = f.name.as_str();
    let span = name_span(o.file, &f.name);
    let exact = |scalar: ScalarType| {
        shape.name == scalar.name() && shape.non_null && !shape.list && !shape.nested
    };
    match name {
        "id" => {
            if !exact(ScalarType::Id) {
                diags.push(
                    Diagnostic::new(
                        span,
                        format!(
                            "the field `id` of `{}` has the type `{}`, but it must be `ID!`",
                            o.def.name, f.ty
                        ),
                    )
                    .with_help("write `id: ID! @isUnique`"),
                );
            }
            if !is_unique {
                diags.push(
                    Diagnostic::new(
                        span,
                        "All id fields must specify the `@isUnique` directive.",
                    )
                    .with_help("write `id: ID! @isUnique`"),
                );
            }
        }
        "createdAt" | "updatedAt" => {
            if !exact(ScalarType::DateTime) || is_unique {
                diags.push(
                    Diagnostic::new(
                        span,
                        format!(
                            "The field {name} is a predefined but hidden type and has to have a specific format to be exposed. You can only add the type 'DateTime!' for this field and the field cannot be unique."
                        ),
                    )
                    .with_code(4050)
                    .with_help(format!("write `{name}: DateTime!`, or rename the field")),
                );
            }
        }
        _ => return,
    }
    for directive in ["defaultValue", "migrationValue"] {
        if let Some(d) = f.directives.get(directive) {
            diags.push(
                Diagnostic::new(
                    node_span(o.file, d),
                    format!("the system field `{name}` cannot specify `@{directive}`"),
                )
                .with_help("svc sets system fields itself; remove the directive"),
            );
        }
    }
}
