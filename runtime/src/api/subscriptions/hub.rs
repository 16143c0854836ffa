//! The hub: one dispatcher per service between the event bus and the subscription streams.
//!
//! Every subscription field's stream registers its model and filter here ([`Hub::listen`]) and
//! receives the events that pass its filter through a channel of its own. The hub listens to the
//! bus (only while some stream is registered, so that writes record changes only then) and, per
//! event, decides every registered filter of the event's model at once:
//!
//! - kinds, `updatedFields_*` and comparisons of the node's id are decided without the
//!   database;
//! - what is left (`node` conditions) is checked against the node as committed, all filters in
//!   a bounded number of statements ([`read::each_exists`], 64 conditions per statement), not one
//!   statement per subscription.
//!
//! The node of a `CREATED` or `UPDATED` event that passed some filter is then read once, and
//! every stream's payload is made from that row ([`Node`]), however many streams it has; a node
//! deleted by then is sent to nobody.
//!
//! Events are handled one after the other, so every stream sees its events in commit order. A
//! stream that lets its channel fill up (it cannot resolve its payloads as fast as events come)
//! is ended with an error rather than left to miss events silently.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast::{self, error::RecvError};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::filter::{Decision, SubscriptionFilter, check_page};
use crate::auth::Principal;
use crate::engine::{ChangeKind, Request, State, read};
use crate::events::{Batch, Event, EventBus};
use crate::model::{ModelMeta, Val};
use crate::query::Page;
use crate::storage::{Counter, Row};

/// How many events may wait for one stream before it is ended.
const STREAM_BACKLOG: usize = 1024;

/// What a stream receives: an event that passed its filter, or the end with an error.
pub(super) enum Feed {
    /// `batch[index]`, and its node.
    Event(Batch, usize, Node),
    /// The stream ends with this error message.
    End(String),
}

/// The node of an event as read once after the commit for every stream: `None` for a
/// `DELETED` event; the error's message if the read failed.
pub(super) type Node = Result<Option<Arc<Row>>, String>;

/// The dispatcher of one service's subscriptions.
pub struct Hub {
    bus: Arc<dyn EventBus>,
    state: Arc<State>,
    inner: Mutex<Inner>,
    counts: Counts,
}

/// What the hub has done since the server started (`GET /status/subscriptions`).
#[derive(Debug, Default)]
pub struct Counts {
    /// Events handed to the hub.
    pub events: AtomicU64,
    /// Events handed to streams (one per stream whose filter the event passed).
    pub deliveries: AtomicU64,
    /// Statements run to check `node` conditions.
    pub check_statements: AtomicU64,
    /// Reads of an event's node (one per event that passed some filter, however many).
    pub node_reads: AtomicU64,
}

#[derive(Default)]
struct Inner {
    entries: Vec<Entry>,
    next_key: u64,
    /// The dispatcher; running while some stream is registered.
    task: Option<JoinHandle<()>>,
}

struct Entry {
    key: u64,
    model: &'static ModelMeta,
    filter: Arc<SubscriptionFilter>,
    feed: mpsc::Sender<Feed>,
}

/// A stream's registration: dropping it unregisters the stream.
pub(super) struct Listening {
    hub: Arc<Hub>,
    key: u64,
    pub(super) feed: mpsc::Receiver<Feed>,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.hub.forget(self.key);
    }
}

impl Hub {
    /// The hub of the service whose engine state is `state`, fed by `bus`; it starts listening
    /// when the first stream registers.
    pub fn new(bus: Arc<dyn EventBus>, state: Arc<State>) -> Arc<Hub> {
        Arc::new(Hub {
            bus,
            state,
            inner: Mutex::new(Inner::default()),
            counts: Counts::default(),
        })
    }

    /// The bus the hub listens to.
    pub fn bus(&self) -> &Arc<dyn EventBus> {
        &self.bus
    }

