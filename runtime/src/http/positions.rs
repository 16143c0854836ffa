//! GraphQL's validation rule "All Variable Usages Are Allowed" (the specification's §5.8.5):
//! a variable is used only where its declared type fits, `$n: String` not in `first: Int`, and a
//! nullable variable in a non-null position only when it or the position has a default.
//!
//! async-graphql 7.2.1 has the rule but never runs it (its chain of rules does not pass input
//! values on to it), so the server runs it itself, with the registry of each schema's validator
//! (`validated.rs`): for every text of the client APIs and the permission schema the plan cache
//! does not know (`envelope.rs`), at the start of every subscription, and for every request of
//! the System API. The rule reads the document and the schema only, never the variables'
//! values, so a text that passed it once passes it whatever its later requests send, and texts
//! the plan cache knows skip it.

use std::collections::HashSet;

use async_graphql::parser::types::{
    BaseType, Directive, ExecutableDocument, OperationType, Selection, SelectionSet, Type,
    VariableDefinition,
};
use async_graphql::registry::{MetaType, MetaTypeName, Registry};
use async_graphql::{Executor, Request, Response, ServerError, Variables};
use async_graphql::{Pos, Positioned};
use async_graphql_value::{ConstValue, Value};

use super::validated::Fast;

/// The answer to `request` when a variable of its document is used where its type does not fit
/// (see [`refused_document`]); `None` when the rule passes or the text does not parse (the
/// executor then answers, with the rest of the validation).
pub(super) async fn refused<E: Executor>(
    fast: &Fast<E>,
    request: &mut Request,
) -> Option<Response> {
    if misplaced_variables(fast.registry(), request.parsed_query().ok()?).is_empty() {
        return None;
    }
    let doc = request.parsed_query().ok()?.clone();
    let (query, variables) = (&request.query, &request.variables);
    let operation = request.operation_name.as_deref();
    let errors = refused_document(fast, query, &doc, variables, operation).await?;
    Some(Response::from_errors(errors))
}

/// The errors of `doc`, the parsed `query`, when a variable of it is used where its type does
/// not fit: every error of its validation, async-graphql's with `variables` as the operation
/// `operation`, then this rule's. `None` when the rule passes.
pub(super) async fn refused_document<E: Executor>(
    fast: &Fast<E>,
    query: &str,
    doc: &ExecutableDocument,
    variables: &Variables,
    operation: Option<&str>,
) -> Option<Vec<ServerError>> {
    let mut misplaced = misplaced_variables(fast.registry(), doc);
    if misplaced.is_empty() {
        return None;
    }
    let mut errors = fast
        .errors(query, doc.clone(), variables.clone(), operation)
        .await;
    errors.append(&mut misplaced);
    Some(errors)
}

/// The variables of `doc` used where their types do not fit, one error per use, with the
/// locations of the variable's definition and of the argument that uses it. Uses the other
/// rules refuse (an unknown field or argument, an undefined variable) are left to them.
pub(super) fn misplaced_variables(
    registry: &Registry,
    doc: &ExecutableDocument,
) -> Vec<ServerError> {
    let mut errors = Vec::new();
    for (_, operation) in doc.operations.iter() {
        let op = &operation.node;
        let root = match op.ty {
            OperationType::Query => Some(registry.query_type.as_str()),
            OperationType::Mutation => registry.mutation_type.as_deref(),
            OperationType::Subscription => registry.subscription_type.as_deref(),
        };
        let mut walk = Walk {
            registry,
            doc,
            definitions: &op.variable_definitions,
            fragments: HashSet::new(),
            errors: &mut errors,
        };
        walk.directives(&op.directives);
        walk.set(
            root.and_then(|r| registry.types.get(r)),
            &op.selection_set.node,
        );
    }
    errors
}

/// The walk of one operation, with the fragments it spreads (each once).
struct Walk<'a, 'e> {
    registry: &'a Registry,
    doc: &'a ExecutableDocument,
    definitions: &'a [Positioned<VariableDefinition>],
    fragments: HashSet<&'a str>,
    errors: &'e mut Vec<ServerError>,
}

