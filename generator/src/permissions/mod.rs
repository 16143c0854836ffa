//! Permissions at build time (reference §5): what each `permissions:` entry of `svc.yml` targets,
//! and its permission query, loaded, checked against the permission schema and compiled into
//! [`PermissionQuery`](crate::model::PermissionQuery) so the server never parses one.
//!
//! Two stages, so that one build reports as much as possible:
//!
//! 1. [`select_queries`] runs on the config alone (it needs no model): it finds each `query:`
//!    file among the loaded [`Sources`] (the front end reads them relative to `svc.yml`), parses
//!    it and picks the operation (`./file.graphql:Name` names one). The errors are the
//!    reference's 2066 texts.
//! 2. [`compile`] runs on the lowered model: it resolves every permission's
//!    [`PermissionTarget`], then validates each selected operation against
//!    [`schema::permission_schema_sdl`] with the variables of [`vars::supplied_vars`] and
//!    compiles it (see [`query`] for the rules).

pub mod query;
pub mod schema;
pub mod vars;

use apollo_compiler::Node;
use apollo_compiler::ast::{Document, OperationDefinition};
use apollo_compiler::diagnostic::ToCliReport;

use crate::diagnostics::{Diagnostic, Diagnostics};
use crate::model::{Model, PermissionTarget, TypeOperation};
use crate::source::{FileId, Sources, Span};
use crate::syntax::config::{Config, PermissionDecl};
use crate::syntax::sdl::{is_blank, operations, span_in};

/// The error code of every problem with a permission (reference §5.1).
pub const CODE: u32 = 2066;

/// The operation a permission's `query:` selected, parsed.
#[derive(Debug, Clone)]
pub struct SelectedQuery {
    /// The query file.
    pub file: FileId,
    /// The whole file.
    pub document: Document,
    /// The selected operation (an element of `document.definitions`).
    pub operation: Node<OperationDefinition>,
}

/// What `operation:` names, resolved against the model: `*`, `Type.read|create|update|delete`
/// (a model wins over a relation of the same name, as in the shape check), or
/// `Relation.connect|disconnect|*`. `None` for anything else.
pub fn resolve_target(model: &Model, operation: &str) -> Option<PermissionTarget> {
    if operation == "*" {
        return Some(PermissionTarget::All);
    }
    let (name, action) = operation.split_once('.')?;
    if let Some(ty) = model.type_by_name(name) {
        let op = match action {
            "read" => TypeOperation::Read,
            "create" => TypeOperation::Create,
            "update" => TypeOperation::Update,
            "delete" => TypeOperation::Delete,
            _ => return None,
        };
        return Some(PermissionTarget::Type { ty, op });
    }
    let index = model.relations.iter().position(|r| r.name == name)?;
    let relation = crate::model::RelationId(u32::try_from(index).ok()?);
    let (connect, disconnect) = match action {
        "connect" => (true, false),
        "disconnect" => (false, true),
        "*" => (true, true),
        _ => return None,
    };
    Some(PermissionTarget::Relation {
        relation,
        connect,
        disconnect,
    })
}

/// Splits a `query:` value into the file path and the operation name:
/// `./file.graphql:Name` → (`./file.graphql`, `Some("Name")`). The part after the last `:` counts
/// as a name only when it is a GraphQL name, so paths with colons still work.
pub fn split_query_value(value: &str) -> (&str, Option<&str>) {
    match value.rsplit_once(':') {
        Some((path, name)) if !path.is_empty() && is_graphql_name(name) => (path, Some(name)),
        _ => (value, None),
    }
}

/// How a query file is named in diagnostics and found in [`Sources`]: the path as written,
/// without a leading `./` (as types files are shown).
pub fn shown_path(path: &str) -> &str {
    path.strip_prefix("./").unwrap_or(path)
}

fn is_graphql_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// The permissions whose query the generator checks: every entry with `query:` except `*` (which
/// cannot have one; [`select_queries`] reports it).
fn has_query(p: &PermissionDecl) -> bool {
    p.operation.value != "*" && p.query.is_some()
}

