//! Compiling a query document into a [`Plan`], or finding that the executor must answer it.

use std::collections::HashMap;

use async_graphql::parser::types::{
    BaseType, DocumentOperations, ExecutableDocument, Field, FragmentDefinition, OperationType,
    Selection, SelectionSet,
};
use async_graphql::{Name, Positioned};

use super::{
    Api, Args, ConnField, Connection, CountField, EdgeField, Item, Keyed, Object, PageInfoField,
    Plan, Root, Scan, Var, VarType, ViewerItem,
};
use crate::model::{ModelMeta, ServiceMeta};
use crate::storage::InlineReads;

/// Compiles the operation `operation` of `doc`, a query of `api`; `None` when it is not direct.
pub fn compile(
    service: &'static ServiceMeta,
    api: Api,
    doc: &ExecutableDocument,
    operation: Option<&str>,
) -> Option<Plan> {
    let op = match (&doc.operations, operation) {
        (DocumentOperations::Single(op), None) => op,
        (DocumentOperations::Multiple(ops), Some(name)) => ops.get(name)?,
        (DocumentOperations::Multiple(ops), None) if ops.len() == 1 => ops.values().next()?,
        _ => return None,
    };
    let op = &op.node;
    if op.ty != OperationType::Query || !op.directives.is_empty() {
        return None;
    }
    let mut vars = Vec::new();
    for def in &op.variable_definitions {
        let def = &def.node;
        let (ty, items) = match &def.var_type.node.base {
            BaseType::Named(ty) => (ty, None),
            BaseType::List(inner) => match &inner.base {
                BaseType::Named(ty) => (ty, Some(!inner.nullable)),
                BaseType::List(_) => return None,
            },
        };
        if !def.directives.is_empty() {
            return None;
        }
        vars.push(Var {
            name: def.name.node.clone(),
            default: def.default_value.as_ref().map(|value| value.node.clone()),
            ty: var_type(service, ty)?,
            required: !def.var_type.node.nullable,
            items,
        });
    }
    let cx = Compile {
        service,
        api,
        fragments: &doc.fragments,
    };
    let roots = cx
        .fields(&op.selection_set, "Query")?
        .into_iter()
        .map(|f| cx.root(f))
        .collect::<Option<_>>()?;
    Some(Plan {
        vars,
        roots,
        inline: InlineReads::default(),
    })
}

/// The type of variables named `ty` if a plan takes them: the built-in scalars, the
/// `<Type>OrderBy` enums and the project enums. Input objects are left to the executor: their
/// values would be checked only as far as a plan reads them.
fn var_type(service: &ServiceMeta, ty: &str) -> Option<VarType> {
    Some(match ty {
        "ID" => VarType::Id,
        "String" => VarType::String,
        "Int" => VarType::Int,
        "Float" => VarType::Float,
        "Boolean" => VarType::Boolean,
        _ if ty
            .strip_suffix("OrderBy")
            .is_some_and(|model| service.models.iter().any(|m| m.name == model)) =>
        {
            VarType::Order
        }
        _ => VarType::Enum(service.enums.iter().find(|e| e.name == ty)?.values),
    })
}

/// What compiling a document needs.
struct Compile<'a> {
    service: &'static ServiceMeta,
    api: Api,
    fragments: &'a HashMap<Name, Positioned<FragmentDefinition>>,
}

