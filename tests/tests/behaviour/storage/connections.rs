//! PostgreSQL connections for single statements (`runtime/src/storage/postgres/statements.rs`): they are not
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

/// Ends every connection named `name` from the server's side (as a restart, a failover or an
/// administrator does), and waits until they are gone.
async fn end_connections(admin: &mut sqlx::PgConnection, name: &str) {
    let ended: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
    )
    .bind(name)
    .fetch_all(&mut *admin)
    .await
    .expect("pg_terminate_backend");
    // `false` is a backend that ended by itself between the listing and the signal (a pool
    // closing an idle connection): gone either way, which the wait below checks.
    assert!(
        ended.iter().any(|e| *e),
        "no backend named {name} was ended: {ended:?}"
    );
    for _ in 0..100 {
        if backends(admin, name).await == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the backends named {name} did not end");
}

/// A server on a fresh PostgreSQL schema, its connections' name, and the id of its one user,
/// Ada. `None` when PostgreSQL is unreachable outside CI.
async fn server_with_ada() -> Option<(Server, String, String)> {
    let srv = Server::start(Db::Postgres).await?;
    let name = srv.database().postgres_schema()?.to_owned();
    let user = srv
        .create("User", r#"email: "ada@x.io", name: "Ada""#)
        .await;
    Some((srv, name, user))
}

fn sql(text: &str) -> Statement {
    Statement::from_string(DbBackend::Postgres, text.to_owned())
}

/// No request fails after the server ended every connection of the service: the compiled
/// plans' shared connections find out at once and close the idle connections for single
/// statements, so the writes after them open new ones; reads that meet a dead connection run
/// again on a new one; transactions start on a pool that tests a connection before lending it.
#[tokio::test]
async fn connections_ended_by_the_server_fail_no_request() {
    let Some((srv, name, user)) = server_with_ada().await else {
        return;
    };
    let list = "{ allPosts(orderBy: slug_ASC) { slug author { name } } }";
    // The executor answers a text the first time, and its compiled plan after that.
    assert_eq!(srv.data(list).await, json!({ "allPosts": [] }));
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
    end_connections(&mut admin, &name).await;

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

/// The first request after the server ended the connections is a mutation (nothing read
/// before it found them dead): it fails with an internal error and writes nothing, as a write
/// is never sent twice; the next one opens a new connection and succeeds.
#[tokio::test]
async fn a_mutation_on_an_ended_connection_fails_once_and_is_not_repeated() {
    let Some((srv, name, user)) = server_with_ada().await else {
        return;
    };
    let mut admin = admin_connection().await.expect("PostgreSQL");
    end_connections(&mut admin, &name).await;
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

/// At the storage level: a statement that writes, whether it returns rows (`INSERT …
/// RETURNING`) or not, fails on a connection the server ended and is not sent again; the next
/// one opens a new connection.
#[tokio::test]
async fn a_write_on_an_ended_connection_fails_and_is_not_repeated() {
    let Some(database) = TestDatabase::create(Db::Postgres).await else {
        return;
    };
    let name = database.postgres_schema().unwrap().to_owned();
    let db = svc_runtime::storage::Db::connect(&database.url)
        .await
        .expect("connect");
    let writer = db.writer();
    writer
        .execute_raw(sql("CREATE TABLE written (n int)"))
        .await
        .unwrap();
    let mut admin = admin_connection().await.expect("PostgreSQL");

    end_connections(&mut admin, &name).await;
    let returning = writer
        .query_one_raw(sql("INSERT INTO written VALUES (1) RETURNING n"))
        .await;
    assert!(returning.is_err(), "{returning:?}");
    writer
        .execute_raw(sql("INSERT INTO written VALUES (2)"))
        .await
        .unwrap();

    end_connections(&mut admin, &name).await;
    let plain = writer
        .execute_raw(sql("INSERT INTO written VALUES (3)"))
        .await;
    assert!(plain.is_err(), "{plain:?}");
    let rows = db
        .reader()
        .query_all_raw(sql("SELECT n FROM written ORDER BY n"))
        .await
        .unwrap();
    let written: Vec<i32> = rows
        .iter()
        .map(|r| r.try_get_by_index(0).unwrap())
        .collect();
    assert_eq!(written, [2]);
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

/// What a [`Worker`] is sent: a statement (whose first column is the backend's pid) and where
/// the pid goes.
type Job = (&'static str, tokio::sync::oneshot::Sender<i32>);

/// A worker thread with an event loop of its own that keeps running, as the HTTP server runs
/// one per worker (a connection's socket is served by the loop of the thread that opened it, so
/// the loop must run while another thread borrows the connection). It runs the statements it is
/// sent on the shared `db` and answers with the backend's pid.
struct Worker {
    send: Option<tokio::sync::mpsc::UnboundedSender<Job>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Worker {
    fn start(db: std::sync::Arc<svc_runtime::storage::Db>) -> Worker {
        let (send, mut receive) = tokio::sync::mpsc::unbounded_channel::<Job>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                while let Some((text, reply)) = receive.recv().await {
                    let row = db
                        .reader()
                        .query_one_raw(sql(text))
                        .await
                        .expect("statement")
                        .expect("a row");
                    let _ = reply.send(row.try_get_by_index(0).unwrap());
                }
            });
        });
        Worker {
            send: Some(send),
            thread: Some(thread),
        }
    }

    /// Starts `text` without waiting for it.
    fn start_pid(&self, text: &'static str) -> tokio::sync::oneshot::Receiver<i32> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.send.as_ref().unwrap().send((text, reply)).unwrap();
        answer
    }

    /// Runs `text` and returns the pid.
    async fn pid(&self, text: &'static str) -> i32 {
        self.start_pid(text).await.expect("the worker answers")
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.send = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Each worker thread runs its statements on a connection it opened (its socket answers to that
/// thread's event loop), not on whichever connection was returned last; and however many
/// threads there are, no more connections are open than the maximum (16).
#[tokio::test]
async fn each_thread_runs_its_statements_on_its_own_connections_within_the_maximum() {
    let Some(database) = TestDatabase::create(Db::Postgres).await else {
        return;
    };
    let name = database.postgres_schema().unwrap().to_owned();
    let db = std::sync::Arc::new(
        svc_runtime::storage::Db::connect(&database.url)
            .await
            .expect("connect"),
    );
    let pid = "SELECT pg_backend_pid()";
    let (one, two) = (Worker::start(db.clone()), Worker::start(db.clone()));
    let first = one.pid(pid).await;
    let second = two.pid(pid).await;
    assert_ne!(
        first, second,
        "the second thread opens a connection of its own"
    );
    // The second thread's connection went back last, yet each thread keeps to its own.
    for _ in 0..3 {
        assert_eq!(one.pid(pid).await, first);
        assert_eq!(two.pid(pid).await, second);
    }

    // 24 threads with a statement each, all at once: 16 connections at most, and every
    // statement is answered.
    let slow = "SELECT pg_backend_pid() FROM pg_sleep(0.2)";
    let workers: Vec<Worker> = (0..24).map(|_| Worker::start(db.clone())).collect();
    let answers: Vec<_> = workers.iter().map(|w| w.start_pid(slow)).collect();
    let mut admin = admin_connection().await.expect("PostgreSQL");
    let mut most = 0;
    for _ in 0..10 {
        most = most.max(backends(&mut admin, &name).await);
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    let mut pids = std::collections::HashSet::new();
    for answer in answers {
        pids.insert(answer.await.expect("answered"));
    }
    assert!(most <= 16, "{most} connections open");
    assert!(pids.len() <= 16, "{} backends answered", pids.len());
    assert!(
        pids.len() > 2,
        "the threads opened connections of their own"
    );
    // The two first threads still find their own connections.
    assert_eq!(one.pid(pid).await, first);
    assert_eq!(two.pid(pid).await, second);
    assert!(backends(&mut admin, &name).await <= 16);
    drop(workers);
}

/// An internal error's log line carries the request id that the "Whoops" answer asks the
/// client to quote, so that the one can be found from the other (a server process of its own,
/// whose output is read; the error is the mutation on connections the database ended).
#[tokio::test]
async fn an_internal_error_is_logged_with_its_request_id() {
    let Some(database) = TestDatabase::create(Db::Postgres).await else {
        return;
    };
    let name = database
        .postgres_schema()
        .expect("a PostgreSQL schema")
        .to_owned();
    let mut served =
        crate::auth::secret::Served::start(&database.url, Some(crate::support::SECRET));
    let url = format!(
        "http://127.0.0.1:{}/simple/v1/{}",
        served.port,
        crate::support::ALIAS
    );
    let token = crate::support::mint(&crate::support::platform_claims());
    let post = |query: String| {
        let (url, token) = (url.clone(), token.clone());
        async move {
            reqwest::Client::new()
                .post(url)
                .bearer_auth(token)
                .json(&json!({ "query": query }))
                .send()
                .await
                .expect("request")
                .json::<serde_json::Value>()
                .await
                .expect("JSON")
        }
    };
    let created =
        post(r#"mutation { createUser(email: "ada@x.io", name: "Ada") { id } }"#.into()).await;
    let user = created["data"]["createUser"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no user: {created:#}"))
        .to_owned();
    // A single-statement create leaves its connection idle for the next one.
    let first =
        post(r#"mutation { createPost(slug: "first", title: "T", votes: 1) { slug } }"#.into())
            .await;
    assert_eq!(
        first,
        json!({ "data": { "createPost": { "slug": "first" } } })
    );
    let mut admin = admin_connection().await.expect("PostgreSQL");
    end_connections(&mut admin, &name).await;
    // As in the test above: the first request after the connections ended is a mutation.
    let failed = post(format!(
        r#"mutation {{ createPost(slug: "a", title: "T", votes: 1, authorId: "{user}") {{ slug }} }}"#
    ))
    .await;
    let error = &failed["errors"][0];
    let request_id = error["requestId"]
        .as_str()
        .unwrap_or_else(|| panic!("no request id: {failed:#}"))
        .to_owned();
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("Whoops.") && m.ends_with(&request_id)),
        "{failed:#}"
    );
    let output = served.stop();
    let line = output
        .lines()
        .find(|l| l.contains("internal error"))
        .unwrap_or_else(|| panic!("no internal error in the log:\n{output}"));
    assert!(line.contains(&request_id), "{line}");
}
