//! Where a compiled plan's reads run: on SQLite on the calling thread (`sqlite/readers.rs`)
//! unless the plan's statements have been too long for it, on PostgreSQL over the pipelined
//! connections (`postgres/pipeline.rs`), and through sqlx otherwise.

use std::sync::atomic::{AtomicU32, Ordering};

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
    /// The plan's record of whether its reads fit on the calling thread.
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
            && self.inline.take_turn()
        {
            match readers.query(sql.text(), sql.values()) {
                Ok(rows) => {
                    self.inline.fitted();
                    self.counter.add(1);
                    return Ok(rows.into_iter().map(Row::Lite).collect());
                }
                Err(readers::Refused::TooLong) => self.inline.too_long(),
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

    /// Whether [`Self::count_and_keep`] can run now (on SQLite, while the plan's reads run on
    /// the calling thread).
    pub fn keeps_while_counting(&self) -> bool {
        self.db.readers.is_some() && self.inline.skipped() == 0
    }

    /// How many rows `sql` yields, and the first of them as `keep` orders them, from one
    /// statement on SQLite's calling thread ([`readers::Readers::count_and_keep`]). `None`
    /// where that path does not run it (PostgreSQL, a plan whose reads go through the pool, a
    /// statement too long or failing): the caller reads as it would without.
    pub fn count_and_keep(&self, sql: &Sql, keep: readers::Keep) -> Option<(u64, Vec<Row>)> {
        let readers = self.db.readers.as_ref()?;
        if self.inline.skipped() > 0 {
            return None;
        }
        match readers.count_and_keep(sql.text(), sql.values(), keep) {
            Ok((total, rows)) => {
                self.inline.fitted();
                self.counter.add(1);
                Some((total, rows.into_iter().map(Row::Lite).collect()))
            }
            Err(readers::Refused::TooLong) => {
                self.inline.too_long();
                None
            }
            Err(readers::Refused::Failed(_)) => None,
        }
    }
}

/// The most reads of a plan that go through sqlx's pool after statements too long for the
/// calling thread.
const MAX_SKIPPED: u32 = 1024;

/// Whether a compiled plan's SQLite reads run on the calling thread. After a statement too long
/// for it (its work, a cold cache, or the thread descheduled under load), the plan's next read
/// goes through sqlx's pool; after consecutive ones, the next 2, 4, … up to 1024.
/// A read that fits starts the count again. So a plan whose reads are long costs the calling
/// thread one interrupted attempt per 1024 reads, and one that met a passing delay is back on
/// the fast path after a read or two.
#[derive(Debug, Default)]
pub struct InlineReads {
    /// Reads left to send through the pool.
    skip: AtomicU32,
    /// How many the next statement too long will skip.
    penalty: AtomicU32,
}

impl InlineReads {
    /// Whether this read may run on the calling thread (else it counts as one skipped).
    fn take_turn(&self) -> bool {
        self.skip
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_err()
    }

    fn too_long(&self) {
        let penalty = self
            .penalty
            .load(Ordering::Relaxed)
            .saturating_mul(2)
            .clamp(1, MAX_SKIPPED);
        self.penalty.store(penalty, Ordering::Relaxed);
        self.skip.store(penalty, Ordering::Relaxed);
    }

    fn fitted(&self) {
        if self.penalty.load(Ordering::Relaxed) != 0 {
            self.penalty.store(0, Ordering::Relaxed);
        }
    }

    /// How many of the next reads go through sqlx's pool.
    pub fn skipped(&self) -> u32 {
        self.skip.load(Ordering::Relaxed)
    }
}
