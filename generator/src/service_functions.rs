//! `functions:` of `svc.yml` (reference §7): the resolvers' schema extensions, read and checked
//! with the reference's 2053 texts at their place in the schema file, and the functions lowered
//! into the model once every other rule has passed.

use std::collections::{HashMap, HashSet};

use apollo_compiler::Node;
use apollo_compiler::ast::{Definition, Document, Type};
use apollo_compiler::diagnostic::ToCliReport;

use crate::diagnostics::{Diagnostic, Diagnostics};
use crate::model::{
    Function, FunctionKind, Handler, Model, Resolver, ResolverField, ScalarType, Selected,
    TypeOperation,
};
use crate::permissions::shown_path;
use crate::source::{FileId, Sources, Span};
use crate::syntax::config::{Config, FunctionDecl, HandlerDecl};
use crate::syntax::sdl::{operations, span_in};

/// What the functions' files say, by function name: each resolver's schema extension and each
/// server-side subscription's query.
#[derive(Debug, Default)]
pub struct Extensions {
    resolvers: HashMap<String, Resolver>,
    subscriptions: HashMap<String, SubscriptionQuery>,
}

/// A server-side subscription's query: its text, its one top field (a model's name) and what
/// that field selects.
#[derive(Debug)]
struct SubscriptionQuery {
    text: String,
    field: String,
    key: String,
    selection: Option<Vec<Selected>>,
    span: Span,
}

/// What a selection set selects, field by field; `None` when it spreads a fragment.
fn selected(set: &[apollo_compiler::ast::Selection]) -> Option<Vec<Selected>> {
    set.iter()
        .map(|s| match s {
            apollo_compiler::ast::Selection::Field(f) => Some(Selected {
                key: f.alias.as_ref().unwrap_or(&f.name).to_string(),
                name: f.name.to_string(),
                children: if f.selection_set.is_empty() {
                    Vec::new()
                } else {
                    selected(&f.selection_set)?
                },
            }),
            _ => None,
        })
        .collect()
}

/// Every resolver's schema extension and every subscription's query, by function name. A
/// function whose file is missing or has a problem is reported to `diags` and left out.
pub fn resolvers(sources: &Sources, config: &Config, diags: &mut Diagnostics) -> Extensions {
    let mut out = Extensions::default();
    for f in &config.functions {
        if f.kind.value == "subscription"
            && let Some(query) = &f.query
        {
            if let Some(q) = subscription_query(sources, &f.name.value, query, diags) {
                out.subscriptions.insert(f.name.value.clone(), q);
            }
            continue;
        }
        let Some(schema) = f.schema.as_ref().filter(|_| f.kind.value == "resolver") else {
            continue;
        };
        let Some((file, source)) = sources.find(shown_path(&schema.value)) else {
            diags.push(
                Diagnostic::new(
                    schema.span,
                    format!(
                        "could not read the schema file `{}` of the function `{}`",
                        schema.value, f.name.value
                    ),
                )
                .with_help("paths in `svc.yml` are relative to the directory of `svc.yml`"),
            );
            continue;
        };
        let mut cx = Extension {
            name: &f.name.value,
            file,
            diags,
        };
        if let Some(r) = cx.read(&source.text) {
            out.resolvers.insert(f.name.value.clone(), r);
        }
    }
    out
}

