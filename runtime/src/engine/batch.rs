//! The batch leader every per-request batch shares: relation reads ([`super::related`]) and
//! read-permission checks ([`super::checks`]).
//!
//! A resolver enqueues its key and waits. The first key of a batch starts a task that leads it:
//! the task yields to the executor until a whole round adds no more keys (by then every sibling
//! resolver of the same selection, running on the same worker thread, has enqueued its key),
//! then runs the batch and hands every waiter its answer. No timer is involved, so how fast the
//! machine is does not change how many statements a request costs (async-graphql's `DataLoader`
//! dispatches after a fixed delay, and a slow machine split one level into several batches).
//! The batch runs in a task of its own, so a waiter that is cancelled (a sibling's error nulls
//! their common parent) never strands the others.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

use super::Request;
use crate::model::{ApiError, ApiResult};

/// Rounds without new keys after which a batch is complete.
const QUIET_ROUNDS: u32 = 2;

/// A kind of batched work of a request: where its batch is kept, and how one batch runs.
pub(crate) trait Batched: 'static {
    type Key: Send + 'static;
    type Value: Send + 'static;

    /// The request's batch of this kind.
    fn batch(req: &Request) -> &Batch<Self>;

    /// The answers to `keys`, one per key, in order.
    fn run(
        req: &Request,
        keys: &[Self::Key],
    ) -> impl Future<Output = Vec<ApiResult<Self::Value>>> + Send;
}

struct Waiter<B: Batched + ?Sized> {
    key: B::Key,
    reply: oneshot::Sender<ApiResult<B::Value>>,
}

struct Pending<B: Batched + ?Sized> {
    waiters: Vec<Waiter<B>>,
    /// A task is leading the current batch.
    led: bool,
}

/// The keys of one kind waiting for the current batch of a request.
pub(crate) struct Batch<B: Batched + ?Sized> {
    pending: Mutex<Pending<B>>,
}

impl<B: Batched + ?Sized> Default for Batch<B> {
    fn default() -> Self {
        Batch {
            pending: Mutex::new(Pending {
                waiters: Vec::new(),
                led: false,
            }),
        }
    }
}

impl<B: Batched> Batch<B> {
    fn lock(&self) -> MutexGuard<'_, Pending<B>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Enqueues `key` in the request's batch of kind `B` and waits for its answer.
    pub(crate) async fn load(req: &Arc<Request>, key: B::Key) -> ApiResult<B::Value> {
        let (reply, answer) = oneshot::channel();
        let lead = {
            let mut pending = B::batch(req).lock();
            pending.waiters.push(Waiter { key, reply });
            !std::mem::replace(&mut pending.led, true)
        };
        if lead {
            let req = Arc::clone(req);
            tokio::spawn(async move { B::batch(&req).lead(&req).await });
        }
        answer
            .await
            .unwrap_or_else(|_| Err(ApiError::Internal("a batch was dropped".into())))
    }

    /// Waits until the siblings have enqueued their keys, then runs the batch.
    async fn lead(&self, req: &Request) {
        settle(|| self.lock().waiters.len()).await;
        let waiters = {
            let mut pending = self.lock();
            pending.led = false;
            std::mem::take(&mut pending.waiters)
        };
        let (keys, replies): (Vec<B::Key>, Vec<_>) =
            waiters.into_iter().map(|w| (w.key, w.reply)).unzip();
        let mut answers = B::run(req, &keys).await.into_iter();
        for reply in replies {
            let answer = answers
                .next()
                .unwrap_or_else(|| Err(ApiError::Internal("a batch lost a key".into())));
            // A waiter that went away (its request was cancelled) needs no answer.
            let _ = reply.send(answer);
        }
    }
}

/// Yields to the executor until `len` (the number of keys a batch has collected) stays the same
/// for [`QUIET_ROUNDS`] rounds: by then every sibling resolver has enqueued its key.
async fn settle(len: impl Fn() -> usize) {
    let mut seen = len();
    let mut quiet = 0;
    while quiet < QUIET_ROUNDS {
        tokio::task::yield_now().await;
        let now = len();
        if now == seen {
            quiet += 1;
        } else {
            seen = now;
            quiet = 0;
        }
    }
}
