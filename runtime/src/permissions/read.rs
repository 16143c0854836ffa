//! Read permissions, per node and per scalar field (reference §5.3 "read"): a forbidden field
//! resolves to 3008 `Insufficient Permissions` at its path; nodes are never dropped.
//!
//! Every model type carries [`ReadGuard`] as its field guard. A field passes at once when an
//! applicable query-less read permission covers it, or when it is whitelisted in the payload of
//! the mutation that just wrote the node. Otherwise the node's id joins the request's read batch
//! ([`ReadChecks`], led like the relation batches): one statement per model evaluates every
//! applicable read query for all nodes of the batch.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_graphql::{Context, Guard, QueryPathSegment, Value};
use tokio::sync::oneshot;

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
            .load(loaders, R::META, self.0.id().to_owned(), principal(ctx))
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
type Reply = Result<Flags, async_graphql::Error>;

struct Waiter {
    model: &'static ModelMeta,
    id: String,
    reply: oneshot::Sender<Reply>,
}

#[derive(Default)]
struct Pending {
    waiters: Vec<Waiter>,
    /// Who the request acts for (one request, one principal).
    principal: Principal,
    led: bool,
}

/// The per-request read batch (part of [`RelLoaders`]).
#[derive(Default)]
pub struct ReadChecks {
    pending: Mutex<Pending>,
    whitelist: Mutex<Vec<(String, Vec<&'static str>)>>,
}

impl ReadChecks {
    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_whitelist(&self) -> std::sync::MutexGuard<'_, Vec<(String, Vec<&'static str>)>> {
        self.whitelist.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The flags of the model's applicable read queries for node `id` (in the order of
    /// `Perms::type_perms`), from the batch this call joins.
    async fn load(
        &self,
        loaders: &Arc<RelLoaders>,
        model: &'static ModelMeta,
        id: String,
        principal: &Principal,
    ) -> Reply {
        let (reply, answer) = oneshot::channel();
        let lead = {
            let mut pending = self.lock();
            pending.principal = principal.clone();
            pending.waiters.push(Waiter { model, id, reply });
            !std::mem::replace(&mut pending.led, true)
        };
        if lead {
            let loaders = Arc::clone(loaders);
            tokio::spawn(async move { loaders.checks.lead(&loaders).await });
        }
        answer
            .await
            .unwrap_or_else(|_| Err(ApiError::Internal("read check batch dropped".into()).into()))
    }

    async fn lead(&self, loaders: &RelLoaders) {
        settle(|| self.lock().waiters.len()).await;
        let (waiters, principal) = {
            let mut pending = self.lock();
            pending.led = false;
            (
                std::mem::take(&mut pending.waiters),
                pending.principal.clone(),
            )
        };
        let state = loaders.state();
        let mut groups: BTreeMap<&'static str, (&'static ModelMeta, Vec<&str>)> = BTreeMap::new();
        for w in &waiters {
            let group = groups.entry(w.model.name).or_insert((w.model, Vec::new()));
            if !group.1.contains(&w.id.as_str()) {
                group.1.push(&w.id);
            }
        }
        let mut results = BTreeMap::new();
        for (name, (model, ids)) in groups {
            let exec = Exec {
                conn: state.db.reader(),
                counter: loaders.counter(),
            };
            let found = evaluate(&exec, state.service, model, &ids, &principal).await;
            results.insert(name, found);
        }
        for w in waiters {
            let reply = match results.get(w.model.name) {
                Some(Ok(found)) => Ok(found
                    .get(&w.id)
                    .cloned()
                    .unwrap_or_else(|| Arc::new(Vec::new()))),
                Some(Err(e)) => Err(e.clone()),
                None => Err(ApiError::Internal("read check batch lost a model".into()).into()),
            };
            let _ = w.reply.send(reply);
        }
    }
}

/// One statement: every applicable read query of `model` for every node of the batch.
async fn evaluate(
    exec: &Exec<'_, sea_orm::DatabaseConnection>,
    service: &'static ServiceMeta,
    model: &'static ModelMeta,
    ids: &[&str],
    principal: &Principal,
) -> Result<BTreeMap<String, Flags>, async_graphql::Error> {
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
