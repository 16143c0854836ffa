//! Where a compiled plan's reads run: on SQLite on the calling thread (`sqlite/readers.rs`)
//! unless the plan's statements have been too long for it, on PostgreSQL over the pipelined
//! connections (`postgres/pipeline.rs`), and through sqlx otherwise.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use sea_orm::DbErr;

use super::Sql;
use super::db::{Backend, Db};
use super::row::Row;
use super::run::{Counted, Counter};
use super::sqlite::readers;

/// Where a compiled plan's reads run. On SQLite they run on the calling thread
/// (`sqlite/readers.rs`) unless the plan's [`InlineReads`] says otherwise.
pub struct PlanReads<'a> {
    /// The database read.
    pub db: &'a Db,
    /// The request's counter, which gets one statement per read.
    pub counter: &'a Counter,
    /// The plan's record of which of its statements fit on the calling thread.
    pub inline: &'a InlineReads,
}

impl PlanReads<'_> {
    /// The database's dialect.
    pub fn backend(&self) -> Backend {
        self.db.backend
    }

    /// Every row of `sql`. A statement the calling thread gave up on is counted once, when it
    /// runs through sqlx.
    pub async fn rows(&self, sql: Sql) -> Result<Vec<Row>, DbErr> {
        if let Some(readers) = &self.db.readers
            && self.inline.take_turn(sql.text())
        {
            match readers.query(sql.text(), sql.values()) {
                Ok(rows) => {
                    self.inline.fitted(sql.text());
                    self.counter.add(1);
                    return Ok(rows.into_iter().map(Row::Lite).collect());
                }
                Err(readers::Refused::TooLong) => self.inline.too_long(sql.text()),
                Err(readers::Refused::Failed(_)) => {}
            }
        }
        if let Some(pipeline) = &self.db.pipeline
            && let Some(rows) = pipeline.rows(sql.text(), sql.values()).await
        {
            self.counter.add(1);
            return Ok(rows.into_iter().map(Row::Pipe).collect());
        }
        let reads = Counted {
            conn: self.db.reader(),
            counter: self.counter,
        };
        reads.all(sql).await
    }

    /// Whether [`Self::count_and_keep`] can run (on SQLite, where reads run on the calling
    /// thread).
    pub fn keeps_while_counting(&self) -> bool {
        self.db.readers.is_some()
    }

    /// How many rows `sql` yields, and the first of them as `keep` orders them, from one
    /// statement on SQLite's calling thread ([`readers::Readers::count_and_keep`]). `None`
    /// where that path does not run it (PostgreSQL, a statement that was too long for the
    /// calling thread and is skipped, one too long or failing now): the caller reads as it
    /// would without.
    pub fn count_and_keep(&self, sql: &Sql, keep: readers::Keep) -> Option<(u64, Vec<Row>)> {
        let readers = self.db.readers.as_ref()?;
        if !self.inline.take_turn(sql.text()) {
            return None;
        }
        match readers.count_and_keep(sql.text(), sql.values(), keep) {
            Ok((total, rows)) => {
                self.inline.fitted(sql.text());
                self.counter.add(1);
                Some((total, rows.into_iter().map(Row::Lite).collect()))
            }
            Err(readers::Refused::TooLong) => {
                self.inline.too_long(sql.text());
                None
            }
            Err(readers::Refused::Failed(_)) => None,
        }
    }
}

/// The most runs of a statement that go through sqlx's pool after it was too long for the
/// calling thread.
const MAX_SKIPPED: u32 = 1024;

/// The most statements of one plan whose skips are remembered (a plan runs one to a few).
const MAX_LONG: usize = 16;

/// Which of a compiled plan's SQLite statements run on the calling thread. After a statement
/// too long for it (its work, a cold cache, or the thread descheduled under load), its next run
/// goes through sqlx's pool; after consecutive ones, the next 2, 4, … up to 1024. A run that
/// fits starts the count again. So a statement whose runs are long costs the calling thread one
/// interrupted attempt per 1024 runs, and one that met a passing delay is back on the fast path
/// after a run or two.
///
/// The record is per statement (by its text), not per plan: a plan whose page fits and whose
/// count scans a large table keeps its page on the calling thread and its count on the pool.
/// Kept for the whole plan, the page that fitted started the count's record again at every
/// request, and the count was interrupted once every two requests or so, after the 2 ms of the
/// calling thread's budget.
#[derive(Debug, Default)]
pub struct InlineReads {
    /// Whether any statement of the plan has been too long; until then no text is looked up.
    any: AtomicBool,
    /// The statements that have been too long, by the hash of their text.
    long: Mutex<Vec<Long>>,
}

