//! The one point every mutation commits through (`commit`), and what it hands over: after a
//! successful commit, the mutation's row and edge changes, in the order they were written, go to
//! the service's [`Observer`]s (subscriptions, hooks and server-side functions attach here).
//! Nothing is handed over for a transaction that was rolled back.
//!
//! Changes are recorded only when the service has an observer: without one, a mutation runs
//! exactly the statements it would run if this module did not exist.

use std::sync::{Arc, Mutex};

use super::Request;
use crate::model::{ApiError, ApiResult, ModelMeta, RelFieldMeta, RelationMeta, Val};
use crate::storage::outbox::{self, OutboxEntry};
use crate::storage::{After, Counted, Notice, Tx, WriteUnit, send_notices};

/// How many times a transaction PostgreSQL rolled back for a deadlock is run again.
const CONFLICT_RETRIES: u32 = 3;

/// What happened to a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// The node was created (`CREATED`).
    Created,
    /// The node's row was updated (`UPDATED`).
    Updated,
    /// The node was deleted (`DELETED`).
    Deleted,
}

impl ChangeKind {
    /// `CREATED`, `UPDATED` or `DELETED`: the reference's `_ModelMutationType` values.
    pub fn name(self) -> &'static str {
        match self {
            ChangeKind::Created => "CREATED",
            ChangeKind::Updated => "UPDATED",
            ChangeKind::Deleted => "DELETED",
        }
    }
}

/// One change a committed mutation made.
#[derive(Debug, Clone)]
pub enum Change {
    /// A node's row was inserted, updated or deleted.
    Node {
        /// The node's model.
        model: &'static ModelMeta,
        /// The node's id.
        id: String,
        /// Whether the node was created, updated or deleted.
        kind: ChangeKind,
        /// The scalar fields the mutation supplied, in the model's field order (for creates
        /// and updates; empty for deletes).
        fields: Vec<&'static str>,
        /// The node's values before the change, one per field of `model.fields` (for updates
        /// and deletes; `None` for creates).
        previous: Option<Vec<Val>>,
    },
    /// An edge of a relation was added or removed. The edges of a deleted node go with it and
    /// are not listed.
    Edge(EdgeChange),
}

/// An edge added to or removed from a relation's join table.
#[derive(Debug, Clone)]
pub struct EdgeChange {
    /// The relation whose join table changed.
    pub relation: &'static RelationMeta,
    /// The node on side A.
    pub a: String,
    /// The node on side B.
    pub b: String,
    /// `true` when the edge was added, `false` when it was removed.
    pub added: bool,
}

/// Told of every committed mutation.
pub trait Observer: Send + Sync {
    /// Called once per committed mutation that changed anything, with its changes in the order
    /// they were written, right after the commit and in commit order: queue the work, do not
    /// block. On SQLite, where mutations waiting for the turn commit together, it may run on
    /// the task of another mutation of the same commit.
    fn committed(&self, changes: &[Change]);

    /// Whether the observer wants changes now: a mutation records its changes (and reads what
    /// they need) only when one does. An event bus nobody listens to does not.
    fn active(&self) -> bool {
        true
    }

    /// Whether changes of `model` are recorded even while the observer is not
    /// [`Observer::active`]: it keeps some of them in the outbox ([`Observer::outbox`]).
    fn keeps(&self, _model: &ModelMeta) -> bool {
        false
    }

    /// What of a mutation's changes the outbox keeps: written in the mutation's transaction
    /// just before it commits, so that they exist exactly when the mutation committed.
    fn outbox(&self, _changes: &[Change]) -> Vec<OutboxEntry> {
        Vec::new()
    }

    /// What of a mutation's changes is sent through the database's notifications: in the
    /// mutation's transaction just before it commits, so that listeners (other instances) hear
    /// of it exactly when it committed, in commit order, even if this process dies right after.
    fn notices(&self, _changes: &[Change]) -> Vec<Notice> {
        Vec::new()
    }

    /// Whether a mutation that begins now may write something of this observer's in its
    /// transaction ([`Observer::outbox`], [`Observer::notices`]). A mutation that would be one
    /// statement committing on its own ([`WriteUnit::Statement`]) then runs in a transaction, so
    /// that those writes commit with it and not after it (a process that died in between would
    /// leave a committed mutation whose events nobody hears of).
    fn writes_in_transaction(&self) -> bool {
        false
    }
}

/// A mutation's statements (its transaction and the request's statement counter), and the
/// changes they make when the service has an observer.
pub struct Writes<'a> {
    statements: Counted<'a, Tx>,
    service: &'static crate::model::ServiceMeta,
    /// Whether an observer wants every change.
    observed: bool,
    /// The observers, asked which models' changes they keep ([`Observer::keeps`]).
    observers: &'a [Arc<dyn Observer>],
    /// The changes recorded: every change when [`Writes::observed`], otherwise only the
    /// deletions of `File` nodes, which every service's observers are told of whatever they
    /// want, since their stored files have to go ([`Writes::reports`]).
    changes: Mutex<Vec<Change>>,
}

impl<'a> std::ops::Deref for Writes<'a> {
    type Target = Counted<'a, Tx>;
    fn deref(&self) -> &Counted<'a, Tx> {
        &self.statements
    }
}