/// Stage 1: for every entry of `config.permissions` (same indices), the selected operation of its
/// query file, or `None` when it has no query or the query has a problem (reported to `diags`).
pub fn select_queries(
    sources: &Sources,
    config: &Config,
    diags: &mut Diagnostics,
) -> Vec<Option<SelectedQuery>> {
    config
        .permissions
        .iter()
        .map(|p| {
            if let Some(q) = &p.query
                && p.operation.value == "*"
            {
                diags.push(
                    Diagnostic::new(q.span, "the permission `*` cannot have a `query`")
                        .with_code(CODE)
                        .with_help(
                            "`*` allows everything for everybody; remove the `query`, or put it on a type or relation permission like `Post.read`",
                        ),
                );
            }
            if !has_query(p) {
                return None;
            }
            select(sources, p, diags)
        })
        .collect()
}

fn select(sources: &Sources, p: &PermissionDecl, diags: &mut Diagnostics) -> Option<SelectedQuery> {
    let query = p.query.as_ref()?;
    let operation = &p.operation.value;
    let prefix = format!("Query Permission Error for permission '{operation}':");
    let (path, name) = split_query_value(&query.value);
    let error = |span: Span, message: String| {
        Diagnostic::new(span, format!("{prefix} {message}")).with_code(CODE)
    };
    let Some((file, source)) = sources.find(shown_path(path)) else {
        diags.push(
            error(
                query.span,
                format!("There was no file for the path: {path} provided"),
            )
            .with_help(
                "paths under `query:` are relative to the directory of `svc.yml`; create the \
                 file or correct the path",
            ),
        );
        return None;
    };
    let document = if is_blank(&source.text) {
        Document::new()
    } else {
        match Document::parse(source.text.as_str(), &source.path) {
            Ok(document) => document,
            Err(with_errors) => {
                // The parser recovers and goes on, but after the first error the rest are
                // mostly its consequences; the reference reports one message too.
                if let Some(err) = with_errors.errors.iter().next() {
                    let text = err.error.to_string();
                    let message = text.strip_prefix("syntax error: ").unwrap_or(&text);
                    diags.push(
                        error(
                            span_in(file, err.error.location()),
                            format!(
                                "Query could not be parsed. Please ensure it is valid GraphQL. {message}"
                            ),
                        )
                        .with_help("fix the GraphQL syntax at the position shown"),
                    );
                }
                return None;
            }
        }
    };
    let operations = operations(&document);
    let names = || {
        let named: Vec<String> = operations
            .iter()
            .filter_map(|op| op.name.as_ref().map(|n| format!("`{n}`")))
            .collect();
        if named.is_empty() {
            "the file has no named operation; name one, like `query CanRead { … }`".to_owned()
        } else {
            format!("the file has {}", named.join(", "))
        }
    };
    let selected = match (name, operations.as_slice()) {
        (_, []) => {
            diags.push(
                error(
                    query.span,
                    format!("There was no query in the file. {path}"),
                )
                .with_help(
                    "write a query like `query { SomePostExists(filter: { … }) }` in the file",
                ),
            );
            return None;
        }
        (None, [op]) => (*op).clone(),
        (None, _) => {
            diags.push(
                error(
                    query.span,
                    format!(
                        "There was more than one query and you did not provide a query name. {path}"
                    ),
                )
                .with_help(format!(
                    "select one with `query: {path}:OperationName`; {}",
                    names()
                )),
            );
            return None;
        }
        (Some(name), ops) => {
            match ops
                .iter()
                .filter(|op| op.name.as_ref().is_some_and(|n| n == name))
                .collect::<Vec<_>>()
                .as_slice()
            {
                [op] => (**op).clone(),
                [_, second, ..] => {
                    diags.push(
                    error(
                        span_in(file, second.location()),
                        format!("There is more than one query with the name {name} in the file: {path}"),
                    )
                    .with_help("give every operation in the file its own name"),
                );
                    return None;
                }
                [] => {
                    diags.push(
                        error(
                            query.span,
                            format!("There was no query with the name {name} in the file: {path}"),
                        )
                        .with_help(names()),
                    );
                    return None;
                }
            }
        }
    };
    Some(SelectedQuery {
        file,
        document,
        operation: selected,
    })
}

