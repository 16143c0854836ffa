//! SQLite reads of compiled plans, run on the calling thread.
//!
//! sqlx runs each SQLite connection on a thread of its own: a statement is sent to that thread,
//! and every row comes back through a channel, each value copied out of SQLite into an
//! allocation of its own. For the short reads of a compiled plan, the thread hand-offs and the
//! copies cost several times what SQLite spends answering. Here a plan's statement runs on the
//! thread that asks, on a read-only connection of its own (rusqlite over the same bundled
//! libsqlite3), and each row is copied once, into one text buffer.
//!
//! A statement may take 200 000 virtual-machine steps on the calling thread (about 2 ms of
//! SQLite's work; a 100-row page takes about 5 000), and 20 ms in all (for reading the disk, or
//! an expensive single step). One that needs more is interrupted and reported as
//! [`Refused::TooLong`]; the caller then runs it through sqlx's pool, whose thread does the long
//! work while the HTTP worker goes on with other requests. The steps are the main bound because
//! they do not count the time the thread is descheduled: a wall-clock budget of 2 ms, tried
//! first, interrupted reads of 1.5 ms whenever the machine was busy. Every other failure
//! ([`Refused::Failed`]) is also answered through sqlx, so this path never decides an error.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use rusqlite::types::{Null, ValueRef};
use rusqlite::{Connection, OpenFlags, Statement};
use sea_orm::{DbErr, Value};

use super::super::row::parse_stored_datetime;
use crate::model::{Cells, DateText, is_formatted_datetime};

/// Idle connections kept for reuse, at least: a statement holds its connection only while it
/// runs on its thread, so as many are in use as threads read at once (the HTTP workers, one
/// per core). More are kept on machines with more cores ([`Readers::new`]).
const MIN_IDLE: usize = 8;
/// Virtual-machine steps between two calls of the progress handler (a few microseconds of work).
const STEP: i32 = 1_000;
/// The steps a statement may take on the calling thread, in calls of the progress handler:
/// 200 000 steps.
const MAX_STEPS: u32 = 200;
/// How long a statement may take on the calling thread, whatever its steps.
const MAX_WAIT: Duration = Duration::from_millis(20);
/// Prepared statements cached per connection (a plan runs one to a few).
const CACHED_STATEMENTS: usize = 64;
/// The page cache of each reading connection (these, and sqlx's: its readers and the
/// connection of its transactions) by default, in KiB; `--sqlite-cache-mib` sets another
/// ([`Readers::with_cache_kib`], [`crate::storage::ConnectOptions`]). SQLite's
/// default, 2 MiB, is smaller than the table of 10 000 posts of the benchmark (3.5 MiB): a
/// scan of a table that does not fit misses every page (the cache is least recently used), and
/// each page missed is read and parsed again. A cache grows only with the pages its connection
/// reads, and a connection reads only while a request uses it: about as many fill theirs as
/// requests read at once.
pub const READER_CACHE_KIB: u32 = 32 * 1024;

/// Why a statement was not answered here.
#[derive(Debug)]
pub enum Refused {
    /// It needed more than 200 000 steps or 20 ms.
    TooLong,
    /// Anything else: the database was busy, a value of a type this path does not read, …
    Failed(String),
}

/// One value of a row. Text is a range of the row's text buffer.
#[derive(Debug, Clone, Copy)]
enum Cell {
    Null,
    Int(i64),
    Real(f64),
    Text(u32, u32),
    Blob,
}

/// A row read by this module: its values, and the text of its text values.
#[derive(Debug)]
pub struct LiteRow {
    cells: Box<[Cell]>,
    text: Box<str>,
}

fn mismatch(idx: usize, want: &str) -> DbErr {
    DbErr::Type(format!("column {idx} holds no {want}"))
}

impl LiteRow {
    fn cell(&self, idx: usize) -> Result<Cell, DbErr> {
        self.cells
            .get(idx)
            .copied()
            .ok_or_else(|| DbErr::Type(format!("no column {idx}")))
    }
}