/// A statement that has been too long for the calling thread.
#[derive(Debug)]
struct Long {
    /// The hash of its text ([`statement_hash`]).
    hash: u64,
    /// Runs left to send through the pool.
    skip: u32,
    /// How many runs its last time too long skipped (the next one skips twice as many).
    penalty: u32,
}

/// The hash of a statement's text: the same text, the same statement of the plan (its values
/// are bound apart). Two texts that share a hash share a record, which moves only where they run.
fn statement_hash(sql: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    sql.hash(&mut hasher);
    hasher.finish()
}

impl InlineReads {
    fn long(&self) -> MutexGuard<'_, Vec<Long>> {
        // Nothing panics while the list is held; a poisoned list is still a valid one.
        self.long
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether this run of `sql` may be on the calling thread (else it counts as one skipped).
    fn take_turn(&self, sql: &str) -> bool {
        if !self.any.load(Ordering::Relaxed) {
            return true;
        }
        let hash = statement_hash(sql);
        match self.long().iter_mut().find(|l| l.hash == hash) {
            Some(long) if long.skip > 0 => {
                long.skip -= 1;
                false
            }
            _ => true,
        }
    }

    fn too_long(&self, sql: &str) {
        let hash = statement_hash(sql);
        let mut list = self.long();
        let at = match list.iter().position(|l| l.hash == hash) {
            Some(at) => at,
            None => {
                if list.len() == MAX_LONG {
                    list.remove(0);
                }
                list.push(Long {
                    hash,
                    skip: 0,
                    penalty: 0,
                });
                list.len() - 1
            }
        };
        let long = &mut list[at];
        long.penalty = long.penalty.saturating_mul(2).clamp(1, MAX_SKIPPED);
        long.skip = long.penalty;
        self.any.store(true, Ordering::Relaxed);
    }

    fn fitted(&self, sql: &str) {
        if !self.any.load(Ordering::Relaxed) {
            return;
        }
        let hash = statement_hash(sql);
        self.long().retain(|l| l.hash != hash);
    }

    /// How many of the next runs of `sql` go through sqlx's pool.
    pub fn skipped(&self, sql: &str) -> u32 {
        if !self.any.load(Ordering::Relaxed) {
            return 0;
        }
        let hash = statement_hash(sql);
        self.long()
            .iter()
            .find(|l| l.hash == hash)
            .map_or(0, |l| l.skip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_too_long_skips_alone_and_doubles_its_skips() {
        let inline = InlineReads::default();
        let (page, count) = ("SELECT page", "SELECT COUNT(*)");
        assert!(inline.take_turn(page) && inline.take_turn(count));
        inline.fitted(page);
        inline.too_long(count);
        assert_eq!((inline.skipped(page), inline.skipped(count)), (0, 1));
        // The page keeps running here, and its fitting leaves the count's record as it is.
        for _ in 0..3 {
            assert!(inline.take_turn(page));
            inline.fitted(page);
        }
        assert!(!inline.take_turn(count), "skipped once");
        assert!(inline.take_turn(count), "then tried again");
        inline.too_long(count);
        assert_eq!(inline.skipped(count), 2);
        assert!(!inline.take_turn(count) && !inline.take_turn(count) && inline.take_turn(count));
        inline.too_long(count);
        assert_eq!(inline.skipped(count), 4);
        for _ in 0..20 {
            for _ in 0..inline.skipped(count) {
                assert!(!inline.take_turn(count));
            }
            assert!(inline.take_turn(count));
            inline.too_long(count);
        }
        assert_eq!(inline.skipped(count), MAX_SKIPPED, "bounded");
        // A run that fits starts it again.
        inline.fitted(count);
        assert_eq!(inline.skipped(count), 0);
        assert!(inline.take_turn(count));
        inline.too_long(count);
        assert_eq!(inline.skipped(count), 1);
    }

    #[test]
    fn the_records_are_bounded() {
        let inline = InlineReads::default();
        let texts: Vec<String> = (0..MAX_LONG + 4).map(|i| format!("SELECT {i}")).collect();
        for text in &texts {
            inline.too_long(text);
        }
        assert_eq!(inline.long().len(), MAX_LONG);
        // The oldest records went first.
        assert_eq!(inline.skipped(&texts[0]), 0);
        assert_eq!(inline.skipped(&texts[MAX_LONG + 3]), 1);
    }
}
