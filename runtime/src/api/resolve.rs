//! Resolving the fields that return nodes of one model: a table of entry points monomorphised for
//! the model's record type ([`Ops`]), reached through [`Tables`] by code that only has the model's
//! data table (a root field, a relation field, a relation payload). Each reads its arguments,
//! asks the engine, and outputs what it returns against the field's selection.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_graphql::{Context, ID, OutputType, ServerError, ServerResult, Value};

use super::args::{
    arg, filter_arg, list_args, parse_input, raw_arg, update_input, value_arg, write_args,
};
use super::guard::allow_payload;
use super::{BatchPayload, QueryMeta, request};
use crate::auth::Principal;
use crate::engine::related::{self, Related};
use crate::engine::write::payload_fields;
use crate::engine::{Request, read, write};
use crate::model::{ApiError, ModelMeta, Record, ServiceDef, Visitor, Write};
use crate::query::ListArgs;
use crate::storage::Row;

/// The future of a field resolution: the field's value, `None` when the field is unknown.
pub type Resolved<'a> = Pin<Box<dyn Future<Output = ServerResult<Option<Value>>> + Send + 'a>>;

/// A model's entry points, monomorphised for its record type.
pub struct Ops {
    /// Resolves a field that returns nodes of this model (or facts about them).
    pub resolve: for<'a> fn(&'a Context<'a>, Call<'a>) -> Resolved<'a>,
}

impl fmt::Debug for Ops {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ops").finish_non_exhaustive()
    }
}