    /// What the hub has done since the server started.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    /// How many streams are registered.
    pub fn streams(&self) -> usize {
        self.lock().entries.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a stream of `model`'s events that pass `filter`; it receives the events
    /// committed from now on.
    pub(super) fn listen(
        self: &Arc<Self>,
        model: &'static ModelMeta,
        filter: SubscriptionFilter,
    ) -> Listening {
        let (sender, feed) = mpsc::channel(STREAM_BACKLOG);
        let mut inner = self.lock();
        let key = inner.next_key;
        inner.next_key += 1;
        inner.entries.push(Entry {
            key,
            model,
            filter: Arc::new(filter),
            feed: sender,
        });
        if inner.task.as_ref().is_none_or(JoinHandle::is_finished) {
            // Subscribed here, before the first event can be missed.
            let receiver = self.bus.subscribe();
            inner.task = Some(tokio::spawn(dispatch(Arc::downgrade(self), receiver)));
        }
        drop(inner);
        Listening {
            hub: self.clone(),
            key,
            feed,
        }
    }

    fn forget(&self, key: u64) {
        let mut inner = self.lock();
        inner.entries.retain(|e| e.key != key);
        if inner.entries.is_empty()
            && let Some(task) = inner.task.take()
        {
            // Nobody listens: the bus receiver goes with the task, and writes stop recording.
            task.abort();
        }
    }

    /// Hands the events of `batch` to the streams whose filters they pass.
    async fn handle(&self, batch: &Batch) {
        for (index, event) in batch.iter().enumerate() {
            self.counts.events.fetch_add(1, Ordering::Relaxed);
            let listeners: Vec<(u64, Arc<SubscriptionFilter>, mpsc::Sender<Feed>)> = self
                .lock()
                .entries
                .iter()
                .filter(|e| std::ptr::eq(e.model, event.model))
                .map(|e| (e.key, e.filter.clone(), e.feed.clone()))
                .collect();
            if listeners.is_empty() {
                continue;
            }
            let mut pass = Vec::new();
            let mut checks = Vec::new();
            let mut pages = Vec::new();
            for (i, (_, filter, _)) in listeners.iter().enumerate() {
                match filter.decide(event.model, event) {
                    Decision::Pass => pass.push(i),
                    Decision::Drop => {}
                    Decision::Check(cond) => match check_page(event.model, &event.id, cond) {
                        Ok(page) => {
                            checks.push(i);
                            pages.push(page);
                        }
                        Err(e) => {
                            let _ = listeners[i].2.try_send(Feed::End(e.message()));
                        }
                    },
                }
            }
            if !pages.is_empty() {
                match self.check(event, &pages).await {
                    Ok(found) => pass.extend(
                        checks
                            .iter()
                            .zip(found)
                            .filter_map(|(i, yes)| yes.then_some(*i)),
                    ),
                    Err(message) => {
                        for i in &checks {
                            let _ = listeners[*i].2.try_send(Feed::End(message.clone()));
                        }
                    }
                }
            }
            if pass.is_empty() {
                continue;
            }
            let node = match self.node(event).await {
                Some(node) => node,
                // Deleted since the commit: nobody is sent the event.
                None => continue,
            };
            pass.sort_unstable();
            for i in pass {
                let (key, _, feed) = &listeners[i];
                match feed.try_send(Feed::Event(batch.clone(), index, node.clone())) {
                    Ok(()) => {
                        self.counts.deliveries.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        // Its events would be lost from here on: end it instead.
                        self.forget(*key);
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => {}
                }
            }
        }
    }

    /// The node of `event` as it is now; `None` when it is gone.
    async fn node(&self, event: &Event) -> Option<Node> {
        if event.kind == ChangeKind::Deleted {
            return Some(Ok(None));
        }
        self.counts.node_reads.fetch_add(1, Ordering::Relaxed);
        // Read raw: each stream's payload applies its subscriber's read permissions.
        let req = Request::new(
            self.state.clone(),
            Arc::new(Counter::new()),
            Principal::Admin,
        );
        let id = Val::String(event.id.clone());
        match read::row_by(&req, event.model, event.model.id, &id).await {
            Ok(Some(row)) => Some(Ok(Some(Arc::new(row)))),
            Ok(None) => None,
            Err(e) => Some(Err(e.message())),
        }
    }

    /// Which of `pages` (each: the event's node, if it meets a filter's `node` condition) hold
    /// the node as it is now.
    async fn check(&self, event: &Event, pages: &[Page]) -> Result<Vec<bool>, String> {
        let counter = Arc::new(Counter::new());
        let req = Request::new(self.state.clone(), counter.clone(), Principal::default());
        let found = read::each_exists(&req, event.model, pages)
            .await
            .map_err(|e| e.message())?;
        self.counts
            .check_statements
            .fetch_add(u64::from(counter.get()), Ordering::Relaxed);
        Ok(found)
    }
}

/// The dispatcher's loop: every batch of the bus, in order, to the hub. It ends when the hub is
/// gone or the bus closes.
async fn dispatch(hub: std::sync::Weak<Hub>, mut receiver: broadcast::Receiver<Batch>) {
    loop {
        let batch = match receiver.recv().await {
            Ok(batch) => batch,
            // Batches the dispatcher fell too far behind to see are gone; the next ones are not.
            Err(RecvError::Lagged(_)) => continue,
            Err(RecvError::Closed) => return,
        };
        let Some(hub) = hub.upgrade() else {
            return;
        };
        hub.handle(&batch).await;
    }
}
