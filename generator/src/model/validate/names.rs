//! Naming rules of reference §1.7 (error 2008): models, fields, relations and enum types.
//! Enum values have their own texts and live in [`super::enums`].

use std::collections::HashSet;

use crate::diagnostics::{Diagnostic, Diagnostics};
use crate::model::ScalarType;
use crate::model::lower::{Ast, argument, name_span, node_span, relation_name};

const MAX_LEN: usize = 64;

/// `^[A-Z][a-zA-Z0-9]*$` (with `_` allowed when `underscore`), at most 64 characters.
fn upper_name(name: &str, underscore: bool) -> bool {
    name.len() <= MAX_LEN
        && name.starts_with(|c: char| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || (underscore && c == '_'))
}

/// `^[a-z][a-zA-Z0-9]*$`, at most 64 characters.
fn field_name(name: &str) -> bool {
    name.len() <= MAX_LEN
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_alphanumeric())
}

/// The reference's 2008 text; `entity` carries the article glued to the noun (`" model"`,
/// `"n enum"`), exactly as the original produced it.
fn invalid(name: &str, entity: &str) -> String {
    format!("'{name}' is not a valid name for a{entity}.")
}

/// Reports every invalid name of a model, field, relation or enum type (error 2008).
pub fn check(ast: &Ast, diags: &mut Diagnostics) {
    for o in &ast.objects {
        let name = o.def.name.as_str();
        if !upper_name(name, false) || ScalarType::from_name(name).is_some() {
            diags.push(
                Diagnostic::new(name_span(o.file, &o.def.name), invalid(name, " model"))
                    .with_code(2008)
                    .with_help("model names start with an upper-case letter, have only letters and digits, at most 64 characters, and are not a scalar name"),
            );
        }
        for f in &o.def.fields {
            if !field_name(&f.name) {
                diags.push(
                    Diagnostic::new(name_span(o.file, &f.name), invalid(&f.name, " field"))
                        .with_code(2008)
                        .with_help("field names start with a lower-case letter and have only letters and digits, at most 64 characters"),
                );
            }
        }
    }
    let mut seen = HashSet::new();
    for (_, o, f) in ast.fields() {
        let Some(name) = relation_name(&f.directives) else {
            continue;
        };
        if !upper_name(name, false) && seen.insert(name) {
            let span = f
                .directives
                .get("relation")
                .and_then(|d| argument(d, "name"))
                .map_or(name_span(o.file, &f.name), |v| node_span(o.file, v));
            diags.push(
                Diagnostic::new(span, invalid(name, " relation"))
                    .with_code(2008)
                    .with_help("relation names start with an upper-case letter and have only letters and digits, at most 64 characters"),
            );
        }
    }
    for e in &ast.enums {
        let name = e.def.name.as_str();
        if !upper_name(name, true) {
            diags.push(
                Diagnostic::new(name_span(e.file, &e.def.name), invalid(name, "n enum"))
                    .with_code(2008)
                    .with_help("enum names start with an upper-case letter and have only letters, digits and `_`, at most 64 characters"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_patterns() {
        assert!(upper_name("Post2", false));
        assert!(!upper_name("Post_2", false));
        assert!(upper_name("Post_2", true));
        assert!(!upper_name("post", false));
        assert!(!upper_name(&"A".repeat(65), false));
        assert!(field_name("createdAt"));
        assert!(!field_name("_id"));
        assert!(!field_name("Name"));
        assert!(!field_name("first_name"));
    }
}
