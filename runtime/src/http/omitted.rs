//! Variables a request leaves out. GraphQL (and the reference's server) treats an argument or
//! an input object's field whose value is a variable the request does not give, and whose
//! definition has no default, as not given at all: `updatePost(id: $id, title: $title)` with
//! only `id` leaves the title as it is, and `filter: { status: $status }` without `status`
//! filters on nothing. async-graphql gives such a variable the value `null` instead (the title
//! set to null, the posts whose status is null). So before a request runs, those arguments and
//! fields are taken out of its document ([`pruned`]), with the definitions of the variables no
//! longer used. Items of a list keep their place (a left-out variable there is `null`, as
//! GraphQL has it), and directives' arguments are left alone.

use std::collections::HashSet;

use async_graphql::parser::types::{
    DocumentOperations, ExecutableDocument, OperationDefinition, Selection, SelectionSet,
};
use async_graphql::{Executor, Variables};
use async_graphql_value::{ConstValue, Name, Value};

use super::validated::Fast;

/// The variables of the operation `operation` names that a request may leave out: nullable,
/// with no default in their definition, in the order of the definitions; `None` when the
/// operation is not there (the executor reports that).
pub(super) fn optional(doc: &ExecutableDocument, operation: Option<&str>) -> Option<Vec<Name>> {
    let op = selected(doc, operation)?;
    Some(
        op.variable_definitions
            .iter()
            .map(|def| &def.node)
            .filter(|def| def.var_type.node.nullable && def.default_value.is_none())
            .map(|def| def.name.node.clone())
            .collect(),
    )
}

/// Whether the text `doc` (the parsed `query`) of a request that leaves out variables passes a
/// full validation with `variables` ([`Fast::valid`]); when it does not, the variables to run
/// the text with, whose validation's errors are then the answer. The variables left out are
/// given as `null` to the validation: async-graphql checks an argument's value only with every
/// variable in it given, so an argument holding a left-out variable would not be checked at
/// all (its unknown input fields, the wrong values of its other variables); with `null` in its
/// place it is, as the argument the request runs without it is.
pub(super) async fn check_text<E: Executor>(
    fast: &Fast<E>,
    query: &str,
    doc: &ExecutableDocument,
    operation: Option<&str>,
    variables: &Variables,
) -> Result<(), Variables> {
    let mut all = variables.clone();
    for name in optional(doc, operation).unwrap_or_default() {
        all.entry(name).or_insert(ConstValue::Null);
    }
    if fast.valid(query, doc.clone(), all.clone(), operation).await {
        Ok(())
    } else {
        Err(all)
    }
}

/// `doc` as a request that leaves out the variables `left_out` runs it: without the arguments
/// and input fields whose value is one of them, for the operation `operation` names; `None`
/// when there are none.
pub(super) fn pruned(
    doc: &ExecutableDocument,
    operation: Option<&str>,
    left_out: &[Name],
) -> Option<ExecutableDocument> {
    let op = selected(doc, operation)?;
    let left_out: HashSet<Name> = left_out.iter().cloned().collect();
    if left_out.is_empty() || !uses_any(doc, op, &left_out) {
        return None;
    }
    let mut doc = doc.clone();
    for fragment in doc.fragments.values_mut() {
        prune_set(&mut fragment.node.selection_set.node, &left_out);
    }
    let op = selected_mut(&mut doc, operation)?;
    prune_set(&mut op.selection_set.node, &left_out);
    // A definition no longer used would fail validation (`NoUnusedVariables`).
    let mut still = HashSet::new();
    let mut note = |value: &Value| collect_value(value, &mut still);
    each_argument(&op.selection_set.node, true, &mut note);
    for directive in &op.directives {
        for (_, value) in &directive.node.arguments {
            note(&value.node);
        }
    }
    for fragment in doc.fragments.values() {
        each_argument(&fragment.node.selection_set.node, true, &mut note);
    }
    let op = selected_mut(&mut doc, operation)?;
    op.variable_definitions.retain(|def| {
        !left_out.contains(&def.node.name.node) || still.contains(&def.node.name.node)
    });
    Some(doc)
}

