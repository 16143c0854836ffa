//! The Image API (seed §4.7, reference §9.2): an uploaded image resized, cropped or renamed by
//! the segments of its address. Each variant is computed once: it is stored in the object store
//! under a key derived from the operations, and served from there afterwards; requests for a
//! variant being computed wait for it rather than compute it again. At most one variant per core
//! is computed at a time, which bounds the memory decoding takes.

pub mod ops;
pub mod transform;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use object_store::path::Path as Key;
use object_store::{ObjectStoreExt, PutPayload};
use tokio::sync::Semaphore;

use super::Files;
use super::download::{self, Stored};
use crate::engine::Request;
use ops::Ops;

/// The largest file the API reads (the seed's 25 MB).
pub const MAX_INPUT_BYTES: u64 = 25 * 1024 * 1024;

/// The largest variant the API answers (the seed's 6 MB).
pub const MAX_OUTPUT_BYTES: usize = 6 * 1024 * 1024;

/// What an image address answers.
#[derive(Debug)]
pub enum Served {
    /// The file as stored: no operation, or a GIF or SVG (reference §9.2).
    Original(Stored),
    /// A computed variant; `cached` when it was read from the store.
    Variant {
        /// The file the variant was computed from (its name and content type are the
        /// variant's).
        stored: Stored,
        /// The variant's bytes, in the format of the file.
        bytes: Bytes,
        /// Whether the variant was read from the store rather than computed now.
        cached: bool,
    },
}

/// Why an image address answers no image.
#[derive(Debug)]
pub enum ImageError {
    /// No such file (404).
    NotFound,
    /// The reference's text, answered with HTTP 400.
    Refused(String),
    /// The store or the database failed (500; the cause is logged).
    Internal(String),
}

/// The Image API of one service.
#[derive(Debug)]
pub struct Images {
    files: Arc<Files>,
    /// The variants being computed, each behind a lock that requests for it wait on.
    computing: Locks,
    /// One permit per core: how many variants are computed at once.
    permits: Semaphore,
    /// How many requests compute a variant or wait to: the last one out returns its thread's
    /// freed memory.
    computing_now: Arc<AtomicUsize>,
    /// How many variants were computed (not read from the store) since start.
    computed: AtomicU64,
}

impl Images {
    /// The Image API over the stored files `files`, computing at most one variant per core at
    /// once.
    pub fn new(files: Arc<Files>) -> Images {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Images {
            files,
            computing: Locks::default(),
            permits: Semaphore::new(cores),
            computing_now: Arc::default(),
            computed: AtomicU64::new(0),
        }
    }

    /// The stored files the images are read from.
    pub fn files(&self) -> &Files {
        &self.files
    }

    /// How many variants were computed since start.
    pub fn computed(&self) -> u64 {
        self.computed.load(Ordering::Relaxed)
    }

    /// What the address `segments` (after the secret) of the file `secret` answers.
    pub async fn serve(
        &self,
        req: &Request,
        secret: &str,
        segments: &[&str],
    ) -> Result<Served, ImageError> {
        let ops = ops::parse(segments).map_err(ImageError::Refused)?;
        let files = &self.files;
        let stored = download::find(files, req, secret)
            .await
            .map_err(|e| ImageError::Internal(format!("{e:?}")))?
            .ok_or(ImageError::NotFound)?;
        if stored.size > MAX_INPUT_BYTES {
            return Err(ImageError::Refused("File too big".to_owned()));
        }
        if !stored.content_type.contains("image") {
            return Err(ImageError::Refused("File not an image".to_owned()));
        }
        let passed = matches!(stored.content_type.as_str(), "image/gif" | "image/svg+xml");
        if ops.is_none() || passed {
            return Ok(Served::Original(stored));
        }
        let key = files.variants(&stored.secret).join(ops.key());
        if let Some(bytes) = self.cached(&key).await? {
            return Ok(Served::Variant {
                stored,
                bytes,
                cached: true,
            });
        }
        let (bytes, cached) = {
            let hold = self.computing.hold(key.as_ref());
            let _computing = hold.lock.lock().await;
            // Whoever held the lock before may have computed it.
            match self.cached(&key).await? {
                Some(bytes) => (bytes, true),
                None => (self.compute(&stored, &key, ops).await?, false),
            }
        };
        Ok(Served::Variant {
            stored,
            bytes,
            cached,
        })
    }

    /// The variant at `key`, if it was computed before.
    async fn cached(&self, key: &Key) -> Result<Option<Bytes>, ImageError> {
        match self.files.store.get(key).await {
            Ok(got) => got
                .bytes()
                .await
                .map(Some)
                .map_err(|e| ImageError::Internal(e.to_string())),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(ImageError::Internal(e.to_string())),
        }
    }