/// What sqlx's SQLite decoders accept, read strictly: an integer for `Int` and `Boolean`, a
/// real for `Float` (a `REAL` column always yields reals, so an integer is refused rather than
/// converted), text for the rest. Anything else is an error, and the plan leaves the request to
/// the executor.
impl Cells for LiteRow {
    fn text(&self, idx: usize) -> Result<Option<&str>, DbErr> {
        match self.cell(idx)? {
            Cell::Null => Ok(None),
            Cell::Text(from, to) => Ok(self.text.get(from as usize..to as usize)),
            _ => Err(mismatch(idx, "text")),
        }
    }
    fn int(&self, idx: usize) -> Result<Option<i32>, DbErr> {
        self.int64(idx)?
            .map(|v| i32::try_from(v).map_err(|e| DbErr::Type(e.to_string())))
            .transpose()
    }
    fn int64(&self, idx: usize) -> Result<Option<i64>, DbErr> {
        match self.cell(idx)? {
            Cell::Null => Ok(None),
            Cell::Int(v) => Ok(Some(v)),
            _ => Err(mismatch(idx, "integer")),
        }
    }
    fn float(&self, idx: usize) -> Result<Option<f64>, DbErr> {
        match self.cell(idx)? {
            Cell::Null => Ok(None),
            Cell::Real(v) => Ok(Some(v)),
            _ => Err(mismatch(idx, "real")),
        }
    }
    fn boolean(&self, idx: usize) -> Result<Option<bool>, DbErr> {
        Ok(self.int64(idx)?.map(|v| v != 0))
    }
    fn datetime(&self, idx: usize) -> Result<Option<DateTime<Utc>>, DbErr> {
        self.text(idx)?.map(parse_stored_datetime).transpose()
    }
    /// svc writes date-times in the API's form, so the stored text is normally the answer.
    fn datetime_text(&self, idx: usize) -> Result<Option<DateText<'_>>, DbErr> {
        match self.text(idx)? {
            None => Ok(None),
            Some(text) if is_formatted_datetime(text) => Ok(Some(DateText::Stored(text))),
            Some(text) => parse_stored_datetime(text).map(|d| Some(DateText::of(&d))),
        }
    }
}

/// A connection and the clock its progress handler reads.
struct Reader {
    conn: Connection,
    clock: Arc<Clock>,
}

/// The running statement's calls of the progress handler, when it must end (in nanoseconds
/// since `base`), and whether the progress handler ended one.
struct Clock {
    base: Instant,
    calls: AtomicU32,
    /// The calls the running statement may take ([`MAX_STEPS`], or no bound on a blocking
    /// thread).
    limit: AtomicU32,
    deadline: AtomicU64,
    interrupted: AtomicBool,
}

impl Clock {
    fn now(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Starts a statement's budget: [`MAX_STEPS`] and [`MAX_WAIT`], or none.
    fn start(&self, bounded: bool) {
        let budget = u64::try_from(MAX_WAIT.as_nanos()).unwrap_or(u64::MAX);
        self.interrupted.store(false, Ordering::Relaxed);
        self.calls.store(0, Ordering::Relaxed);
        let (limit, deadline) = if bounded {
            (MAX_STEPS, self.now().saturating_add(budget))
        } else {
            (u32::MAX, u64::MAX)
        };
        self.limit.store(limit, Ordering::Relaxed);
        self.deadline.store(deadline, Ordering::Relaxed);
    }

    /// The progress handler: whether to interrupt the statement.
    fn expired(&self) -> bool {
        let calls = self.calls.fetch_add(1, Ordering::Relaxed);
        let expired = calls >= self.limit.load(Ordering::Relaxed)
            || self.now() > self.deadline.load(Ordering::Relaxed);
        if expired {
            self.interrupted.store(true, Ordering::Relaxed);
        }
        expired
    }
}

/// The read-only connections of one SQLite file.
pub struct Readers {
    path: PathBuf,
    idle: Mutex<Vec<Reader>>,
    /// The most idle connections kept.
    keep: usize,
    /// Each connection's page cache, in KiB.
    cache_kib: u32,
}

impl std::fmt::Debug for Readers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Readers").field("path", &self.path).finish()
    }
}

impl Readers {
    /// Readers of the database file at `path` (opened when first needed).
    pub fn new(path: &Path) -> Readers {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        Readers {
            path: path.to_owned(),
            idle: Mutex::new(Vec::new()),
            keep: MIN_IDLE.max(2 * cores),
            cache_kib: READER_CACHE_KIB,
        }
    }

    /// The same readers with a page cache of `kib` KiB on each connection (opened later).
    pub fn with_cache_kib(mut self, kib: u32) -> Readers {
        self.cache_kib = kib;
        self
    }

