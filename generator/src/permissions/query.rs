//! Checking and compiling one permission query.
//!
//! The selected operation is validated with apollo-compiler against the permission schema, after
//! the server's variable definitions are injected into the AST when the operation declares none
//! (so every position still points into the user's file). Every validation error becomes a
//! diagnostic at its place in the query file. On top of GraphQL validation:
//!
//! - the operation must be a `query`;
//! - only `Some<Type>Exists` fields may be selected (aliases are fine, fragments are flattened;
//!   `__typename` and other introspection fields are rejected), and no directive may appear
//!   (`@skip`/`@include` would make the check conditional);
//! - every declared variable must be one the server supplies for this permission, with the same
//!   named type (nullability is free; lists never match) and without a default value; every used
//!   variable must be supplied;
//! - node-dependent variables (`$node_id`/`$nodeId` except for create, `$node_<f>`, `$old_<f>`)
//!   may appear only inside the `filter` argument, because the runtime evaluates them for many
//!   nodes at once in SQL.
//!
//! A query that passes becomes a [`PermissionQuery`]: its `Some<Type>Exists` calls in document
//! order with constant arguments and [`PermissionValue::Var`] for variables, and the variables it
//! uses in first-use order.

use std::collections::HashMap;

use apollo_compiler::ast::{
    Argument, Definition, DirectiveList, Document, Field, FragmentDefinition, OperationDefinition,
    OperationType, Selection, Type, Value, VariableDefinition,
};
use apollo_compiler::diagnostic::ToCliReport;
use apollo_compiler::validation::Valid;
use apollo_compiler::{Name, Node, Schema};

use crate::diagnostics::Diagnostic;
use crate::model::{
    ExistsCall, Model, PermissionQuery, PermissionTarget, PermissionValue, PermissionVar, TypeId,
};
use crate::naming;
use crate::permissions::schema::permission_schema_sdl;
use crate::permissions::vars::{SuppliedVar, is_node_dependent, supplied_vars};
use crate::permissions::{CODE, SelectedQuery};
use crate::source::{FileId, Span};
use crate::syntax::sdl::span_in;

/// The permission schema of a model, built once per build.
#[derive(Debug)]
pub struct PermissionSchema {
    /// `Err` only if the generated SDL is invalid, which is a bug in svc.
    schema: Result<Valid<Schema>, InvalidSchema>,
    /// `Some<Type>Exists` → the type.
    exists: HashMap<String, TypeId>,
}

impl PermissionSchema {
    /// Builds and validates the permission schema of `model`.
    pub fn new(model: &Model) -> Self {
        let sdl = permission_schema_sdl(model);
        let schema = Schema::parse_and_validate(sdl, "permission-schema.graphql")
            .map_err(|e| InvalidSchema(e.errors.to_string()));
        let exists = model
            .type_ids()
            .map(|(id, t)| (naming::some_exists_field(&t.name), id))
            .collect();
        Self { schema, exists }
    }
}

/// The errors apollo-compiler found in the permission schema generated from a model: a bug in
/// svc, reported against the permission query that needed the schema.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct InvalidSchema(String);

/// One use of a variable in the arguments of a selected field.
#[derive(Debug, Clone)]
struct Usage {
    name: Name,
    span: Span,
    /// Somewhere inside the `filter` argument.
    in_filter: bool,
}

struct Cx<'a> {
    file: FileId,
    operation: &'a str,
    target: PermissionTarget,
    supplied: Vec<SuppliedVar>,
    diags: Vec<Diagnostic>,
}