/// A server-side subscription's query file: it must exist and hold one subscription operation
/// with one top field (the model's name, checked by [`lower`]). Its other fields are checked
/// against the API when the server starts.
fn subscription_query(
    sources: &Sources,
    name: &str,
    query: &crate::syntax::config::Spanned<String>,
    diags: &mut Diagnostics,
) -> Option<SubscriptionQuery> {
    let Some((file, source)) = sources.find(shown_path(&query.value)) else {
        diags.push(
            Diagnostic::new(
                query.span,
                format!(
                    "could not read the query file `{}` of the function `{name}`",
                    query.value
                ),
            )
            .with_help("paths in `svc.yml` are relative to the directory of `svc.yml`"),
        );
        return None;
    };
    let doc = match apollo_compiler::ast::Document::parse(source.text.as_str(), "query.graphql") {
        Ok(doc) => doc,
        Err(with_errors) => {
            for e in with_errors.errors.iter() {
                diags.push(Diagnostic::new(
                    span_in(file, e.error.location()),
                    format!(
                        "the query of the subscription function `{name}` is not valid GraphQL: {}",
                        e.error
                    ),
                ));
            }
            return None;
        }
    };
    let operations = operations(&doc);
    let help = "write `subscription { Post(filter: { mutation_in: [CREATED] }) { node { id } } }`";
    let op = match operations.as_slice() {
        [op] if op.operation_type == apollo_compiler::ast::OperationType::Subscription => op,
        _ => {
            diags.push(
                Diagnostic::new(
                    Span::file_start(file),
                    format!(
                        "the query of the subscription function `{name}` must hold one subscription operation"
                    ),
                )
                .with_help(help),
            );
            return None;
        }
    };
    let fields: Vec<_> = op
        .selection_set
        .iter()
        .filter_map(|s| match s {
            apollo_compiler::ast::Selection::Field(f) => Some(f),
            _ => None,
        })
        .collect();
    match fields.as_slice() {
        [field] if fields.len() == op.selection_set.len() => Some(SubscriptionQuery {
            text: source.text.clone(),
            field: field.name.to_string(),
            key: field.alias.as_ref().unwrap_or(&field.name).to_string(),
            selection: selected(&field.selection_set),
            span: span_in(file, field.name.location()),
        }),
        _ => {
            let at = op
                .selection_set
                .get(1)
                .map_or(Span::file_start(file), |s| span_in(file, s.location()));
            diags.push(
                Diagnostic::new(
                    at,
                    format!(
                        "the query of the subscription function `{name}` must select one field, the model whose events it is invoked for"
                    ),
                )
                .with_help(help),
            );
            None
        }
    }
}

/// The checks of one schema extension.
struct Extension<'a, 'd> {
    name: &'a str,
    file: FileId,
    diags: &'d mut Diagnostics,
}

impl Extension<'_, '_> {
    /// A 2053 error: `Schema Extension Error for function '{name}': {msg}`.
    fn error(&mut self, span: Span, msg: impl std::fmt::Display) {
        self.diags.push(
            Diagnostic::new(
                span,
                format!("Schema Extension Error for function '{}': {msg}", self.name),
            )
            .with_code(2053),
        );
    }

    /// An error of ours (not a text of the reference) about the extension.
    fn ours(&mut self, span: Span, msg: String, help: &str) {
        self.diags
            .push(Diagnostic::new(span, msg).with_help(help.to_owned()));
    }

    fn span<T>(&self, node: &Node<T>) -> Span {
        span_in(self.file, node.location())
    }