fn selected<'a>(
    doc: &'a ExecutableDocument,
    operation: Option<&str>,
) -> Option<&'a OperationDefinition> {
    match (&doc.operations, operation) {
        (DocumentOperations::Single(op), _) => Some(&op.node),
        (DocumentOperations::Multiple(ops), Some(name)) => ops.get(name).map(|op| &op.node),
        (DocumentOperations::Multiple(ops), None) if ops.len() == 1 => {
            ops.values().next().map(|op| &op.node)
        }
        _ => None,
    }
}

fn selected_mut<'a>(
    doc: &'a mut ExecutableDocument,
    operation: Option<&str>,
) -> Option<&'a mut OperationDefinition> {
    match (&mut doc.operations, operation) {
        (DocumentOperations::Single(op), _) => Some(&mut op.node),
        (DocumentOperations::Multiple(ops), Some(name)) => ops.get_mut(name).map(|op| &mut op.node),
        (DocumentOperations::Multiple(ops), None) if ops.len() == 1 => {
            ops.values_mut().next().map(|op| &mut op.node)
        }
        _ => None,
    }
}

/// Whether an argument or input field of `op` or of a fragment is one of `names` itself.
fn uses_any(doc: &ExecutableDocument, op: &OperationDefinition, names: &HashSet<Name>) -> bool {
    let mut used = HashSet::new();
    let mut note = |value: &Value| direct_value(value, &mut used);
    each_argument(&op.selection_set.node, false, &mut note);
    for fragment in doc.fragments.values() {
        each_argument(&fragment.node.selection_set.node, false, &mut note);
    }
    used.iter().any(|name| names.contains(name))
}

/// Calls `f` with the value of every argument of the fields in `set` and below, and with those
/// of their directives when `directives`.
fn each_argument(set: &SelectionSet, directives: bool, f: &mut impl FnMut(&Value)) {
    for selection in &set.items {
        if directives {
            for directive in selection.node.directives() {
                for (_, value) in &directive.node.arguments {
                    f(&value.node);
                }
            }
        }
        match &selection.node {
            Selection::Field(field) => {
                for (_, value) in &field.node.arguments {
                    f(&value.node);
                }
                each_argument(&field.node.selection_set.node, directives, f);
            }
            Selection::InlineFragment(fragment) => {
                each_argument(&fragment.node.selection_set.node, directives, f);
            }
            Selection::FragmentSpread(_) => {}
        }
    }
}

/// The variables that are the whole value of an argument or of an input field.
fn direct_value(value: &Value, out: &mut HashSet<Name>) {
    match value {
        Value::Variable(name) => {
            out.insert(name.clone());
        }
        Value::Object(fields) => fields.values().for_each(|v| direct_value(v, out)),
        Value::List(items) => items.iter().for_each(|item| match item {
            Value::Object(_) | Value::List(_) => direct_value(item, out),
            _ => {}
        }),
        _ => {}
    }
}

fn prune_set(set: &mut SelectionSet, left_out: &HashSet<Name>) {
    for selection in &mut set.items {
        match &mut selection.node {
            Selection::Field(field) => {
                let field = &mut field.node;
                field
                    .arguments
                    .retain(|(_, value)| !is_left_out(&value.node, left_out));
                for (_, value) in &mut field.arguments {
                    prune_value(&mut value.node, left_out);
                }
                prune_set(&mut field.selection_set.node, left_out);
            }
            Selection::InlineFragment(fragment) => {
                prune_set(&mut fragment.node.selection_set.node, left_out);
            }
            Selection::FragmentSpread(_) => {}
        }
    }
}

fn is_left_out(value: &Value, left_out: &HashSet<Name>) -> bool {
    matches!(value, Value::Variable(name) if left_out.contains(name))
}

