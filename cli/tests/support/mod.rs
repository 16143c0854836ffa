//! What the CLI's end-to-end tests share: the build directory and tool homes that a temporary
//! HOME would hide, names unique to a test, and a PostgreSQL schema or database of their own.

// Each test binary uses a part of this module.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where cargo puts builds: the same directory as this test's own build.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"),
    }
}

/// The real HOME's cargo and rustup directories, which a temporary HOME would hide.
pub fn tool_homes() -> Vec<(&'static str, PathBuf)> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let mut homes = Vec::new();
    for (var, default) in [("CARGO_HOME", ".cargo"), ("RUSTUP_HOME", ".rustup")] {
        let dir = std::env::var_os(var)
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(default));
        if dir.exists() {
            homes.push((var, dir));
        }
    }
    homes
}

/// A fresh PostgreSQL schema, dropped at the end.
pub struct PostgresSchema {
    pub url: String,
    schema: String,
}

fn postgres_base() -> String {
    std::env::var("SVC_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

fn admin<T>(work: impl AsyncFnOnce(&mut sqlx::PgConnection) -> T) -> Result<T, String> {
    use sqlx::Connection;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let base = postgres_base();
        let mut conn =
            match tokio::time::timeout(Duration::from_secs(10), sqlx::PgConnection::connect(&base))
                .await
            {
                Ok(Ok(conn)) => conn,
                Ok(Err(e)) => return Err(e.to_string()),
                Err(_) => return Err("timed out after 10 s".to_owned()),
            };
        let result = work(&mut conn).await;
        let _ = conn.close().await;
        Ok(result)
    })
}

/// A name part no other test of any running test process has: the process id, a counter, and
/// the clock.
pub fn unique() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!(
        "{}_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        nanos % 1_000_000_000
    )
}

impl PostgresSchema {
    /// A schema named `<prefix>_<unique>`; `None` outside CI when PostgreSQL is unreachable
    /// (after a notice).
    pub fn create(prefix: &str) -> Option<PostgresSchema> {
        let schema = format!("{prefix}_{}", unique());
        let created = admin(async |conn| {
            // `citext` and `pg_trgm` (which the runtime's tables use) belong in `public`,
            // installed once under a lock shared with the behaviour tests, not in this test's
            // schema.
            sqlx::raw_sql(
                "SELECT pg_advisory_lock(7317001); \
                 CREATE EXTENSION IF NOT EXISTS citext WITH SCHEMA public; \
                 CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public; \
                 SELECT pg_advisory_unlock(7317001);",
            )
            .execute(&mut *conn)
            .await
            .map_err(|e| e.to_string())?;
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE SCHEMA \"{schema}\"")))
                .execute(&mut *conn)
                .await
                .map_err(|e| e.to_string())?;
            Ok::<(), String>(())
        });
        let base = postgres_base();
        match created {
            Ok(Ok(())) => {}
            Ok(Err(e)) => panic!("cannot prepare the schema `{schema}`: {e}"),
            Err(e) => return unreachable(&base, &e),
        }
        let sep = if base.contains('?') { '&' } else { '?' };
        let url = format!("{base}{sep}options=-c%20search_path%3D{schema},public");
        Some(PostgresSchema { url, schema })
    }
}

impl Drop for PostgresSchema {
    fn drop(&mut self) {
        let schema = self.schema.clone();
        let _ = admin(async |conn| {
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                "DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"
            )))
            .execute(&mut *conn)
            .await
        });
    }
}

/// PostgreSQL at `base` cannot be reached (`error`): a failure in CI, else `None` after a notice.
fn unreachable<T>(base: &str, error: &str) -> Option<T> {
    assert!(
        !std::env::var("CI").is_ok_and(|v| v == "true"),
        "CI=true, but PostgreSQL at `{base}` is unreachable: {error}"
    );
    eprintln!(
        "notice: PostgreSQL at `{base}` is unreachable ({error}); skipping what this test does \
         on PostgreSQL. Start PostgreSQL (database `test`, user `postgres`, trust auth) or set \
         SVC_TEST_POSTGRES_URL to run it."
    );
    None
}

/// The name and URL of a PostgreSQL database of the test's own, which the test creates (as a
/// reader would, with `createdb`); dropped at the end if it was.
pub struct PostgresDatabase {
    /// The database's name.
    pub name: String,
    /// The URL of the database.
    pub url: String,
    /// The URL of the database of the test's PostgreSQL server that connections start from
    /// (`createdb --maintenance-db`).
    pub maintenance: String,
}

impl PostgresDatabase {
    /// A database named `<prefix>_<unique>`, not created yet; `None` outside CI when PostgreSQL
    /// is unreachable (after a notice).
    pub fn name(prefix: &str) -> Option<PostgresDatabase> {
        let base = postgres_base();
        if let Err(e) = admin(async |_| ()) {
            return unreachable(&base, &e);
        }
        let name = format!("{prefix}_{}", unique());
        let (address, query) = base.split_once('?').unwrap_or((&base, ""));
        let server = address
            .rsplit_once('/')
            .map_or(address, |(server, _)| server);
        let query = if query.is_empty() {
            String::new()
        } else {
            format!("?{query}")
        };
        Some(PostgresDatabase {
            url: format!("{server}/{name}{query}"),
            name,
            maintenance: base,
        })
    }
}

impl Drop for PostgresDatabase {
    fn drop(&mut self) {
        let name = self.name.clone();
        let _ = admin(async |conn| {
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
            )))
            .execute(&mut *conn)
            .await
        });
    }
}
