//! Names the user chose that clash with names the generator derives: a model or enum named like a
//! generated type (`PostFilter`, `Query`, `CreatePost`, a scalar), and two models or relations
//! whose root fields would coincide (`Leaf` and `Leave` both give `allLeaves`).
//!
//! The derived names come from [`crate::naming`], the same functions the emitters use, so this
//! check cannot drift from what is generated.

use std::collections::HashMap;

use crate::diagnostics::{Diagnostic, Diagnostics};
use crate::model::ScalarType;
use crate::model::lower::{Ast, Shape, Target, name_span, relation_name};
use crate::naming;
use crate::source::Span;

pub fn check(ast: &Ast, diags: &mut Diagnostics) {
    generated_types(ast, diags);
    root_fields(ast, diags);
}

/// Declared type and enum names against every generated type name.
fn generated_types(ast: &Ast, diags: &mut Diagnostics) {
    // Generated name → the declaration it is generated for (`None`: always generated).
    let mut generated: HashMap<String, Option<String>> = HashMap::new();
    for name in naming::FIXED_TYPE_NAMES {
        generated.insert(name.to_owned(), None);
    }
    for o in &ast.objects {
        let ty = o.def.name.as_str();
        let why = format!("the model `{ty}`");
        for name in [
            naming::filter_type(ty),
            naming::order_by_type(ty),
            naming::create_input(ty),
            naming::update_input(ty),
            naming::subscription_filter_type(ty),
            naming::subscription_filter_node_type(ty),
            naming::subscription_payload_type(ty),
            naming::previous_values_type(ty),
        ] {
            generated.entry(name).or_insert_with(|| Some(why.clone()));
        }
        for f in &o.def.fields {
            let related = Shape::of(&f.ty).name;
            if matches!(ast.target(related), Target::Object(_)) {
                generated
                    .entry(naming::nested_input(ty, &f.name, related))
                    .or_insert_with(|| Some(format!("the relation field `{ty}.{}`", f.name)));
            }
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
        ] {
            clash("mutation", field, owner.clone(), span, diags);
        }
    }
    let mut relations: Vec<&str> = Vec::new();
    for (_, o, f) in ast.fields() {
        if let Some(name) = relation_name(&f.directives)
            && matches!(ast.target(Shape::of(&f.ty).name), Target::Object(_))
            && !relations.contains(&name)
        {
            relations.push(name);
            let span = name_span(o.file, &f.name);
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
}