    fn read(&mut self, text: &str) -> Option<Resolver> {
        let start = Span::file_start(self.file);
        let doc = match Document::parse(text, "schema.graphql") {
            Ok(doc) => doc,
            Err(with_errors) => {
                let at = with_errors
                    .errors
                    .iter()
                    .next()
                    .map_or(start, |e| span_in(self.file, e.error.location()));
                if text.contains("()") {
                    let shown = text.split_whitespace().collect::<Vec<_>>().join(" ");
                    self.error(
                        at,
                        format!("Could not parse schema. Do not use empty brackets for resolvers without input arguments: {shown}"),
                    );
                } else {
                    let msg = with_errors
                        .errors
                        .iter()
                        .next()
                        .map(|e| e.error.to_string())
                        .unwrap_or_default();
                    self.error(at, format!("Could not parse schema: {msg}"));
                }
                return None;
            }
        };
        let mut extensions = Vec::new();
        let mut payloads = Vec::new();
        for d in &doc.definitions {
            match d {
                Definition::ObjectTypeExtension(e) => extensions.push(e),
                Definition::ObjectTypeDefinition(t) => payloads.push(t),
                other => {
                    let span = span_in(self.file, other.location());
                    self.ours(
                        span,
                        format!(
                            "the schema of the function `{}` may hold only `extend type Query` or `extend type Mutation` and its payload type",
                            self.name
                        ),
                        "remove this definition",
                    );
                    return None;
                }
            }
        }
        let ext = match extensions.as_slice() {
            [] => {
                self.error(start, "Schema must contain a type extension");
                return None;
            }
            [e] => *e,
            [_, second, ..] => {
                let span = self.span(second);
                self.error(span, "Schema must not contain more than one type extension");
                return None;
            }
        };
        let mutation = match ext.name.as_str() {
            "Query" => false,
            "Mutation" => true,
            other => {
                let span = span_in(self.file, ext.name.location());
                self.error(
                    span,
                    format!("Must extend either Query or Mutation. Not '{other}'"),
                );
                return None;
            }
        };
        let field = match ext.fields.as_slice() {
            [] => {
                let span = self.span(ext);
                let (what, root) = if mutation {
                    ("mutation", "Mutation { myMutation")
                } else {
                    ("query", "Query { myQuery")
                };
                self.error(
                    span,
                    format!("Must contain a {what}: extend type {root}(arg1: Int): MyPayload }}"),
                );
                return None;
            }
            [f] => f,
            [_, second, ..] => {
                let span = self.span(second);
                self.error(
                    span,
                    "Only one query or mutation can be added in a schema extension",
                );
                return None;
            }
        };
        let payload = match payloads.as_slice() {
            [] => {
                let span = self.span(field);
                self.error(
                    span,
                    "Must provide return type. For example: type MyPayload { someField: Boolean }",
                );
                return None;
            }
            [p] => *p,
            [_, second, ..] => {
                let span = self.span(second);
                self.error(
                    span,
                    "Only one return type can be specified in a schema extension",
                );
                return None;
            }
        };
        let returned = field.ty.inner_named_type();
        if returned != &payload.name {
            let span = self.span(field);
            let names: Vec<&str> = payloads.iter().map(|p| p.name.as_str()).collect();
            self.error(
                span,
                format!(
                    "Return type must match a type in the schema extension. {returned} did not match any of {}",
                    names.join(", ")
                ),
            );
            return None;
        }
        let (list, required) = match &field.ty {
            Type::Named(_) => (false, false),
            Type::NonNullNamed(_) => (false, true),
            Type::List(inner) if matches!(**inner, Type::NonNullNamed(_)) => (true, false),
            Type::NonNullList(inner) if matches!(**inner, Type::NonNullNamed(_)) => (true, true),
            _ => {
                let span = self.span(field);
                self.ours(
                    span,
                    format!(
                        "the resolver `{}` returns `{}`; a resolver returns `{returned}`, `{returned}!`, `[{returned}!]` or `[{returned}!]!`",
                        self.name, field.ty
                    ),
                    "change the field's type",
                );
                return None;
            }
        };
        let mut ok = true;
        let mut args = Vec::new();
        for a in &field.arguments {
            let span = span_in(self.file, a.location());
            match self.scalar_field(&a.name, &a.ty, span, "argument") {
                Some(f) => args.push(f),
                None => ok = false,
            }
        }
        let mut payload_fields = Vec::new();
        for f in &payload.fields {
            let span = self.span(f);
            if !f.arguments.is_empty() {
                ok = false;
                self.ours(
                    span,
                    format!(
                        "the payload field `{}.{}` has arguments; payload fields cannot take any",
                        payload.name, f.name
                    ),
                    "remove the arguments",
                );
                continue;
            }
            if f.name == "id" && !matches!(f.ty.inner_named_type().as_str(), "ID" | "String") {
                ok = false;
                self.error(
                    span,
                    "The name id is reserved for fields with type ID or String.",
                );
                continue;
            }
            match self.scalar_field(&f.name, &f.ty, span, "payload field") {
                Some(f) => payload_fields.push(f),
                None => ok = false,
            }
        }
        if payload.fields.is_empty() {
            ok = false;
            let span = self.span(payload);
            self.ours(
                span,
                format!("the payload type `{}` has no fields", payload.name),
                "give it at least one field",
            );
        }
        ok.then(|| Resolver {
            mutation,
            field: field.name.to_string(),
            args,
            payload: payload.name.to_string(),
            payload_fields,
            list,
            required,
        })
    }

    /// An argument or payload field: a scalar (`S`, `S!`, `[S!]`, `[S!]!`).
    fn scalar_field(
        &mut self,
        name: &apollo_compiler::Name,
        ty: &Type,
        span: Span,
        what: &str,
    ) -> Option<ResolverField> {
        let scalar = ScalarType::from_name(ty.inner_named_type());
        let shape = match ty {
            Type::Named(_) => Some((false, false)),
            Type::NonNullNamed(_) => Some((false, true)),
            Type::List(inner) if matches!(**inner, Type::NonNullNamed(_)) => Some((true, false)),
            Type::NonNullList(inner) if matches!(**inner, Type::NonNullNamed(_)) => {
                Some((true, true))
            }
            _ => None,
        };
        match (scalar, shape) {
            (Some(scalar), Some((list, required))) => Some(ResolverField {
                name: name.to_string(),
                scalar,
                list,
                required,
            }),
            _ => {
                self.ours(
                    span,
                    format!(
                        "the {what} `{name}: {ty}` of the function `{}` is not a scalar; resolvers take and return scalars only (`ID`, `String`, `Int`, `Float`, `Boolean`, `DateTime`, `Json`, or a list `[S!]` of one)",
                        self.name
                    ),
                    "change its type",
                );
                None
            }
        }
    }
}