impl<'a> Compile<'a> {
    /// The fields of a selection set on the object type `on`, with its fragments (spread or
    /// inline, on `on` itself) flattened. `None` with directives, with a fragment on another
    /// type (an interface), or with a response key that is not a repeat of the same leaf
    /// field (the executor merges those).
    fn fields(&self, set: &'a Positioned<SelectionSet>, on: &str) -> Option<Vec<&'a Field>> {
        let mut out = Vec::new();
        self.collect(set, on, &mut out, 0)?;
        Some(out)
    }

    fn collect(
        &self,
        set: &'a Positioned<SelectionSet>,
        on: &str,
        out: &mut Vec<&'a Field>,
        depth: usize,
    ) -> Option<()> {
        // Validation forbids fragment cycles; this only bounds the walk.
        if depth > 32 {
            return None;
        }
        for item in &set.node.items {
            match &item.node {
                Selection::Field(field) => {
                    let field = &field.node;
                    if !field.directives.is_empty() {
                        return None;
                    }
                    let key = &field.response_key().node;
                    match out.iter().find(|f| &f.response_key().node == key) {
                        None => out.push(field),
                        Some(seen) if is_same_leaf(seen, field) => {}
                        Some(_) => return None,
                    }
                }
                Selection::FragmentSpread(spread) => {
                    let fragment = &self.fragments.get(&spread.node.fragment_name.node)?.node;
                    if !spread.node.directives.is_empty()
                        || !fragment.directives.is_empty()
                        || fragment.type_condition.node.on.node != on
                    {
                        return None;
                    }
                    self.collect(&fragment.selection_set, on, out, depth + 1)?;
                }
                Selection::InlineFragment(inline) => {
                    let inline = &inline.node;
                    let applies = inline
                        .type_condition
                        .as_ref()
                        .is_none_or(|t| t.node.on.node == on);
                    if !inline.directives.is_empty() || !applies {
                        return None;
                    }
                    self.collect(&inline.selection_set, on, out, depth + 1)?;
                }
            }
        }
        Some(())
    }

    /// A root field, matched as the executor's `Query` matches it.
    fn root(&self, field: &Field) -> Option<Keyed<Root>> {
        let name = field.name.node.as_str();
        if name == "__typename" {
            return Some(keyed(field, Root::Typename));
        }
        if self.api == Api::Relay {
            if name != "viewer" {
                return None;
            }
            let items = self.viewer(&field.selection_set)?;
            return Some(keyed(field, Root::Viewer(items)));
        }
        if matches!(name, "node" | "user" | "_empty") {
            return None;
        }
        let count_of = name
            .strip_prefix("_all")
            .and_then(|n| n.strip_suffix("Meta"));
        let meta = self.service.models.iter().find(|m| {
            name.strip_prefix("all") == Some(m.plural)
                || count_of == Some(m.plural)
                || name == m.name
        })?;
        let what = if name.strip_prefix("all") == Some(meta.plural) {
            Root::All {
                args: args(field),
                object: self.object(meta, &field.selection_set)?,
                scan: Scan::default(),
            }
        } else if count_of == Some(meta.plural) {
            Root::Count {
                meta,
                args: args(field),
                fields: self.count_fields(&field.selection_set)?,
            }
        } else {
            Root::One {
                args: args(field),
                object: self.object(meta, &field.selection_set)?,
            }
        };
        Some(keyed(field, what))
    }

    fn count_fields(&self, set: &'a Positioned<SelectionSet>) -> Option<Vec<Keyed<CountField>>> {
        self.fields(set, "_QueryMeta")?
            .into_iter()
            .map(|f| match f.name.node.as_str() {
                "count" => Some(keyed(f, CountField::Count)),
                "__typename" => Some(keyed(f, CountField::Typename)),
                _ => None,
            })
            .collect()
    }

    /// The Relay API's `viewer { … }`: `id`, `__typename`, `all<Plural>` and `<Type>(…)` (`user`
    /// is the executor's).
    fn viewer(&self, set: &'a Positioned<SelectionSet>) -> Option<Vec<Keyed<ViewerItem>>> {
        self.fields(set, "Viewer")?
            .into_iter()
            .map(|f| {
                let name = f.name.node.as_str();
                let what = match name {
                    "id" => ViewerItem::Id,
                    "__typename" => ViewerItem::Typename,
                    _ => {
                        let meta = self.service.models.iter().find(|m| {
                            name.strip_prefix("all") == Some(m.plural) || name == m.name
                        })?;
                        if name == meta.name {
                            ViewerItem::One {
                                args: args(f),
                                object: self.object(meta, &f.selection_set)?,
                            }
                        } else {
                            ViewerItem::All {
                                args: args(f),
                                conn: self.connection(meta, &f.selection_set)?,
                                scan: Scan::default(),
                            }
                        }
                    }
                };
                Some(keyed(f, what))
            })
            .collect()
    }

    /// The selection on a connection of nodes of `meta`: one `edges` with at most one `node`.
    fn connection(
        &self,
        meta: &'static ModelMeta,
        set: &'a Positioned<SelectionSet>,
    ) -> Option<Connection> {
        let mut node: Option<&'a Positioned<SelectionSet>> = None;
        let mut edges_seen = false;
        let mut fields = Vec::new();
        for f in self.fields(set, &svc_names::connection_type(meta.name))? {
            let what = match f.name.node.as_str() {
                "__typename" => ConnField::Typename(svc_names::connection_type(meta.name)),
                "count" => ConnField::Count,
                "pageInfo" => ConnField::PageInfo(
                    self.fields(&f.selection_set, "PageInfo")?
                        .into_iter()
                        .map(|p| {
                            let what = match p.name.node.as_str() {
                                "__typename" => PageInfoField::Typename,
                                "hasNextPage" => PageInfoField::HasNextPage,
                                "hasPreviousPage" => PageInfoField::HasPreviousPage,
                                "startCursor" => PageInfoField::StartCursor,
                                "endCursor" => PageInfoField::EndCursor,
                                _ => return None,
                            };
                            Some(keyed(p, what))
                        })
                        .collect::<Option<_>>()?,
                ),
                "edges" if !edges_seen => {
                    edges_seen = true;
                    let mut items = Vec::new();
                    for e in self.fields(&f.selection_set, &svc_names::edge_type(meta.name))? {
                        let what = match e.name.node.as_str() {
                            "__typename" => EdgeField::Typename(svc_names::edge_type(meta.name)),
                            "cursor" => EdgeField::Cursor,
                            "node" if node.is_none() => {
                                node = Some(&e.selection_set);
                                EdgeField::Node
                            }
                            _ => return None,
                        };
                        items.push(keyed(e, what));
                    }
                    ConnField::Edges(items)
                }
                _ => return None,
            };
            fields.push(keyed(f, what));
        }
        let mut object = match node {
            Some(set) => self.object(meta, set)?,
            None => Object {
                meta,
                items: Vec::new(),
                columns: Vec::new(),
            },
        };
        column(&mut object.columns, meta.id);
        Some(Connection { fields, object })
    }

    /// The selection on a node of `meta`.
    fn object(
        &self,
        meta: &'static ModelMeta,
        set: &'a Positioned<SelectionSet>,
    ) -> Option<Object> {
        let mut items = Vec::new();
        let mut columns: Vec<usize> = Vec::new();
        for f in self.fields(set, meta.name)? {
            let name = f.name.node.as_str();
            let count_of = name.strip_prefix('_').and_then(|n| n.strip_suffix("Meta"));
            let what = if name == "__typename" {
                Item::Typename
            } else if let Some(field) = meta.fields.iter().position(|c| c.exposed && c.name == name)
            {
                let at = column(&mut columns, field);
                Item::Scalar { field, at }
            } else if let Some(rel) = meta.relations.iter().position(|r| r.name == name) {
                let target = meta.relations[rel].target;
                if self.api == Api::Relay && meta.relations[rel].list {
                    Item::Connection {
                        rel,
                        args: args(f),
                        conn: self.connection(target, &f.selection_set)?,
                    }
                } else {
                    Item::Related {
                        rel,
                        args: args(f),
                        object: self.object(target, &f.selection_set)?,
                    }
                }
            } else if self.api == Api::Simple
                && let Some(rel) = meta
                    .relations
                    .iter()
                    .position(|r| r.list && count_of == Some(r.name))
            {
                Item::Count {
                    rel,
                    args: args(f),
                    fields: self.count_fields(&f.selection_set)?,
                }
            } else {
                return None;
            };
            items.push(keyed(f, what));
        }
        let mut object = Object {
            meta,
            items,
            columns,
        };
        if object.has_relations() || object.columns.is_empty() {
            column(&mut object.columns, meta.id);
        }
        Some(object)
    }
}

/// Where `field`'s column is in `columns`, added when missing.
fn column(columns: &mut Vec<usize>, field: usize) -> usize {
    match columns.iter().position(|&c| c == field) {
        Some(at) => at,
        None => {
            columns.push(field);
            columns.len() - 1
        }
    }
}

/// Whether two fields under one response key are the same leaf (a scalar or `__typename`
/// without arguments), which GraphQL merges into one.
fn is_same_leaf(a: &Field, b: &Field) -> bool {
    a.name.node == b.name.node
        && a.arguments.is_empty()
        && b.arguments.is_empty()
        && a.selection_set.node.items.is_empty()
        && b.selection_set.node.items.is_empty()
}

fn keyed<T>(field: &Field, what: T) -> Keyed<T> {
    Keyed {
        key: format!("\"{}\":", field.response_key().node),
        what,
    }
}

fn args(field: &Field) -> Args {
    field
        .arguments
        .iter()
        .map(|(n, v)| (n.node.clone(), v.node.clone()))
        .collect()
}
