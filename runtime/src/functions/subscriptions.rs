//! Server-side subscriptions (reference §7.1, §7.2): a function invoked after the commit of
//! every mutation whose event its subscription query lets through, with the query's result as
//! its `data`, without permission checks.
//!
//! Deliveries are not lost:
//!
//! - [`Outbox`], an observer of the commit point, writes the events of the subscribed models
//!   into the outbox (`storage/outbox.rs`) inside the mutation's transaction: an event is kept
//!   exactly when its mutation commits.
//! - The [`Deliverer`], one task per server, takes due rows (leased, so two instances on one
//!   database never take the same row), works out the query's result for the event (once: it is
//!   kept with the row for later attempts), invokes the function and removes the row.
//! - A delivery that fails for want of a receiver (no answer, a status other than 2xx, a
//!   timeout) is attempted again after a back-off that doubles from `backoff` up to ten
//!   minutes, `attempts` times in all; then the row is marked failed and kept. Rows survive a
//!   restart: the deliverer takes them up when the server starts.
//! - A function that answers with an error (`{"error": …}`) was reached: its delivery is done,
//!   logged as a failure, and not attempted again. A JavaScript handler that throws, times out
//!   or loses its worker (5008) is attempted again, like a receiver that fails.
//!
//! The query's result is worked out when the event is first taken, from the node as it is
//! then (normally right after the commit).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value as J;
use tokio::sync::Notify;
use tokio::task::JoinSet;

use super::Invoker;
use crate::engine::{Change, Observer, Origin, Request, State};
use crate::events::{Event, events_of};
use crate::model::{ApiError, FunctionKind, FunctionMeta, ModelMeta, ServiceMeta};
use crate::storage::outbox::{self, OutboxEntry, Taken};
use crate::storage::{Counter, Db};

/// How many deliveries run at once.
const IN_FLIGHT: usize = 8;
/// How often the deliverer looks for rows due later or written by another instance.
const POLL: Duration = Duration::from_millis(500);
/// The longest wait between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(600);

/// The result of a subscription query for one event: the query's `data` when its filter lets
/// the event through, `None` when not, or the query's errors.
pub type Evaluation<'a> =
    std::pin::Pin<Box<dyn Future<Output = Result<Option<J>, String>> + Send + 'a>>;

/// Works out subscription queries (the HTTP layer, which holds the schema, implements it).
pub trait Evaluate: Send + Sync {
    /// The result of `query` for `event`; with no event the query is only checked (`Ok(None)`
    /// when it is valid).
    fn evaluate<'a>(&'a self, query: &'static str, event: Option<Event>) -> Evaluation<'a>;
}

/// How often and how far apart a failed delivery is attempted again.
#[derive(Debug, Clone, Copy)]
pub struct Retry {
    /// Attempts in all, the first included (at least 1).
    pub attempts: u32,
    /// The wait after the first failure; it doubles after each (at most ten minutes).
    pub backoff: Duration,
}

impl Retry {
    /// The wait after the `attempt`-th failed attempt (1-based).
    fn wait(&self, attempt: u32) -> Duration {
        let factor = 1u32 << attempt.saturating_sub(1).min(20);
        self.backoff.saturating_mul(factor).min(MAX_BACKOFF)
    }
}

/// The server-side subscriptions of a service, by model.
#[derive(Debug)]
pub struct Outbox {
    /// Each subscription function and the model it is invoked for.
    functions: Vec<(&'static FunctionMeta, &'static ModelMeta)>,
    /// Wakes the deliverer after a commit that wrote to the outbox.
    wake: Arc<Notify>,
}

impl Outbox {
    /// The outbox of `service`'s subscription functions; `None` when it has none.
    pub fn of(service: &'static ServiceMeta) -> Option<Arc<Outbox>> {
        let functions: Vec<_> = service
            .functions
            .iter()
            .filter_map(|f| match f.kind {
                FunctionKind::Subscription { model, .. } => {
                    service.models.get(model).map(|m| (f, *m))
                }
                _ => None,
            })
            .collect();
        (!functions.is_empty()).then(|| {
            Arc::new(Outbox {
                functions,
                wake: Arc::new(Notify::new()),
            })
        })
    }

    fn subscribed(&self, model: &ModelMeta) -> bool {
        self.functions.iter().any(|(_, m)| std::ptr::eq(*m, model))
    }
}

impl Observer for Outbox {
    /// It wants no change but those of the subscribed models ([`Observer::keeps`]).
    fn active(&self) -> bool {
        false
    }

