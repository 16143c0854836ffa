//! PostgreSQL connections for single statements (`runtime/src/storage/pg.rs`): they are not
//! pinged between statements, so these check what the ping used to guard against. PostgreSQL
//! only: SQLite has no server that could end a connection.

use std::time::Duration;

use sea_orm::{ConnectionTrait, DbBackend, Statement};
use serde_json::json;

use crate::support::{Db, Server, TestDatabase, admin_connection};

/// The PostgreSQL backends serving connections named `name`.
async fn backends(admin: &mut sqlx::PgConnection, name: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1")
        .bind(name)
        .fetch_one(admin)
        .await
        .expect("pg_stat_activity")
}

/// The server ends every connection of the service (as a restart, a failover or an
/// administrator does). No request fails: reads find the dead connections and run again on new
/// ones, which the writes after them use; transactions start on a pool that tests a connection
/// before lending it.
#[tokio::test]
async fn connections_ended_by_the_server_fail_no_request() {
    let Some(srv) = Server::start(Db::Postgres).await else {
        return;
    };
    let name = srv.database().postgres_schema().unwrap().to_owned();
    let user = srv
        .create("User", r#"email: "ada@x.io", name: "Ada""#)
        .await;
    let list = "{ allPosts(orderBy: slug_ASC) { slug author { name } } }";
    // Several reads at once, so several connections are open and idle afterwards.
    let reads: Vec<_> = (0..6).map(|_| srv.data(list)).collect();
    for data in futures_util::future::join_all(reads).await {
        assert_eq!(data, json!({ "allPosts": [] }));
    }

    let mut admin = admin_connection().await.expect("PostgreSQL");
    assert!(
        backends(&mut admin, &name).await >= 2,
        "the server holds connections"
    );
    let ended: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
    )
    .bind(&name)
    .fetch_all(&mut admin)
    .await
    .expect("pg_terminate_backend");
    assert!(ended.len() >= 2 && ended.iter().all(|e| *e), "{ended:?}");
    for _ in 0..100 {
        if backends(&mut admin, &name).await == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(backends(&mut admin, &name).await, 0, "the backends ended");

    // A read first: it meets a dead connection and runs again.
    let reads: Vec<_> = (0..3).map(|_| srv.data(list)).collect();
    for data in futures_util::future::join_all(reads).await {
        assert_eq!(data, json!({ "allPosts": [] }));
    }
    // A single-statement create, then a create with a nested create (a transaction).
    srv.data(&format!(
        r#"mutation {{ createPost(slug: "a", title: "A", votes: 1, authorId: "{user}") {{ id }} }}"#
    ))
    .await;
    srv.data(
        r#"mutation { createUser(email: "bob@x.io", name: "Bob", posts: [{ slug: "b", title: "B", votes: 2 }]) { id } }"#,
    )
    .await;
    assert_eq!(
        srv.data(list).await,
        json!({ "allPosts": [
            { "slug": "a", "author": { "name": "Ada" } },
            { "slug": "b", "author": { "name": "Bob" } },
        ] })
    );
}

/// The server ends the connections between two writes: the first write after that fails, as a
/// write is never sent twice, and the connections it finds idle are closed with the dead one,
/// so the next write succeeds and nothing was written twice.
#[tokio::test]
async fn a_write_on_an_ended_connection_fails_once_and_is_not_repeated() {
    let Some(srv) = Server::start(Db::Postgres).await else {
        return;
    };
    let name = srv.database().postgres_schema().unwrap().to_owned();
    let user = srv
        .create("User", r#"email: "ada@x.io", name: "Ada""#)
        .await;
    let mut admin = admin_connection().await.expect("PostgreSQL");
    sqlx::query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
    )
    .bind(&name)
    .execute(&mut admin)
    .await
    .expect("pg_terminate_backend");
    for _ in 0..100 {
        if backends(&mut admin, &name).await == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let create = |slug: &str| {
        format!(
            r#"mutation {{ createPost(slug: "{slug}", title: "T", votes: 1, authorId: "{user}") {{ slug }} }}"#
        )
    };
    let first = srv.gql(&create("a")).await;
    let message = first["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("Whoops."),
        "an internal error: {first:#}"
    );
    assert_eq!(first["data"]["createPost"], json!(null), "{first:#}");
    assert_eq!(
        srv.data(&create("b")).await,
        json!({ "createPost": { "slug": "b" } })
    );
    assert_eq!(
        srv.data("{ allPosts { slug } }").await,
        json!({ "allPosts": [{ "slug": "b" }] })
    );
}

/// A statement whose request went away mid-flight (its future dropped) leaves its connection
/// with unread results; the next statement on that connection reads past them and gets its own.
#[tokio::test]
async fn a_connection_left_mid_statement_answers_the_next_one_correctly() {
    let Some(database) = TestDatabase::create(Db::Postgres).await else {
        return;
    };
    let db = svc_runtime::storage::Db::connect(&database.url)
        .await
        .expect("connect");
    let conn = db.reader();
    let sql = |s: &str| Statement::from_string(DbBackend::Postgres, s.to_owned());
    let pid = |row: &sea_orm::QueryResult| row.try_get_by_index::<i32>(0).unwrap();
    let first = conn
        .query_one_raw(sql("SELECT pg_backend_pid()"))
        .await
        .unwrap()
        .unwrap();
    // Rows that arrive only after the statement was given up on.
    // One sleep, then a thousand rows.
    let slow = conn.query_all_raw(sql(
        "SELECT s::text, g FROM (SELECT pg_sleep(0.3) AS s) AS x, generate_series(1, 1000) AS g",
    ));
    assert!(
        tokio::time::timeout(Duration::from_millis(50), slow)
            .await
            .is_err(),
        "the slow statement was cut off"
    );
    let next = conn
        .query_all_raw(sql("SELECT pg_backend_pid(), 7 AS n"))
        .await
        .unwrap();
    assert_eq!(next.len(), 1);
    assert_eq!(pid(&next[0]), pid(&first), "the same connection served it");
    assert_eq!(next[0].try_get_by_index::<i32>(1).unwrap(), 7);
}