    fn open(&self) -> Result<Reader, rusqlite::Error> {
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        // A busy database is left to sqlx's pool, which waits.
        conn.busy_timeout(Duration::ZERO)?;
        conn.execute_batch(&format!("PRAGMA cache_size = -{};", self.cache_kib))?;
        conn.set_prepared_statement_cache_capacity(CACHED_STATEMENTS);
        let clock = Arc::new(Clock {
            base: Instant::now(),
            calls: AtomicU32::new(0),
            limit: AtomicU32::new(MAX_STEPS),
            deadline: AtomicU64::new(0),
            interrupted: AtomicBool::new(false),
        });
        let handler = clock.clone();
        conn.progress_handler(STEP, Some(move || handler.expired()))?;
        Ok(Reader { conn, clock })
    }

    /// Runs the `SELECT` `sql` with `values` bound to its `?`s and reads every row, within
    /// the calling thread's budget.
    pub fn query(&self, sql: &str, values: &[Value]) -> Result<Vec<LiteRow>, Refused> {
        self.query_within(sql, values, true)
    }

    /// [`Readers::query`] without a budget, for a blocking thread (bulk reads: NDF exports).
    pub fn query_unbounded(&self, sql: &str, values: &[Value]) -> Result<Vec<LiteRow>, Refused> {
        self.query_within(sql, values, false)
    }

    /// Runs the `SELECT` `sql` with `values` bound, within the calling thread's budget:
    /// how many rows it yields, and the first [`Keep::count`] of them in the order of
    /// [`Keep::key`] (the rest are counted, not copied). The statement's own order does not
    /// matter.
    pub fn count_and_keep(
        &self,
        sql: &str,
        values: &[Value],
        keep: Keep,
    ) -> Result<(u64, Vec<LiteRow>), Refused> {
        self.run_within(sql, values, true, |stmt| count_and_keep(stmt, keep))
    }

    fn query_within(
        &self,
        sql: &str,
        values: &[Value],
        bounded: bool,
    ) -> Result<Vec<LiteRow>, Refused> {
        self.run_within(sql, values, bounded, read_rows)
    }

    /// Prepares (or takes from the cache) and binds `sql` on an idle connection, and reads it
    /// with `read`, within the calling thread's budget when `bounded`.
    fn run_within<T>(
        &self,
        sql: &str,
        values: &[Value],
        bounded: bool,
        read: impl FnOnce(&mut Statement<'_>) -> Result<Result<T, Refused>, rusqlite::Error>,
    ) -> Result<T, Refused> {
        let taken = self.idle.lock().map(|mut idle| idle.pop()).unwrap_or(None);
        let reader = match taken {
            Some(reader) => reader,
            None => self.open().map_err(|e| Refused::Failed(e.to_string()))?,
        };
        reader.clock.start(bounded);
        let result = run(&reader.conn, sql, values, read);
        let result = match result {
            Err(_) if reader.clock.interrupted.load(Ordering::Relaxed) => Err(Refused::TooLong),
            Err(e) => Err(Refused::Failed(e.to_string())),
            Ok(Err(refused)) => Err(refused),
            Ok(Ok(rows)) => Ok(rows),
        };
        if let Ok(mut idle) = self.idle.lock()
            && idle.len() < self.keep
        {
            idle.push(reader);
        }
        result
    }
}

/// Prepares (or takes from the cache), binds and reads `sql` with `read`.
fn run<T>(
    conn: &Connection,
    sql: &str,
    values: &[Value],
    read: impl FnOnce(&mut Statement<'_>) -> Result<Result<T, Refused>, rusqlite::Error>,
) -> Result<Result<T, Refused>, rusqlite::Error> {
    let mut stmt = conn.prepare_cached(sql)?;
    if let Err(refused) = bind(&mut stmt, values)? {
        return Ok(Err(refused));
    }
    read(&mut stmt)
}

/// Binds `values` to the statement's `?`s, in order.
pub(super) fn bind(
    stmt: &mut Statement<'_>,
    values: &[Value],
) -> Result<Result<(), Refused>, rusqlite::Error> {
    for (i, value) in values.iter().enumerate() {
        let at = i + 1;
        match value {
            Value::String(Some(s)) => stmt.raw_bind_parameter(at, s.as_str())?,
            Value::Int(Some(v)) => stmt.raw_bind_parameter(at, v)?,
            Value::BigInt(Some(v)) => stmt.raw_bind_parameter(at, v)?,
            Value::Double(Some(v)) => stmt.raw_bind_parameter(at, v)?,
            // As sqlx binds them on SQLite: 0 or 1.
            Value::Bool(Some(v)) => stmt.raw_bind_parameter(at, i64::from(*v))?,
            Value::String(None)
            | Value::Int(None)
            | Value::BigInt(None)
            | Value::Double(None)
            | Value::Bool(None) => stmt.raw_bind_parameter(at, Null)?,
            other => {
                return Ok(Err(Refused::Failed(format!(
                    "a parameter this path does not bind: {other:?}"
                ))));
            }
        }
    }
    Ok(Ok(()))
}

/// Runs the bound statement to its end and reads every row it yields.
pub(super) fn read_rows(
    stmt: &mut Statement<'_>,
) -> Result<Result<Vec<LiteRow>, Refused>, rusqlite::Error> {
    let mut copier = Copier::new(stmt);
    let mut rows = stmt.raw_query();
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        match copier.copy(row)? {
            Ok(row) => out.push(row),
            Err(refused) => return Ok(Err(refused)),
        }
    }
    Ok(Ok(out))
}

/// Copies rows of a statement into [`LiteRow`]s, reusing its buffers from one row to the next.
struct Copier {
    width: usize,
    text: String,
    cells: Vec<Cell>,
}

impl Copier {
    fn new(stmt: &Statement<'_>) -> Copier {
        let width = stmt.column_count();
        Copier {
            width,
            text: String::new(),
            cells: Vec::with_capacity(width),
        }
    }

