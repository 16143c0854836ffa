//! Read permissions, per node and per scalar field (reference §5.3 "read"): a forbidden field
//! resolves to 3008 `Insufficient Permissions` at its path; nodes are never dropped.
//!
//! Every model type carries [`ReadGuard`] as its field guard. A field passes at once when an
//! applicable query-less read permission covers it, or when it is whitelisted in the payload of
//! the mutation that just wrote the node. Otherwise the node's id joins the request's read batch
//! ([`ReadChecks`], led like the relation batches): one statement per model evaluates every
//! applicable read query for all nodes of the batch.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use async_graphql::{Context, Guard, QueryPathSegment, Value};
use tokio::sync::OnceCell;

use super::eval::{self, Bind};
use super::{Perms, covers};
use crate::auth::{Principal, principal};
use crate::error::ApiError;
use crate::meta::{ModelMeta, Operation, PermissionMeta, PermissionQuery, ServiceMeta, VarSource};
use crate::record::Record;
use crate::related::{RelLoaders, settle};
use crate::storage::Exec;

const READ_DENIED: &str = "Insufficient Permissions";

/// The field guard of every model type: `#[graphql(guard = "ReadGuard(self)")]`.
pub struct ReadGuard<'a, R>(pub &'a R);

impl<R: Record> Guard for ReadGuard<'_, R> {
    async fn check(&self, ctx: &Context<'_>) -> async_graphql::Result<()> {
        let perms = Perms::of(ctx);
        if perms.bypass() {
            return Ok(());
        }
        let field = ctx.item.node.name.node.as_str();
        let reads = perms.type_perms(R::META, Operation::Read);
        if reads.iter().any(|p| p.query.is_none() && covers(p, field)) {
            return Ok(());
        }
        if whitelisted(ctx, field) {
            return Ok(());
        }
        let queries: Vec<&PermissionMeta> = reads
            .iter()
            .copied()
            .filter(|p| p.query.is_some())
            .collect();
        if !queries.iter().any(|p| covers(p, field)) {
            return Err(denied());
        }
        let Some(loaders) = ctx.data_opt::<Arc<RelLoaders>>() else {
            return Err(denied());
        };
        let flags = loaders
            .checks
            .load(loaders, R::META, self.0.id(), principal(ctx))
            .await?;
        if queries
            .iter()
            .zip(flags.iter())
            .any(|(p, granted)| *granted && covers(p, field))
        {
            Ok(())
        } else {
            Err(denied())
        }
    }
}

fn denied() -> async_graphql::Error {
    ApiError::InsufficientPermissions(READ_DENIED).into()
}

/// Whether `field` is in the payload whitelist of the mutation whose top-level node holds it.
fn whitelisted(ctx: &Context<'_>, field: &str) -> bool {
    // The payload node's fields sit at `[<root response key>, <field>]`.
    let Some(node) = ctx.path_node else {
        return false;
    };
    let Some(parent) = node.parent else {
        return false;
    };
    let (QueryPathSegment::Name(root), None) = (parent.segment, parent.parent) else {
        return false;
    };
    ctx.data_opt::<Arc<RelLoaders>>().is_some_and(|l| {
        l.checks
            .lock_whitelist()
            .iter()
            .any(|(key, fields)| key == root && fields.contains(&field))
    })
}

/// Records the payload whitelist of the mutation resolving now: the fields given as arguments,
/// plus `id` (reference §5.3, `MutationQueryWhitelist`).
pub(crate) fn allow_payload(ctx: &Context<'_>, fields: Vec<&'static str>) {
    let Some(QueryPathSegment::Name(key)) = ctx.path_node.map(|n| n.segment) else {
        return;
    };
    if let Some(loaders) = ctx.data_opt::<Arc<RelLoaders>>() {
        let mut list = loaders.checks.lock_whitelist();
        list.retain(|(k, _)| k != key);
        list.push((key.to_owned(), fields));
    }
}

type Flags = Arc<Vec<bool>>;
/// Per model name, per node id: one flag per applicable read query.
type Found = HashMap<&'static str, HashMap<String, Flags>>;