    fn keeps(&self, model: &ModelMeta) -> bool {
        self.subscribed(model)
    }

    /// It exists only when some function subscribes: a mutation may keep events.
    fn writes_in_transaction(&self) -> bool {
        true
    }

    fn outbox(&self, changes: &[Change]) -> Vec<OutboxEntry> {
        let mut out = Vec::new();
        for event in events_of(changes) {
            let mut encoded = None;
            for (f, model) in &self.functions {
                if std::ptr::eq(*model, event.model) {
                    let event = encoded.get_or_insert_with(|| event.to_json().to_string());
                    out.push(OutboxEntry {
                        function: f.name,
                        event: event.clone(),
                    });
                }
            }
        }
        out
    }

    fn committed(&self, changes: &[Change]) {
        let subscribed = changes.iter().any(|c| match c {
            Change::Node { model, .. } => self.subscribed(model),
            Change::Edge(_) => false,
        });
        if subscribed {
            self.wake.notify_one();
        }
    }
}

/// Delivers the outbox's events, in one task per server.
pub struct Deliverer {
    state: Arc<State>,
    invoker: Arc<Invoker>,
    queries: Arc<dyn Evaluate>,
    retry: Retry,
    /// How long a taken row is left to this deliverer ([`lease_ms`]).
    lease_ms: i64,
}

impl Deliverer {
    /// Checks every subscription query of the service against its API, then starts delivering
    /// (the rows an earlier run left first).
    pub async fn start(
        state: Arc<State>,
        invoker: Arc<Invoker>,
        queries: Arc<dyn Evaluate>,
        outbox: &Outbox,
        retry: Retry,
    ) -> Result<(), String> {
        for (f, _) in &outbox.functions {
            if let FunctionKind::Subscription { query, text, .. } = f.kind
                && let Err(e) = queries.evaluate(text, None).await
            {
                return Err(format!(
                    "the query of the subscription function `{}` ({query}) does not fit the API: {e}",
                    f.name
                ));
            }
        }
        let deliverer = Arc::new(Deliverer {
            lease_ms: lease_ms(state.service),
            state,
            invoker,
            queries,
            retry: Retry {
                attempts: retry.attempts.max(1),
                ..retry
            },
        });
        tokio::spawn(deliverer.run(outbox.wake.clone()));
        Ok(())
    }

    fn db(&self) -> &Db {
        &self.state.db
    }

    /// The loop: takes due rows whenever a commit wrote some, and every [`POLL`] (rows due
    /// later, rows of other instances, rows of a delivery that was cut short) after a read
    /// finds some. The rows of finished deliveries are removed in the transaction that takes
    /// the next ones.
    async fn run(self: Arc<Self>, wake: Arc<Notify>) {
        let mut running: JoinSet<(i64, Outcome)> = JoinSet::new();
        let mut finished = Vec::new();
        // Rows delivered and not yet removed.
        let mut delivered = Vec::new();
        // At the start, the rows an earlier run left.
        let mut woken = true;
        loop {
            while let Some(done) = running.try_join_next() {
                finished.extend(done.ok());
            }
            delivered.extend(self.settle(std::mem::take(&mut finished)).await);
            let room = IN_FLIGHT.saturating_sub(running.len());
            let now = now_ms();
            let look = room > 0 && (woken || outbox::any_due(self.db(), now).await.unwrap_or(true));
            let limit = if look { room } else { 0 };
            let taken =
                match outbox::take(self.db(), &delivered, now, now + self.lease_ms, limit).await {
                    Ok(taken) => {
                        delivered.clear();
                        taken
                    }
                    Err(e) => {
                        // The delivered rows are removed next time.
                        eprintln!("svc: the functions' outbox could not be read: {e}");
                        Vec::new()
                    }
                };
            let busy = !taken.is_empty();
            for row in taken {
                let me = self.clone();
                running.spawn(async move { (row.id, me.attempt(&row).await) });
            }
            woken = false;
            if busy && running.len() < IN_FLIGHT {
                woken = true;
                continue;
            }
            tokio::select! {
                () = wake.notified() => woken = true,
                () = tokio::time::sleep(POLL) => {}
                Some(done) = running.join_next(), if !running.is_empty() => {
                    finished.extend(done.ok());
                    woken = true;
                }
            }
        }
    }

