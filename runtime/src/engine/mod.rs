//! The engine: reads and writes of nodes and edges, for any API.
//!
//! It takes a [`Request`] (the service, who asks, the request's statement counter and batches)
//! and checked arguments, and returns records or rows; it knows nothing of GraphQL (architecture
//! invariant): the API layers read arguments, decide what a selection needs, and output what the
//! engine returns.
//!
//! - [`read`]: root reads (pages, counts, one node, `node(id)`).
//! - [`related`]: relation fields of many parents at once, batched per request ([`batch`]), so a
//!   nested selection costs one statement per relation field and level.
//! - [`checks`]: read-permission checks of single nodes, batched the same way.
//! - [`write`](mod@write) and [`edges`]: mutations and the join-table edges they add and remove.
//! - [`commit`]: the one point every mutation commits through, which hands the committed changes
//!   to the service's observers.

pub mod batch;
pub mod checks;
pub mod commit;
pub mod edges;
pub mod functions;
mod nodes;
pub mod read;
pub mod related;
pub mod write;

use std::sync::Arc;

use crate::auth::{Auth, Principal};
use crate::model::ServiceMeta;
use crate::permissions::{Perms, ReadTable};
use crate::storage::{Counted, Counter, Db, Pool};

pub use commit::{Change, ChangeKind, EdgeChange, Observer};
pub use functions::{Functions, Origin, Reply};
pub(crate) use nodes::{MAX_TEXT_CHARS, check_value, truncate_now};

/// What every request of a running service shares.
pub struct State {
    /// The service's database.
    pub db: Db,
    /// The service's data tables.
    pub service: &'static ServiceMeta,
    /// Keys, service identity and stored root tokens.
    pub auth: Auth,
    /// The read permission rules, worked out once from `service`.
    pub reads: ReadTable,
    /// Who is told of every committed mutation ([`commit`]).
    pub observers: Vec<Arc<dyn Observer>>,
    /// Runs the functions of `svc.yml` (hooks and resolvers); `None` runs none.
    pub functions: Option<Arc<dyn Functions>>,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("db", &self.db)
            .field("service", &self.service.name)
            .field("auth", &self.auth)
            .field("observers", &self.observers.len())
            .finish_non_exhaustive()
    }
}

/// One GraphQL request, as the engine sees it: the service, who asks, the statements it has
/// run, and its batches. Nothing in it outlives the request.
pub struct Request {
    state: Arc<State>,
    principal: Principal,
    counter: Arc<Counter>,
    pub(crate) relations: related::Loads,
    pub(crate) checks: checks::ReadChecks,
    origin: Origin,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("principal", &self.principal)
            .field("statements", &self.counter.get())
            .finish_non_exhaustive()
    }
}

impl Request {
    /// A request with an empty [`Origin`]: a subscription's event, an export, the File API's
    /// own reads and writes.
    pub fn new(state: Arc<State>, counter: Arc<Counter>, principal: Principal) -> Arc<Request> {
        Request::from(state, counter, principal, Origin::default())
    }

    /// A request of a client, with where it came from (for the functions it invokes).
    pub fn from(
        state: Arc<State>,
        counter: Arc<Counter>,
        principal: Principal,
        origin: Origin,
    ) -> Arc<Request> {
        Arc::new(Request {
            state,
            principal,
            counter,
            relations: related::Loads::default(),
            checks: checks::ReadChecks::default(),
            origin,
        })
    }

    /// Where the request came from.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// What every request of the service shares.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The service's database.
    pub fn db(&self) -> &Db {
        &self.state.db
    }

    /// Who asks: what the request's token resolved to.
    pub fn principal(&self) -> &Principal {
        &self.principal
    }

    /// The statements the request has run.
    pub fn counter(&self) -> &Counter {
        &self.counter
    }

    /// The permission view of this request.
    pub fn perms(&self) -> Perms<'_> {
        Perms::new(&self.principal, self.state.service)
    }

    /// Reads outside a transaction, counted.
    pub(crate) fn reads(&self) -> Counted<'_, Pool> {
        Counted {
            conn: self.state.db.reader(),
            counter: &self.counter,
        }
    }
}
