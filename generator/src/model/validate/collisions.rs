//! Names the user chose that clash with names the generator derives: a model or enum named like a
//! generated type (`PostFilter`, `Query`, `CreatePost`, `AddToUserPostsPayload`, a scalar), two
//! declarations that would generate the same type (`Post` and `ManyPostsData` both give
//! `UpdateManyPostsData`) or root field (`Leaf` and `Leave` both give `allLeaves`), and the two
//! sides of a relation getting the same name in relation mutations.
//!
//! The derived names come from [`crate::naming`], the same functions the emitters use, so this
//! check cannot drift from what is generated.

use std::collections::HashMap;

use crate::diagnostics::{Diagnostic, Diagnostics};
use crate::model::ScalarType;
use crate::model::lower::{Ast, Shape, Target, name_span, relation_name};
use crate::model::validate::relations;
use crate::naming;
use crate::source::Span;

/// Reports every user-chosen name that clashes with a derived name (see the module docs).
pub fn check(ast: &Ast, diags: &mut Diagnostics) {
    generated_types(ast, diags);
    root_fields(ast, diags);
    relation_sides(ast, diags);
}

/// Relation names in the order each first appears on a relation field, with that field's span.
fn relation_names<'a>(ast: &Ast<'a>) -> Vec<(&'a str, Span)> {
    let mut relations: Vec<(&str, Span)> = Vec::new();
    for (_, o, f) in ast.fields() {
        if let Some(name) = relation_name(&f.directives)
            && matches!(ast.target(Shape::of(&f.ty).name), Target::Object(_))
            && !relations.iter().any(|(n, _)| *n == name)
        {
            relations.push((name, name_span(o.file, &f.name)));
        }
    }
    relations
}

/// Declared type and enum names against every generated type name, and generated type names
/// against each other.
fn generated_types(ast: &Ast, diags: &mut Diagnostics) {
    // Generated name → the declaration it is generated for (`None`: always generated).
    let mut generated: HashMap<String, Option<String>> = HashMap::new();
    for name in naming::FIXED_TYPE_NAMES {
        generated.insert(name.to_owned(), None);
    }
    let mut add = |name: String, why: String, span: Span, diags: &mut Diagnostics| match generated
        .get(&name)
    {
        Some(Some(first)) if *first != why => diags.push(
            Diagnostic::new(
                span,
                format!("{why} and {first} both generate the type `{name}`"),
            )
            .with_help(format!("rename {why}")),
        ),
        Some(Some(_)) => {}
        Some(None) => diags.push(
            Diagnostic::new(
                span,
                format!(
                    "{why} generates the type `{name}`, which is reserved for the generated API"
                ),
            )
            .with_help(format!("rename {why}")),
        ),
        None => {
            generated.insert(name, Some(why));
        }
    };
    for o in &ast.objects {
        let ty = o.def.name.as_str();
        let why = format!("the model `{ty}`");
        let span = name_span(o.file, &o.def.name);
        for name in [
            naming::filter_type(ty),
            naming::order_by_type(ty),
            naming::create_input(ty),
            naming::update_input(ty),
            naming::update_many_data(ty),
            naming::subscription_filter_type(ty),
            naming::subscription_filter_node_type(ty),
            naming::subscription_payload_type(ty),
            naming::previous_values_type(ty),
        ] {
            add(name, why.clone(), span, diags);
        }
        for f in &o.def.fields {
            let related = Shape::of(&f.ty).name;
            if matches!(ast.target(related), Target::Object(_)) {
                add(
                    naming::nested_input(ty, &f.name, related),
                    format!("the relation field `{ty}.{}`", f.name),
                    name_span(o.file, &f.name),
                    diags,
                );
            }
        }
    }
    // All four payload types are reserved for every relation, whatever its cardinality, as the
    // mutation fields are in `root_fields`: a model name must not become invalid because a
    // relation elsewhere changed from 1:1 to 1:n.
    for (relation, span) in relation_names(ast) {
        for name in [
            naming::set_payload(relation),
            naming::unset_payload(relation),
            naming::add_to_payload(relation),
            naming::remove_from_payload(relation),
        ] {
            add(name, format!("the relation `{relation}`"), span, diags);
        }
    }
    let declared = ast
        .objects
        .iter()
        .map(|o| ("model", o.def.name.as_str(), name_span(o.file, &o.def.name)))
        .chain(
            ast.enums
                .iter()
                .map(|e| ("enum", e.def.name.as_str(), name_span(e.file, &e.def.name))),
        );
    for (what, name, span) in declared {
        if what == "enum" && ScalarType::from_name(name).is_some() {
            diags.push(
                Diagnostic::new(
                    span,
                    format!("the enum `{name}` has the name of a built-in scalar"),
                )
                .with_help("rename the enum"),
            );
        } else if let Some(why) = generated.get(name) {
            let message = match why {
                Some(why) => {
                    format!("the {what} name `{name}` clashes with a type svc generates for {why}")
                }
                None => {
                    format!("the {what} name `{name}` is reserved for a type of the generated API")
                }
            };
            diags.push(Diagnostic::new(span, message).with_help(format!("rename the {what}")));
        }
    }
}