/// Adds the functions of `config` to the model (run once the model is valid); a resolver whose
/// field or payload name is taken by the model's API is reported.
pub fn lower(
    model: &mut Model,
    sources: &Sources,
    config: &Config,
    extensions: Extensions,
    diags: &mut Diagnostics,
) {
    let Extensions {
        mut resolvers,
        mut subscriptions,
    } = extensions;
    let taken_types = type_names(model);
    let (queries, mutations) = root_fields(model);
    let mut fields_seen: HashMap<(bool, String), &str> = HashMap::new();
    // The Rust names generated for Rust handlers, and the function each came from.
    let mut rust_names: HashMap<String, &str> = HashMap::new();
    let mut payloads_seen: HashMap<String, &str> = HashMap::new();
    for f in &config.functions {
        let kind = match f.kind.value.as_str() {
            "resolver" => {
                let Some(r) = resolvers.remove(&f.name.value) else {
                    continue;
                };
                let roots = if r.mutation { &mutations } else { &queries };
                let root = if r.mutation { "Mutation" } else { "Query" };
                if roots.contains(&r.field) {
                    diags.push(
                        Diagnostic::new(
                            f.name.span,
                            format!(
                                "the resolver `{}` adds the field `{}` to `{root}`, which the model's API already has",
                                f.name.value, r.field
                            ),
                        )
                        .with_help("rename the field in the schema extension"),
                    );
                } else if let Some(first) =
                    fields_seen.insert((r.mutation, r.field.clone()), &f.name.value)
                {
                    diags.push(
                        Diagnostic::new(
                            f.name.span,
                            format!(
                                "the resolvers `{first}` and `{}` both add the field `{}` to `{root}`",
                                f.name.value, r.field
                            ),
                        )
                        .with_help("rename one of the fields"),
                    );
                }
                if taken_types.contains(&r.payload) {
                    diags.push(
                        Diagnostic::new(
                            f.name.span,
                            format!(
                                "the payload type `{}` of the resolver `{}` has a name the model's API already uses",
                                r.payload, f.name.value
                            ),
                        )
                        .with_help("rename the payload type in the schema extension"),
                    );
                } else if let Some(first) = payloads_seen.insert(r.payload.clone(), &f.name.value) {
                    diags.push(
                        Diagnostic::new(
                            f.name.span,
                            format!(
                                "the resolvers `{first}` and `{}` both declare the payload type `{}`",
                                f.name.value, r.payload
                            ),
                        )
                        .with_help("give each resolver a payload type of its own"),
                    );
                }
                FunctionKind::Resolver(r)
            }
            "subscription" => {
                let Some(q) = subscriptions.remove(&f.name.value) else {
                    continue;
                };
                let Some(ty) = model.type_by_name(&q.field) else {
                    diags.push(
                        Diagnostic::new(
                            q.span,
                            format!(
                                "the subscription function `{}` selects `{}`, which is not a model: its query's one field names the model whose events it is invoked for",
                                f.name.value, q.field
                            ),
                        )
                        .with_help("select a model's name, as in `subscription { Post { node { id } } }`"),
                    );
                    continue;
                };
                FunctionKind::Subscription {
                    query: f
                        .query
                        .as_ref()
                        .map(|q| q.value.clone())
                        .unwrap_or_default(),
                    text: q.text,
                    ty,
                    key: q.key,
                    selection: q.selection,
                }
            }
            kind => {
                let Some(hook) = hook(model, f) else {
                    continue;
                };
                let (ty, op) = hook;
                FunctionKind::Hook {
                    before: kind == "operationBefore",
                    ty,
                    op,
                }
            }
        };
        if let HandlerDecl::Rust { .. } = &f.handler {
            let prefix = crate::naming::function_type_prefix(&f.name.value);
            let mut names = vec![
                format!("{prefix}Event"),
                format!(
                    "__function_{}",
                    crate::naming::identifier_text(&f.name.value)
                ),
            ];
            match &kind {
                FunctionKind::Resolver(r) => {
                    names.push(format!("{prefix}Args"));
                    names.push(r.payload.clone());
                }
                _ => names.push(format!("{prefix}Data")),
            }
            // One clash is reported per function: the others follow from the same names.
            for name in names {
                if let Some(first) = rust_names.insert(name.clone(), &f.name.value) {
                    diags.push(
                        Diagnostic::new(
                            f.name.span,
                            format!(
                                "the Rust handlers of `{first}` and `{}` would both have the generated name `{name}`",
                                f.name.value
                            ),
                        )
                        .with_help("rename one of the functions (or the payload type)"),
                    );
                    break;
                }
            }
        }
        let (line, col) = sources.line_col(f.name.span);
        let file = sources
            .get(f.name.span.file)
            .map_or_else(|| "svc.yml".to_owned(), |s| s.path.display().to_string());
        model.functions.push(Function {
            name: f.name.value.clone(),
            kind,
            handler: handler(&f.handler),
            timeout_ms: f.timeout_ms.as_ref().map(|t| t.value),
            span: f.name.span,
            at: format!("{file}:{line}:{col}"),
        });
    }
}

