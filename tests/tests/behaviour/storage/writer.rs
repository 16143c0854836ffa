//! SQLite mutations on the calling thread (`runtime/src/storage/sqlite/writer.rs`): their transactions
//! commit and roll back, report constraint violations as sqlx's errors do, take turns with
//! transactions through sqlx, and go through sqlx when another connection holds the database.
//! The mutations' behaviour itself is tested through the API on both databases
//! (`mutations.rs`, `nested_mutations.rs`, `relation_mutations.rs`, …).

use std::time::Duration;

use sea_orm::{ConnectionTrait, Value};
use svc_runtime::model::Cells;
use svc_runtime::storage::{Backend, Counted, Counter, Db, Sql, Tx, WriteUnit, unique_violation};

use crate::support::TestDatabase;

async fn database() -> (TestDatabase, Db) {
    TestDatabase::sqlite_with(
        "CREATE TABLE t (id TEXT PRIMARY KEY, u TEXT UNIQUE, n INTEGER); \
         CREATE TABLE e (t TEXT NOT NULL REFERENCES t (id))",
    )
    .await
}

/// Statements in `tx`, counted by `counter`.
fn in_tx<'a>(tx: &'a Tx, counter: &'a Counter) -> Counted<'a, Tx> {
    Counted { conn: tx, counter }
}

fn insert(id: &str, u: &str) -> Sql {
    let mut sql = Sql::new(Backend::Sqlite);
    sql.push("INSERT INTO t (id, u, n) VALUES (")
        .bind(Value::String(Some(id.into())))
        .push(", ")
        .bind(Value::String(Some(u.into())))
        .push(", ")
        .bind(Value::Int(Some(1)))
        .push(") RETURNING id, u, n");
    sql
}

/// The ids in `t`, read through sqlx's reader pool.
async fn ids(db: &Db) -> Vec<String> {
    let counter = Counter::new();
    let exec = Counted {
        conn: db.reader(),
        counter: &counter,
    };
    let mut sql = Sql::new(Backend::Sqlite);
    sql.push("SELECT id FROM t ORDER BY id");
    exec.all(sql)
        .await
        .expect("read")
        .iter()
        .map(|row| row.string(0).unwrap().unwrap())
        .collect()
}

/// A bounded mutation's transaction runs on the writer connection: its statements see its own
/// writes, a dropped transaction leaves nothing, a committed one is seen by readers.
#[tokio::test]
async fn mutations_write_on_the_calling_thread_and_roll_back_when_dropped() {
    let (_database, db) = database().await;
    let counter = Counter::new();

    let tx = db.begin_write(WriteUnit::Bounded).await.expect("begin");
    assert!(matches!(tx, Tx::Lite(_)), "on the writer connection");
    let exec = in_tx(&tx, &counter);
    let rows = exec.all(insert("a", "x")).await.expect("insert");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].text(0).unwrap(), Some("a"));
    assert_eq!(rows[0].int(2).unwrap(), Some(1));
    let mut update = Sql::new(Backend::Sqlite);
    update.push("UPDATE t SET n = n + 1");
    assert_eq!(exec.execute(update).await.expect("update"), 1);
    let mut read = Sql::new(Backend::Sqlite);
    read.push("SELECT n FROM t WHERE id = 'a'");
    let row = exec.one(read).await.expect("read").expect("its own write");
    assert_eq!(row.int(0).unwrap(), Some(2));
    assert_eq!(counter.get(), 3);
    assert!(ids(&db).await.is_empty(), "not committed yet");
    drop(tx);
    assert!(ids(&db).await.is_empty(), "rolled back");

    let tx = db
        .begin_write(WriteUnit::Bounded)
        .await
        .expect("begin again");
    assert!(matches!(tx, Tx::Lite(_)));
    let exec = in_tx(&tx, &counter);
    exec.all(insert("b", "y")).await.expect("insert");
    tx.commit().await.expect("commit");
    assert_eq!(ids(&db).await, ["b"]);
}