fn prune_value(value: &mut Value, left_out: &HashSet<Name>) {
    match value {
        Value::Object(fields) => {
            fields.retain(|_, v| !is_left_out(v, left_out));
            fields.values_mut().for_each(|v| prune_value(v, left_out));
        }
        Value::List(items) => items
            .iter_mut()
            .for_each(|item| prune_value(item, left_out)),
        _ => {}
    }
}

fn collect_value(value: &Value, out: &mut HashSet<Name>) {
    match value {
        Value::Variable(name) => {
            out.insert(name.clone());
        }
        Value::Object(fields) => fields.values().for_each(|v| collect_value(v, out)),
        Value::List(items) => items.iter().for_each(|v| collect_value(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use async_graphql::Variables;
    use async_graphql::parser::parse_query;
    use async_graphql::parser::types::{DocumentOperations, ExecutableDocument, Selection};
    use async_graphql_value::Value;
    use serde_json::json;

    use super::{optional, pruned};
    use crate::plan::left_out;

    fn run(text: &str, vars: serde_json::Value) -> Option<ExecutableDocument> {
        let doc = parse_query(text).expect("a document");
        let optional = optional(&doc, None).expect("the operation");
        pruned(
            &doc,
            None,
            &left_out(&optional, &Variables::from_json(vars)),
        )
    }

    /// A field's name and its arguments with their values.
    type Field = (String, Vec<(String, Value)>);

    /// The variable definitions of the document's one operation, and its root fields.
    fn parts(doc: &ExecutableDocument) -> (Vec<String>, Vec<Field>) {
        let DocumentOperations::Single(op) = &doc.operations else {
            panic!("one operation");
        };
        let defs = op
            .node
            .variable_definitions
            .iter()
            .map(|d| d.node.name.node.to_string())
            .collect();
        let fields = op
            .node
            .selection_set
            .node
            .items
            .iter()
            .filter_map(|s| match &s.node {
                Selection::Field(f) => Some((
                    f.node.name.node.to_string(),
                    f.node
                        .arguments
                        .iter()
                        .map(|(n, v)| (n.node.to_string(), v.node.clone()))
                        .collect(),
                )),
                _ => None,
            })
            .collect();
        (defs, fields)
    }

    /// Arguments and input fields that are a left-out variable go, with the definitions no
    /// longer used; list items, given variables, defaults and non-null ones stay.
    #[test]
    fn left_out_variables_are_taken_out() {
        let text = "mutation ($id: ID!, $t: String, $b: String, $s: String, $d: Int = 3, $l: String) { \
                    updatePost(id: $id, title: $t, body: $b, votes: $d) { id } \
                    allPosts(filter: { title: $s, AND: [{ slug: $s }], slug_in: [$l] }) { id } }";
        assert!(
            run(
                text,
                json!({ "id": "x", "t": "a", "b": null, "s": "s", "l": "l" })
            )
            .is_none()
        );
        let (defs, fields) = parts(&run(text, json!({ "id": "x", "b": null })).expect("pruned"));
        assert_eq!(defs, ["id", "b", "d", "l"]);
        let names = |i: usize| {
            fields[i]
                .1
                .iter()
                .map(|(n, _)| n.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(0), ["id", "body", "votes"]);
        assert_eq!(names(1), ["filter"]);
        let filter = async_graphql::parser::parse_query("{ f(x: { AND: [{}], slug_in: [$l] }) }")
            .map(|d| parts(&d).1[0].1[0].1.clone())
            .expect("a document");
        assert_eq!(fields[1].1[0].1, filter);
        assert!(
            run(
                "query ($v: Int) { allPosts(first: $v) { id } }",
                json!({ "v": 1 })
            )
            .is_none()
        );
        assert!(run("query ($id: ID!) { Post(id: $id) { id } }", json!({})).is_none());
        assert!(
            run(
                "query ($v: [Int]) { allPosts(filter: { votes_in: $v }) { id } }",
                json!({})
            )
            .is_some()
        );
    }
}
