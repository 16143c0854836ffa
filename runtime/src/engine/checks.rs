//! Read-permission checks of single nodes (reference §5.3 "read"), batched per request: every
//! node whose field needs a permission query joins the request's current batch, and one statement
//! per model evaluates every applicable read query for all nodes of the batch. Nodes read by a
//! list statement carry their flags already (`ReadChecks::remember`) and need no statement.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use super::Request;
use super::batch::{Batch, Batched};
use crate::model::{ApiResult, ModelMeta, PermissionQuery};
use crate::permissions::eval;
use crate::permissions::rules::binder;

/// One flag per applicable read query of a node's model, in declaration order.
pub type Flags = Arc<Vec<bool>>;

/// Per model name, per node id: the node's flags.
type Found = HashMap<&'static str, HashMap<String, Flags>>;

/// The read checks of a request: the flags known so far, and the nodes waiting for a batch.
#[derive(Default)]
pub(crate) struct ReadChecks {
    batch: Batch<NodeChecks>,
    /// Flags read together with the nodes themselves (by list and relation statements).
    known: Mutex<Found>,
}

impl ReadChecks {
    fn lock_known(&self) -> MutexGuard<'_, Found> {
        self.known.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records the flags a list read fetched with its nodes.
    pub(crate) fn remember(&self, model: &'static ModelMeta, flags: Vec<(String, Vec<bool>)>) {
        let mut known = self.lock_known();
        let nodes = known.entry(model.name).or_default();
        for (id, flags) in flags {
            nodes.insert(id, Arc::new(flags));
        }
    }

    /// The flags of node `id` when a list read already fetched them.
    fn known(&self, model: &ModelMeta, id: &str) -> Option<Flags> {
        self.lock_known()
            .get(model.name)
            .and_then(|nodes| nodes.get(id))
            .cloned()
    }
}

/// The flags of the read queries that apply to the request's principal on `model`, for node
/// `id`: known already, or evaluated in the request's next batch of checks.
pub async fn flags(req: &Arc<Request>, model: &'static ModelMeta, id: &str) -> ApiResult<Flags> {
    match req.checks.known(model, id) {
        Some(flags) => Ok(flags),
        None => Batch::<NodeChecks>::load(req, (model, id.to_owned())).await,
    }
}

/// The checks of single nodes, batched.
pub(crate) struct NodeChecks;

impl Batched for NodeChecks {
    type Key = (&'static ModelMeta, String);
    type Value = Flags;

    fn batch(req: &Request) -> &Batch<Self> {
        &req.checks.batch
    }

    /// One statement per model, for every node of the batch.
    async fn run(req: &Request, keys: &[Self::Key]) -> Vec<ApiResult<Flags>> {
        let mut groups: BTreeMap<&str, (&'static ModelMeta, BTreeSet<&str>)> = BTreeMap::new();
        for (model, id) in keys {
            groups
                .entry(model.name)
                .or_insert_with(|| (model, BTreeSet::new()))
                .1
                .insert(id);
        }
        let mut found: HashMap<&str, ApiResult<HashMap<String, Flags>>> = HashMap::new();
        for (name, (model, ids)) in groups {
            let ids: Vec<&str> = ids.into_iter().collect();
            found.insert(name, evaluate(req, model, &ids).await);
        }
        keys.iter()
            .map(|(model, id)| match found.get(model.name) {
                Some(Ok(flags)) => Ok(flags
                    .get(id)
                    .cloned()
                    .unwrap_or_else(|| Arc::new(Vec::new()))),
                Some(Err(e)) => Err(e.clone()),
                None => Ok(Arc::new(Vec::new())),
            })
            .collect()
    }
}

/// One statement: every applicable read query of `model` for every node in `ids`.
async fn evaluate(
    req: &Request,
    model: &'static ModelMeta,
    ids: &[&str],
) -> ApiResult<HashMap<String, Flags>> {
    let state = req.state();
    let Some(rules) = state.reads.of(model, req.principal()) else {
        return Ok(HashMap::new());
    };
    let queries: Vec<&PermissionQuery> = rules.queries().collect();
    let found = eval::for_nodes(
        &req.reads(),
        state.service,
        &queries,
        model,
        ids,
        &binder(req.principal()),
    )
    .await?;
    Ok(found
        .into_iter()
        .map(|(id, flags)| (id, Arc::new(flags)))
        .collect())
}
