//! Rules about enum values (reference §1.7 and §1.9): an upper-case first character, the value
//! pattern `^[A-Z][a-zA-Z0-9_]*$` with at most 191 characters, no duplicates, at least one value.

use std::collections::HashSet;

use crate::diagnostics::{Diagnostic, Diagnostics};
use crate::model::lower::{Ast, name_span};
use crate::model::validate::ticked;

const MAX_VALUE_LEN: usize = 191;

/// Reports enums without values and every value that breaks a rule of this module.
pub fn check(ast: &Ast, diags: &mut Diagnostics) {
    for e in &ast.enums {
        let name = e.def.name.as_str();
        let span = name_span(e.file, &e.def.name);
        let values: Vec<&str> = e.def.values.iter().map(|v| v.value.as_str()).collect();
        if values.is_empty() {
            diags.push(
                Diagnostic::new(span, format!("the enum `{name}` has no values"))
                    .with_help(format!("write `enum {name} {{ FIRST SECOND }}`")),
            );
        }
        if values
            .iter()
            .any(|v| !v.starts_with(|c: char| c.is_ascii_uppercase()))
        {
            diags.push(
                Diagnostic::new(
                    span,
                    format!(
                        "The enum type `{name}` contains invalid enum values. The first character of each value must be an uppercase letter."
                    ),
                )
                .with_help("write enum values in upper case, like `ADMIN`"),
            );
        } else {
            let bad: Vec<&str> = values
                .iter()
                .copied()
                .filter(|v| {
                    v.len() > MAX_VALUE_LEN
                        || !v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                })
                .collect();
            if !bad.is_empty() {
                diags.push(
                    Diagnostic::new(
                        span,
                        format!(
                            "The enum type `{name}` contains invalid enum values. Those are invalid: {}.",
                            ticked(bad)
                        ),
                    )
                    .with_help("enum values have only letters, digits and `_`, at most 191 characters"),
                );
            }
        }
        let mut seen = HashSet::new();
        for v in &e.def.values {
            if !seen.insert(v.value.as_str()) {
                diags.push(
                    Diagnostic::new(
                        name_span(e.file, &v.value),
                        format!(
                            "the enum `{name}` declares the value `{}` more than once",
                            v.value
                        ),
                    )
                    .with_help("remove the second one"),
                );
            }
        }
    }
}
