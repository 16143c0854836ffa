//! Rules that tie `svc.yml` to the data model: permissions name existing types, relations and
//! fields with operations that fit them (reference §5.1), and hook functions name existing models
//! with at most one hook per model, operation and step (reference §7.1).

use std::collections::HashMap;

use crate::diagnostics::{Diagnostic, Diagnostics};
use crate::model::lower::{Ast, Shape, Target, relation_name};
use crate::syntax::config::Config;

/// Reports every permission and hook function of `config` that does not fit the data model.
pub fn check(ast: &Ast, config: &Config, diags: &mut Diagnostics) {
    let relations: Vec<&str> = ast
        .fields()
        .filter(|(_, _, f)| matches!(ast.target(Shape::of(&f.ty).name), Target::Object(_)))
        .filter_map(|(_, _, f)| relation_name(&f.directives))
        .collect();
    for p in &config.permissions {
        let op = p.operation.value.as_str();
        let span = p.operation.span;
        let Some((name, action)) = op.split_once('.') else {
            // `*`: the global wildcard.
            if let Some(f) = p.fields.first() {
                diags.push(
                    Diagnostic::new(f.span, "the permission `*` cannot list `fields`")
                        .with_help("only type permissions like `Post.read` restrict fields"),
                );
            }
            // A `query` on `*` is reported by the permissions' `select_queries`.
            continue;
        };
        if let Target::Object(i) = ast.target(name) {
            if !matches!(action, "read" | "create" | "update" | "delete") {
                diags.push(
                    Diagnostic::new(
                        span,
                        format!("Wrong operation defined for ModelPermission. You supplied: '{op}'"),
                    )
                    .with_help(format!(
                        "a type permission is one of `{name}.read`, `{name}.create`, `{name}.update` and `{name}.delete`"
                    )),
                );
            }
            let Some(o) = ast.objects.get(i) else {
                continue;
            };
            for f in &p.fields {
                if !o.def.fields.iter().any(|d| d.name == f.value.as_str()) {
                    diags.push(
                        Diagnostic::new(
                            f.span,
                            format!("the permission `{op}` lists the field `{}`, which `{name}` does not have", f.value),
                        )
                        .with_help(format!("list only fields declared in `type {name}`")),
                    );
                }
            }
        } else if relations.contains(&name) {
            if !matches!(action, "connect" | "disconnect" | "*") {
                diags.push(
                    Diagnostic::new(
                        span,
                        format!("Wrong operation defined for RelationPermission. You supplied: '{op}'"),
                    )
                    .with_help(format!(
                        "a relation permission is one of `{name}.connect`, `{name}.disconnect` and `{name}.*`"
                    )),
                );
            }
            if let Some(f) = p.fields.first() {
                diags.push(
                    Diagnostic::new(
                        f.span,
                        format!("the relation permission `{op}` cannot list `fields`"),
                    )
                    .with_help("only type permissions like `Post.read` restrict fields"),
                );
            }
        } else {
            diags.push(
                Diagnostic::new(
                    span,
                    format!(
                        "Did not find the type or relation you provided a permission for: '{op}'"
                    ),
                )
                .with_code(2066)
                .with_help(format!(
                    "`{name}` must be a model or the name of a relation"
                )),
            );
        }
    }
    let mut hooks: HashMap<(&str, &str), &str> = HashMap::new();
    for f in &config.functions {
        let Some(op) = &f.operation else {
            continue;
        };
        let Some((model, _)) = op.value.split_once('.') else {
            continue;
        };
        let kind = f.kind.value.as_str();
        if !matches!(ast.target(model), Target::Object(_)) {
            diags.push(
                Diagnostic::new(
                    op.span,
                    format!(
                        "Error in {kind} function '{}': No model with name '{model}' found. Please supply a valid model.",
                        f.name.value
                    ),
                )
                .with_help("name a model declared in the types files"),
            );
        } else if let Some(first) = hooks.insert((kind, op.value.as_str()), f.name.value.as_str()) {
            diags.push(
                Diagnostic::new(
                    op.span,
                    format!(
                        "the {kind} functions `{first}` and `{}` both handle `{}`; only one may",
                        f.name.value, op.value
                    ),
                )
                .with_code(2055)
                .with_help("merge the two functions into one"),
            );
        }
    }
}