impl Cx<'_> {
    fn error(&mut self, span: Span, message: impl AsRef<str>, help: impl Into<String>) {
        self.diags.push(
            Diagnostic::new(
                span,
                format!(
                    "Query Permission Error for permission '{}': {}",
                    self.operation,
                    message.as_ref()
                ),
            )
            .with_code(CODE)
            .with_help(help),
        );
    }

    fn span<T: ?Sized>(&self, node: &Node<T>) -> Span {
        span_in(self.file, node.location())
    }

    fn supplied(&self, name: &str) -> Option<&SuppliedVar> {
        self.supplied.iter().find(|v| v.name == name)
    }

    /// `` `$user_id: ID`, `$userId: ID`, … `` for help texts.
    fn available(&self) -> String {
        if self.supplied.is_empty() {
            return "no variables are supplied for this permission".to_owned();
        }
        let list: Vec<String> = self
            .supplied
            .iter()
            .map(|v| format!("`${}: {}`", v.name, v.ty))
            .collect();
        format!(
            "the variables supplied for `{}` are {}",
            self.operation,
            list.join(", ")
        )
    }

    fn directives(&mut self, directives: &DirectiveList) {
        for d in directives.iter() {
            let span = self.span(d);
            self.error(
                span,
                format!(
                    "the directive `@{}` is not allowed in a permission query",
                    d.name
                ),
                format!(
                    "a permission query always evaluates every field it selects; remove `@{}`",
                    d.name
                ),
            );
        }
    }
}

/// Flattens the selection of the operation: the selected fields in document order, the fragments
/// reached (by name, in order of first use), and structural problems.
struct Walk<'a> {
    fragments: HashMap<&'a str, &'a Node<FragmentDefinition>>,
    reached: Vec<Name>,
    fields: Vec<&'a Node<Field>>,
    stack: Vec<&'a str>,
}

impl<'a> Walk<'a> {
    fn selections(&mut self, cx: &mut Cx<'_>, set: &'a [Selection], top: bool) {
        for s in set {
            match s {
                Selection::Field(f) => {
                    if top {
                        cx.directives(&f.directives);
                        if f.name.starts_with("__") {
                            let span = cx.span(f);
                            cx.error(
                                span,
                                format!("`{}` cannot be selected in a permission query", f.name),
                                "select only `Some<Type>Exists` fields (aliases and fragments are fine; a fragment's fields count as selected); the query grants when all of them are true",
                            );
                        } else {
                            self.fields.push(f);
                        }
                    }
                    // Only to find the fragments used; GraphQL validation reports selections on
                    // the `Boolean!` fields.
                    self.selections(cx, &f.selection_set, false);
                }
                Selection::FragmentSpread(spread) => {
                    if top {
                        cx.directives(&spread.directives);
                    }
                    let name = spread.fragment_name.as_str();
                    if !self.reached.iter().any(|n| n == name) {
                        self.reached.push(spread.fragment_name.clone());
                    }
                    // A cycle is reported by GraphQL validation.
                    if self.stack.contains(&name) {
                        continue;
                    }
                    let Some(def) = self.fragments.get(name).copied() else {
                        continue;
                    };
                    if top {
                        cx.directives(&def.directives);
                    }
                    self.stack.push(name);
                    self.selections(cx, &def.selection_set, top);
                    self.stack.pop();
                }
                Selection::InlineFragment(inline) => {
                    if top {
                        cx.directives(&inline.directives);
                    }
                    self.selections(cx, &inline.selection_set, top);
                }
            }
        }
    }
}

/// Every variable in a value, in document order. Reports numbers the server could not represent
/// (integers beyond 64 bits, floats beyond `f64`), which custom scalars would otherwise let pass.
fn usages(cx: &mut Cx<'_>, value: &Node<Value>, in_filter: bool, out: &mut Vec<Usage>) {
    match value.as_ref() {
        Value::Int(i) if i.as_str().parse::<i64>().is_err() => {
            let span = cx.span(value);
            cx.error(
                span,
                format!("the integer `{}` is too large", i.as_str()),
                format!("write ids as strings, like `\"{}\"`", i.as_str()),
            );
        }
        Value::Float(f) if f.try_to_f64().is_err() => {
            let span = cx.span(value);
            cx.error(
                span,
                format!("the number `{}` is too large", f.as_str()),
                "use a number within the range of a 64-bit float",
            );
        }
        Value::Variable(name) => out.push(Usage {
            name: name.clone(),
            span: cx.span(value),
            in_filter,
        }),
        Value::List(items) => {
            for item in items {
                usages(cx, item, in_filter, out);
            }
        }
        Value::Object(fields) => {
            for (_, v) in fields {
                usages(cx, v, in_filter, out);
            }
        }
        _ => {}
    }
}