    fn copy(
        &mut self,
        row: &rusqlite::Row<'_>,
    ) -> Result<Result<LiteRow, Refused>, rusqlite::Error> {
        let text = &mut self.text;
        let cells = &mut self.cells;
        text.clear();
        cells.clear();
        for idx in 0..self.width {
            cells.push(match row.get_ref(idx)? {
                ValueRef::Null => Cell::Null,
                ValueRef::Integer(v) => Cell::Int(v),
                ValueRef::Real(v) => Cell::Real(v),
                ValueRef::Text(bytes) => {
                    let Ok(s) = std::str::from_utf8(bytes) else {
                        return Ok(Err(Refused::Failed(format!("column {idx} is not UTF-8"))));
                    };
                    let from = text.len();
                    text.push_str(s);
                    match (u32::try_from(from), u32::try_from(text.len())) {
                        (Ok(from), Ok(to)) => Cell::Text(from, to),
                        _ => return Ok(Err(Refused::Failed("a row over 4 GiB".into()))),
                    }
                }
                ValueRef::Blob(_) => Cell::Blob,
            });
        }
        Ok(Ok(LiteRow {
            cells: cells.as_slice().into(),
            text: text.as_str().into(),
        }))
    }
}

/// Which rows [`Readers::count_and_keep`] keeps besides counting them all: the `count` whose
/// text in column `key` comes first, bytewise (as SQLite's `BINARY` collation orders text, the
/// collation of the id columns), or last when `descending`; in that order. Every row must hold
/// a distinct text there.
#[derive(Debug, Clone, Copy)]
pub struct Keep {
    /// The column ordered by.
    pub key: usize,
    /// How many rows to keep.
    pub count: usize,
    /// Keep the last rows (in descending order) rather than the first.
    pub descending: bool,
}

/// Counts the rows of the bound statement and keeps those `keep` asks for. Only the rows that
/// come before the last one kept so far are copied: when the statement yields them roughly in
/// key order (a table's rows in insertion order, its ids increasing), about `keep.count`.
fn count_and_keep(
    stmt: &mut Statement<'_>,
    keep: Keep,
) -> Result<Result<(u64, Vec<LiteRow>), Refused>, rusqlite::Error> {
    let mut copier = Copier::new(stmt);
    let mut rows = stmt.raw_query();
    let mut total: u64 = 0;
    // The rows kept, in order, each with its key.
    let mut kept: Vec<(Box<[u8]>, LiteRow)> = Vec::new();
    // Whether `a` comes before `b` in the order kept.
    let before = |a: &[u8], b: &[u8]| if keep.descending { a > b } else { a < b };
    while let Some(row) = rows.next()? {
        total += 1;
        if keep.count == 0 {
            continue;
        }
        let ValueRef::Text(key) = row.get_ref(keep.key)? else {
            return Ok(Err(Refused::Failed(format!(
                "column {} holds no text",
                keep.key
            ))));
        };
        let full = kept.len() == keep.count;
        if full && kept.last().is_some_and(|(last, _)| !before(key, last)) {
            continue;
        }
        let at = kept.partition_point(|(k, _)| before(k, key));
        let key: Box<[u8]> = key.into();
        let copied = match copier.copy(row)? {
            Ok(copied) => copied,
            Err(refused) => return Ok(Err(refused)),
        };
        if full {
            kept.pop();
        }
        kept.insert(at, (key, copied));
    }
    Ok(Ok((total, kept.into_iter().map(|(_, row)| row).collect())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database file whose table `t` holds the rows `(id, v)` of `ids`, inserted in that
    /// order, `v` the row's position modulo 7; its readers, and the connection that wrote it
    /// (kept open, as svc keeps its writer's).
    fn database(name: &str, ids: &[String]) -> (PathBuf, Readers, Connection) {
        let path = std::env::temp_dir().join(format!(
            "svc-readers-{name}-{}-{}.db",
            std::process::id(),
            Utc::now().timestamp_nanos_opt().unwrap_or_default()
        ));
        let conn = Connection::open(&path).expect("open");
        conn.execute_batch(
            "PRAGMA journal_mode=WAL; CREATE TABLE t (id TEXT NOT NULL PRIMARY KEY, v INTEGER)",
        )
        .expect("create");
        for (i, id) in ids.iter().enumerate() {
            conn.execute("INSERT INTO t VALUES (?1, ?2)", (id, (i % 7) as i64))
                .expect("insert");
        }
        let readers = Readers::new(&path);
        (path, readers, conn)
    }

    fn ids_of(rows: &[LiteRow]) -> Vec<(String, i64)> {
        rows.iter()
            .map(|row| {
                (
                    row.text(0).expect("id").expect("id").to_owned(),
                    row.int64(1).expect("v").expect("v"),
                )
            })
            .collect()
    }

    /// The rows kept and the count are those of `ORDER BY id LIMIT n` and of `COUNT(*)`,
    /// whatever order the table yields its rows in.
    #[test]
    fn count_and_keep_is_a_count_and_a_sorted_page() {
        let ascending: Vec<String> = (0..300).map(|i| format!("c{i:05}")).collect();
        let descending: Vec<String> = ascending.iter().rev().cloned().collect();
        // A fixed shuffle (a linear congruential sequence).
        let mut shuffled = ascending.clone();
        let mut state: u64 = 7;
        for i in (1..shuffled.len()).rev() {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            shuffled.swap(i, (state >> 33) as usize % (i + 1));
        }
        for (name, ids) in [
            ("asc", ascending),
            ("desc", descending),
            ("shuffled", shuffled),
        ] {
            let (path, readers, writer) = database(name, &ids);
            for filter in ["v = 3", "v < 5", "v > 9", "id >= 'c00290'"] {
                let counted = readers
                    .query(&format!("SELECT count(*) FROM t WHERE {filter}"), &[])
                    .expect("count");
                let count = counted[0].int64(0).expect("count").expect("count");
                for descending in [false, true] {
                    for keep in [0, 1, 3, 10, 50, 400] {
                        let direction = if descending { "DESC" } else { "ASC" };
                        let page = readers
                            .query(
                                &format!(
                                    "SELECT id, v FROM t WHERE {filter} ORDER BY id {direction} LIMIT {keep}"
                                ),
                                &[],
                            )
                            .expect("page");
                        let (total, kept) = readers
                            .count_and_keep(
                                &format!("SELECT id, v FROM t WHERE {filter}"),
                                &[],
                                Keep {
                                    key: 0,
                                    count: keep,
                                    descending,
                                },
                            )
                            .expect("scan");
                        let case = format!("{name}, {filter}, {direction}, {keep}");
                        assert_eq!(i64::try_from(total).ok(), Some(count), "{case}");
                        assert_eq!(ids_of(&kept), ids_of(&page), "{case}");
                    }
                }
            }
            drop((readers, writer));
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
            }
        }
    }

    /// A key column that holds no text makes the scan refuse the statement (the caller then
    /// reads as it would without), rather than order values it cannot compare.
    #[test]
    fn count_and_keep_refuses_keys_that_are_not_text() {
        let ids: Vec<String> = (0..5).map(|i| format!("c{i}")).collect();
        let (path, readers, writer) = database("untyped", &ids);
        let refused = readers.count_and_keep(
            "SELECT id, v FROM t",
            &[],
            Keep {
                key: 1,
                count: 2,
                descending: false,
            },
        );
        assert!(matches!(refused, Err(Refused::Failed(_))), "{refused:?}");
        drop((readers, writer));
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }
}