/// The entry points of every model of a service, in the order of its data tables, built once
/// per schema from [`ServiceDef::visit`] and kept in the schema's data.
#[derive(Debug)]
pub struct Tables {
    models: Vec<(&'static ModelMeta, Ops)>,
}

impl Tables {
    /// The entry points of every model of the service `S`, collected by visiting its records.
    pub fn of<S: ServiceDef>() -> Arc<Tables> {
        struct Collect(Vec<(&'static ModelMeta, Ops)>);
        impl Visitor for Collect {
            fn record<R: Record + OutputType>(&mut self) {
                self.0.push((
                    R::META,
                    Ops {
                        resolve: resolve::<R>,
                    },
                ));
            }
            fn relation<const R: usize>(&mut self) {}
        }
        let mut collect = Collect(Vec::new());
        S::visit(&mut collect);
        Arc::new(Tables { models: collect.0 })
    }

    /// The entry points of `meta`'s model.
    pub fn ops(&self, meta: &ModelMeta) -> ServerResult<&Ops> {
        self.models
            .iter()
            .find(|(m, _)| std::ptr::eq(*m, meta))
            .map(|(_, ops)| ops)
            .ok_or_else(|| ServerError::new(format!("no entry points for `{}`", meta.name), None))
    }
}

/// Resolves `call` for the model `meta` (through its [`Ops`]).
pub(crate) async fn resolve_model(
    ctx: &Context<'_>,
    meta: &ModelMeta,
    call: Call<'_>,
) -> ServerResult<Option<Value>> {
    let tables = ctx
        .data_opt::<Arc<Tables>>()
        .ok_or_else(|| ServerError::new("the schema has no entry point tables", None))?;
    (tables.ops(meta)?.resolve)(ctx, call).await
}

/// A field that returns nodes of one model, with the context its arguments are read from.
#[derive(Debug, Clone, Copy)]
pub enum Call<'a> {
    /// `all<Plural>(…)`.
    All,
    /// `_all<Plural>Meta(…)`.
    Count,
    /// `<Type>(<unique field>: …)`.
    One,
    /// `Some<Type>Exists(…)` of the permission schema.
    SomeExists,
    /// `user`: the node of the request's node token.
    CurrentUser,
    /// `create<Type>(…)`.
    Create,
    /// `update<Type>(id, …)`.
    Update,
    /// `updateOrCreate<Type>(update, create)`.
    UpdateOrCreate,
    /// `delete<Type>(id)`.
    Delete,
    /// `deleteMany<Plural>(filter)`.
    DeleteMany,
    /// `updateMany<Plural>(filter, data)`.
    UpdateMany,
    /// `node(id)`, once the model of the id is known.
    Node(&'a str),
    /// A node read earlier in the request (the nodes of a relation mutation's payload).
    Row(Option<&'a Row>),
    /// The relation field `field` of the node `id` of `parent`; `count` for its
    /// `_<field>Meta`.
    Related {
        /// The model of the node the field belongs to.
        parent: &'static ModelMeta,
        /// The id of the node the field belongs to.
        id: &'a str,
        /// The relation field: an index into `parent.relations`.
        field: usize,
        /// Whether this is the field's `_<field>Meta` (a count) rather than its nodes.
        count: bool,
    },
}

fn resolve<'a, R: Record + OutputType>(ctx: &'a Context<'a>, call: Call<'a>) -> Resolved<'a> {
    Box::pin(async move {
        let req = match request(ctx) {
            Ok(req) => req,
            Err(e) => return Err(ctx.set_error_path(e)),
        };
        match call {
            Call::Node(id) => {
                let node = read::by_id::<R>(req, id).await;
                output(ctx, node.map_err(|e| server_error(ctx, e))).await
            }
            Call::Row(row) => {
                let node = row.map(|row| R::decode(row)).transpose();
                output(ctx, node.map_err(|e| server_error(ctx, ApiError::from(e)))).await
            }
            Call::Related {
                parent,
                id,
                field,
                count,
            } => related_field::<R>(ctx, req, parent, id, field, count).await,
            Call::All | Call::Count | Call::One | Call::SomeExists | Call::CurrentUser => {
                query::<R>(ctx, req, call).await
            }
            _ => mutation::<R>(ctx, req, call).await,
        }
    })
}

/// The root query fields that return nodes of `R` (or facts about them). Errors before the
/// output (arguments, the engine's) take the field's path in [`output`].
async fn query<R: Record + OutputType>(
    ctx: &Context<'_>,
    req: &Arc<Request>,
    call: Call<'_>,
) -> ServerResult<Option<Value>> {
    let meta = R::META;
    let fail = |e| server_error(ctx, e);
    match call {
        Call::All => {
            let nodes = async {
                let page = list_args::<R>(ctx, true)?.page(meta).map_err(fail)?;
                let flags = needs_flags::<R>(ctx, req);
                read::list::<R>(req, page, flags).await.map_err(fail)
            };
            output(ctx, nodes.await).await
        }
        Call::Count => {
            let count = async {
                let filter = list_args::<R>(ctx, true)?.count_filter().map_err(fail)?;
                let count = read::count(req, meta, filter.as_ref())
                    .await
                    .map_err(fail)?;
                Ok(QueryMeta { count })
            };
            output(ctx, count.await).await
        }
        Call::One => {
            let node = async {
                let mut candidates = Vec::new();
                for (i, f) in meta.unique_fields() {
                    candidates.push((i, value_arg(ctx, f.name, f)?));
                }
                read::one::<R>(req, &candidates).await.map_err(fail)
            };
            output(ctx, node.await).await
        }
        Call::SomeExists => {
            let exists = async {
                let page = list_args::<R>(ctx, false)?.page(meta).map_err(fail)?;
                read::some_exists(req, meta, &page).await.map_err(fail)
            };
            output(ctx, exists.await).await
        }
        _ => {
            // `user`: the node of the request's node token, when the token is for `R`.
            let node = match req.principal() {
                Principal::User { id, model } if model == meta.name => {
                    read::by_id::<R>(req, id).await.map_err(fail)
                }
                _ => Ok(None),
            };
            output(ctx, node).await
        }
    }
}

/// The mutation fields that write nodes of `R`.
async fn mutation<R: Record + OutputType>(
    ctx: &Context<'_>,
    req: &Arc<Request>,
    call: Call<'_>,
) -> ServerResult<Option<Value>> {
    let meta = R::META;
    let fail = |e| server_error(ctx, e);
    match call {
        Call::Create | Call::Update => {
            let node = async {
                let id = match call {
                    Call::Update => Some(arg::<ID>(ctx, "id")?),
                    _ => None,
                };
                let args = write_args(ctx, meta)?;
                allow_payload(ctx, payload_fields(meta, &args));
                let node = match id {
                    Some(id) => write::update::<R>(req, &id, args).await,
                    None => write::create::<R>(req, args).await,
                };
                node.map(Some).map_err(fail)
            };
            output(ctx, node.await).await
        }
        Call::UpdateOrCreate => {
            let node = async {
                let (id, update) = update_input(ctx, meta)?;
                let create = match raw_arg(ctx, "create")? {
                    Some((pos, value)) => parse_input(meta, &value, None, pos, || {
                        svc_names::create_input(meta.name)
                    })?,
                    None => Write::default(),
                };
                let fields = (payload_fields(meta, &update), payload_fields(meta, &create));
                let (node, created) = write::update_or_create::<R>(req, &id, update, create)
                    .await
                    .map_err(fail)?;
                allow_payload(ctx, if created { fields.1 } else { fields.0 });
                Ok(Some(node))
            };
            output(ctx, node.await).await
        }
        Call::Delete => {
            let node = async {
                let id = arg::<ID>(ctx, "id")?;
                allow_payload(ctx, vec![meta.fields[meta.id].name]);
                write::delete::<R>(req, &id).await.map(Some).map_err(fail)
            };
            output(ctx, node.await).await
        }
        Call::DeleteMany => {
            let count = async {
                let filter = filter_arg::<R>(ctx)?;
                let count = write::delete_many(req, meta, filter).await.map_err(fail)?;
                Ok(BatchPayload { count })
            };
            output(ctx, count.await).await
        }
        _ => {
            let count = async {
                let filter = filter_arg::<R>(ctx)?;
                let data = match raw_arg(ctx, "data")? {
                    Some((pos, value)) => {
                        parse_input(meta, &value, None, pos, || {
                            svc_names::update_many_data(meta.name)
                        })?
                        .values
                    }
                    None => Vec::new(),
                };
                let count = write::update_many(req, meta, filter, data)
                    .await
                    .map_err(fail)?;
                Ok(BatchPayload { count })
            };
            output(ctx, count.await).await
        }
    }
}

/// A relation field of the node `id` of `parent` whose related nodes are of `R`.
async fn related_field<R: Record + OutputType>(
    ctx: &Context<'_>,
    req: &Arc<Request>,
    parent: &'static ModelMeta,
    id: &str,
    field: usize,
    count: bool,
) -> ServerResult<Option<Value>> {
    let rel = &parent.relations[field];
    let at = Related {
        owner: parent,
        parent: id,
        field,
    };
    let fail = |e| server_error(ctx, e);
    if count {
        let count = async {
            let filter = list_args::<R>(ctx, true)?.count_filter().map_err(fail)?;
            let count = related::count(req, at, filter).await.map_err(fail)?;
            Ok(QueryMeta { count })
        };
        return output(ctx, count.await).await;
    }
    let flags = needs_flags::<R>(ctx, req);
    if rel.list {
        let nodes = async {
            let page = list_args::<R>(ctx, true)?.page(R::META).map_err(fail)?;
            let nodes = related::page::<R>(req, at, page, flags).await;
            nodes.map(Some).map_err(fail)
        };
        return output(ctx, nodes.await).await;
    }
    // A to-one field: its page is its filter alone, and holds its one node or none.
    let node = async {
        let page = ListArgs::filtered(filter_arg::<R>(ctx)?)
            .page(R::META)
            .map_err(fail)?;
        let nodes = related::page::<R>(req, at, page, flags)
            .await
            .map_err(fail)?;
        Ok(nodes.into_iter().next())
    };
    let node = match node.await {
        Ok(node) => node,
        Err(e) => return Err(ctx.set_error_path(e)),
    };
    match node {
        None if rel.required => {
            let missing = ApiError::Internal(format!(
                "the required field `{}` of `{}` {id} has no node",
                rel.name, parent.name
            ));
            output::<R>(ctx, Err(fail(missing))).await
        }
        node => output(ctx, Ok(node)).await,
    }
}

/// Whether the selection of the current field (nodes of `R`) reads a field only a permission
/// query can grant the requester: the read queries are then evaluated with the nodes.
fn needs_flags<R: Record>(ctx: &Context<'_>, req: &Request) -> bool {
    reads_flagged::<R>(req, ctx.field().selection_set().map(|f| f.name()))
}

/// Whether `fields` (fields of nodes of `R` a selection reads) hold one only a permission query
/// can grant the requester.
pub(crate) fn reads_flagged<'a, R: Record>(
    req: &Request,
    mut fields: impl Iterator<Item = &'a str>,
) -> bool {
    let principal = req.principal();
    if principal.is_admin() {
        return false;
    }
    let Some(rules) = req.state().reads.of(R::META, principal) else {
        return false;
    };
    fields.any(|f| rules.needs_flags(f))
}

/// An engine error as the field's error.
pub(crate) fn server_error(ctx: &Context<'_>, err: ApiError) -> ServerError {
    async_graphql::Error::from(err).into_server_error(ctx.item.pos)
}

/// Outputs a field's value against the field's selection set, as derived resolvers do.
pub(crate) async fn output<T: OutputType>(
    ctx: &Context<'_>,
    value: ServerResult<T>,
) -> ServerResult<Option<Value>> {
    let value = value.map_err(|e| ctx.set_error_path(e))?;
    let ctx_obj = ctx.with_selection_set(&ctx.item.node.selection_set);
    OutputType::resolve(&value, &ctx_obj, ctx.item)
        .await
        .map(Some)
}