impl<'a> Walk<'a, '_> {
    /// The selections of `set`, made on `parent` (`None` where the schema has no such type:
    /// other rules refuse what is there).
    fn set(&mut self, parent: Option<&'a MetaType>, set: &'a SelectionSet) {
        for item in &set.items {
            match &item.node {
                Selection::Field(field) => {
                    let field = &field.node;
                    self.directives(&field.directives);
                    let meta = parent.and_then(|t| t.field_by_name(&field.name.node));
                    for (name, value) in &field.arguments {
                        if let Some(arg) = meta.and_then(|m| m.args.get(name.node.as_str())) {
                            let default = arg.default_value.is_some();
                            self.value(&value.node, value.pos, &arg.ty, default);
                        }
                    }
                    let below = meta.and_then(|m| self.registry.concrete_type_by_name(&m.ty));
                    self.set(below, &field.selection_set.node);
                }
                Selection::InlineFragment(fragment) => {
                    let fragment = &fragment.node;
                    self.directives(&fragment.directives);
                    let on = match &fragment.type_condition {
                        Some(c) => self.registry.types.get(c.node.on.node.as_str()),
                        None => parent,
                    };
                    self.set(on, &fragment.selection_set.node);
                }
                Selection::FragmentSpread(spread) => {
                    let spread = &spread.node;
                    self.directives(&spread.directives);
                    let name = spread.fragment_name.node.as_str();
                    if let Some(fragment) = self.doc.fragments.get(name)
                        && self.fragments.insert(name)
                    {
                        let fragment = &fragment.node;
                        self.directives(&fragment.directives);
                        let on = self
                            .registry
                            .types
                            .get(fragment.type_condition.node.on.node.as_str());
                        self.set(on, &fragment.selection_set.node);
                    }
                }
            }
        }
    }

    fn directives(&mut self, directives: &'a [Positioned<Directive>]) {
        for directive in directives {
            let directive = &directive.node;
            let Some(meta) = self.registry.directives.get(directive.name.node.as_str()) else {
                continue;
            };
            for (name, value) in &directive.arguments {
                if let Some(arg) = meta.args.get(name.node.as_str()) {
                    let default = arg.default_value.is_some();
                    self.value(&value.node, value.pos, &arg.ty, default);
                }
            }
        }
    }

    /// `value`, given at `pos` where the type `ty` is expected (with a default there, or not).
    fn value(&mut self, value: &Value, pos: Pos, ty: &str, default: bool) {
        match value {
            Value::Variable(name) => {
                let Some(definition) = self.definitions.iter().find(|d| d.node.name.node == *name)
                else {
                    return;
                };
                let var = &definition.node;
                let var_default = var
                    .default_value
                    .as_ref()
                    .is_some_and(|v| !matches!(v.node, ConstValue::Null));
                if !allowed(&var.var_type.node, var_default, ty, default) {
                    let mut error = ServerError::new(
                        format!(
                            "Variable \"${name}\" of type \"{}\" used in position expecting type \"{ty}\".",
                            var.var_type.node
                        ),
                        Some(definition.pos),
                    );
                    error.locations.push(pos);
                    self.errors.push(error);
                }
            }
            Value::List(items) => {
                if let MetaTypeName::List(item) = MetaTypeName::create(nullable(ty)) {
                    for value in items {
                        self.value(value, pos, item, false);
                    }
                }
            }
            Value::Object(fields) => {
                let name = MetaTypeName::concrete_typename(ty);
                if let Some(MetaType::InputObject { input_fields, .. }) =
                    self.registry.types.get(name)
                {
                    for (key, value) in fields {
                        if let Some(field) = input_fields.get(key.as_str()) {
                            let default = field.default_value.is_some();
                            self.value(value, pos, &field.ty, default);
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

/// `ty` without its outer `!`.
fn nullable(ty: &str) -> &str {
    ty.strip_suffix('!').unwrap_or(ty)
}

/// Whether a variable of type `var` (with a default other than `null`, or not) may be used
/// where `location` is expected (with a default there, or not): the specification's
/// `IsVariableUsageAllowed`.
fn allowed(var: &Type, var_default: bool, location: &str, location_default: bool) -> bool {
    if let MetaTypeName::NonNull(inner) = MetaTypeName::create(location)
        && var.nullable
    {
        return (var_default || location_default) && compatible(&var.base, true, inner);
    }
    compatible(&var.base, var.nullable, location)
}

/// The specification's `AreTypesCompatible`, for a variable of type `base` (nullable or not).
fn compatible(base: &BaseType, var_nullable: bool, location: &str) -> bool {
    match MetaTypeName::create(location) {
        MetaTypeName::NonNull(inner) => !var_nullable && compatible(base, true, inner),
        _ if !var_nullable => compatible(base, true, location),
        MetaTypeName::List(inner) => match base {
            BaseType::List(item) => compatible(&item.base, item.nullable, inner),
            BaseType::Named(_) => false,
        },
        MetaTypeName::Named(name) => match base {
            BaseType::Named(var) => var.as_str() == name,
            BaseType::List(_) => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use async_graphql::{EmptySubscription, Object, Schema};

    use super::misplaced_variables;
    use crate::http::validated::fast;
    use crate::http::validated::tests::Root;

    struct Mutation;

    #[Object]
    impl Mutation {
        async fn m(&self, s: String) -> String {
            s
        }
    }

    /// The messages of a text's misplaced variables, sorted (a document's operations are not
    /// walked in a fixed order); each error has two locations.
    fn misplaced(text: &str) -> Vec<String> {
        let fast = fast(|| Schema::build(Root, Mutation, EmptySubscription)).expect("registry");
        let doc = async_graphql::parser::parse_query(text).expect("parses");
        let mut messages: Vec<String> = misplaced_variables(fast.registry(), &doc)
            .into_iter()
            .map(|e| {
                assert_eq!(e.locations.len(), 2, "{}", e.message);
                e.message
            })
            .collect();
        messages.sort();
        messages
    }

    #[test]
    fn variables_of_the_right_type_pass() {
        for text in [
            "query ($a: Int, $b: Int!) { f(a: $a, b: $b) }",
            // A non-null variable fits a nullable position.
            "query ($a: Int!) { f(a: $a, b: $a) }",
            // A nullable variable fits a non-null position when either has a default.
            "query ($b: Int = 3) { f(b: 1, d: $b) }",
            "query ($b: Int = 3) { f(b: $b) }",
            "query ($id: ID, $c: Color) { f(b: 1, id: $id, c: $c) }",
            "query ($x: Int!, $cs: [Color!]) { f(b: 1, p: {x: $x, colors: $cs}) }",
            "query ($x: Int!, $y: Int) { f(b: 1, p: {x: $x, y: $y}) }",
            "query ($i: Int!, $l: [Int!]) { f(b: 1, l: [$i, 2]) g { f(b: 1, l: $l) } }",
            "query ($l: [Int!]!, $ll: [[Int!]]) { f(b: 1, l: $l, ll: $ll) }",
            "query ($ll: [[Int]], $l: [Int]) { f(b: 1, ll: $ll) g { f(b: 1, ll: [$l, [1]]) } }",
            "query ($i: Int!) { f(b: 1, ll: [[$i]]) }",
            "query ($k: Boolean!) { f(b: 1) @include(if: $k) }",
            "query ($b: Int!) { ...F } fragment F on Root { f(b: $b) }",
            "mutation ($s: String!) { m(s: $s) }",
            // What other rules refuse is left to them.
            "query { f(b: $undefined) }",
            "query ($a: Int) { nope(a: $a) f(b: 1, nope: $a) }",
        ] {
            assert_eq!(misplaced(text), Vec::<String>::new(), "{text}");
        }
    }

    #[test]
    fn variables_of_another_type_are_refused() {
        let cases: &[(&str, &[&str])] = &[
            (
                "query ($a: String) { f(a: $a, b: 1) }",
                &[r#"Variable "$a" of type "String" used in position expecting type "Int"."#],
            ),
            (
                "query ($b: Int) { f(b: $b) }",
                &[r#"Variable "$b" of type "Int" used in position expecting type "Int!"."#],
            ),
            (
                // A default of `null` is no default.
                "query ($b: Int = null) { f(b: $b) }",
                &[r#"Variable "$b" of type "Int" used in position expecting type "Int!"."#],
            ),
            (
                "query ($l: [Int]) { f(b: 1, l: $l) }",
                &[r#"Variable "$l" of type "[Int]" used in position expecting type "[Int!]"."#],
            ),
            (
                "query ($l: Int!) { f(b: 1, l: $l) }",
                &[r#"Variable "$l" of type "Int!" used in position expecting type "[Int!]"."#],
            ),
            (
                "query ($l: [Int!]) { f(b: $l) }",
                &[r#"Variable "$l" of type "[Int!]" used in position expecting type "Int!"."#],
            ),
            (
                "query ($i: Int) { f(b: 1, l: [$i]) }",
                &[r#"Variable "$i" of type "Int" used in position expecting type "Int!"."#],
            ),
            (
                "query ($c: Color) { f(b: 1, p: {x: 1, colors: [$c]}) }",
                &[r#"Variable "$c" of type "Color" used in position expecting type "Color!"."#],
            ),
            (
                "query ($i: String) { f(b: 1, ll: [[$i]]) }",
                &[r#"Variable "$i" of type "String" used in position expecting type "Int"."#],
            ),
            (
                "query ($x: Int) { f(b: 1, p: {x: $x}) }",
                &[r#"Variable "$x" of type "Int" used in position expecting type "Int!"."#],
            ),
            (
                "query ($c: String) { f(b: 1, c: $c) }",
                &[r#"Variable "$c" of type "String" used in position expecting type "Color"."#],
            ),
            (
                "query ($k: Boolean) { f(b: 1) @include(if: $k) }",
                &[r#"Variable "$k" of type "Boolean" used in position expecting type "Boolean!"."#],
            ),
            (
                // In a fragment, in an inline fragment, below a field.
                "query ($s: String!) { ...F ... on Root { g { f(b: $s) } } } fragment F on Root { f(a: $s, b: 1) }",
                &[
                    r#"Variable "$s" of type "String!" used in position expecting type "Int!"."#,
                    r#"Variable "$s" of type "String!" used in position expecting type "Int"."#,
                ],
            ),
            (
                // Every operation of the document, each with its own definitions.
                "query A ($b: Int) { f(b: $b) } mutation B ($s: String) { m(s: $s) }",
                &[
                    r#"Variable "$b" of type "Int" used in position expecting type "Int!"."#,
                    r#"Variable "$s" of type "String" used in position expecting type "String!"."#,
                ],
            ),
        ];
        for (text, expected) in cases {
            let mut expected = expected.to_vec();
            expected.sort_unstable();
            assert_eq!(misplaced(text), expected, "{text}");
        }
    }
}
