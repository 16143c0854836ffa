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
use super::{Perms, covers, model_index};
use crate::auth::{Principal, principal};
use crate::error::ApiError;
use crate::meta::{ModelMeta, Operation, PermissionMeta, PermissionQuery, ServiceMeta, VarSource};
use crate::record::Record;
use crate::related::{RelLoaders, settle};
use crate::state::State;
use crate::storage::Exec;

const READ_DENIED: &str = "Insufficient Permissions";

/// The field guard of every model type: `#[graphql(guard = "ReadGuard(self)")]`.
pub struct ReadGuard<'a, R>(pub &'a R);

impl<R: Record> Guard for ReadGuard<'_, R> {
    async fn check(&self, ctx: &Context<'_>) -> async_graphql::Result<()> {
        let principal = principal(ctx);
        if principal.is_admin() {
            return Ok(());
        }
        let Some(rules) = State::of(ctx).reads.of(R::META, principal) else {
            return Err(denied());
        };
        let field = ctx.item.node.name.node.as_str();
        if rules.passes(field) || whitelisted(ctx, field) {
            return Ok(());
        }
        if !rules.checkable(field) {
            return Err(denied());
        }
        let Some(loaders) = ctx.data_opt::<Arc<RelLoaders>>() else {
            return Err(denied());
        };
        let id = self.0.id();
        let flags = match loaders.checks.known(R::META, id) {
            Some(flags) => flags,
            None => loaders.checks.load(loaders, R::META, id, principal).await?,
        };
        if rules.granted(field, &flags) {
            Ok(())
        } else {
            Err(denied())
        }
    }
}

/// The read rules of one model for one kind of requester, worked out once at start.
#[derive(Debug, Default)]
pub(crate) struct ReadRules {
    /// An applicable `"*"` permission opens everything.
    bypass: bool,
    /// A query-less permission covers the whole type.
    all_free: bool,
    /// Fields covered by query-less permissions.
    free: Vec<&'static str>,
    /// The applicable permissions with a query, in declaration order (the order of the flags).
    queries: Vec<&'static PermissionMeta>,
}

impl ReadRules {
    fn new(perms: Perms<'_>, model: &'static ModelMeta) -> ReadRules {
        let reads = perms.type_perms(model, Operation::Read);
        let (free, queries): (Vec<_>, Vec<_>) = reads.into_iter().partition(|p| p.query.is_none());
        ReadRules {
            bypass: perms.bypass(),
            all_free: free.iter().any(|p| p.fields.is_none()),
            free: free
                .iter()
                .filter_map(|p| p.fields)
                .flatten()
                .copied()
                .collect(),
            queries,
        }
    }

    /// Whether `field` passes without evaluating any query.
    pub(crate) fn passes(&self, field: &str) -> bool {
        self.bypass || self.all_free || self.free.contains(&field)
    }

    /// Whether a permission query could grant `field`.
    fn checkable(&self, field: &str) -> bool {
        self.queries.iter().any(|p| covers(p, field))
    }

    /// Whether reading `field` needs the node's query flags.
    pub(crate) fn needs_flags(&self, field: &str) -> bool {
        !self.passes(field) && self.checkable(field)
    }

    /// Whether a query whose flag is set covers `field`.
    fn granted(&self, field: &str, flags: &[bool]) -> bool {
        self.queries
            .iter()
            .zip(flags)
            .any(|(p, granted)| *granted && covers(p, field))
    }

    /// The compiled queries, in the order of the flags.
    pub(crate) fn queries(&self) -> impl Iterator<Item = &'static PermissionQuery> + '_ {
        self.queries.iter().filter_map(|p| p.query)
    }
}

/// [`ReadRules`] per model, for anonymous and for authenticated requesters (what `authenticated:
/// true` tells apart). Admins never consult them.
#[derive(Debug)]
pub struct ReadTable {
    service: &'static ServiceMeta,
    rules: Vec<[ReadRules; 2]>,
}

impl ReadTable {
    pub fn new(service: &'static ServiceMeta) -> ReadTable {
        let anonymous = Principal::Anonymous;
        let member = Principal::User {
            id: String::new(),
            model: String::new(),
        };
        let rules = service
            .models
            .iter()
            .map(|m| {
                [
                    ReadRules::new(Perms::new(&anonymous, service), m),
                    ReadRules::new(Perms::new(&member, service), m),
                ]
            })
            .collect();
        ReadTable { service, rules }
    }

    /// The rules of `model` for `principal`.
    pub(crate) fn of(&self, model: &ModelMeta, principal: &Principal) -> Option<&ReadRules> {
        let i = model_index(self.service, model)?;
        Some(&self.rules[i][usize::from(principal.is_authenticated())])
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
    /// Flags read together with the nodes themselves (see [`crate::read`]'s list reads).
    known: Mutex<Found>,
}

impl ReadChecks {
    fn lock_known(&self) -> MutexGuard<'_, Found> {
        self.known.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The flags of node `id` when a list read already fetched them.
    fn known(&self, model: &ModelMeta, id: &str) -> Option<Flags> {
        self.lock_known()
            .get(model.name)
            .and_then(|nodes| nodes.get(id))
            .cloned()
    }

    /// Records the flags a list read fetched with its nodes.
    pub(crate) fn remember(&self, model: &'static ModelMeta, flags: Vec<(String, Vec<bool>)>) {
        let mut known = self.lock_known();
        let nodes = known.entry(model.name).or_default();
        for (id, flags) in flags {
            nodes.insert(id, Arc::new(flags));
        }
    }

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
            let flags = evaluate(&exec, state, model, &ids, principal).await?;
            found.insert(model.name, flags);
        }
        Ok(found)
    }
}

