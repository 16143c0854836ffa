//! SQLite reads of compiled plans on the calling thread (`runtime/src/storage/sqlite/readers.rs`): what
//! they read, what they see of writes, and when they leave a statement to sqlx's pool. The
//! plans' answers themselves are compared with the executor's in `simple/direct.rs`, on both
//! databases.

use sea_orm::{ConnectionTrait, Value};
use svc_runtime::model::Cells;
use svc_runtime::storage::{Backend, Counter, Db, InlineReads, PlanReads, Row, Sql};

use crate::support::TestDatabase;

/// A SQLite database with one table of every column kind plans read.
async fn database() -> (TestDatabase, Db) {
    TestDatabase::sqlite_with(
        "CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER, r REAL, b BOOLEAN, \
         s TEXT COLLATE NOCASE, x BLOB)",
    )
    .await
}

/// What a plan brings to its reads: its statement count and its fast-path state.
#[derive(Default)]
struct Plan {
    counter: Counter,
    inline: InlineReads,
}

impl Plan {
    fn exec<'a>(&'a self, db: &'a Db) -> PlanReads<'a> {
        PlanReads {
            db,
            counter: &self.counter,
            inline: &self.inline,
        }
    }
}

fn sql(text: &str, values: Vec<Value>) -> Sql {
    let mut sql = Sql::new(Backend::Sqlite);
    let mut parts = text.split('?');
    sql.push(parts.next().unwrap_or_default());
    for (part, value) in parts.zip(values) {
        sql.bind(value).push(part);
    }
    sql
}

async fn write(db: &Db, text: &str) {
    db.writer()
        .execute_unprepared(text)
        .await
        .expect("the write");
}

fn is_lite(rows: &[Row]) -> bool {
    rows.iter().all(|r| matches!(r, Row::Lite(_)))
}

fn is_sqlx(rows: &[Row]) -> bool {
    rows.iter().all(|r| matches!(r, Row::Orm(_)))
}

/// Reads run on the calling thread and bind every kind of parameter plans bind; each sees the
/// writes committed before it, and counts as one statement.
#[tokio::test]
async fn plan_reads_run_on_the_calling_thread_and_see_every_committed_write() {
    let (_database, db) = database().await;
    write(
        &db,
        "INSERT INTO t (id, n, r, b, s) VALUES ('a', 7, 1.5, 1, 'Ann'), ('b', NULL, NULL, 0, NULL)",
    )
    .await;
    let plan = Plan::default();
    let exec = plan.exec(&db);
    let (counter, inline) = (&plan.counter, &plan.inline);

    let rows = exec
        .rows(sql("SELECT id, n, r, b, s FROM t ORDER BY id", vec![]))
        .await
        .expect("read");
    assert_eq!(rows.len(), 2);
    assert!(is_lite(&rows), "read on the calling thread: {rows:?}");
    let (a, b) = (&rows[0], &rows[1]);
    assert_eq!(a.text(0).unwrap(), Some("a"));
    assert_eq!(a.int(1).unwrap(), Some(7));
    assert_eq!(a.int64(1).unwrap(), Some(7));
    assert_eq!(a.float(2).unwrap(), Some(1.5));
    assert_eq!(a.boolean(3).unwrap(), Some(true));
    assert_eq!(a.string(4).unwrap().as_deref(), Some("Ann"));
    assert_eq!(b.boolean(3).unwrap(), Some(false));
    for idx in [1, 2, 4] {
        assert!(b.text(idx).unwrap().is_none(), "column {idx} is null");
    }
    assert!(b.int(1).unwrap().is_none() && b.float(2).unwrap().is_none());
    assert_eq!(counter.get(), 1);

    // Every parameter kind a plan binds, each selecting the one row it matches.
    let cases = [
        ("n = ?", Value::Int(Some(7))),
        ("n = ?", Value::BigInt(Some(7))),
        ("r = ?", Value::Double(Some(1.5))),
        ("b = ?", Value::Bool(Some(true))),
        ("s = ?", Value::String(Some("ANN".into()))),
        ("n IS ?", Value::Int(None)),
    ];
    for (condition, value) in cases {
        let expected = if matches!(value, Value::Int(None)) {
            "b"
        } else {
            "a"
        };
        let text = format!("SELECT id FROM t WHERE {condition}");
        let rows = exec.rows(sql(&text, vec![value])).await.expect("read");
        assert!(is_lite(&rows), "{text}");
        let ids: Vec<_> = rows.iter().map(|r| r.string(0).unwrap()).collect();
        assert_eq!(ids, [Some(expected.to_owned())], "{text}");
    }

    // A write committed through sqlx's writer is seen by the next read.
    write(&db, "INSERT INTO t (id, n) VALUES ('c', 9)").await;
    let rows = exec
        .rows(sql("SELECT COUNT(*), SUM(n) FROM t", vec![]))
        .await
        .expect("read");
    assert!(is_lite(&rows));
    assert_eq!(rows[0].int64(0).unwrap(), Some(3));
    assert_eq!(rows[0].int64(1).unwrap(), Some(16));
    assert_eq!(inline.skipped("SELECT COUNT(*), SUM(n) FROM t"), 0);
    assert_eq!(counter.get(), 2 + 6);
}

