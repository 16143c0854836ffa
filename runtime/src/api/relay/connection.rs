//! Connections (reference §3.1): `<Type>Connection { pageInfo, edges, count }`, `<Type>Edge {
//! node, cursor }` and `PageInfo`, for root lists (`Viewer.all<Plural>`) and to-many relation
//! fields. The cursor of an edge is its node's id.
//!
//! `hasNextPage` is true only when `first` was given and more nodes follow, `hasPreviousPage`
//! only when `last` was given and more nodes come before (both false otherwise, even when the cap
//! of 1000 nodes cut the page). To know, the page is read with one node more than asked on the
//! side that was asked, and that node is dropped. `count` counts the nodes the filter matches,
//! whatever the page, and runs only when it is selected.

use std::borrow::Cow;
use std::sync::Arc;

use async_graphql::indexmap::IndexMap;
use async_graphql::registry::Registry;
use async_graphql::resolver_utils::ContainerType;
use async_graphql::{
    Context, ContextSelectionSet, OutputType, Positioned, ServerError, ServerResult, SimpleObject,
    Value,
};

use crate::api::args::list_args;
use crate::api::registry::{meta_field, register_object};
use crate::api::request;
use crate::api::resolve::{Resolved, output, reads_flagged, server_error};
use crate::engine::related::{self, Related};
use crate::engine::{Request, read};
use crate::model::{ApiError, ModelMeta, Record, ServiceDef, Visitor};
use crate::query::{Cond, Page};
use crate::storage::Row;

/// `PageInfo` (reference §3.1).
#[derive(Debug, Clone, SimpleObject)]
#[graphql(name = "PageInfo")]
pub struct PageInfo {
    #[graphql(name = "hasNextPage")]
    has_next_page: bool,
    #[graphql(name = "hasPreviousPage")]
    has_previous_page: bool,
    #[graphql(name = "startCursor")]
    start_cursor: Option<String>,
    #[graphql(name = "endCursor")]
    end_cursor: Option<String>,
}

/// Registers `<Type>Connection` and `<Type>Edge` of `meta`'s model (and `PageInfo`); the
/// connection type's name.
pub(crate) fn register_connection(registry: &mut Registry, meta: &ModelMeta) -> String {
    let node = meta.name;
    let edge = register_object(registry, svc_names::edge_type(node), |_| {
        IndexMap::from([
            (
                "node".to_owned(),
                meta_field("node", format!("{node}!"), IndexMap::new(), None),
            ),
            (
                "cursor".to_owned(),
                meta_field("cursor", "String!".to_owned(), IndexMap::new(), None),
            ),
        ])
    });
    register_object(registry, svc_names::connection_type(node), |registry| {
        let page_info = <PageInfo as OutputType>::create_type_info(registry);
        IndexMap::from([
            (
                "pageInfo".to_owned(),
                meta_field("pageInfo", page_info, IndexMap::new(), None),
            ),
            (
                "edges".to_owned(),
                meta_field("edges", format!("[{edge}]"), IndexMap::new(), None),
            ),
            (
                "count".to_owned(),
                meta_field("count", "Int!".to_owned(), IndexMap::new(), None),
            ),
        ])
    })
}

/// Where a connection's nodes come from.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Source<'a> {
    /// `Viewer.all<Plural>`: every node of the model.
    Root,
    /// A to-many relation field of one node.
    Related(Related<'a>),
}

/// A page of nodes of `R` as a connection.
struct Connection<R> {
    nodes: Vec<R>,
    info: PageInfo,
    /// What `count` counts: the filter, and the relation field the nodes are read through.
    filter: Option<Cond>,
    related: Option<(&'static ModelMeta, String, usize)>,
}

/// One node of a connection (or of a mutation's payload).
pub(super) struct Edge<R>(pub(super) R);

/// The connection resolvers of every model, monomorphised for its record type, built once per
/// schema from [`ServiceDef::visit`] and kept in the schema's data.
pub struct Connections {
    models: Vec<(&'static ModelMeta, ConnectionFn, EdgeFn)>,
}

type ConnectionFn = for<'a> fn(&'a Context<'a>, Source<'a>) -> Resolved<'a>;
type EdgeFn = for<'a> fn(&'a Context<'a>, Option<&'a Row>) -> Resolved<'a>;

impl std::fmt::Debug for Connections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connections").finish_non_exhaustive()
    }
}

impl Connections {
    /// The connection resolvers of every model of the service `S`, collected by visiting its
    /// records.
    pub fn of<S: ServiceDef>() -> Arc<Connections> {
        struct Collect(Vec<(&'static ModelMeta, ConnectionFn, EdgeFn)>);
        impl Visitor for Collect {
            fn record<R: Record + OutputType>(&mut self) {
                self.0.push((R::META, connection::<R>, edge_row::<R>));
            }
            fn relation<const R: usize>(&mut self) {}
        }
        let mut collect = Collect(Vec::new());
        S::visit(&mut collect);
        Arc::new(Connections { models: collect.0 })
    }
}

/// The connection and edge resolvers of `meta`'s model.
fn resolvers(ctx: &Context<'_>, meta: &ModelMeta) -> ServerResult<(ConnectionFn, EdgeFn)> {
    ctx.data_opt::<Arc<Connections>>()
        .and_then(|c| c.models.iter().find(|(m, ..)| std::ptr::eq(*m, meta)))
        .map(|(_, c, e)| (*c, *e))
        .ok_or_else(|| ServerError::new(format!("no connections for `{}`", meta.name), None))
}

/// Resolves the current field as a connection of `meta`'s nodes from `source`.
pub(crate) async fn resolve_connection(
    ctx: &Context<'_>,
    meta: &ModelMeta,
    source: Source<'_>,
) -> ServerResult<Option<Value>> {
    let (resolve, _) = resolvers(ctx, meta)?;
    resolve(ctx, source).await
}

/// Resolves the current field as the edge of a node of `meta` read earlier in the request (a
/// relation mutation's payload); null without the node.
pub(crate) async fn resolve_edge_row(
    ctx: &Context<'_>,
    meta: &ModelMeta,
    row: Option<&Row>,
) -> ServerResult<Option<Value>> {
    let (_, resolve) = resolvers(ctx, meta)?;
    resolve(ctx, row).await
}

fn edge_row<'a, R: Record + OutputType>(
    ctx: &'a Context<'a>,
    row: Option<&'a Row>,
) -> Resolved<'a> {
    Box::pin(async move {
        let edge = row.map(|row| R::decode(row).map(Edge)).transpose();
        output(ctx, edge.map_err(|e| server_error(ctx, ApiError::from(e)))).await
    })
}

