//! The WAL's checkpoints, on a thread of their own.
//!
//! SQLite checkpoints a WAL when a commit leaves it at 1 000 pages or more (`wal_autocheckpoint`):
//! the committing connection copies the WAL's pages into the database file, with an `fsync` of
//! the WAL before and of the file after (`synchronous = NORMAL`). On the writer connection that
//! is the write turn's time: every mutation queued behind that commit waits for the copy and the
//! two syncs. Here the writer's commit only notes the WAL's length (its WAL hook, which replaces
//! SQLite's own checkpoint on that connection), and past the same 1 000 pages wakes a thread
//! that runs a `PASSIVE` checkpoint on a connection of its own: it copies what it can without
//! waiting for any reader or writer, while the writer goes on appending to the WAL. SQLite
//! starts the WAL from its beginning again at the first write after a checkpoint that copied
//! all of it; under writes without a pause none does, so past [`INLINE_PAGES`] the commit
//! checkpoints itself, copying what the thread has not, and the WAL starts again. What a commit
//! guarantees does not change: in WAL mode with `synchronous = NORMAL` a commit is durable
//! against the process's end, and the WAL is synced at each checkpoint, wherever it runs.

use std::cell::Cell;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::{Connection, OpenFlags};

/// The WAL's length, in pages, from which a commit asks for a checkpoint (SQLite's own
/// `wal_autocheckpoint` default).
pub const CHECKPOINT_PAGES: i32 = 1000;

/// The WAL's length, in pages, from which the writer's commit checkpoints itself: the thread
/// copies the WAL while the writer appends to it, and SQLite starts a WAL from its beginning
/// again only after a checkpoint that copied all of it, which writes without a pause never
/// leave time for. One checkpoint in the commit, with nothing appending, copies the rest (most
/// of the WAL is in the file already) and lets the WAL start again.
pub const INLINE_PAGES: i32 = 4 * CHECKPOINT_PAGES;

thread_local! {
    /// The pages in the WAL after the last commit on this thread (set by the WAL hook, which
    /// SQLite calls on the committing thread at the end of the `COMMIT`).
    static WAL_PAGES: Cell<i32> = const { Cell::new(0) };
}

/// Registers the writer connection's WAL hook, which only notes the WAL's length: SQLite then
/// no longer checkpoints at the commit on this connection (`sqlite3_wal_hook` replaces
/// `wal_autocheckpoint`).
pub fn note_wal_pages(conn: &Connection) {
    conn.wal_hook(Some(|_, pages| {
        WAL_PAGES.with(|p| p.set(pages));
        Ok(())
    }));
}

/// The pages in the WAL after the commit just run on this thread (0 when none was noted).
pub fn pages_after_commit() -> i32 {
    WAL_PAGES.with(|p| p.replace(0))
}

/// The checkpointing thread of one database file; it ends when this is dropped.
#[derive(Debug)]
pub struct Checkpointer {
    wake: SyncSender<()>,
    /// The checkpoints the thread has run.
    done: Arc<AtomicU64>,
    /// Held by whoever checkpoints the file: SQLite runs one checkpoint at a time and refuses a
    /// second at once (`SQLITE_BUSY`), so the writer's own, past [`INLINE_PAGES`], waits for
    /// the thread's instead of copying nothing.
    running: Arc<Mutex<()>>,
}

impl Checkpointer {
    /// Starts the thread for the database file at `path` (which exists).
    pub fn start(path: &Path) -> std::io::Result<Checkpointer> {
        let (wake, woken) = sync_channel(1);
        let done = Arc::new(AtomicU64::new(0));
        let running = Arc::new(Mutex::new(()));
        let (path, counted, held) = (path.to_owned(), done.clone(), running.clone());
        std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || run(&path, &woken, &counted, &held))?;
        Ok(Checkpointer {
            wake,
            done,
            running,
        })
    }

    /// Waits for the thread's checkpoint, if one runs, and keeps the thread from beginning
    /// another while the guard lives.
    pub fn hold(&self) -> MutexGuard<'_, ()> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many checkpoints the thread has run.
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// Asks for a checkpoint; one asked for and not begun yet covers this one too.
    pub fn wake(&self) {
        let _ = self.wake.try_send(());
    }
}

fn run(path: &Path, woken: &Receiver<()>, done: &AtomicU64, running: &Mutex<()>) {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let Ok(conn) = Connection::open_with_flags(path, flags) else {
        return;
    };
    // As every connection of the process: the WAL synced before a checkpoint, the file after.
    if conn.execute_batch("PRAGMA synchronous = NORMAL;").is_err() {
        return;
    }
    while woken.recv().is_ok() {
        // `PASSIVE` waits for nobody: it copies the pages no reader still needs from the WAL,
        // and what it leaves the next one copies. An error (the database busy with another
        // checkpoint, say) leaves the WAL to the next.
        let _running = running.lock().unwrap_or_else(|e| e.into_inner());
        let _ = checkpoint(&conn);
        done.fetch_add(1, Ordering::Relaxed);
    }
}

/// A `PASSIVE` checkpoint on `conn`.
pub fn checkpoint(conn: &Connection) -> rusqlite::Result<()> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
}