/// The nodes of one batch and, once it ran, the flags of every node.
#[derive(Default)]
struct Batch {
    ids: Mutex<BTreeMap<&'static str, (&'static ModelMeta, BTreeSet<String>)>>,
    result: OnceCell<Result<Found, async_graphql::Error>>,
}

impl Batch {
    fn lock(
        &self,
    ) -> MutexGuard<'_, BTreeMap<&'static str, (&'static ModelMeta, BTreeSet<String>)>> {
        self.ids.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn len(&self) -> usize {
        self.lock().values().map(|(_, ids)| ids.len()).sum()
    }
}

/// The per-request read batch (part of [`RelLoaders`]). Every check of a round joins the
/// current batch; the first one to await it leads: it waits until the round adds no node, opens
/// a new batch for later checks, and runs one statement per model. Should the leader be
/// cancelled, the next waiter leads (the batch keeps its nodes).
#[derive(Default)]
pub struct ReadChecks {
    current: Mutex<Arc<Batch>>,
    whitelist: Mutex<Vec<(String, Vec<&'static str>)>>,
}

impl ReadChecks {
    fn lock_whitelist(&self) -> MutexGuard<'_, Vec<(String, Vec<&'static str>)>> {
        self.whitelist.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The flags of the model's applicable read queries for node `id` (in the order of
    /// `Perms::type_perms`).
    async fn load(
        &self,
        loaders: &RelLoaders,
        model: &'static ModelMeta,
        id: &str,
        principal: &Principal,
    ) -> Result<Flags, async_graphql::Error> {
        let batch = {
            let current = self.current.lock().unwrap_or_else(|e| e.into_inner());
            let mut ids = current.lock();
            let (_, set) = ids
                .entry(model.name)
                .or_insert_with(|| (model, BTreeSet::new()));
            if !set.contains(id) {
                set.insert(id.to_owned());
            }
            drop(ids);
            Arc::clone(&current)
        };
        let found = batch
            .result
            .get_or_init(|| self.lead(loaders, &batch, principal))
            .await
            .as_ref()
            .map_err(Clone::clone)?;
        Ok(found
            .get(model.name)
            .and_then(|m| m.get(id))
            .cloned()
            .unwrap_or_else(|| Arc::new(Vec::new())))
    }

    async fn lead(
        &self,
        loaders: &RelLoaders,
        batch: &Arc<Batch>,
        principal: &Principal,
    ) -> Result<Found, async_graphql::Error> {
        settle(|| batch.len()).await;
        {
            let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
            if Arc::ptr_eq(&current, batch) {
                *current = Arc::new(Batch::default());
            }
        }
        let groups: Vec<(&'static ModelMeta, Vec<String>)> = batch
            .lock()
            .values()
            .map(|(model, ids)| (*model, ids.iter().cloned().collect()))
            .collect();
        let state = loaders.state();
        let mut found = Found::new();
        for (model, ids) in groups {
            let exec = Exec {
                conn: state.db.reader(),
                counter: loaders.counter(),
            };
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            let flags = evaluate(&exec, state.service, model, &ids, principal).await?;
            found.insert(model.name, flags);
        }
        Ok(found)
    }
}

/// One statement: every applicable read query of `model` for every node of the batch.
async fn evaluate(
    exec: &Exec<'_, sea_orm::DatabaseConnection>,
    service: &'static ServiceMeta,
    model: &'static ModelMeta,
    ids: &[&str],
    principal: &Principal,
) -> Result<HashMap<String, Flags>, async_graphql::Error> {
    let perms = Perms::new(principal, service);
    let queries: Vec<&PermissionQuery> = perms
        .type_perms(model, Operation::Read)
        .iter()
        .filter_map(|p| p.query)
        .collect();
    let user = Value::String(principal.user_id().to_owned());
    let bind = |src: VarSource| match src {
        VarSource::UserId => Bind::Const(user.clone()),
        VarSource::NodeId => Bind::OuterId,
        VarSource::NodeField(f) => Bind::OuterField(f),
        _ => Bind::Const(Value::Null),
    };
    let found = eval::for_nodes(exec, service, &queries, model, ids, &bind).await?;
    Ok(found
        .into_iter()
        .map(|(id, flags)| (id, Arc::new(flags)))
        .collect())
}