/// A statement that needs longer than the calling thread may take runs through sqlx's pool,
/// counted once, with the same answer. Its next run goes through the pool too; after
/// consecutive long ones, the next 2, 4, …; a run that fits starts the count again. The plan's
/// other statements stay on the calling thread meanwhile, and their runs leave its record alone.
#[tokio::test]
async fn a_read_too_long_for_the_calling_thread_runs_through_the_pool_and_the_plan_backs_off() {
    let (_database, db) = database().await;
    write(&db, "INSERT INTO t (id) VALUES ('a')").await;
    let plan = Plan::default();
    let exec = plan.exec(&db);
    let (counter, inline) = (&plan.counter, &plan.inline);
    // One statement, long or short by the value bound.
    let counting = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?) \
                    SELECT COUNT(*) FROM c";
    const LONG: i64 = 3_000_000;
    let short = "SELECT id FROM t";
    let reads = std::cell::Cell::new(0);
    // Reads through sqlx (`false`) or on the calling thread (`true`).
    let read = async |text: &str, upto: i64| {
        let values = if text == counting {
            vec![Value::BigInt(Some(upto))]
        } else {
            vec![]
        };
        let rows = exec.rows(sql(text, values)).await.expect("read");
        reads.set(reads.get() + 1);
        assert_eq!(rows.len(), 1, "{rows:?}");
        if text == counting {
            assert_eq!(rows[0].int64(0).unwrap(), Some(upto));
        }
        assert!(is_lite(&rows) || is_sqlx(&rows));
        is_lite(&rows)
    };

    assert!(!read(counting, LONG).await, "run through the pool");
    assert_eq!(counter.get(), 1, "the interrupted run is not counted");
    assert_eq!((inline.skipped(counting), inline.skipped(short)), (1, 0));
    assert!(
        read(short, 0).await,
        "the other statement stays on the calling thread"
    );
    assert!(!read(counting, 10).await, "skipped, short as it now is");

    // Consecutive long runs: 1, then 2, then 4 skipped runs.
    assert!(!read(counting, LONG).await);
    assert_eq!(inline.skipped(counting), 2);
    assert!(read(short, 0).await);
    assert_eq!(
        inline.skipped(counting),
        2,
        "another statement's run leaves the record"
    );
    assert!(
        !read(counting, LONG).await && !read(counting, LONG).await,
        "skipped"
    );
    assert!(!read(counting, LONG).await);
    assert_eq!(inline.skipped(counting), 4);
    for _ in 0..4 {
        assert!(!read(counting, 10).await, "skipped");
    }
    assert!(read(counting, 10).await, "a run that fits");
    assert_eq!(inline.skipped(counting), 0);
    assert_eq!(counter.get(), reads.get());

    // The count starts again after a run that fits.
    assert!(!read(counting, LONG).await);
    assert_eq!(inline.skipped(counting), 1);
    assert!(read(short, 0).await);
}

/// A parameter this path does not bind runs through sqlx without giving up the calling thread
/// for later reads; values are read strictly, so a plan leaves odd ones to the executor; and a
/// database without a file reads through sqlx.
#[tokio::test]
async fn what_this_path_does_not_read_is_left_to_sqlx() {
    let (_database, db) = database().await;
    write(
        &db,
        "INSERT INTO t (id, n, r, b, s, x) VALUES ('a', 5000000000, 2, 2, 12, X'00')",
    )
    .await;
    let plan = Plan::default();
    let exec = plan.exec(&db);
    let (counter, inline) = (&plan.counter, &plan.inline);
    let date = sea_orm::prelude::ChronoDateTimeUtc::from_timestamp(0, 0).expect("a date");
    let rows = exec
        .rows(sql(
            "SELECT id FROM t WHERE ? IS NOT NULL",
            vec![Value::ChronoDateTimeUtc(Some(date))],
        ))
        .await
        .expect("read");
    assert!(is_sqlx(&rows) && rows.len() == 1, "{rows:?}");
    assert_eq!(inline.skipped("SELECT id FROM t WHERE ? IS NOT NULL"), 0);

    let rows = exec
        .rows(sql("SELECT n, r, b, s, x FROM t", vec![]))
        .await
        .expect("read");
    assert!(is_lite(&rows));
    let row = &rows[0];
    assert!(row.int(0).is_err(), "5000000000 is no Int");
    assert_eq!(row.int64(0).unwrap(), Some(5_000_000_000));
    assert_eq!(
        row.float(1).unwrap(),
        Some(2.0),
        "REAL affinity stores a real"
    );
    assert_eq!(row.boolean(2).unwrap(), Some(true));
    assert!(row.text(0).is_err(), "an integer read as text");
    assert_eq!(
        row.text(3).unwrap(),
        Some("12"),
        "TEXT affinity stores text"
    );
    assert!(row.text(4).is_err() && row.int64(4).is_err(), "a blob");
    assert!(row.text(9).is_err(), "no such column");
    assert_eq!(counter.get(), 2);

    let memory = Db::connect("sqlite::memory:").await.expect("connect");
    let exec = plan.exec(&memory);
    let rows = exec.rows(sql("SELECT 1", vec![])).await.expect("read");
    assert!(is_sqlx(&rows) && rows.len() == 1, "{rows:?}");
}
