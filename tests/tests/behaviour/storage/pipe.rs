//! PostgreSQL reads of compiled plans over connections a thread shares among its requests
//! (`runtime/src/storage/postgres/pipeline.rs`): pipelined statements each get their own answer, a slow one
//! does not hold back the statements sent after it, a request dropped mid-statement leaves the
//! connection answering correctly, connections ended by the server are replaced, and what the
//! path cannot do goes to sqlx. PostgreSQL only.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use sea_orm::Value;
use svc_runtime::model::Cells;
use svc_runtime::storage::{Backend, Counter, Db as StorageDb, InlineReads, PlanReads, Row, Sql};

use crate::support::{Db, TestDatabase, admin_connection};

/// A plan's read of `text` with `values` bound: its rows, and how many statements it counted.
async fn read(db: &StorageDb, text: &str, values: Vec<Value>) -> (Vec<Row>, u32) {
    let counter = Counter::new();
    let inline = InlineReads::default();
    let exec = PlanReads {
        db,
        counter: &counter,
        inline: &inline,
    };
    let mut sql = Sql::new(Backend::Postgres);
    sql.push(text);
    for value in values {
        sql.bind(value);
    }
    let rows = exec.rows(sql).await.expect("the read");
    (rows, counter.get())
}

fn is_pipe(row: &Row) -> bool {
    matches!(row, Row::Pipe(_))
}

async fn connect() -> Option<(TestDatabase, Arc<StorageDb>)> {
    let database = TestDatabase::create(Db::Postgres).await?;
    let db = StorageDb::connect(&database.url).await.expect("connect");
    Some((database, Arc::new(db)))
}

/// Many reads at once on one thread: each gets its own row, through the shared connections
/// (no more than a thread opens), counted once each.
#[tokio::test]
async fn reads_at_once_on_one_thread_share_connections_and_get_their_own_rows() {
    let Some((_database, db)) = connect().await else {
        return;
    };
    // The thread's first connection (reads while it opens go to sqlx).
    let (rows, _) = read(&db, "SELECT 1 AS n", vec![]).await;
    assert!(is_pipe(&rows[0]));
    let reads = (0..64).map(|i| {
        let db = db.clone();
        async move {
            let (rows, counted) = read(
                &db,
                "SELECT $1 + 1 AS n, $2 || '!' AS t, pg_backend_pid() AS pid",
                vec![Value::Int(Some(i)), Value::String(Some(format!("r{i}")))],
            )
            .await;
            assert_eq!(counted, 1);
            assert_eq!(rows.len(), 1);
            let row = &rows[0];
            assert!(is_pipe(row), "read through the shared connections");
            assert_eq!(row.int(0).unwrap(), Some(i + 1));
            assert_eq!(row.text(1).unwrap(), Some(format!("r{i}!").as_str()));
            row.int(2).unwrap().unwrap()
        }
    });
    let pids: HashSet<i32> = futures_util::future::join_all(reads)
        .await
        .into_iter()
        .collect();
    assert!(
        (1..=4).contains(&pids.len()),
        "one thread opens at most 4 connections: {pids:?}"
    );
}

/// Values of every type a plan binds, and every type it reads, round-trip with sqlx's
/// semantics: a text parameter compares as text, a timestamp keeps its microseconds, nulls are
/// typed.
#[tokio::test]
async fn values_bind_and_read_as_through_sqlx() {
    let Some((_database, db)) = connect().await else {
        return;
    };
    let at = chrono::DateTime::parse_from_rfc3339("2024-02-29T23:59:58.123456Z")
        .unwrap()
        .to_utc();
    let (rows, _) = read(
        &db,
        "SELECT $1::text AS t, $2 AS i, $3 AS big, $4 AS f, $5 AS b, $6 AS at, \
         $7::text AS missing, $8 = 'ABC' AS case_sensitive",
        vec![
            Value::String(Some("héllo \"w\"".into())),
            Value::Int(Some(-7)),
            Value::BigInt(Some(1 << 40)),
            Value::Double(Some(2.5)),
            Value::Bool(Some(true)),
            Value::ChronoDateTimeUtc(Some(at)),
            Value::String(None),
            Value::String(Some("abc".into())),
        ],
    )
    .await;
    let row = &rows[0];
    assert!(is_pipe(row));
    assert_eq!(row.text(0).unwrap(), Some("héllo \"w\""));
    assert_eq!(row.int(1).unwrap(), Some(-7));
    assert_eq!(row.int64(2).unwrap(), Some(1 << 40));
    assert_eq!(row.float(3).unwrap(), Some(2.5));
    assert_eq!(row.boolean(4).unwrap(), Some(true));
    assert_eq!(row.datetime(5).unwrap(), Some(at));
    assert_eq!(row.text(6).unwrap(), None);
    assert_eq!(row.boolean(7).unwrap(), Some(false));
    // A column read as another type is an error (the plan then gives up), not a wrong value.
    assert!(row.int(0).is_err());
    assert!(row.text(1).is_err());
}