/// Stage 2: resolves every permission's target and compiles the selected queries into
/// `model.permissions` (`selected` has the indices of `config.permissions`, which lowering keeps).
pub fn compile(
    model: &mut Model,
    config: &Config,
    selected: &[Option<SelectedQuery>],
    diags: &mut Diagnostics,
) {
    let mut schema = None;
    for i in 0..model.permissions.len() {
        let operation = model.permissions[i].operation.clone();
        let span = config
            .permissions
            .get(i)
            .map_or(model.permissions[i].span, |p| p.operation.span);
        let Some(target) = resolve_target(model, &operation) else {
            // The shape check rejects such operations before lowering; a bug if it shows.
            diags.push(
                Diagnostic::new(
                    span,
                    format!("cannot resolve the permission operation `{operation}`"),
                )
                .with_code(CODE)
                .with_help("this is a bug in svc; please report it with your `svc.yml`"),
            );
            continue;
        };
        model.permissions[i].target = target;
        let Some(sel) = selected.get(i).and_then(Option::as_ref) else {
            continue;
        };
        let Some(name) = model.permissions[i].query.clone() else {
            continue;
        };
        let schema = schema.get_or_insert_with(|| query::PermissionSchema::new(model));
        match query::compile_query(model, schema, &operation, &name, target, sel) {
            Ok(compiled) => model.permissions[i].compiled = Some(compiled),
            Err(errors) => {
                for d in errors {
                    diags.push(d);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{PermissionValue, VarSource};

    const TYPES: &str = r#"
        type Post @model { id: ID! @isUnique title: String author: User @relation(name: "UserPosts") }
        type User @model { id: ID! @isUnique posts: [Post!]! @relation(name: "UserPosts") }
    "#;

    /// Runs the front end in memory with query files (path as written in `svc.yml`, text).
    fn run(yml: &str, queries: &[(&str, &str)]) -> Result<crate::model::Valid<Model>, String> {
        let mut sources = Sources::new();
        let config = sources.add("svc.yml", yml);
        let types = sources.add("types.graphql", TYPES);
        for (path, text) in queries {
            sources.add(*path, *text);
        }
        crate::frontend::check(&sources, config, &[types]).map_err(|d| d.render(&sources))
    }

    #[test]
    fn query_values() {
        assert_eq!(split_query_value("./a.graphql"), ("./a.graphql", None));
        assert_eq!(
            split_query_value("./a.graphql:CanRead"),
            ("./a.graphql", Some("CanRead"))
        );
        assert_eq!(split_query_value("C:\\a.graphql"), ("C:\\a.graphql", None));
        assert_eq!(split_query_value(":Name"), (":Name", None));
        assert_eq!(split_query_value("a:"), ("a:", None));
        assert_eq!(shown_path("./p/a.graphql"), "p/a.graphql");
    }

    #[test]
    fn targets() {
        let model = run("types: types.graphql\n", &[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(resolve_target(&model, "*"), Some(PermissionTarget::All));
        assert_eq!(
            resolve_target(&model, "User.delete"),
            Some(PermissionTarget::Type {
                ty: crate::model::TypeId(1),
                op: TypeOperation::Delete
            })
        );
        let rel = |connect, disconnect| {
            Some(PermissionTarget::Relation {
                relation: crate::model::RelationId(0),
                connect,
                disconnect,
            })
        };
        assert_eq!(
            resolve_target(&model, "UserPosts.connect"),
            rel(true, false)
        );
        assert_eq!(
            resolve_target(&model, "UserPosts.disconnect"),
            rel(false, true)
        );
        assert_eq!(resolve_target(&model, "UserPosts.*"), rel(true, true));
        for bad in ["Post.list", "Post", "Nope.read", "UserPosts.read", ""] {
            assert_eq!(resolve_target(&model, bad), None, "{bad}");
        }
    }

    #[test]
    fn injected_variables_in_first_use_order() {
        let yml = "types: types.graphql\npermissions:\n  - operation: Post.update\n    query: ./q.graphql\n";
        let query = "{ SomeUserExists(filter: { id: $user_id, posts_some: { id: $node_id, title: $new_title } }) SomePostExists(filter: { id: $node_id }) }";
        let model = run(yml, &[("q.graphql", query)]).unwrap_or_else(|e| panic!("{e}"));
        let compiled = model.permissions[0]
            .compiled
            .as_ref()
            .unwrap_or_else(|| panic!("no query"));
        assert_eq!(compiled.name, "./q.graphql");
        let vars: Vec<(&str, &VarSource)> = compiled
            .vars
            .iter()
            .map(|v| (v.name.as_str(), &v.source))
            .collect();
        assert_eq!(
            vars,
            [
                ("user_id", &VarSource::UserId),
                ("node_id", &VarSource::NodeId),
                ("new_title", &VarSource::Input(1)),
            ]
        );
        assert!(
            compiled
                .text
                .starts_with("query($user_id: ID, $node_id: ID, $new_title: String) {"),
            "{}",
            compiled.text
        );
        assert_eq!(compiled.calls.len(), 2);
        assert_eq!(
            compiled.calls[1].args,
            [(
                "filter".to_owned(),
                PermissionValue::Object(vec![("id".to_owned(), PermissionValue::Var(1))])
            )]
        );
    }

    #[test]
    fn queries_without_query_or_on_star_are_not_compiled() {
        let yml = "types: types.graphql\npermissions:\n  - operation: Post.read\n  - operation: UserPosts.connect\n";
        let model = run(yml, &[]).unwrap_or_else(|e| panic!("{e}"));
        assert!(model.permissions.iter().all(|p| p.compiled.is_none()));
        let err = run(
            "types: types.graphql\npermissions:\n  - operation: '*'\n    query: q.graphql\n",
            &[],
        )
        .err()
        .unwrap_or_default();
        assert!(
            err.contains("the permission `*` cannot have a `query`"),
            "{err}"
        );
    }

    /// Odd query files must come back as diagnostics, never as a panic.
    #[test]
    fn odd_queries_do_not_panic() {
        let deep_value = format!(
            "{{ SomePostExists(filter: {{ AND: {}{{}}{} }}) }}",
            "[".repeat(400),
            "]".repeat(400)
        );
        let deep_selection = format!(
            "{{ {}SomePostExists{} }}",
            "a { ".repeat(400),
            " }".repeat(400)
        );
        let queries = [
            "",
            "\u{feff}",
            "query { SomePostExists(filter: { id: 99999999999999999999999 }) }",
            "query { SomePostExists(first: 99999999999999999999999) }",
            "query { SomePostExists(filter: { title_in: 1e999 }) }",
            "query { ...A } fragment A on Query { ...B } fragment B on Query { ...A }",
            "query { ...A } fragment A on Query { ...A SomePostExists }",
            "query { ...Missing }",
            "query { ... on Post { id } }",
            "query { SomePostExists { id } }",
            "query { SomePostExists(filter: $filter) }",
            "query ($node_id: [[ID!]]) { SomePostExists(filter: { id: $node_id }) }",
            "query { SomePostExists(filter: { id: $node_id }) } type Post { id: ID }",
            "query A { SomePostExists } query A { SomePostExists }",
            "schema { query: Query }",
            deep_value.as_str(),
            deep_selection.as_str(),
        ];
        for q in queries {
            for op in ["Post.read", "Post.create", "UserPosts.*"] {
                for value in ["./q.graphql", "./q.graphql:A"] {
                    let yml = format!(
                        "types: types.graphql\npermissions:\n  - operation: {op}\n    query: {value}\n"
                    );
                    let res = run(&yml, &[("q.graphql", q)]);
                    assert!(res.is_err(), "{op} {value} {q} should fail");
                }
            }
        }
    }
}
