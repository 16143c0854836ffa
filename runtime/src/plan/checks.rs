//! What the validation of a query text depends on besides the text and the schema: the values of
//! its variables. GraphQL validation runs every rule over the whole document; of async-graphql's
//! rules only one reads the request's variables (`ArgumentsOfCorrectType`, which checks each
//! argument with its variables substituted against the argument's type). So a text (run as one
//! operation) that passed validation once passes it again whenever those arguments, with the new
//! variables, are still of their types: [`Checks::pass`] tells that, as that rule tells it, and
//! the request then runs through a schema that skips the other rules (`http/validated.rs`).
//!
//! Only documents of one operation, without fragments or directives, have checks: their
//! arguments are found by walking the selections from the root type. Anything else is validated
//! in full every time.

use async_graphql::Variables;
use async_graphql::parser::types::{
    DocumentOperations, ExecutableDocument, OperationType, Selection, SelectionSet,
};
use async_graphql::registry::{MetaType, MetaTypeName, Registry};
use async_graphql_value::{ConstValue, Value};

/// The arguments of a document whose values hold variables, each with the type the schema gives
/// it.
#[derive(Debug)]
pub struct Checks {
    arguments: Vec<(Value, String)>,
}

impl Checks {
    /// The checks of `doc`; `None` for a document whose validation is always run in full
    /// (several operations, fragments, directives).
    pub fn of(registry: &Registry, doc: &ExecutableDocument) -> Option<Checks> {
        arguments(registry, doc).map(|arguments| Checks { arguments })
    }

    /// Whether validation with `variables` passes, as it passed before: every argument with a
    /// variable, the variables substituted, is of its type. An argument naming a variable the
    /// request does not give is not checked, as the validator does not check it.
    pub fn pass(&self, registry: &Registry, variables: &Variables) -> bool {
        self.arguments.iter().all(|(value, ty)| {
            match value
                .clone()
                .into_const_with(|name| variables.get(&name).cloned().ok_or(()))
            {
                Ok(value) => accepts(registry, ty, &value),
                Err(()) => true,
            }
        })
    }
}

fn arguments(registry: &Registry, doc: &ExecutableDocument) -> Option<Vec<(Value, String)>> {
    if !doc.fragments.is_empty() {
        return None;
    }
    let DocumentOperations::Single(operation) = &doc.operations else {
        return None;
    };
    if !operation.node.directives.is_empty() {
        return None;
    }
    let root = match operation.node.ty {
        OperationType::Query => Some(registry.query_type.as_str()),
        OperationType::Mutation => registry.mutation_type.as_deref(),
        OperationType::Subscription => registry.subscription_type.as_deref(),
    }?;
    let mut out = Vec::new();
    walk(
        registry,
        registry.types.get(root),
        &operation.node.selection_set.node,
        &mut out,
    )?;
    Some(out)
}

/// Collects the arguments with variables of the fields of `set`, selected on `ty` (`None` where
/// the validator knows no type either: it checks nothing there).
fn walk(
    registry: &Registry,
    ty: Option<&MetaType>,
    set: &SelectionSet,
    out: &mut Vec<(Value, String)>,
) -> Option<()> {
    for selection in &set.items {
        let Selection::Field(field) = &selection.node else {
            return None;
        };
        let field = &field.node;
        if !field.directives.is_empty() {
            return None;
        }
        // The validator does not visit `__typename`.
        if field.name.node == "__typename" {
            continue;
        }
        let meta = ty.and_then(|t| t.field_by_name(&field.name.node));
        for (name, value) in &field.arguments {
            if let Some(arg) = meta.and_then(|m| m.args.get(name.node.as_str()))
                && holds_variable(&value.node)
            {
                out.push((value.node.clone(), arg.ty.clone()));
            }
        }
        let below = meta.and_then(|m| registry.concrete_type_by_name(&m.ty));
        walk(registry, below, &field.selection_set.node, out)?;
    }
    Some(())
}

fn holds_variable(value: &Value) -> bool {
    match value {
        Value::Variable(_) => true,
        Value::List(items) => items.iter().any(holds_variable),
        Value::Object(fields) => fields.values().any(holds_variable),
        _ => false,
    }
}

/// Whether `value` is a valid input of the type `ty`: exactly when async-graphql's validator
/// finds no fault in it (its `is_valid_input_value`), a type it does not know aside (it panics
/// there; this says no, and the request is validated in full).
fn accepts(registry: &Registry, ty: &str, value: &ConstValue) -> bool {
    match MetaTypeName::create(ty) {
        MetaTypeName::NonNull(inner) => {
            !matches!(value, ConstValue::Null) && accepts(registry, inner, value)
        }
        MetaTypeName::List(inner) => match value {
            ConstValue::List(items) => items.iter().all(|item| accepts(registry, inner, item)),
            ConstValue::Null => true,
            _ => accepts(registry, inner, value),
        },
        MetaTypeName::Named(name) => {
            if matches!(value, ConstValue::Null) {
                return true;
            }
            match registry.types.get(name) {
                None => false,
                Some(MetaType::Scalar {
                    is_valid: Some(valid),
                    ..
                }) => valid(value),
                Some(MetaType::Enum { enum_values, .. }) => match value {
                    ConstValue::Enum(item) => enum_values.contains_key(item.as_str()),
                    ConstValue::String(item) => enum_values.contains_key(item.as_str()),
                    _ => false,
                },
                Some(MetaType::InputObject {
                    input_fields,
                    oneof,
                    ..
                }) => match value {
                    ConstValue::Object(fields) => {
                        let one = fields.len() == 1
                            && fields
                                .get_index(0)
                                .is_some_and(|(_, v)| !matches!(v, ConstValue::Null));
                        (!*oneof || one)
                            && input_fields.values().all(|field| {
                                match fields.get(field.name.as_str()) {
                                    Some(v) => accepts(registry, &field.ty, v),
                                    None => {
                                        !MetaTypeName::create(&field.ty).is_non_null()
                                            || field.default_value.is_some()
                                    }
                                }
                            })
                            && fields
                                .keys()
                                .all(|key| input_fields.contains_key(key.as_str()))
                    }
                    _ => true,
                },
                Some(_) => true,
            }
        }
    }
}