/// A value of a type the shared connections do not bind goes to sqlx, and answers the same.
#[tokio::test]
async fn a_value_it_does_not_bind_is_read_through_sqlx() {
    let Some((_database, db)) = connect().await else {
        return;
    };
    let (rows, counted) = read(
        &db,
        "SELECT $1::int4 + 1 AS n",
        vec![Value::SmallInt(Some(4))],
    )
    .await;
    assert_eq!(counted, 1);
    assert!(!is_pipe(&rows[0]), "sqlx read it");
    assert_eq!(rows[0].int(0).unwrap(), Some(5));
}

/// A statement that fails on the shared connections is run again by sqlx, which reports the
/// error as before; the connection goes on serving reads.
#[tokio::test]
async fn a_failing_read_is_reported_by_sqlx_and_the_connection_serves_the_next() {
    let Some((_database, db)) = connect().await else {
        return;
    };
    let counter = Counter::new();
    let inline = InlineReads::default();
    let exec = PlanReads {
        db: &db,
        counter: &counter,
        inline: &inline,
    };
    let mut sql = Sql::new(Backend::Postgres);
    sql.push("SELECT 1 / $1 AS n").bind(Value::Int(Some(0)));
    let err = exec.rows(sql).await.expect_err("division by zero");
    assert!(err.to_string().contains("division by zero"), "{err}");
    let (rows, _) = read(&db, "SELECT 1 / $1 AS n", vec![Value::Int(Some(1))]).await;
    assert!(is_pipe(&rows[0]));
    assert_eq!(rows[0].int(0).unwrap(), Some(1));
}

/// A slow read does not hold back the reads this thread sends after it: once the connection
/// has answered nothing for a moment, the next read goes to another connection and is answered
/// while the slow one still runs.
#[tokio::test]
async fn a_slow_read_does_not_hold_back_the_reads_after_it() {
    let Some((_database, db)) = connect().await else {
        return;
    };
    // Opens the thread's first connection.
    read(&db, "SELECT 1 AS n", vec![]).await;
    let slow_db = db.clone();
    let slow = tokio::spawn(async move {
        read(
            &slow_db,
            "SELECT pg_backend_pid() AS pid, pg_sleep(2)::text AS s",
            vec![],
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (rows, _) = read(&db, "SELECT pg_backend_pid() AS pid", vec![]).await;
    assert!(
        !slow.is_finished(),
        "the read after the slow one was answered first"
    );
    let (slow_rows, _) = slow.await.unwrap();
    assert!(is_pipe(&rows[0]) && is_pipe(&slow_rows[0]));
    assert_ne!(
        rows[0].int(0).unwrap(),
        slow_rows[0].int(0).unwrap(),
        "another connection answered"
    );
}

/// A read whose request went away mid-statement (its future dropped) leaves its answer to the
/// connection, which discards it: the next read, sent on the same connection behind it, gets
/// its own rows.
#[tokio::test]
async fn a_read_dropped_mid_statement_leaves_the_connection_answering_correctly() {
    let Some((_database, db)) = connect().await else {
        return;
    };
    let (first, _) = read(&db, "SELECT pg_backend_pid() AS pid", vec![]).await;
    let slow = read(
        &db,
        "SELECT g AS n FROM (SELECT pg_sleep(0.3)) AS x, generate_series(1, 1000) AS g",
        vec![],
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(50), slow)
            .await
            .is_err(),
        "the slow read was cut off"
    );
    // The next read is sent behind the dropped one's rows, which the connection discards.
    let (next, _) = read(
        &db,
        "SELECT pg_backend_pid() AS pid, $1 AS n",
        vec![Value::Int(Some(7))],
    )
    .await;
    assert!(is_pipe(&next[0]));
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].int(0).unwrap(), first[0].int(0).unwrap());
    assert_eq!(next[0].int(1).unwrap(), Some(7));
}