/// Checks one selected operation and compiles it, or returns every problem found.
pub fn compile_query(
    model: &Model,
    schema: &PermissionSchema,
    operation: &str,
    name: &str,
    target: PermissionTarget,
    sel: &SelectedQuery,
) -> Result<PermissionQuery, Vec<Diagnostic>> {
    let mut cx = Cx {
        file: sel.file,
        operation,
        target,
        supplied: supplied_vars(model, target),
        diags: Vec::new(),
    };
    let op = &sel.operation;
    let op_span = cx.span(op);
    if op.operation_type != OperationType::Query {
        let kind = op.operation_type.name();
        let span = Span::new(
            cx.file,
            op_span.start as usize,
            op_span.start as usize + kind.len(),
        );
        cx.error(
            span,
            format!("the permission query is a {kind}, but it must be a query"),
            "a permission query only reads: write `query { Some<Type>Exists(filter: { … }) }`",
        );
        return Err(cx.diags);
    }
    let schema_ok = match &schema.schema {
        Ok(schema) => schema,
        Err(errors) => {
            cx.error(
                op_span,
                format!("the permission schema generated from the model is invalid: {errors}"),
                "this is a bug in svc; please report it with your types files",
            );
            return Err(cx.diags);
        }
    };
    for def in &sel.document.definitions {
        if !matches!(
            def,
            Definition::OperationDefinition(_) | Definition::FragmentDefinition(_)
        ) {
            let span = span_in(cx.file, def.location());
            cx.error(
                span,
                "a permission query file may contain only operations and fragments",
                "move type definitions to the types files",
            );
        }
    }
    cx.directives(&op.directives);

    // Flatten the selection.
    let mut walk = Walk {
        fragments: HashMap::new(),
        reached: Vec::new(),
        fields: Vec::new(),
        stack: Vec::new(),
    };
    for def in &sel.document.definitions {
        if let Definition::FragmentDefinition(f) = def {
            walk.fragments.entry(f.name.as_str()).or_insert(f);
        }
    }
    walk.selections(&mut cx, &op.selection_set, true);
    let fields = walk.fields.clone();

    // Variables.
    let mut used = Vec::new();
    for f in &fields {
        for arg in &f.arguments {
            usages(&mut cx, &arg.value, arg.name == "filter", &mut used);
        }
    }
    let mut op_node = op.clone();
    if op.variables.is_empty() {
        op_node.make_mut().variables = inject_variables(&mut cx, &used);
    } else {
        let retyped = declared_variables(&mut cx, op, &used);
        for def in &mut op_node.make_mut().variables {
            if let Some((_, ty)) = retyped.iter().find(|(n, _)| *n == def.name) {
                let ty = match def.ty.as_ref() {
                    Type::NonNullNamed(_) | Type::NonNullList(_) => Type::NonNullNamed(ty.clone()),
                    Type::Named(_) | Type::List(_) => Type::Named(ty.clone()),
                };
                let ty = def.ty.same_location(ty);
                def.make_mut().ty = ty;
            }
        }
    }
    node_variables(&mut cx, &used);

    // The document as the server runs it: the operation and the fragments it uses.
    let mut document = Document::new();
    document.sources = sel.document.sources.clone();
    document
        .definitions
        .push(Definition::OperationDefinition(op_node));
    for def in &sel.document.definitions {
        if let Definition::FragmentDefinition(f) = def
            && walk.reached.contains(&f.name)
        {
            document.definitions.push(def.clone());
        }
    }
    if let Err(with_errors) = document.to_executable_validate(schema_ok) {
        let own: Vec<(FileId, u32)> = cx
            .diags
            .iter()
            .filter_map(|d| d.span.map(|s| (s.file, s.start)))
            .collect();
        for err in with_errors.errors.iter() {
            let span = match err.error.location() {
                Some(location) => span_in(cx.file, Some(location)),
                None => op_span,
            };
            if own.contains(&(span.file, span.start)) {
                continue;
            }
            let text = err.error.to_string();
            cx.error(
                span,
                text,
                "permission queries select `Some<Type>Exists(filter: <Type>Filter, orderBy: <Type>OrderBy, skip: Int, after: String, before: String, first: Int, last: Int): Boolean!` fields",
            );
        }
    }
    if !cx.diags.is_empty() {
        let mut diags = cx.diags;
        let mut seen = Vec::new();
        diags.retain(|d| {
            let key = (d.span, d.message.clone());
            let new = !seen.contains(&key);
            seen.push(key);
            new
        });
        return Err(diags);
    }

    // Compile.
    let mut vars: Vec<PermissionVar> = Vec::new();
    let mut calls: Vec<ExistsCall> = Vec::new();
    for f in &fields {
        let key = f.alias.as_ref().unwrap_or(&f.name).to_string();
        if calls.iter().any(|c| c.key == key) {
            // Validation guarantees equal fields behind equal keys; GraphQL merges them.
            continue;
        }
        let Some(&ty) = schema.exists.get(f.name.as_str()) else {
            continue;
        };
        let definition = schema_ok.type_field("Query", &f.name).ok();
        let args = f
            .arguments
            .iter()
            .map(|a: &Node<Argument>| {
                let ty = definition
                    .and_then(|d| d.arguments.iter().find(|x| x.name == a.name))
                    .map(|x| &*x.ty);
                (
                    a.name.to_string(),
                    convert(&a.value, ty, schema_ok, &cx, &mut vars),
                )
            })
            .collect();
        calls.push(ExistsCall { key, ty, args });
    }
    Ok(PermissionQuery {
        name: name.to_owned(),
        text: document.to_string(),
        calls,
        vars,
    })
}

