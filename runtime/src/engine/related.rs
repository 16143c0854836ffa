//! Relation fields of nodes: `author(filter)`, `posts(filter, orderBy, …)` and `_postsMeta(…)`,
//! read in batches so a nested selection costs one SQL statement per level and argument set,
//! however many parent nodes there are.
//!
//! Every request carries its own batch (`Loads`, led by [`super::batch`]); nothing is cached
//! between requests. A read is identified by a canonical text, so equal reads from different
//! parents land in one group, which one statement answers for all its parents.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use super::Request;
use super::batch::{Batch, Batched};
use crate::model::{ApiError, ApiResult, ModelMeta, PermissionQuery, Record, RelFieldMeta, get};
use crate::permissions::eval;
use crate::permissions::rules::binder;
use crate::query::relation::{by_parent, by_parent_count, count_statement, page_statement};
use crate::query::{Cond, Page};
use crate::storage::{Row, Sql};

/// What one relation read asks for.
#[derive(Debug)]
enum Spec {
    /// The related nodes, filtered, ordered and paginated.
    Page(Page),
    /// How many related nodes match the filter.
    Count(Option<Cond>),
}

/// A read through one relation field, identified by a canonical text so equal requests from
/// different parents land in one group.
#[derive(Debug)]
pub(crate) struct RelQuery {
    owner: &'static ModelMeta,
    field: usize,
    spec: Spec,
    /// Whether the read permission queries of the related nodes are read with them (the
    /// selection reads a field only a query can grant).
    flags: bool,
    canon: String,
}

impl RelQuery {
    fn new(owner: &'static ModelMeta, field: usize, spec: Spec, flags: bool) -> Arc<Self> {
        let canon = format!("{}.{}:{flags}:{spec:?}", owner.name, field);
        Arc::new(RelQuery {
            owner,
            field,
            spec,
            flags,
            canon,
        })
    }

    fn field(&self) -> &'static RelFieldMeta {
        &self.owner.relations[self.field]
    }
}

/// One parent's share of a batch.
#[derive(Debug, Clone)]
pub(crate) enum Loaded {
    Rows(Arc<Vec<Row>>),
    Count(i32),
}

/// The relation reads of a request waiting for the current batch.
pub(crate) type Loads = Batch<RelationReads>;

/// The relation reads of a request, batched.
pub(crate) struct RelationReads;

impl Batched for RelationReads {
    /// A read and the parent it is for.
    type Key = (Arc<RelQuery>, String);
    type Value = Loaded;

    fn batch(req: &Request) -> &Batch<Self> {
        &req.relations
    }

    /// One statement per distinct read, for all its parents (each once, in the order they came).
    async fn run(req: &Request, keys: &[Self::Key]) -> Vec<ApiResult<Loaded>> {
        // Each group's parents in the order they came, each once; the groups in the order of
        // their texts.
        let mut groups: BTreeMap<&str, (&Arc<RelQuery>, Vec<&str>)> = BTreeMap::new();
        let mut seen: HashSet<(&str, &str)> = HashSet::with_capacity(keys.len());
        for (query, parent) in keys {
            let (_, parents) = groups
                .entry(&query.canon)
                .or_insert_with(|| (query, Vec::new()));
            if seen.insert((&query.canon, parent)) {
                parents.push(parent);
            }
        }
        let mut results: HashMap<&str, ApiResult<HashMap<String, Loaded>>> = HashMap::new();
        for (canon, (query, parents)) in groups {
            results.insert(canon, run(req, query, &parents).await);
        }
        keys.iter()
            .map(|(query, parent)| match results.get(query.canon.as_str()) {
                Some(Ok(found)) => Ok(found.get(parent).cloned().unwrap_or(match query.spec {
                    Spec::Page(_) => Loaded::Rows(Arc::new(Vec::new())),
                    Spec::Count(_) => Loaded::Count(0),
                })),
                Some(Err(e)) => Err(e.clone()),
                None => Err(ApiError::Internal("a relation batch lost a query".into())),
            })
            .collect()
    }
}

