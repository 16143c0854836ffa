//! Rules of the `@relation(onDelete: CASCADE)` extension (not in the reference; see
//! `docs/on-delete.md`): a relation cascades one way at most, and the cascades between types have
//! no cycle, so a cascading delete visits every type at most once along any path and always ends.
//!
//! The literal itself (`CASCADE` or `SET_NULL`) is checked with the other directive arguments in
//! [`super::fields`]; an invalid literal counts as the default here, so it adds no follow-up error.

use crate::diagnostics::{Diagnostic, Diagnostics};
use crate::model::OnDelete;
use crate::model::lower::{Ast, Shape, Target, name_span, on_delete};
use crate::model::validate::relations::{End, groups};

/// One `onDelete: CASCADE` field: deleting a node of `end.owner` deletes the `end.target` nodes.
type Edge<'a> = End<'a>;

/// Reports a relation whose two fields both cascade, and every cycle of cascades between types.
pub fn check(ast: &Ast, diags: &mut Diagnostics) {
    let cascades = |end: &End| on_delete(&end.field.directives) == OnDelete::Cascade;
    // Side B of a relation that cascades both ways is reported here and left out of the graph,
    // so the same mistake does not also come back as a two-type cycle.
    let mut both_ways = Vec::new();
    for (name, ends) in groups(ast) {
        if let [a, b] = ends[..]
            && cascades(&a)
            && cascades(&b)
        {
            both_ways.push(b.field);
            diags.push(
                Diagnostic::new(
                    name_span(b.decl.file, &b.field.name),
                    format!(
                        "the relation `{name}` cascades deletes both ways: `{}` and `{}` are both `onDelete: CASCADE`",
                        field_path(&a),
                        field_path(&b)
                    ),
                )
                .with_help("a cascade must go one way: keep `onDelete: CASCADE` only on the field of the type whose nodes own the others"),
            );
        }
    }
    let mut edges: Vec<Vec<Edge>> = vec![Vec::new(); ast.objects.len()];
    for (owner, decl, field) in ast.fields() {
        let Target::Object(target) = ast.target(Shape::of(&field.ty).name) else {
            continue;
        };
        let edge = Edge {
            owner,
            decl,
            field,
            target,
        };
        if cascades(&edge)
            && !both_ways.iter().any(|f| std::ptr::eq(*f, field))
            && let Some(out) = edges.get_mut(owner)
        {
            out.push(edge);
        }
    }
    cycles(ast, &edges, diags);
}

/// Reports every back edge of a depth-first search over the cascade graph (types and fields in
/// document order, so the result is deterministic). Each one closes a cycle, and removing all of
/// them leaves no cycle, so fixing every reported field is enough. Iterative, so a long chain of
/// types cannot overflow the stack.
fn cycles(ast: &Ast, edges: &[Vec<Edge>], diags: &mut Diagnostics) {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        New,
        OnPath,
        Done,
    }
    let mut state = vec![State::New; edges.len()];
    for root in 0..edges.len() {
        if state[root] != State::New {
            continue;
        }
        state[root] = State::OnPath;
        // (type, number of its edges taken so far); the edge a frame descended through is the
        // one before that number.
        let mut path: Vec<(usize, usize)> = vec![(root, 0)];
        while let Some(&(ty, taken)) = path.last() {
            let Some(edge) = edges[ty].get(taken) else {
                state[ty] = State::Done;
                path.pop();
                continue;
            };
            if let Some(top) = path.last_mut() {
                top.1 += 1;
            }
            match state.get(edge.target) {
                Some(State::New) => {
                    state[edge.target] = State::OnPath;
                    path.push((edge.target, 0));
                }
                Some(State::OnPath) => {
                    let start = path
                        .iter()
                        .position(|&(t, _)| t == edge.target)
                        .unwrap_or(0);
                    let cycle: Vec<&Edge> = path[start..]
                        .iter()
                        .filter_map(|&(t, taken)| edges[t].get(taken.checked_sub(1)?))
                        .collect();
                    diags.push(cycle_diagnostic(ast, edge, &cycle));
                }
                Some(State::Done) | None => {}
            }
        }
    }
}

fn cycle_diagnostic(ast: &Ast, closing: &Edge, cycle: &[&Edge]) -> Diagnostic {
    let back_to = ast
        .objects
        .get(closing.target)
        .map_or("", |o| o.def.name.as_str());
    let fields: Vec<String> = cycle
        .iter()
        .map(|e| format!("`{}`", field_path(e)))
        .collect();
    let help = if cycle.len() == 1 {
        format!(
            "a type cannot cascade deletes to itself: remove `onDelete: CASCADE` from `{}`",
            field_path(closing)
        )
    } else {
        "cascades between types must form a tree: remove `onDelete: CASCADE` from one of these fields"
            .to_owned()
    };
    Diagnostic::new(
        name_span(closing.decl.file, &closing.field.name),
        format!(
            "cascading deletes form a cycle: {} → back to `{back_to}`",
            fields.join(" → ")
        ),
    )
    .with_help(help)
}

/// `Type.field`.
fn field_path(end: &End) -> String {
    format!("{}.{}", end.decl.def.name, end.field.name)
}