/// The definitions the server adds to an operation that declares no variables: one per supplied
/// variable the query uses, in first-use order, typed with the supplied type (nullable). Reports
/// the used variables that are not supplied.
fn inject_variables(cx: &mut Cx<'_>, used: &[Usage]) -> Vec<Node<VariableDefinition>> {
    let mut injected: Vec<Node<VariableDefinition>> = Vec::new();
    let mut reported: Vec<&Name> = Vec::new();
    for u in used {
        if injected.iter().any(|d| d.name == u.name) || reported.contains(&&u.name) {
            continue;
        }
        match cx.supplied(&u.name).map(|v| Name::new(&v.ty)) {
            Some(Ok(ty)) => injected.push(Node::new(VariableDefinition {
                name: u.name.clone(),
                ty: Node::new(Type::Named(ty)),
                default_value: None,
                directives: DirectiveList::new(),
            })),
            // Supplied types are GraphQL names; were one not, validation reports the variable
            // as undefined.
            Some(Err(_)) => {}
            None => {
                reported.push(&u.name);
                let help = cx.available();
                cx.error(
                    u.span,
                    format!(
                        "the variable `${}` is not supplied for this permission",
                        u.name
                    ),
                    help,
                );
            }
        }
    }
    injected
}

/// Checks the variables an operation declares against the supplied ones, and the used variables
/// against the declarations. Returns the declarations to validate with the supplied type
/// instead of the declared one (already reported), so their uses do not repeat the problem.
fn declared_variables(
    cx: &mut Cx<'_>,
    op: &OperationDefinition,
    used: &[Usage],
) -> Vec<(Name, Name)> {
    let mut retyped = Vec::new();
    for def in &op.variables {
        cx.directives(&def.directives);
        let span = cx.span(def);
        let Some(v) = cx.supplied(&def.name).cloned() else {
            let help = cx.available();
            cx.error(
                span,
                format!(
                    "the variable `${}` is not supplied for this permission",
                    def.name
                ),
                help,
            );
            continue;
        };
        let matches = match def.ty.as_ref() {
            Type::Named(n) | Type::NonNullNamed(n) => n.as_str() == v.ty,
            Type::List(_) | Type::NonNullList(_) => false,
        };
        if !matches {
            let span = cx.span(&def.ty);
            cx.error(
                span,
                format!(
                    "the variable `${}` is declared as `{}`, but the server supplies a value of type `{}`",
                    def.name, def.ty, v.ty
                ),
                format!("declare it as `${}: {}` (or `{}!`)", def.name, v.ty, v.ty),
            );
            if let Ok(ty) = Name::new(&v.ty) {
                retyped.push((def.name.clone(), ty));
            }
        }
        if let Some(default) = &def.default_value {
            let span = cx.span(default);
            cx.error(
                span,
                format!("the variable `${}` has a default value", def.name),
                "the server always supplies the value of a permission variable; remove the default",
            );
        }
    }
    let mut reported: Vec<&Name> = Vec::new();
    for u in used {
        if op.variables.iter().any(|d| d.name == u.name) || reported.contains(&&u.name) {
            continue;
        }
        reported.push(&u.name);
        match cx.supplied(&u.name).cloned() {
            Some(v) => cx.error(
                u.span,
                format!("the variable `${}` is used but not declared", u.name),
                format!(
                    "declare it as `${}: {}`, or declare no variables at all and the server declares the ones the query uses",
                    u.name, v.ty
                ),
            ),
            None => {
                let help = cx.available();
                cx.error(
                    u.span,
                    format!("the variable `${}` is not supplied for this permission", u.name),
                    help,
                );
            }
        }
    }
    retyped
}