    /// Writes what the failed deliveries among `finished` did (the next attempt, or failed
    /// for good); the ids of the others, whose rows are to go.
    async fn settle(&self, finished: Vec<(i64, Outcome)>) -> Vec<i64> {
        let db = self.db();
        let mut delivered = Vec::new();
        for (id, outcome) in finished {
            let written = match outcome {
                Outcome::Done => {
                    delivered.push(id);
                    Ok(())
                }
                Outcome::Final(e) => outbox::failed(db, id, &e, None, None).await,
                Outcome::Again {
                    error,
                    attempts,
                    payload,
                } => {
                    let due = (attempts < self.retry.attempts).then(|| {
                        now_ms()
                            + i64::try_from(self.retry.wait(attempts).as_millis())
                                .unwrap_or(i64::MAX)
                    });
                    outbox::failed(db, id, &error, due, payload.as_deref()).await
                }
            };
            if let Err(e) = written {
                // The lease runs out and the row is taken again.
                eprintln!("svc: the functions' outbox could not be written: {e}");
            }
        }
        delivered
    }

    /// One attempt at a row.
    async fn attempt(&self, row: &Taken) -> Outcome {
        let service = self.state.service;
        let Some(f) = service.functions.iter().find(|f| f.name == row.function) else {
            return Outcome::Final(format!(
                "the service has no function `{}` any more",
                row.function
            ));
        };
        let FunctionKind::Subscription { text, .. } = f.kind else {
            return Outcome::Final(format!(
                "`{}` is not a subscription function any more",
                row.function
            ));
        };
        let attempts = u32::try_from(row.attempts).unwrap_or(u32::MAX);
        let again = |error: String, payload: Option<String>| Outcome::Again {
            error,
            attempts,
            payload,
        };
        // The query's result: worked out by the first attempt, kept for the later ones.
        let (data, fresh) = match &row.payload {
            Some(payload) => match serde_json::from_str(payload) {
                Ok(data) => (data, false),
                Err(e) => return Outcome::Final(format!("the kept result does not read: {e}")),
            },
            None => {
                let Some(event) = serde_json::from_str::<J>(&row.event)
                    .ok()
                    .and_then(|value| Event::from_json(service, &value))
                else {
                    return Outcome::Final("the event does not fit the service's model".to_owned());
                };
                match self.queries.evaluate(text, Some(event)).await {
                    Ok(Some(data)) => (data, true),
                    // The filter did not let the event through: nothing to deliver.
                    Ok(None) => return Outcome::Done,
                    Err(e) => return again(e, None),
                }
            }
        };
        let payload = fresh.then(|| data.to_string());
        let origin = Origin {
            request_id: row.request.clone(),
            source_ip: String::new(),
            token: None,
        };
        let req = Request::from(
            self.state.clone(),
            Arc::new(Counter::new()),
            crate::auth::Principal::Anonymous,
            origin,
        );
        let started = Instant::now();
        match self.invoker.call(&req, f, data).await {
            Ok(_) => Outcome::Done,
            // The function was reached and answered with an error: done.
            Err(ApiError::Function {
                code: 5001..=5003, ..
            }) => Outcome::Done,
            Err(e) => again(
                format!(
                    "{} (after {} ms)",
                    e.message(),
                    started.elapsed().as_millis()
                ),
                payload,
            ),
        }
    }
}

/// How long a taken row is left to a deliverer: the longest function timeout of `service`, and
/// 15 s for the rest. A server that stops in the middle of a delivery leaves its row to the next
/// deliverer after that.
fn lease_ms(service: &ServiceMeta) -> i64 {
    let longest = service
        .functions
        .iter()
        .map(|f| f.timeout())
        .max()
        .unwrap_or_default();
    i64::try_from((longest + Duration::from_secs(15)).as_millis()).unwrap_or(i64::MAX)
}

/// What an attempt at a row came to.
enum Outcome {
    /// Delivered, or nothing to deliver.
    Done,
    /// Failed for good.
    Final(String),
    /// Failed for now: the `attempts`-th attempt; the query's result it worked out, to be kept.
    Again {
        error: String,
        attempts: u32,
        payload: Option<String>,
    },
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_off_doubles_up_to_ten_minutes() {
        let retry = Retry {
            attempts: 30,
            backoff: Duration::from_millis(250),
        };
        let waits: Vec<u128> = (1..=4).map(|a| retry.wait(a).as_millis()).collect();
        assert_eq!(waits, vec![250, 500, 1000, 2000]);
        assert_eq!(retry.wait(25), MAX_BACKOFF);
        assert_eq!(retry.wait(u32::MAX), MAX_BACKOFF);
    }
}