impl Writes<'_> {
    /// Whether the changes are recorded (someone observes them): what needs statements of its
    /// own, such as a node's values before an update, is read only then.
    pub fn observed(&self) -> bool {
        self.observed
    }

    /// Whether the changes of `model`'s nodes are recorded: when someone observes every change
    /// or keeps those of `model`. What they need, such as a node's values before an update, is
    /// read only then.
    pub fn wants(&self, model: &ModelMeta) -> bool {
        self.observed || self.observers.iter().any(|o| o.keeps(model))
    }

    /// Whether a change of `kind` to a node of `model` is recorded, with what it held: when
    /// [`Writes::wants`] it, and always the deletion of a `File`.
    pub fn reports(&self, model: &ModelMeta, kind: ChangeKind) -> bool {
        self.wants(model) || (kind == ChangeKind::Deleted && model.is_file())
    }

    fn record(&self, change: Change) {
        self.changes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(change);
    }

    /// Records a node written.
    pub fn node(
        &self,
        model: &'static ModelMeta,
        id: &str,
        kind: ChangeKind,
        fields: Vec<&'static str>,
        previous: Option<Vec<Val>>,
    ) {
        if self.reports(model, kind) {
            self.record(Change::Node {
                model,
                id: id.to_owned(),
                kind,
                fields,
                previous,
            });
        }
    }

    /// Records the edges between `this` (a node of the model owning `field`) and each of
    /// `others`, added or removed.
    pub fn edges<'o>(
        &self,
        field: &RelFieldMeta,
        this: &str,
        others: impl IntoIterator<Item = &'o str>,
        added: bool,
    ) {
        if !self.observed() {
            return;
        }
        let relation = &self.service.relations[field.relation];
        for other in others {
            let (a, b) = if field.own == "A" {
                (this, other)
            } else {
                (other, this)
            };
            self.record(Change::Edge(EdgeChange {
                relation,
                a: a.to_owned(),
                b: b.to_owned(),
                added,
            }));
        }
    }

    fn into_changes(self) -> Vec<Change> {
        self.changes.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

/// Runs a mutation: the body `body()` makes, in what `unit` says (a transaction, or one
/// statement that is its own), then the commit, then the changes go to the observers. A transaction PostgreSQL rolled back
/// to break a deadlock or a serialization conflict ([`ApiError::Conflict`]) runs again, up to
/// [`CONFLICT_RETRIES`] times: two mutations that lock the same rows in opposite orders (say a
/// `deleteUser` whose cascade clears its posts' copies of their author while an `updatePost`
/// moves one of them, `migrate/partners.rs`) then both succeed, one after the other. When `body`
/// fails, the transaction is rolled back (by dropping it) and nothing is handed over.
pub(crate) async fn commit<T, B>(
    req: &Request,
    unit: WriteUnit,
    body: impl Fn() -> B,
) -> ApiResult<T>
where
    B: AsyncFnOnce(&Writes<'_>) -> ApiResult<T>,
{
    run(req, unit, &req.state().observers, body).await
}

/// [`commit`] of a write no observer is told of: the File API's (reference §4.4: uploads fire
/// no events).
pub(crate) async fn commit_unobserved<T, B>(
    req: &Request,
    unit: WriteUnit,
    body: impl Fn() -> B,
) -> ApiResult<T>
where
    B: AsyncFnOnce(&Writes<'_>) -> ApiResult<T>,
{
    run(req, unit, &[], body).await
}

async fn run<T, B>(
    req: &Request,
    unit: WriteUnit,
    observers: &[Arc<dyn Observer>],
    body: impl Fn() -> B,
) -> ApiResult<T>
where
    B: AsyncFnOnce(&Writes<'_>) -> ApiResult<T>,
{
    let unit =
        if unit == WriteUnit::Statement && observers.iter().any(|o| o.writes_in_transaction()) {
            WriteUnit::Bounded
        } else {
            unit
        };
    let mut retries = 0;
    loop {
        let tx = req.db().begin_write(unit).await?;
        let writes = Writes {
            statements: Counted {
                conn: &tx,
                counter: req.counter(),
            },
            service: req.state().service,
            observed: observers.iter().any(|o| o.active()),
            observers,
            changes: Mutex::default(),
        };
        let done = match body()(&writes).await {
            Ok(out) => {
                let changes = writes.into_changes();
                let kept: Vec<OutboxEntry> =
                    observers.iter().flat_map(|o| o.outbox(&changes)).collect();
                let notices: Vec<Notice> =
                    observers.iter().flat_map(|o| o.notices(&changes)).collect();
                match keep(req, &tx, &kept, &notices).await {
                    Ok(()) => tx
                        .commit_then(announce(observers, changes))
                        .await
                        .map(|()| out)
                        .map_err(ApiError::from),
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e),
        };
        match done {
            Ok(out) => return Ok(out),
            Err(ApiError::Conflict(_)) if retries < CONFLICT_RETRIES => retries += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Writes what the outbox keeps of a mutation, and sends its notices, in its transaction `tx`.
async fn keep(req: &Request, tx: &Tx, kept: &[OutboxEntry], notices: &[Notice]) -> ApiResult<()> {
    if !kept.is_empty() {
        req.counter().add(1);
        let now = chrono::Utc::now().timestamp_millis();
        outbox::insert(tx, kept, &req.origin().request_id, now).await?;
    }
    if !notices.is_empty() {
        req.counter().add(send_notices(tx, notices).await?);
    }
    Ok(())
}

/// What hands a committed mutation's changes to every observer, run once it committed.
fn announce(observers: &[Arc<dyn Observer>], changes: Vec<Change>) -> After {
    if changes.is_empty() || observers.is_empty() {
        return Box::new(|| {});
    }
    let observers = observers.to_vec();
    Box::new(move || {
        for observer in &observers {
            observer.committed(&changes);
        }
    })
}