/// Node-dependent variables must stay inside `filter`: the runtime evaluates a permission query
/// for many nodes in one SQL statement, where only the filter can refer to the node's row.
fn node_variables(cx: &mut Cx<'_>, used: &[Usage]) {
    for u in used {
        let Some(v) = cx.supplied(&u.name) else {
            continue;
        };
        if !u.in_filter && is_node_dependent(&v.source, cx.target) {
            cx.error(
                u.span,
                format!(
                    "the variable `${}` depends on the node being checked and may be used only inside `filter`",
                    u.name
                ),
                "the server checks many nodes in one SQL statement; compare the value inside `filter`, like `filter: { id: $node_id }`",
            );
        }
    }
}

/// An argument value as a [`PermissionValue`], coerced to the type `ty` the schema expects where
/// GraphQL's input coercion changes the shape (a single value in a list position becomes a list
/// of one, so the runtime sees the same tree a request would give it). Variables are added to
/// `vars` on first use.
fn convert(
    value: &Value,
    ty: Option<&Type>,
    schema: &Schema,
    cx: &Cx<'_>,
    vars: &mut Vec<PermissionVar>,
) -> PermissionValue {
    if let Some(ty) = ty
        && ty.is_list()
        && !matches!(value, Value::List(_) | Value::Null | Value::Variable(_))
    {
        return PermissionValue::List(vec![convert(value, Some(ty.item_type()), schema, cx, vars)]);
    }
    match value {
        Value::Null => PermissionValue::Null,
        Value::Enum(n) => PermissionValue::Enum(n.to_string()),
        Value::Variable(name) => {
            let index = match vars.iter().position(|v| v.name == name.as_str()) {
                Some(i) => i,
                None => {
                    // Validation guarantees that every used variable is supplied.
                    let source = cx
                        .supplied(name)
                        .map_or(crate::model::VarSource::UserId, |v| v.source.clone());
                    vars.push(PermissionVar {
                        name: name.to_string(),
                        source,
                    });
                    vars.len() - 1
                }
            };
            PermissionValue::Var(index)
        }
        Value::String(s) => PermissionValue::String(s.clone()),
        // Checked by `usages`: every integer literal fits in 64 bits.
        Value::Int(i) => match i.as_str().parse::<i64>() {
            Ok(n) => PermissionValue::Int(n),
            Err(_) => PermissionValue::String(i.as_str().to_owned()),
        },
        // Checked by `usages`: every float literal fits in an `f64`.
        Value::Float(f) => PermissionValue::Float(f.try_to_f64().unwrap_or(f64::MAX)),
        Value::Boolean(b) => PermissionValue::Boolean(*b),
        Value::List(items) => {
            let item = ty.map(Type::item_type);
            PermissionValue::List(
                items
                    .iter()
                    .map(|v| convert(v, item, schema, cx, vars))
                    .collect(),
            )
        }
        Value::Object(fields) => {
            let object = ty.and_then(|t| schema.get_input_object(t.inner_named_type()));
            PermissionValue::Object(
                fields
                    .iter()
                    .map(|(k, v)| {
                        let ty = object.and_then(|o| o.fields.get(k)).map(|f| &*f.ty);
                        (k.to_string(), convert(v, ty, schema, cx, vars))
                    })
                    .collect(),
            )
        }
    }
}