fn hook(model: &Model, f: &FunctionDecl) -> Option<(crate::model::TypeId, TypeOperation)> {
    let (ty, op) = f.operation.as_ref()?.value.split_once('.')?;
    let op = match op {
        "create" => TypeOperation::Create,
        "update" => TypeOperation::Update,
        "delete" => TypeOperation::Delete,
        _ => return None,
    };
    Some((model.type_by_name(ty)?, op))
}

fn handler(h: &HandlerDecl) -> Handler {
    match h {
        HandlerDecl::Webhook { url, headers } => Handler::Webhook {
            url: url.value.clone(),
            headers: headers.clone(),
        },
        HandlerDecl::Code { src, environment } => Handler::Code {
            src: src.value.clone(),
            environment: environment.clone(),
            dir: String::new(),
        },
        HandlerDecl::Rust { path } => Handler::Rust {
            path: path.value.clone(),
        },
    }
}

/// The type names the model's APIs use (models, enums and what is derived from them, the
/// fixed names and the scalars).
fn type_names(model: &Model) -> HashSet<String> {
    let mut names: HashSet<String> = svc_names::FIXED_TYPE_NAMES
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    for s in [
        "ID",
        "String",
        "Int",
        "Float",
        "Boolean",
        "DateTime",
        "Json",
        "Query",
        "Mutation",
        "Subscription",
    ] {
        names.insert(s.to_owned());
    }
    names.extend(model.enums.iter().map(|e| e.name.clone()));
    for t in &model.types {
        let n = t.name.as_str();
        names.extend([
            n.to_owned(),
            svc_names::filter_type(n),
            svc_names::order_by_type(n),
            svc_names::create_input(n),
            svc_names::update_input(n),
            svc_names::connection_type(n),
            svc_names::edge_type(n),
            svc_names::subscription_filter_type(n),
            svc_names::subscription_filter_node_type(n),
            svc_names::subscription_payload_type(n),
            svc_names::previous_values_type(n),
        ]);
        for m in [
            svc_names::create_field(n),
            svc_names::update_field(n),
            svc_names::update_or_create_field(n),
            svc_names::delete_field(n),
        ] {
            names.insert(svc_names::relay_payload_type(&m));
            names.insert(svc_names::relay_input_type(&m));
        }
    }
    names
}

/// The fields of the Simple API's `Query` and `Mutation` (and the Relay API's roots).
fn root_fields(model: &Model) -> (HashSet<String>, HashSet<String>) {
    // `id` is a field of the Relay API's `Viewer`, where query resolvers go too.
    let mut queries: HashSet<String> = [
        svc_names::USER_FIELD,
        svc_names::NODE_FIELD,
        svc_names::VIEWER_FIELD,
        "id",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let mut mutations = HashSet::new();
    for t in &model.types {
        let n = t.name.as_str();
        queries.extend([
            svc_names::all_field(n),
            svc_names::meta_field(n),
            n.to_owned(),
        ]);
        mutations.extend([
            svc_names::create_field(n),
            svc_names::update_field(n),
            svc_names::update_or_create_field(n),
            svc_names::delete_field(n),
            svc_names::delete_many_field(n),
            svc_names::update_many_field(n),
        ]);
    }
    for r in &model.relations {
        mutations.extend([
            svc_names::set_field(&r.name),
            svc_names::unset_field(&r.name),
            svc_names::add_to_field(&r.name),
            svc_names::remove_from_field(&r.name),
        ]);
    }
    (queries, mutations)
}