/// One statement for every parent of a query.
async fn run(
    req: &Request,
    query: &RelQuery,
    parents: &[&str],
) -> ApiResult<HashMap<String, Loaded>> {
    Ok(match &query.spec {
        Spec::Page(page) => run_page(req, query.field(), page, parents, query.flags)
            .await?
            .into_iter()
            .map(|(parent, rows)| (parent, Loaded::Rows(Arc::new(rows))))
            .collect(),
        Spec::Count(filter) => {
            let sql = count_statement(req.db().backend(), query.field(), filter.as_ref(), parents);
            by_parent_count(req.reads().all(sql).await?)?
                .into_iter()
                .map(|(parent, count)| (parent, Loaded::Count(count)))
                .collect()
        }
    })
}

/// The page of related rows of every parent in `parents` (absent when it has none), in one
/// statement, with every column of the target in field order; with `flags`, the related nodes'
/// read-permission flags are read with them and remembered for the field guard.
async fn run_page(
    req: &Request,
    field: &RelFieldMeta,
    page: &Page,
    parents: &[&str],
    flags: bool,
) -> ApiResult<HashMap<String, Vec<Row>>> {
    let target = field.target;
    let state = req.state();
    let queries: Vec<&PermissionQuery> = match state.reads.of(target, req.principal()) {
        Some(rules) if flags => rules.queries().collect(),
        _ => Vec::new(),
    };
    let bind = binder(req.principal());
    let push_flags = |sql: &mut Sql| eval::push_flags(sql, state.service, &queries, target, &bind);
    let (sql, parent_col, flags_col) = page_statement(
        req.db().backend(),
        field,
        page,
        parents,
        (!queries.is_empty()).then_some(&push_flags as _),
        None,
    )?;
    let rows = req.reads().all(sql).await?;
    if !queries.is_empty() {
        let flags = rows
            .iter()
            .map(|row| {
                let id: String = get(row, target.id)?;
                Ok((id, eval::flags_at(row, flags_col, queries.len())?))
            })
            .collect::<ApiResult<_>>()?;
        req.checks.remember(target, flags);
    }
    by_parent(rows, parent_col, page)
}

/// A relation field of one node: the field `field` of the node `parent` of the model `owner`.
#[derive(Debug, Clone, Copy)]
pub struct Related<'a> {
    /// The model the relation field belongs to.
    pub owner: &'static ModelMeta,
    /// The id of the node whose field is read.
    pub parent: &'a str,
    /// The relation field: an index into `owner.relations`.
    pub field: usize,
}

/// The related nodes `page` selects through a relation field (a to-one field's page holds its
/// filter alone, and its one node or none); with `flags`, the related nodes' read-permission
/// flags are read with them (the selection reads a field only a permission query can grant).
pub async fn page<R: Record>(
    req: &Arc<Request>,
    at: Related<'_>,
    page: Page,
    flags: bool,
) -> ApiResult<Vec<R>> {
    // The node budget counts each field's nodes, also those of a read shared with other
    // fields (aliases of one relation field read once, and are returned once each).
    req.counter().within_budget()?;
    let query = RelQuery::new(at.owner, at.field, Spec::Page(page), flags);
    match Batch::<RelationReads>::load(req, (query, at.parent.to_owned())).await? {
        Loaded::Rows(rows) => {
            req.counter().read_nodes(rows.len())?;
            rows.iter()
                .map(|row| R::decode(row).map_err(ApiError::from))
                .collect()
        }
        Loaded::Count(_) => Err(ApiError::Internal("a page read returned a count".into())),
    }
}

/// `_<field>Meta(…) { count }` of a to-many relation field: how many related nodes match
/// `filter` (the other list arguments are accepted and ignored, as in the reference).
pub async fn count(req: &Arc<Request>, at: Related<'_>, filter: Option<Cond>) -> ApiResult<i32> {
    let query = RelQuery::new(at.owner, at.field, Spec::Count(filter), false);
    match Batch::<RelationReads>::load(req, (query, at.parent.to_owned())).await? {
        Loaded::Count(count) => Ok(count),
        Loaded::Rows(_) => Err(ApiError::Internal("a count returned rows".into())),
    }
}
