//! Rules about relations as a whole (reference §1.6): a name appears on exactly two fields of two
//! types that point at each other, or once or twice for a self relation.

use apollo_compiler::Node;
use apollo_compiler::ast::FieldDefinition;

use crate::diagnostics::{Diagnostic, Diagnostics};
use crate::model::lower::{
    Ast, ObjectDecl, Shape, Target, argument, name_span, node_span, relation_name,
};
use crate::source::{FileId, Span};

/// One field that declares a relation, with the index of its enclosing type and of its target.
#[derive(Clone, Copy)]
pub(super) struct End<'a> {
    /// Index into [`Ast::objects`] of the type that declares the field.
    pub owner: usize,
    pub decl: ObjectDecl<'a>,
    pub field: &'a Node<FieldDefinition>,
    /// Index into [`Ast::objects`] of the field's type.
    pub target: usize,
}

impl End<'_> {
    /// The `@relation` directive (or its `name:` argument) — where the relation is named.
    fn span(&self) -> Span {
        let file = self.decl.file;
        match self.field.directives.get("relation") {
            Some(d) => argument(d, "name").map_or(node_span(file, d), |v| node_span(file, v)),
            None => name_span(file, &self.field.name),
        }
    }
}

/// Relation fields grouped by relation name, in the order each name first appears.
pub(super) fn groups<'a>(ast: &Ast<'a>) -> Vec<(&'a str, Vec<End<'a>>)> {
    let mut groups: Vec<(&str, Vec<End>)> = Vec::new();
    for (owner, decl, field) in ast.fields() {
        let Target::Object(target) = ast.target(Shape::of(&field.ty).name) else {
            continue;
        };
        let Some(name) = relation_name(&field.directives) else {
            continue;
        };
        let end = End {
            owner,
            decl,
            field,
            target,
        };
        match groups.iter_mut().find(|(n, _)| *n == name) {
            Some((_, ends)) => ends.push(end),
            None => groups.push((name, vec![end])),
        }
    }
    groups
}

/// Reports every relation name written on the wrong number of fields, and the two fields of a
/// relation when they do not point at each other's types.
pub fn check(ast: &Ast, diags: &mut Diagnostics) {
    for (name, ends) in groups(ast) {
        let Some(first) = ends.first() else {
            continue;
        };
        let is_self = first.target == first.owner;
        if is_self && ends.len() > 2 {
            diags.push(
                Diagnostic::new(
                    first.span(),
                    format!("A relation directive for a self relation must appear either 1 or 2 times. Relation name: '{name}'"),
                )
                .with_help("use the relation name on one field (symmetric) or on two fields of the type"),
            );
        } else if !is_self && ends.len() != 2 {
            diags.push(
                Diagnostic::new(
                    first.span(),
                    format!("A relation directive with a name must appear exactly 2 times. Relation name: '{name}'"),
                )
                .with_help(match ast.objects.get(first.target) {
                    // The built-in `File`: its other side needs a `File` of the service's own.
                    Some(target) if target.file == FileId::SYSTEM => format!(
                        "declare `type File @model` with its system fields (`id`, `secret`, `name`, `size`, `url`, `contentType`, `createdAt`, `updatedAt`) and a field with `@relation(name: \"{name}\")` that points back to `{}`",
                        first.decl.def.name
                    ),
                    _ => format!(
                        "add a field with `@relation(name: \"{name}\")` to `{}` that points back to `{}`, or give each relation its own name",
                        first.field.ty.inner_named_type(),
                        first.decl.def.name
                    ),
                }),
            );
        }
        if let [a, b] = ends[..] {
            mismatch(ast, a, b, diags);
            mismatch(ast, b, a, diags);
        }
    }
}

/// `this` must point at the type that declares `other`.
fn mismatch(ast: &Ast, this: End, other: End, diags: &mut Diagnostics) {
    if this.target == other.owner {
        return;
    }
    let other_type = ast
        .objects
        .get(other.owner)
        .map_or("", |o| o.def.name.as_str());
    diags.push(
        Diagnostic::new(
            name_span(this.decl.file, &this.field.name),
            format!(
                "The relation field `{}` has the type `{}`. But the other directive for this relation appeared on the type `{other_type}`",
                this.field.name,
                this.field.ty.inner_named_type()
            ),
        )
        .with_help("the two fields of a relation must point at each other's types"),
    );
}
