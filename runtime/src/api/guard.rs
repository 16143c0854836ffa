//! Read permissions on model types (reference §5.3 "read"): a forbidden field resolves to 3008
//! `Insufficient Permissions` at its path; nodes are never dropped.
//!
//! Every model type carries [`ReadGuard`] as its field guard. A field passes at once when an
//! applicable query-less read permission covers it, or when it is whitelisted in the payload of
//! the mutation that just wrote the node (`allow_payload`). Otherwise the node's flags decide:
//! read with the node by the statement that read it, or evaluated in the request's batch of
//! read checks (`engine/checks.rs`).

use std::sync::{Mutex, MutexGuard};

use async_graphql::{Context, Guard, QueryPathSegment};

use super::request;
use crate::engine::checks;
use crate::model::{ApiError, Record};

const READ_DENIED: &str = "Insufficient Permissions";

/// The field guard of every model type: `#[graphql(guard = "ReadGuard(self)")]`.
pub struct ReadGuard<'a, R>(pub &'a R);

impl<R: Record> Guard for ReadGuard<'_, R> {
    async fn check(&self, ctx: &Context<'_>) -> async_graphql::Result<()> {
        let Ok(req) = request(ctx) else {
            return Err(denied());
        };
        let principal = req.principal();
        if principal.is_admin() {
            return Ok(());
        }
        let Some(rules) = req.state().reads.of(R::META, principal) else {
            return Err(denied());
        };
        let field = ctx.item.node.name.node.as_str();
        if rules.passes(field) || whitelisted(ctx, field, self.0.id()) {
            return Ok(());
        }
        if !rules.checkable(field) {
            return Err(denied());
        }
        let flags = checks::flags(req, R::META, self.0.id()).await?;
        if rules.granted(field, &flags) {
            Ok(())
        } else {
            Err(denied())
        }
    }
}

fn denied() -> async_graphql::Error {
    ApiError::InsufficientPermissions(READ_DENIED).into()
}

/// The payload whitelists of a request's mutations (reference §5.3, `MutationQueryWhitelist`):
/// per root response key, the fields its payload node may show whatever the read permissions,
/// and for the Relay API's payloads the node's id.
#[derive(Debug, Default)]
pub struct Whitelist(Mutex<Vec<Allowed>>);

/// The whitelist of one mutation.
#[derive(Debug)]
struct Allowed {
    /// The mutation's root response key.
    key: String,
    fields: Vec<&'static str>,
    /// The node written, when the payload holds it deeper than `[key, field]` (the Relay API's
    /// `post` and `edge { node }`): its fields are allowed wherever the payload shows it.
    node: Option<String>,
}

impl Whitelist {
    fn lock(&self) -> MutexGuard<'_, Vec<Allowed>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Whether `field` of the node `id` is in the payload whitelist of the mutation whose response
/// holds it.
fn whitelisted(ctx: &Context<'_>, field: &str, id: &str) -> bool {
    let Some(node) = ctx.path_node else {
        return false;
    };
    // The root response key, and whether the field sits at `[<root>, <field>]`.
    let mut root = &node;
    let mut depth = 1;
    while let Some(parent) = root.parent {
        root = parent;
        depth += 1;
    }
    let QueryPathSegment::Name(key) = root.segment else {
        return false;
    };
    ctx.data_opt::<Whitelist>().is_some_and(|list| {
        list.lock().iter().any(|a| {
            let at = match &a.node {
                Some(node) => node == id,
                None => depth == 2,
            };
            a.key == key && at && a.fields.contains(&field)
        })
    })
}

/// Records the payload whitelist of the mutation resolving now: the fields given as arguments,
/// plus `id`. The Simple API's payload is the node itself (`[<root>, <field>]`).
pub(crate) fn allow_payload(ctx: &Context<'_>, fields: Vec<&'static str>) {
    allow(ctx, fields, None);
}

/// [`allow_payload`] for a payload that holds the written node `id` deeper (the Relay API's).
pub(crate) fn allow_payload_node(ctx: &Context<'_>, fields: Vec<&'static str>, id: &str) {
    allow(ctx, fields, Some(id.to_owned()));
}

fn allow(ctx: &Context<'_>, fields: Vec<&'static str>, node: Option<String>) {
    let Some(QueryPathSegment::Name(key)) = ctx.path_node.map(|n| n.segment) else {
        return;
    };
    if let Some(list) = ctx.data_opt::<Whitelist>() {
        let mut list = list.lock();
        list.retain(|a| a.key != key);
        list.push(Allowed {
            key: key.to_owned(),
            fields,
            node,
        });
    }
}