/// Constraint violations on the writer connection are reported as sqlx's are, and the failed
/// statement leaves the rest of the transaction to commit or roll back.
#[tokio::test]
async fn the_writer_reports_constraint_violations_by_kind() {
    let (_database, db) = database().await;
    let counter = Counter::new();
    let tx = db.begin_write(WriteUnit::Bounded).await.expect("begin");
    assert!(matches!(tx, Tx::Lite(_)));
    let exec = in_tx(&tx, &counter);
    exec.all(insert("a", "x")).await.expect("insert");
    let err = exec.all(insert("b", "x")).await.expect_err("a duplicate");
    assert_eq!(unique_violation(&err, "t"), Some(Some("u".to_owned())));
    let err = exec
        .all(insert("a", "z"))
        .await
        .expect_err("a duplicate id");
    assert_eq!(unique_violation(&err, "t"), Some(Some("id".to_owned())));
    let mut edge = Sql::new(Backend::Sqlite);
    edge.push("INSERT INTO e (t) VALUES ('nobody')");
    let err = exec.execute(edge).await.expect_err("a missing parent");
    assert!(
        matches!(
            svc_runtime::storage::sql_err(&err),
            Some(sea_orm::SqlErr::ForeignKeyConstraintViolation(_))
        ),
        "{err}"
    );
    assert_eq!(unique_violation(&err, "t"), None);
    tx.commit().await.expect("commit");
    assert_eq!(ids(&db).await, ["a"]);
}

/// Every write transaction of the process takes the same turn: one through sqlx (the unbounded
/// `deleteMany`/`updateMany`) holds off one on the writer connection until it ends, and the
/// other way round.
#[tokio::test]
async fn write_transactions_take_turns_whichever_connection_they_use() {
    let (_database, db) = database().await;
    // A bounded mutation's transaction runs on the calling thread, an unbounded one through sqlx.
    let unit = |inline| {
        if inline {
            WriteUnit::Bounded
        } else {
            WriteUnit::Unbounded
        }
    };
    for inline_first in [false, true] {
        let first = db.begin_write(unit(inline_first)).await.expect("begin");
        assert_eq!(matches!(first, Tx::Lite(_)), inline_first);
        let waiting = tokio::time::timeout(
            Duration::from_millis(200),
            db.begin_write(unit(!inline_first)),
        )
        .await;
        assert!(waiting.is_err(), "the second waits for the first");
        let second = {
            let db = db.clone();
            tokio::spawn(async move {
                let tx = db.begin_write(unit(!inline_first)).await.expect("begin");
                let counter = Counter::new();
                let exec = in_tx(&tx, &counter);
                exec.all(insert("second", "s")).await.expect("insert");
                tx.commit().await.expect("commit");
            })
        };
        let counter = Counter::new();
        let exec = in_tx(&first, &counter);
        exec.all(insert("first", "f")).await.expect("insert");
        tokio::time::sleep(Duration::from_millis(50)).await;
        first.commit().await.expect("commit");
        second.await.expect("the second transaction");
        assert_eq!(ids(&db).await, ["first", "second"]);
        let mut clear = Sql::new(Backend::Sqlite);
        clear.push("DELETE FROM t");
        db.writer()
            .execute_unprepared(clear.text())
            .await
            .expect("clear");
    }
}

/// While another connection (here another `Db`, as another process would) holds the database's
/// write lock, a mutation goes through sqlx, whose thread waits for the lock, instead of
/// waiting on the calling thread or failing.
#[tokio::test]
async fn a_database_held_elsewhere_sends_mutations_through_sqlx() {
    let (database, db) = database().await;
    let other = Db::connect(&database.url).await.expect("connect again");
    let held = other
        .begin_write(WriteUnit::Bounded)
        .await
        .expect("begin elsewhere");
    assert!(matches!(held, Tx::Lite(_)));
    let counter = Counter::new();
    let exec = in_tx(&held, &counter);
    exec.all(insert("held", "h"))
        .await
        .expect("insert elsewhere");

    let tx = db.begin_write(WriteUnit::Bounded).await.expect("begin");
    assert!(matches!(tx, Tx::Orm(_)), "the busy database goes to sqlx");
    let release = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        held.commit().await.expect("commit elsewhere");
    });
    let exec = in_tx(&tx, &counter);
    exec.all(insert("waited", "w"))
        .await
        .expect("sqlx waits for the lock");
    tx.commit().await.expect("commit");
    release.await.expect("released");
    assert_eq!(ids(&db).await, ["held", "waited"]);

    // The next mutation is back on the writer connection.
    let tx = db.begin_write(WriteUnit::Bounded).await.expect("begin");
    assert!(matches!(tx, Tx::Lite(_)));
}