fn connection<'a, R: Record + OutputType>(
    ctx: &'a Context<'a>,
    source: Source<'a>,
) -> Resolved<'a> {
    Box::pin(async move {
        let conn = async {
            let req = request(ctx)?;
            let fail = |e| server_error(ctx, e);
            let page = list_args::<R>(ctx, true)?.page(R::META).map_err(fail)?;
            read_connection::<R>(ctx, req, source, page)
                .await
                .map_err(fail)
        };
        output(ctx, conn.await).await
    })
}

/// Reads the page with its probe node and makes the connection.
async fn read_connection<R: Record>(
    ctx: &Context<'_>,
    req: &Arc<Request>,
    source: Source<'_>,
    page: Page,
) -> Result<Connection<R>, ApiError> {
    let filter = page.filter.clone();
    let flags = needs_flags::<R>(ctx, req);
    let mut nodes = match source {
        Source::Root => read::list::<R>(req, page.probe(), flags).await?,
        Source::Related(at) => related::page::<R>(req, at, page.probe(), flags).await?,
    };
    let (has_next_page, has_previous_page) = page.trim_probe(&mut nodes);
    let info = PageInfo {
        has_next_page,
        has_previous_page,
        start_cursor: nodes.first().map(|n| n.id().to_owned()),
        end_cursor: nodes.last().map(|n| n.id().to_owned()),
    };
    let related = match source {
        Source::Root => None,
        Source::Related(at) => Some((at.owner, at.parent.to_owned(), at.field)),
    };
    Ok(Connection {
        nodes,
        info,
        filter,
        related,
    })
}

/// Whether the nodes' selection (`edges { node { … } }`) reads a field only a permission query
/// can grant the requester: the read queries are then evaluated with the nodes.
fn needs_flags<R: Record>(ctx: &Context<'_>, req: &Request) -> bool {
    let field = ctx.field();
    let mut fields = Vec::new();
    for edges in field.selection_set().filter(|f| f.name() == "edges") {
        for node in edges.selection_set().filter(|f| f.name() == "node") {
            fields.extend(node.selection_set().map(|f| f.name()));
        }
    }
    reads_flagged::<R>(req, fields.into_iter())
}

/// The output type of a connection or an edge of nodes of `R`: named by `$name`, registered
/// from the data tables with the connection ([`register_connection`]), resolved field by field.
macro_rules! node_container {
    ($ty:ident, $name:path) => {
        impl<R: Record + OutputType> OutputType for $ty<R> {
            fn type_name() -> Cow<'static, str> {
                Cow::Owned($name(R::META.name))
            }

            fn create_type_info(registry: &mut Registry) -> String {
                register_connection(registry, R::META);
                $name(R::META.name)
            }

            async fn resolve(
                &self,
                ctx: &ContextSelectionSet<'_>,
                _field: &Positioned<async_graphql::parser::types::Field>,
            ) -> ServerResult<Value> {
                async_graphql::resolver_utils::resolve_container(ctx, self).await
            }
        }

        impl<R: Record + OutputType> async_graphql::ObjectType for $ty<R> {}
    };
}

node_container!(Connection, svc_names::connection_type);
node_container!(Edge, svc_names::edge_type);

impl<R: Record + OutputType> ContainerType for Connection<R> {
    async fn resolve_field(&self, ctx: &Context<'_>) -> ServerResult<Option<Value>> {
        match ctx.item.node.name.node.as_str() {
            "pageInfo" => output(ctx, Ok(self.info.clone())).await,
            "edges" => {
                let edges: Vec<Edge<R>> = self.nodes.iter().cloned().map(Edge).collect();
                output(ctx, Ok(edges)).await
            }
            "count" => {
                let count = async {
                    let req = request(ctx)?;
                    let filter = self.filter.clone();
                    let count = match &self.related {
                        None => read::count(req, R::META, filter.as_ref()).await,
                        Some((owner, parent, field)) => {
                            let at = Related {
                                owner,
                                parent,
                                field: *field,
                            };
                            related::count(req, at, filter).await
                        }
                    };
                    count.map_err(|e| server_error(ctx, e))
                };
                output(ctx, count.await).await
            }
            _ => Ok(None),
        }
    }
}

impl<R: Record + OutputType> ContainerType for Edge<R> {
    async fn resolve_field(&self, ctx: &Context<'_>) -> ServerResult<Option<Value>> {
        match ctx.item.node.name.node.as_str() {
            "node" => output(ctx, Ok(&self.0)).await,
            "cursor" => Ok(Some(Value::String(self.0.id().to_owned()))),
            _ => Ok(None),
        }
    }
}