/// Root fields of `Query` and `Mutation` that two declarations would both generate.
fn root_fields(ast: &Ast, diags: &mut Diagnostics) {
    // (root type, field) → (first declaration, its kind)
    let mut seen: HashMap<(&str, String), String> = HashMap::new();
    let mut clash =
        |root: &'static str, field: String, owner: String, span: Span, diags: &mut Diagnostics| {
            match seen.get(&(root, field.clone())) {
                Some(first) if *first != owner => diags.push(
                    Diagnostic::new(
                        span,
                        format!("{owner} and {first} both generate the {root} field `{field}`"),
                    )
                    .with_help(format!("rename {owner}")),
                ),
                Some(_) => {}
                None => {
                    seen.insert((root, field), owner);
                }
            }
        };
    for o in &ast.objects {
        let ty = o.def.name.as_str();
        let span = name_span(o.file, &o.def.name);
        let owner = format!("the model `{ty}`");
        for field in [naming::all_field(ty), naming::meta_field(ty)] {
            clash("query", field, owner.clone(), span, diags);
        }
        for field in [
            naming::create_field(ty),
            naming::update_field(ty),
            naming::update_or_create_field(ty),
            naming::delete_field(ty),
            naming::update_many_field(ty),
            naming::delete_many_field(ty),
        ] {
            clash("mutation", field, owner.clone(), span, diags);
        }
    }
    for (name, span) in relation_names(ast) {
        let owner = format!("the relation `{name}`");
        for field in [
            naming::set_field(name),
            naming::unset_field(name),
            naming::add_to_field(name),
            naming::remove_from_field(name),
        ] {
            clash("mutation", field, owner.clone(), span, diags);
        }
    }
}

/// The two sides of a relation need different names in its mutations (reference §2.7): they name
/// the two arguments and the two payload fields. `{fa}{B}` and `{fb}{A}` can coincide when one
/// text splits two ways, as with `BlogPost.originalBlog: Post` and `Post.original: BlogPost`.
fn relation_sides(ast: &Ast, diags: &mut Diagnostics) {
    for (relation, ends) in relations::groups(ast) {
        let [a, b] = ends[..] else {
            continue;
        };
        let target = |end: &relations::End| end.field.ty.inner_named_type().as_str().to_owned();
        let name = naming::relation_side_name(&a.field.name, &target(&a));
        if name == naming::relation_side_name(&b.field.name, &target(&b)) {
            diags.push(
                Diagnostic::new(
                    name_span(b.decl.file, &b.field.name),
                    format!(
                        "both sides of the relation `{relation}` would be called `{name}` in its mutations: `{}.{}` + `{}` and `{}.{}` + `{}`",
                        a.decl.def.name,
                        a.field.name,
                        target(&a),
                        b.decl.def.name,
                        b.field.name,
                        target(&b)
                    ),
                )
                .with_help("rename one of the two fields; relation mutations name each side by its field and the type it points at"),
            );
        }
    }
}