/// One statement: every applicable read query of `model` for every node of the batch.
async fn evaluate(
    exec: &Exec<'_, crate::storage::Conn>,
    state: &State,
    model: &'static ModelMeta,
    ids: &[&str],
    principal: &Principal,
) -> Result<HashMap<String, Flags>, async_graphql::Error> {
    let Some(rules) = state.reads.of(model, principal) else {
        return Ok(HashMap::new());
    };
    let queries: Vec<&PermissionQuery> = rules.queries().collect();
    let found = eval::for_nodes(
        exec,
        state.service,
        &queries,
        model,
        ids,
        &binder(principal),
    )
    .await?;
    Ok(found
        .into_iter()
        .map(|(id, flags)| (id, Arc::new(flags)))
        .collect())
}

/// How the variables of read queries are bound for `principal`.
pub(crate) fn binder(principal: &Principal) -> impl Fn(VarSource) -> Bind + Sync + use<> {
    let user = Value::String(principal.user_id().to_owned());
    move |src| match src {
        VarSource::UserId => Bind::Const(user.clone()),
        VarSource::NodeId => Bind::OuterId,
        VarSource::NodeField(f) => Bind::OuterField(f),
        _ => Bind::Const(Value::Null),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Ops;
    use crate::meta::{FieldMeta, Kind, PermissionTarget};
    use crate::storage::Backend;

    const fn field(name: &'static str) -> FieldMeta {
        FieldMeta::new(name, Kind::String)
    }

    /// The record type the table's entry points are monomorphised for.
    #[derive(Clone, async_graphql::SimpleObject)]
    struct Note {
        id: String,
    }

    impl Record for Note {
        const META: &'static ModelMeta = &NOTE;

        fn id(&self) -> &str {
            &self.id
        }

        fn decode(row: &crate::storage::Row, backend: Backend) -> Result<Self, sea_orm::DbErr> {
            Ok(Note {
                id: crate::record::get(row, 0, backend)?,
            })
        }
    }

    static NOTE: ModelMeta = ModelMeta {
        name: "Note",
        plural: "Notes",
        table: "Note",
        filter_name: "NoteFilter",
        order_by_name: "NoteOrderBy",
        fields: &[field("id"), field("text"), field("secret")],
        id: 0,
        created_at: 0,
        updated_at: 0,
        relations: &[],
        ops: &Ops::of::<Note>(),
    };

    static MODELS: [&ModelMeta; 1] = [&NOTE];

    const fn service(permissions: &'static [PermissionMeta]) -> ServiceMeta {
        ServiceMeta {
            name: "notes",
            models: &MODELS,
            relations: &[],
            root_tokens: &[],
            permissions,
            migration_hints: &[],
            enums: &[],
        }
    }

    const READ_TEXT: PermissionMeta = PermissionMeta {
        target: PermissionTarget::Type {
            model: 0,
            op: Operation::Read,
        },
        authenticated: false,
        fields: Some(&["id", "text"]),
        query: None,
    };

    /// `"*"` opens every field to the requesters it applies to, and only to them.
    #[test]
    fn everything_permission_opens_all_fields() {
        static OPEN_TO_MEMBERS: ServiceMeta = service(&[
            READ_TEXT,
            PermissionMeta {
                target: PermissionTarget::All,
                authenticated: true,
                fields: None,
                query: None,
            },
        ]);
        let table = ReadTable::new(&OPEN_TO_MEMBERS);
        let member = Principal::User {
            id: "u1".into(),
            model: "User".into(),
        };
        let anonymous = table.of(&NOTE, &Principal::Anonymous).expect("rules");
        let members = table.of(&NOTE, &member).expect("rules");
        assert!(anonymous.passes("text") && !anonymous.passes("secret"));
        assert!(members.passes("text") && members.passes("secret"));
        assert!(!Perms::new(&Principal::Anonymous, &OPEN_TO_MEMBERS).bypass());
        assert!(Perms::new(&member, &OPEN_TO_MEMBERS).bypass());

        static OPEN_TO_ALL: ServiceMeta = service(&[PermissionMeta {
            target: PermissionTarget::All,
            authenticated: false,
            fields: None,
            query: None,
        }]);
        let table = ReadTable::new(&OPEN_TO_ALL);
        let anonymous = table.of(&NOTE, &Principal::Anonymous).expect("rules");
        assert!(anonymous.passes("secret"));
        assert!(Perms::new(&Principal::Anonymous, &OPEN_TO_ALL).bypass());
    }

    /// Without any permission nothing passes, and no query could grant anything.
    #[test]
    fn no_permission_denies_every_field() {
        static CLOSED: ServiceMeta = service(&[]);
        let table = ReadTable::new(&CLOSED);
        let rules = table.of(&NOTE, &Principal::Anonymous).expect("rules");
        assert!(!rules.passes("id") && !rules.needs_flags("id"));
        static TEXT_ONLY: ServiceMeta = service(&[READ_TEXT]);
        let table = ReadTable::new(&TEXT_ONLY);
        let rules = table.of(&NOTE, &Principal::Anonymous).expect("rules");
        assert!(rules.passes("id") && rules.passes("text") && !rules.passes("secret"));
        assert!(!rules.needs_flags("secret"));
    }
}