    /// Computes the variant `ops` of `stored` and keeps it at `key`.
    async fn compute(&self, stored: &Stored, key: &Key, ops: Ops) -> Result<Bytes, ImageError> {
        let computing = Computing::count(&self.computing_now);
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|e| ImageError::Internal(e.to_string()))?;
        let internal = |e: object_store::Error| ImageError::Internal(e.to_string());
        let source = match self.files.store.get(&self.files.key(&stored.secret)).await {
            Ok(got) => got.bytes().await.map_err(internal)?,
            Err(object_store::Error::NotFound { .. }) => return Err(ImageError::NotFound),
            Err(e) => return Err(internal(e)),
        };
        let out = tokio::task::spawn_blocking(move || {
            let out = transform::apply(&source, &ops);
            drop(source);
            // The transform's buffers stay with this blocking thread's heap for reuse (the
            // allocator's purge delay); with no other transform to come, back to the system
            // with them: the thread may stay idle, and up to 16 heaps would each keep a decoded
            // image (docs/benchmarks.md, "Freed memory kept a second for reuse").
            if computing.alone() && svc_alloc::returns_delayed() {
                svc_alloc::return_freed_memory();
            }
            out
        })
        .await
        .map_err(|e| ImageError::Internal(e.to_string()))?
        .map_err(|refused| ImageError::Refused(refused.0))?;
        if out.len() > MAX_OUTPUT_BYTES {
            return Err(ImageError::Refused(format!(
                "Error: The resulting image is {} bytes, more than the {MAX_OUTPUT_BYTES} bytes an image may have",
                out.len()
            )));
        }
        let bytes = Bytes::from(out);
        // `put` writes the whole object or nothing under the key.
        self.files
            .store
            .put(key, PutPayload::from_bytes(bytes.clone()))
            .await
            .map_err(internal)?;
        self.computed.fetch_add(1, Ordering::Relaxed);
        Ok(bytes)
    }
}

/// One request among those that compute a variant or wait to, counted while it lives.
struct Computing(Arc<AtomicUsize>);

impl Computing {
    fn count(now: &Arc<AtomicUsize>) -> Computing {
        now.fetch_add(1, Ordering::SeqCst);
        Computing(now.clone())
    }

    /// Whether no other request computes a variant or waits to.
    fn alone(&self) -> bool {
        self.0.load(Ordering::SeqCst) == 1
    }
}

impl Drop for Computing {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The locks of the variants being computed, by key.
#[derive(Debug, Default)]
struct Locks(Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>);

/// A request's handle on the lock of one variant. The lock is forgotten when the last handle
/// goes, also when a request is dropped half-way (its client gone): nothing stays behind.
struct Hold<'a> {
    locks: &'a Locks,
    key: &'a str,
    lock: Arc<tokio::sync::Mutex<()>>,
}

impl Locks {
    /// A handle on the lock of `key`, made when nobody holds one.
    fn hold<'a>(&'a self, key: &'a str) -> Hold<'a> {
        let mut locks = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let lock = locks.entry(key.to_owned()).or_default().clone();
        Hold {
            locks: self,
            key,
            lock,
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

impl Drop for Hold<'_> {
    fn drop(&mut self) {
        let mut locks = self.locks.0.lock().unwrap_or_else(|e| e.into_inner());
        // This handle's share and the map's: no other request holds the lock.
        if locks
            .get(self.key)
            .is_some_and(|l| Arc::strong_count(l) == 2)
        {
            locks.remove(self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two requests for one variant share its lock; it is forgotten after the last, and after a
    /// request dropped while it held the lock (the computation a client stopped waiting for).
    #[tokio::test]
    async fn a_lock_goes_with_its_last_holder() {
        let locks = Locks::default();
        let first = locks.hold("v");
        let second = locks.hold("v");
        assert!(Arc::ptr_eq(&first.lock, &second.lock));
        drop(first);
        assert_eq!(locks.len(), 1, "the second still holds it");
        drop(second);
        assert_eq!(locks.len(), 0);

        let computing = async {
            let hold = locks.hold("w");
            let _locked = hold.lock.lock().await;
            std::future::pending::<()>().await;
        };
        // The request is dropped while it computes.
        let stopped = tokio::time::timeout(std::time::Duration::from_millis(10), computing).await;
        assert!(stopped.is_err());
        assert_eq!(locks.len(), 0, "nothing stays behind a dropped request");
    }
}