/// Reads after the server ended the shared connections are answered (by sqlx while the ended
/// connection is found out, then on a new shared connection).
#[tokio::test]
async fn reads_after_the_server_ended_the_connections_are_answered() {
    let Some((database, db)) = connect().await else {
        return;
    };
    let name = database.postgres_schema().unwrap().to_owned();
    let (before, _) = read(&db, "SELECT pg_backend_pid() AS pid", vec![]).await;
    assert!(is_pipe(&before[0]));
    let mut admin = admin_connection().await.expect("PostgreSQL");
    let ended: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
    )
    .bind(&name)
    .fetch_all(&mut admin)
    .await
    .expect("pg_terminate_backend");
    assert!(ended.contains(&true));
    let mut piped_again = false;
    for i in 0..50 {
        let (rows, counted) = read(&db, "SELECT $1 AS n", vec![Value::Int(Some(i))]).await;
        assert_eq!(counted, 1);
        assert_eq!(rows[0].int(0).unwrap(), Some(i));
        if is_pipe(&rows[0]) {
            piped_again = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(piped_again, "a new shared connection serves the reads");
    let (after, _) = read(&db, "SELECT pg_backend_pid() AS pid", vec![]).await;
    assert_ne!(after[0].int(0).unwrap(), before[0].int(0).unwrap());
}

/// The URL's session options (the tests' `search_path`) and application name hold on the
/// shared connections: a table of the URL's schema is read there, by its unqualified name.
#[tokio::test]
async fn reads_run_with_the_urls_session_options() {
    use sea_orm::ConnectionTrait;
    let Some((database, db)) = connect().await else {
        return;
    };
    db.writer()
        .execute_unprepared("CREATE TABLE piped (n int); INSERT INTO piped VALUES (41), (42)")
        .await
        .expect("create the table");
    let (rows, _) = read(
        &db,
        "SELECT n, current_schema()::text AS s, current_setting('application_name') AS a \
         FROM piped ORDER BY n",
        vec![],
    )
    .await;
    assert!(rows.iter().all(is_pipe));
    let schema = database.postgres_schema().unwrap();
    let got: Vec<(Option<i32>, Option<&str>, Option<&str>)> = rows
        .iter()
        .map(|r| (r.int(0).unwrap(), r.text(1).unwrap(), r.text(2).unwrap()))
        .collect();
    assert_eq!(
        got,
        [
            (Some(41), Some(schema), Some(schema)),
            (Some(42), Some(schema), Some(schema))
        ]
    );
}

/// A burst of reads on a thread with no connection yet opens no more than a thread's share
/// (the reads that find its first connections still opening go to sqlx), so other threads
/// still find room; every read gets its own row.
#[tokio::test]
async fn a_burst_on_a_new_thread_opens_no_more_than_its_share() {
    let Some((_database, db)) = connect().await else {
        return;
    };
    let reads = (0..64).map(|i| {
        let db = db.clone();
        async move {
            let (rows, counted) = read(
                &db,
                "SELECT $1 AS n, pg_backend_pid() AS pid",
                vec![Value::Int(Some(i))],
            )
            .await;
            assert_eq!(counted, 1);
            assert_eq!(rows[0].int(0).unwrap(), Some(i));
            is_pipe(&rows[0]).then(|| rows[0].int(1).unwrap().unwrap())
        }
    });
    let pids: HashSet<i32> = futures_util::future::join_all(reads)
        .await
        .into_iter()
        .flatten()
        .collect();
    assert!(
        pids.len() <= 4,
        "one thread opens at most 4 connections: {pids:?}"
    );
    // The thread's connections serve its next reads.
    let (rows, _) = read(&db, "SELECT pg_backend_pid() AS pid", vec![]).await;
    assert!(is_pipe(&rows[0]));
}
