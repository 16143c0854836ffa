//! Behaviour tests: the `example-model` service runs in-process on a free port and is driven over
//! HTTP, once on SQLite and once on PostgreSQL for every test. The modules are grouped by the
//! surface they test: `simple/` (the Simple API), `relay/` (the Relay API), `relations/`, `auth/`
//! (tokens, permissions, the System API), `migrations/`, and `storage/` (the storage layer's own
//! paths).
//!
//! Each test body is written once inside [`db_tests!`], which turns `async fn name(srv)` into a
//! module `name` with two tests, `name::sqlite` and `name::postgres`, each on a fresh database.
//! Expected behaviour, error codes and message texts come from the reference (`spec/reference.md`
//! §1.3, §1.4, §1.6, §1.8, §2, §11 and §0.1).

/// Declares database-independent test bodies and runs each on SQLite and on PostgreSQL.
///
/// ```ignore
/// db_tests! {
///     /// What it checks.
///     async fn some_case(srv) { assert_eq!(srv.gql("{ … }").await, json!({ … })); }
/// }
/// ```
macro_rules! db_tests {
    ($( $(#[$meta:meta])* async fn $name:ident($srv:ident) $body:block )*) => {$(
        $(#[$meta])*
        async fn $name($srv: &crate::support::Server) $body

        mod $name {
            #[tokio::test]
            async fn sqlite() {
                let srv = crate::support::Server::start(crate::support::Db::Sqlite)
                    .await
                    .expect("SQLite is always available");
                super::$name(&srv).await;
            }

            #[tokio::test]
            async fn postgres() {
                // `None` only outside CI when PostgreSQL is unreachable (a notice was printed).
                let Some(srv) = crate::support::Server::start(crate::support::Db::Postgres).await
                else {
                    return;
                };
                super::$name(&srv).await;
            }
        }
    )*};
}

/// Declares test bodies that take the kind of database rather than a started server (to start,
/// stop and restart servers themselves), and runs each on SQLite and on PostgreSQL.
///
/// ```ignore
/// db_cases! {
///     async fn some_case(db) { let Some(mut srv) = Server::start(db).await else { return }; … }
/// }
/// ```
macro_rules! db_cases {
    ($( $(#[$meta:meta])* async fn $name:ident($db:ident) $body:block )*) => {$(
        $(#[$meta])*
        async fn $name($db: crate::support::Db) $body

        mod $name {
            #[tokio::test]
            async fn sqlite() {
                super::$name(crate::support::Db::Sqlite).await;
            }

            #[tokio::test]
            async fn postgres() {
                // The body returns early (after a notice) only outside CI when PostgreSQL is
                // unreachable.
                super::$name(crate::support::Db::Postgres).await;
            }
        }
    )*};
}

mod flags;
mod node;
mod stores;
mod support;

mod auth;
mod files;
mod functions;
mod migrations;
mod ndf;
mod relations;
mod relay;
mod simple;
mod storage;
mod subscriptions;
