//! Starting `example-model` servers on a fresh SQLite file or PostgreSQL schema, talking to them
//! over HTTP, and the shared fixtures and expected-JSON builders of the behaviour tests.

use std::hash::{BuildHasher, RandomState};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use sqlx::Connection;

/// The service id the test servers are started with.
pub const SERVICE_ID: &str = "test-service";
/// The alias the test servers are started with; the helpers address the API through it.
pub const ALIAS: &str = "example";
/// What every (already checked) `requestId` in a response body is replaced with.
pub const REQUEST_ID: &str = "<request id>";

const DEFAULT_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// The secret the test servers sign their tokens with (`SVC_SECRET`).
pub const SECRET: &str = "svc-tests-secret-0123456789abcdef";
/// The master token the test servers accept in `authenticateCustomer` (`SVC_MASTER_TOKEN`).
pub const MASTER_TOKEN: &str = "svc-tests-master-token";
/// Milliseconds between the keep-alive messages of the test servers' subscription sockets: short,
/// so a test sees them without waiting the default 10 s.
pub const KEEPALIVE_MS: u64 = 300;
/// The servers' defaults for closing idle subscription sockets and `graphql-transport-ws`
/// sockets that do not initialise ([`Server::start_with_socket_timeouts`] sets others).
pub const IDLE_TIMEOUT_MS: u64 = 3_600_000;
pub const INIT_TIMEOUT_MS: u64 = 3_000;

/// The database a test server runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Db {
    Sqlite,
    Postgres,
}

/// Where a server keeps its data; removed when the server is dropped.
enum Storage {
    SqliteDir(PathBuf),
    PostgresSchema(String),
}

/// A fresh, empty database (a SQLite file in a new directory, or a new PostgreSQL schema),
/// removed when dropped.
pub struct TestDatabase {
    /// The URL a server is started with.
    pub url: String,
    storage: Storage,
}

impl TestDatabase {
    /// `None` only for PostgreSQL outside CI when it is unreachable (after printing a notice);
    /// in CI an unreachable PostgreSQL fails the test.
    pub async fn create(db: Db) -> Option<TestDatabase> {
        let (url, storage) = match db {
            Db::Sqlite => {
                let dir = std::env::temp_dir().join(format!("svc-test-{}", unique_name()));
                std::fs::create_dir_all(&dir)
                    .unwrap_or_else(|e| panic!("cannot create `{}`: {e}", dir.display()));
                let url = format!("sqlite://{}", dir.join("data.db").display());
                (url, Storage::SqliteDir(dir))
            }
            Db::Postgres => {
                let base = postgres_url();
                let mut conn = match admin_connection().await {
                    Ok(conn) => conn,
                    Err(e) if std::env::var("CI").is_ok_and(|v| v == "true") => {
                        panic!("CI=true, but PostgreSQL at `{base}` is unreachable: {e}")
                    }
                    Err(e) => {
                        eprintln!(
                            "notice: PostgreSQL at `{base}` is unreachable ({e}); skipping this \
                             PostgreSQL test. Start PostgreSQL (database `test`, user `postgres`, \
                             trust auth) or set SVC_TEST_POSTGRES_URL to run it."
                        );
                        return None;
                    }
                };
                prepare_database(&mut conn).await;
                let schema = format!("svc_t_{}", unique_name());
                sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE SCHEMA \"{schema}\"")))
                    .execute(&mut conn)
                    .await
                    .unwrap_or_else(|e| panic!("cannot create schema `{schema}`: {e}"));
                let _ = conn.close().await;
                let sep = if base.contains('?') { '&' } else { '?' };
                // The schema's name also names the server's connections, so a test can find
                // them in `pg_stat_activity`.
                let url = format!(
                    "{base}{sep}options=-c%20search_path%3D{schema},public&application_name={schema}"
                );
                (url, Storage::PostgresSchema(schema))
            }
        };
        Some(TestDatabase { url, storage })
    }

    /// The PostgreSQL schema of this database (`None` on SQLite); it is also the
    /// `application_name` of every connection made with [`TestDatabase::url`].
    pub fn postgres_schema(&self) -> Option<&str> {
        match &self.storage {
            Storage::PostgresSchema(schema) => Some(schema),
            Storage::SqliteDir(_) => None,
        }
    }

    /// A new SQLite file holding the tables of `ddl`, and the runtime's storage layer on it.
    pub async fn sqlite_with(ddl: &str) -> (TestDatabase, svc_runtime::storage::Db) {
        use sea_orm::ConnectionTrait;
        let database = TestDatabase::create(Db::Sqlite)
            .await
            .expect("a SQLite file");
        let db = svc_runtime::storage::Db::connect(&database.url)
            .await
            .expect("connect");
        db.writer()
            .execute_unprepared(ddl)
            .await
            .expect("create the tables");
        (database, db)
    }

    /// Runs SQL statements on the database directly (through the runtime's storage layer).
    pub async fn execute(&self, statements: &[String]) {
        let db = svc_runtime::storage::Db::connect(&self.url)
            .await
            .unwrap_or_else(|e| panic!("cannot connect to `{}`: {e}", self.url));
        db.execute_script(statements)
            .await
            .unwrap_or_else(|e| panic!("cannot run {statements:?}: {e}"));
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        match &self.storage {
            Storage::SqliteDir(dir) => {
                let _ = std::fs::remove_dir_all(dir);
            }
            Storage::PostgresSchema(schema) => {
                // Drop may run inside the test's runtime (or while panicking): use a thread with
                // a runtime of its own.
                let schema = schema.clone();
                let _ = std::thread::spawn(move || {
                    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    else {
                        return;
                    };
                    rt.block_on(async move {
                        if let Ok(mut conn) = admin_connection().await {
                            let drop = format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE");
                            let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(drop))
                                .execute(&mut conn)
                                .await;
                            let _ = conn.close().await;
                        }
                    });
                })
                .join();
            }
        }
    }
}

/// Options for a service of the tests other than `example-model` (a second generated service):
/// port 0, [`SECRET`], no master token, the files in `file_store`.
pub fn options(
    database_url: &str,
    service_id: &str,
    alias: &str,
    file_store: String,
) -> svc_runtime::Options {
    svc_runtime::Options {
        port: 0,
        database_url: Some(database_url.to_owned()),
        service_id: Some(service_id.into()),
        alias: Some(alias.into()),
        secret: Some(SECRET.into()),
        file_store: Some(file_store),
        ..Default::default()
    }
}

/// A running `example-model` service on its own fresh database.
///
/// Every request of [`Server::client`] (and so of every helper that does not say otherwise)
/// carries `Authorization: Bearer <the admin root token>`, read through the System API at start;
/// [`Server::anonymous`] and [`Server::post_as`] send other credentials.
pub struct Server {
    pub port: u16,
    client: reqwest::Client,
    anonymous: reqwest::Client,
    root_token: String,
    running: Option<svc_runtime::Running>,
    /// Told of every committed mutation.
    observers: Vec<Arc<dyn svc_runtime::Observer>>,
    /// The subscription sockets' idle and initialisation timeouts, in milliseconds.
    socket_timeouts: (u64, u64),
    /// The most characters of element text an NDF export page holds.
    export_page_limit: usize,
    /// The most bytes one upload may hold.
    max_upload: u64,
    limits: svc_runtime::http::Limits,
    /// Where the server stores uploaded files.
    pub store: crate::stores::TestStore,
    /// Declared last: dropped after the server has stopped.
    database: TestDatabase,
}

impl Server {
    /// Starts a server on a fresh database with [`SECRET`]. `None` only for PostgreSQL outside
    /// CI when it is unreachable (after printing a notice); in CI an unreachable PostgreSQL fails
    /// the test.
    pub async fn start(db: Db) -> Option<Server> {
        Server::start_with_secret(db, Some(SECRET)).await
    }

    /// Starts a server on a fresh database with `SVC_SECRET` = `secret` (`None`: the server
    /// generates and stores one).
    pub async fn start_with_secret(db: Db, secret: Option<&str>) -> Option<Server> {
        let database = TestDatabase::create(db).await?;
        Some(Server::start_on(database, secret).await)
    }

    /// Starts a server on a fresh database whose committed mutations `observer` is told of.
    pub async fn start_observed(
        db: Db,
        observer: Arc<dyn svc_runtime::Observer>,
    ) -> Option<Server> {
        let database = TestDatabase::create(db).await?;
        let mut srv = Server::unstarted(database, vec![observer]);
        srv.launch(Some(SECRET)).await;
        Some(srv)
    }

    /// Starts a server on a fresh database whose subscription sockets close after `idle_ms`
    /// without a client message, and (`graphql-transport-ws`) after `init_ms` without
    /// `connection_init`.
    pub async fn start_with_socket_timeouts(db: Db, idle_ms: u64, init_ms: u64) -> Option<Server> {
        let database = TestDatabase::create(db).await?;
        let mut srv = Server::unstarted(database, Vec::new());
        srv.socket_timeouts = (idle_ms, init_ms);
        srv.launch(Some(SECRET)).await;
        Some(srv)
    }

    /// Starts a server on `database` whose NDF export pages hold at most `limit` characters of
    /// elements.
    pub async fn start_with_export_limit(database: TestDatabase, limit: usize) -> Server {
        let mut srv = Server::unstarted(database, Vec::new());
        srv.export_page_limit = limit;
        srv.launch(Some(SECRET)).await;
        srv
    }

    /// Starts a server on `database` (fresh, or left by a server that stopped).
    pub async fn start_on(database: TestDatabase, secret: Option<&str>) -> Server {
        let mut srv = Server::unstarted(database, Vec::new());
        srv.launch(secret).await;
        srv
    }

    fn unstarted(database: TestDatabase, observers: Vec<Arc<dyn svc_runtime::Observer>>) -> Server {
        Server {
            port: 0,
            client: reqwest::Client::new(),
            anonymous: reqwest::Client::new(),
            root_token: String::new(),
            running: None,
            observers,
            socket_timeouts: (IDLE_TIMEOUT_MS, INIT_TIMEOUT_MS),
            export_page_limit: 10_000_000,
            max_upload: svc_runtime::files::DEFAULT_MAX_UPLOAD,
            limits: svc_runtime::http::Limits::default(),
            store: crate::stores::TestStore::create(crate::stores::Store::Local, &unique_name())
                .expect("a local store"),
            database,
        }
    }

    /// Starts a server on a fresh database that keeps its files in a fresh store of `store`.
    /// `None` when PostgreSQL, or for S3 moto, cannot run outside CI (after a notice).
    pub async fn start_with_store(db: Db, store: crate::stores::Store) -> Option<Server> {
        let test_store = crate::stores::TestStore::create(store, &unique_name())?;
        let database = TestDatabase::create(db).await?;
        let mut srv = Server::unstarted(database, Vec::new());
        srv.store = test_store;
        srv.launch(Some(SECRET)).await;
        Some(srv)
    }

    /// Starts a server on a fresh database whose uploads hold at most `max_upload` bytes.
    pub async fn start_with_max_upload(db: Db, max_upload: u64) -> Option<Server> {
        let database = TestDatabase::create(db).await?;
        let mut srv = Server::unstarted(database, Vec::new());
        srv.max_upload = max_upload;
        srv.launch(Some(SECRET)).await;
        Some(srv)
    }

    /// Starts a server on a fresh database with the bounds `limits` on what a client asks.
    pub async fn start_with_limits(db: Db, limits: svc_runtime::http::Limits) -> Option<Server> {
        let database = TestDatabase::create(db).await?;
        let mut srv = Server::unstarted(database, Vec::new());
        srv.limits = limits;
        srv.launch(Some(SECRET)).await;
        Some(srv)
    }

    async fn launch(&mut self, secret: Option<&str>) {
        let options = svc_runtime::Options {
            port: 0,
            database_url: Some(self.database.url.clone()),
            service_id: Some(SERVICE_ID.into()),
            alias: Some(ALIAS.into()),
            secret: secret.map(str::to_owned),
            master_token: Some(MASTER_TOKEN.into()),
            keepalive_ms: KEEPALIVE_MS,
            idle_timeout_ms: self.socket_timeouts.0,
            init_timeout_ms: self.socket_timeouts.1,
            export_page_limit: self.export_page_limit,
            file_store: Some(self.store.location.clone()),
            max_upload_bytes: self.max_upload,
            limits: self.limits.clone(),
            ..Default::default()
        };
        let observers = self.observers.clone();
        let running = tokio::task::spawn_blocking(move || {
            svc_runtime::spawn_observed::<example_model::Service>(options, observers)
        })
        .await
        .expect("the spawning thread panicked")
        .unwrap_or_else(|e| panic!("cannot start example-model on {}: {e}", self.database.url));
        self.port = running.port;
        self.running = Some(running);
        // The admin root token, read as the CLI reads it: with a platform token.
        let platform = match secret {
            Some(secret) => mint_with(secret, &platform_claims()),
            None => self.platform_token_from_master().await,
        };
        self.root_token = self.read_root_token(&platform, "admin").await;
        let mut headers = reqwest::header::HeaderMap::new();
        let value = reqwest::header::HeaderValue::from_str(&format!("Bearer {}", self.root_token))
            .expect("a root token is a header value");
        headers.insert(reqwest::header::AUTHORIZATION, value);
        self.client = reqwest::Client::builder()
            .default_headers(headers)
            .build()
            .expect("a reqwest client");
    }

    /// Stops the server and starts a new one on the same database with `SVC_SECRET` = `secret`.
    pub async fn restart(&mut self, secret: Option<&str>) {
        self.stop();
        self.launch(secret).await;
    }

    /// Stops the server (the database stays until the `Server` is dropped).
    pub fn stop(&mut self) {
        if let Some(running) = self.running.take() {
            running.stop();
        }
    }

    /// The database the server runs on.
    pub fn database(&self) -> &TestDatabase {
        &self.database
    }

    /// A platform token obtained with `authenticateCustomer` and the master token.
    async fn platform_token_from_master(&self) -> String {
        let res = self
            .system_as(
                None,
                &json!({ "query": format!(r#"mutation {{ authenticateCustomer(input: {{ auth0IdToken: "{MASTER_TOKEN}" }}) {{ token }} }}"#) }),
            )
            .await;
        res["data"]["authenticateCustomer"]["token"]
            .as_str()
            .unwrap_or_else(|| panic!("authenticateCustomer failed: {res}"))
            .to_owned()
    }

    /// The value of root token `name`, read through the System API with `platform_token`.
    pub async fn read_root_token(&self, platform_token: &str, name: &str) -> String {
        let tokens = self.root_tokens_as(Some(platform_token)).await;
        tokens
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| panic!("no root token `{name}` in {tokens:?}"))
    }

    /// `(name, token)` of every root token, read through `viewer.project` with `token`.
    pub async fn root_tokens_as(&self, token: Option<&str>) -> Vec<(String, String)> {
        let res = self
            .system_as(
                token,
                &json!({ "query": format!(r#"{{ viewer {{ project(id: "{ALIAS}") {{ permanentAuthTokens {{ edges {{ node {{ id name token }} }} }} }} }} }}"#) }),
            )
            .await;
        let edges = res["data"]["viewer"]["project"]["permanentAuthTokens"]["edges"]
            .as_array()
            .unwrap_or_else(|| panic!("cannot read the root tokens: {res}"));
        edges
            .iter()
            .map(|e| {
                let field = |k: &str| e["node"][k].as_str().expect("a string").to_owned();
                (field("name"), field("token"))
            })
            .collect()
    }

    /// The admin root token the default client sends.
    pub fn root_token(&self) -> &str {
        &self.root_token
    }

    /// `http://127.0.0.1:{port}{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The Simple API endpoint, addressed by alias.
    pub fn api(&self) -> String {
        self.url(&format!("/simple/v1/{ALIAS}"))
    }

    /// A client whose requests carry the admin root token.
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// A client that sends no `Authorization` header.
    pub fn anonymous(&self) -> &reqwest::Client {
        &self.anonymous
    }

    /// POSTs a JSON body to the Simple API (as admin) and returns the raw response.
    pub async fn post(&self, body: &Value) -> reqwest::Response {
        self.client
            .post(self.api())
            .json(body)
            .send()
            .await
            .expect("the Simple API request failed")
    }

    /// POSTs a JSON body to `url` with `Authorization: Bearer <token>` (none for `None`),
    /// checks HTTP 200, and returns the redacted JSON body.
    pub async fn post_url_as(&self, url: &str, token: Option<&str>, body: &Value) -> Value {
        let mut request = self.anonymous.post(url).json(body);
        if let Some(token) = token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        let res = request.send().await.expect("the request failed");
        body_json(res).await
    }

    /// POSTs a JSON body to `url` with the header `Authorization: <value>` verbatim.
    pub async fn post_authorization(&self, url: &str, value: &str, body: &Value) -> Value {
        let res = self
            .anonymous
            .post(url)
            .header("Authorization", value)
            .json(body)
            .send()
            .await
            .expect("the request failed");
        body_json(res).await
    }

    /// POSTs a JSON body to the Simple API with `Authorization: Bearer <token>` (no header for
    /// `None`) and returns the redacted JSON body.
    pub async fn post_as(&self, token: Option<&str>, body: &Value) -> Value {
        self.post_url_as(&self.api(), token, body).await
    }

    /// Runs one GraphQL query with `token` (anonymous for `None`); the whole response body.
    pub async fn gql_as(&self, token: Option<&str>, query: &str) -> Value {
        self.post_as(token, &json!({ "query": query })).await
    }

    /// Runs one query against the permission endpoint with `token`; the whole response body.
    pub async fn permissions_as(&self, token: Option<&str>, query: &str) -> Value {
        let url = self.url(&format!("/simple/v1/{ALIAS}/permissions"));
        self.post_url_as(&url, token, &json!({ "query": query }))
            .await
    }

    /// POSTs a raw request to the System API with `token` (none for `None`); returns the HTTP
    /// status and the body (JSON, `requestId`s checked and redacted).
    pub async fn system_raw(&self, token: Option<&str>, body: Vec<u8>) -> (u16, Value) {
        let mut request = self
            .anonymous
            .post(self.url("/system"))
            .header("Content-Type", "application/json")
            .body(body);
        if let Some(token) = token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        let res = request.send().await.expect("the System API request failed");
        let status = res.status().as_u16();
        let text = res.text().await.expect("cannot read the response body");
        let value: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("the response is not JSON ({e}): {text}"));
        (status, redact_system_request_ids(value))
    }

    /// POSTs a JSON body to the System API with `token`, checks HTTP 200, and returns the body.
    pub async fn system_as(&self, token: Option<&str>, body: &Value) -> Value {
        let (status, value) = self.system_raw(token, body.to_string().into_bytes()).await;
        assert_eq!(status, 200, "unexpected HTTP status; body: {value}");
        value
    }

    /// POSTs a JSON body, checks HTTP 200, and returns the JSON body with every `requestId`
    /// checked and replaced by [`REQUEST_ID`].
    pub async fn post_json(&self, body: &Value) -> Value {
        let res = self.post(body).await;
        body_json(res).await
    }

    /// Runs one GraphQL query (or mutation) and returns the whole response body.
    pub async fn gql(&self, query: &str) -> Value {
        self.post_json(&json!({ "query": query })).await
    }

    /// Runs one GraphQL query with variables and returns the whole response body.
    pub async fn gql_vars(&self, query: &str, variables: Value) -> Value {
        self.post_json(&json!({ "query": query, "variables": variables }))
            .await
    }

    /// Runs a query that must succeed (test setup) and returns its `data`.
    pub async fn data(&self, query: &str) -> Value {
        let res = self.gql(query).await;
        assert!(
            res.get("errors").is_none() && res.get("error").is_none(),
            "setup query failed: {query}\n{res:#}"
        );
        res["data"].clone()
    }

    /// Runs `create{model}({args}) { id }` and returns the new id.
    pub async fn create(&self, model: &str, args: &str) -> String {
        let data = self
            .data(&format!("mutation {{ create{model}({args}) {{ id }} }}"))
            .await;
        let id = data[format!("create{model}")]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("create{model} returned no id: {data}"));
        assert!(is_cuid(id), "new ids are cuids, got {id:?}");
        id.to_owned()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn postgres_url() -> String {
    std::env::var("SVC_TEST_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_POSTGRES_URL.to_owned())
}

pub async fn admin_connection() -> Result<sqlx::PgConnection, String> {
    let url = postgres_url();
    match tokio::time::timeout(Duration::from_secs(10), sqlx::PgConnection::connect(&url)).await {
        Ok(Ok(conn)) => Ok(conn),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("timed out after 10 s".to_owned()),
    }
}

/// Installs `citext` (which the runtime's PostgreSQL tables use) and `pg_trgm` (the indexes of
/// `@search` fields) into `public`, once.
///
/// The runtime runs `CREATE EXTENSION IF NOT EXISTS citext` at start-up. Left to that, servers
/// starting at the same moment race on it (a unique violation in `pg_extension`), and the
/// extension lands in the first schema of the search path, i.e. in one test's schema, so dropping
/// that schema would drop the `citext` columns of every other test running at the time.
async fn prepare_database(conn: &mut sqlx::PgConnection) {
    static DONE: AtomicBool = AtomicBool::new(false);
    if DONE.load(Ordering::Acquire) {
        return;
    }
    // An advisory lock serialises this across the tests of this and of other processes. Three
    // statements, not one: a multi-statement query is one transaction, and an unlock inside it
    // would let the next session look for the extension before it is committed.
    for statement in [
        "SELECT pg_advisory_lock(7317001)",
        "CREATE EXTENSION IF NOT EXISTS citext WITH SCHEMA public",
        "CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public",
        "SELECT pg_advisory_unlock(7317001)",
    ] {
        sqlx::raw_sql(statement)
            .execute(&mut *conn)
            .await
            .unwrap_or_else(|e| panic!("cannot install the extensions into `public`: {e}"));
    }
    DONE.store(true, Ordering::Release);
}

/// A name unique across processes and across the servers of one process.
/// A folder for a server's files under the temporary directory, named `<prefix>-<unique>`, and
/// removed with everything in it when dropped: declare it before the server that uses it, so
/// that it goes after the server.
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    pub fn new(prefix: &str) -> ScratchDir {
        ScratchDir(std::env::temp_dir().join(format!("{prefix}-{}", unique_name())))
    }

    pub fn path(&self) -> &std::path::Path {
        &self.0
    }

    /// Its path as text (a `--file-store` value).
    pub fn location(&self) -> String {
        self.0.display().to_string()
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn unique_name() -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let random = RandomState::new().hash_one((std::process::id(), n, std::time::Instant::now()));
    format!("{}_{n}_{random:016x}", std::process::id())
}

/// Checks HTTP 200 and returns the JSON body with `requestId`s checked and redacted.
pub async fn body_json(res: reqwest::Response) -> Value {
    let status = res.status();
    let text = res.text().await.expect("cannot read the response body");
    assert_eq!(status, 200, "unexpected HTTP status; body: {text}");
    let value: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("the response is not JSON ({e}): {text}"));
    redact_request_ids(value)
}

/// Replaces the value of every `requestId` key by [`REQUEST_ID`] after checking that it is a
/// request id (`local:simple:<cuid>`).
pub fn redact_request_ids(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    if k == "requestId" {
                        let ok = v.as_str().is_some_and(is_request_id);
                        assert!(ok, "`requestId` must be `local:simple:<cuid>`, got {v}");
                        (k, Value::String(REQUEST_ID.to_owned()))
                    } else {
                        (k, redact_request_ids(v))
                    }
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(redact_request_ids).collect()),
        other => other,
    }
}

/// A request id: `local:simple:` and a cuid.
pub fn is_request_id(s: &str) -> bool {
    s.strip_prefix("local:simple:").is_some_and(is_cuid)
}

/// Like [`redact_request_ids`], for the System API's `local:system:<cuid>` request ids.
pub fn redact_system_request_ids(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    if k == "requestId" {
                        let ok = v
                            .as_str()
                            .and_then(|s| s.strip_prefix("local:system:"))
                            .is_some_and(is_cuid);
                        assert!(ok, "`requestId` must be `local:system:<cuid>`, got {v}");
                        (k, Value::String(REQUEST_ID.to_owned()))
                    } else {
                        (k, redact_system_request_ids(v))
                    }
                })
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.into_iter().map(redact_system_request_ids).collect())
        }
        other => other,
    }
}

/// Seconds since 1970.
pub fn unix_now() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("the clock is after 1970");
    i64::try_from(since.as_secs()).expect("before 2262")
}

/// Signs `claims` with HS256 and [`SECRET`], the test servers' secret.
pub fn mint(claims: &Value) -> String {
    mint_with(SECRET, claims)
}

/// Signs `claims` with HS256 and `secret`.
pub fn mint_with(secret: &str, claims: &Value) -> String {
    mint_alg(jsonwebtoken::Algorithm::HS256, secret, claims)
}

/// Signs `claims` with `alg` (an HMAC algorithm) and `secret`.
pub fn mint_alg(alg: jsonwebtoken::Algorithm, secret: &str, claims: &Value) -> String {
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(alg),
        claims,
        &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
    )
    .expect("cannot sign a test token")
}

/// The claims of a token signed with [`SECRET`] (signature checked, `exp` checked when present
/// but not required).
pub fn decode_claims(token: &str) -> Value {
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::HS256);
    validation.required_spec_claims.clear();
    let key = jsonwebtoken::DecodingKey::from_secret(SECRET.as_bytes());
    jsonwebtoken::decode::<Value>(token, &key, &validation)
        .unwrap_or_else(|e| panic!("cannot decode {token}: {e}"))
        .claims
}

/// Claims of a platform token: `clientId` and `iat`.
pub fn platform_claims() -> Value {
    json!({ "clientId": "svc-tests", "iat": unix_now() })
}

/// Claims of a node token of the test service for node `id` of type `model`, valid for an hour.
pub fn node_claims(id: &str, model: &str) -> Value {
    let now = unix_now();
    json!({ "exp": now + 3600, "iat": now, "projectId": SERVICE_ID, "userId": id, "modelName": model })
}

/// A node token of the test service for node `id` of type `model`, signed with [`SECRET`].
pub fn node_token(id: &str, model: &str) -> String {
    mint(&node_claims(id, model))
}

/// A cuid: 25 characters of `[a-z0-9]` starting with `c`.
pub fn is_cuid(s: &str) -> bool {
    s.len() == 25
        && s.starts_with('c')
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// The API's date-time output format: `yyyy-MM-ddTHH:mm:ss.SSSZ`.
pub fn is_timestamp(s: &str) -> bool {
    const SHAPE: &[u8] = b"dddd-dd-ddTdd:dd:dd.dddZ";
    s.len() == SHAPE.len()
        && s.bytes().zip(SHAPE).all(|(b, &t)| match t {
            b'd' => b.is_ascii_digit(),
            _ => b == t,
        })
}

/// One field error in the reference's shape (§11.1 a), with the request id redacted.
pub fn field_error(path: Value, line: u32, column: u32, code: u32, message: &str) -> Value {
    json!({
        "locations": [{ "line": line, "column": column }],
        "path": path,
        "code": code,
        "message": message,
        "requestId": REQUEST_ID,
    })
}

/// A response holding `data` and one field error.
pub fn error_response(data: Value, error: Value) -> Value {
    json!({ "data": data, "errors": [error] })
}

/// Asserts the validation-error shape (§2.11, §11.1 d): only `errors`, each with exactly
/// `message` and `locations`, and a message containing `needle`.
pub fn assert_validation_error(res: &Value, needle: &str) {
    let obj = res.as_object().expect("the response is an object");
    let keys: Vec<&String> = obj.keys().collect();
    assert_eq!(keys, ["errors"], "validation errors carry no data: {res:#}");
    let errors = res["errors"].as_array().expect("`errors` is an array");
    assert!(!errors.is_empty(), "no errors: {res:#}");
    for e in errors {
        let mut keys: Vec<&String> = e.as_object().expect("error objects").keys().collect();
        keys.sort();
        assert_eq!(
            keys,
            ["locations", "message"],
            "validation error keys: {res:#}"
        );
        let locations = e["locations"].as_array().expect("locations is an array");
        assert!(
            !locations.is_empty(),
            "validation errors have locations: {res:#}"
        );
    }
    assert!(
        errors
            .iter()
            .any(|e| e["message"].as_str().is_some_and(|m| m.contains(needle))),
        "no validation error mentions {needle:?}: {res:#}"
    );
}

/// `{"data": {field: [{key: v}, …]}}`.
pub fn list_of(field: &str, key: &str, values: &[&str]) -> Value {
    let items: Vec<Value> = values.iter().map(|v| json!({ key: v })).collect();
    json!({ "data": { field: items } })
}

/// The ids of the four posts of [`four_posts`], by slug.
#[derive(Debug, Clone)]
pub struct Posts {
    pub alpha: String,
    pub beta: String,
    pub gamma: String,
    pub delta: String,
}

/// Creates four posts, in this order (so in ascending id order):
///
/// | slug  | title              | body         | votes | rating | published | status    | publishedAt              | externalId |
/// |-------|--------------------|--------------|-------|--------|-----------|-----------|--------------------------|------------|
/// | alpha | `Hello World`      | `first body` | 5     | 4.5    | true      | PUBLISHED | 2017-01-01T10:00:00.000Z | ext-1      |
/// | beta  | `hello again`      | null         | 2     | 0.5    | false     | DRAFT     | 2015-05-05T05:05:05.005Z | null       |
/// | gamma | `100% sure_thing`  | `third`      | 5     | 1.25   | true      | ARCHIVED  | 2016-06-15T00:00:00.000Z | null       |
/// | delta | `Zeta 100 percent` | `fourth`     | 10    | 4.5    | false     | PUBLISHED | 2018-03-03T03:03:03.003Z | ext-4      |
pub async fn four_posts(srv: &Server) -> Posts {
    let data = srv
        .data(
            r#"mutation {
  alpha: createPost(slug: "alpha", title: "Hello World", body: "first body", votes: 5, rating: 4.5, published: true, status: PUBLISHED, publishedAt: "2017-01-01T10:00:00.000Z", externalId: "ext-1") { id }
  beta: createPost(slug: "beta", title: "hello again", votes: 2, rating: 0.5, published: false, status: DRAFT, publishedAt: "2015-05-05T05:05:05.005Z") { id }
  gamma: createPost(slug: "gamma", title: "100% sure_thing", body: "third", votes: 5, rating: 1.25, published: true, status: ARCHIVED, publishedAt: "2016-06-15T00:00:00.000Z") { id }
  delta: createPost(slug: "delta", title: "Zeta 100 percent", body: "fourth", votes: 10, rating: 4.5, published: false, status: PUBLISHED, publishedAt: "2018-03-03T03:03:03.003Z", externalId: "ext-4") { id }
}"#,
        )
        .await;
    let id = |k: &str| data[k]["id"].as_str().expect("an id").to_owned();
    let posts = Posts {
        alpha: id("alpha"),
        beta: id("beta"),
        gamma: id("gamma"),
        delta: id("delta"),
    };
    assert!(
        posts.alpha < posts.beta && posts.beta < posts.gamma && posts.gamma < posts.delta,
        "cuids created one after another sort in creation order: {posts:?}"
    );
    posts
}

/// Creates six categories `a`…`f` (ascending ids) with positions 3, 1, null, 3, 2, null and
/// returns their ids in that order.
pub async fn six_categories(srv: &Server) -> Vec<String> {
    let data = srv
        .data(
            r#"mutation {
  a: createCategory(name: "a", position: 3) { id }
  b: createCategory(name: "b", position: 1) { id }
  c: createCategory(name: "c") { id }
  d: createCategory(name: "d", position: 3) { id }
  e: createCategory(name: "e", position: 2) { id }
  f: createCategory(name: "f") { id }
}"#,
        )
        .await;
    let ids: Vec<String> = ["a", "b", "c", "d", "e", "f"]
        .iter()
        .map(|k| data[*k]["id"].as_str().expect("an id").to_owned())
        .collect();
    assert!(ids.is_sorted(), "cuids sort in creation order: {ids:?}");
    ids
}

/// The 1-based column of the first occurrence of `needle` in a one-line `query`.
pub fn column_of(query: &str, needle: &str) -> u32 {
    let at = query
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} is not in {query:?}"));
    u32::try_from(at + 1).expect("short queries")
}

/// The current time in the API's output format (`yyyy-MM-ddTHH:mm:ss.SSSZ`), for comparing
/// server timestamps as text.
pub fn now_timestamp() -> String {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("the clock is after 1970");
    let secs = since.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = i64::try_from(days).expect("small") + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

/// `t` truncated to whole seconds (`…:ss.000Z`): the reference allows second precision for
/// `createdAt`/`updatedAt` (§1.4).
pub fn to_seconds(t: &str) -> String {
    format!("{}.000Z", &t[..19])
}

/// Runs a one-line mutation that must fail with one field error on its root field `field`
/// (whose result is `null`).
pub async fn assert_fails(srv: &Server, mutation: &str, field: &str, code: u32, message: &str) {
    assert_eq!(
        srv.gql(mutation).await,
        error_response(
            json!({ field: null }),
            field_error(json!([field]), 1, column_of(mutation, field), code, message)
        ),
        "{mutation}"
    );
}

/// The node count of every model: `{"users": n, "posts": n, "categories": n, "children": n,
/// "profiles": n, "comments": n}`.
pub async fn counts(srv: &Server) -> Value {
    let data = srv
        .data(
            "{ users: _allUsersMeta { count } posts: _allPostsMeta { count } \
             categories: _allCategoriesMeta { count } children: _allChildrenMeta { count } \
             profiles: _allProfilesMeta { count } comments: _allCommentsMeta { count } }",
        )
        .await;
    let mut out = serde_json::Map::new();
    for key in [
        "users",
        "posts",
        "categories",
        "children",
        "profiles",
        "comments",
    ] {
        out.insert(key.to_owned(), data[key]["count"].clone());
    }
    Value::Object(out)
}

/// `{"users": u, "posts": p, "categories": c, "children": ch, "profiles": pr, "comments": co}`.
pub fn count_values(u: u32, p: u32, c: u32, ch: u32, pr: u32, co: u32) -> Value {
    json!({ "users": u, "posts": p, "categories": c, "children": ch, "profiles": pr, "comments": co })
}

/// The ids of the [`blog`] fixture.
#[derive(Debug, Clone)]
pub struct Blog {
    pub ann: String,
    pub bob: String,
    pub cid: String,
    pub posts: Posts,
    pub news: String,
    pub tech: String,
    pub misc: String,
    pub great: String,
    pub fine: String,
    pub meh: String,
    pub agreed: String,
}

/// Creates, in this order (so in ascending id order within each model):
///
/// - users Ann (`ann@example.com`, age 30), Bob (`bob@example.com`, age 25) and Cid
///   (`cid@example.com`, no age), none with a profile, follower or friend;
/// - the four posts of [`four_posts`]; Ann writes alpha and beta, Bob gamma, delta has no author;
/// - categories `news` (posts alpha, beta), `tech` (beta, gamma) and `misc` (none); nothing is
///   pinned;
/// - comments `great post` (alpha), `fine` (alpha), `meh` (gamma) and `agreed` (alpha, a reply
///   to `great post`).
///
/// The edges are made with `{f}Ids`/`{f}Id` arguments of create and update.
pub async fn blog(srv: &Server) -> Blog {
    let users = srv
        .data(
            r#"mutation {
  ann: createUser(email: "ann@example.com", name: "Ann", age: 30) { id }
  bob: createUser(email: "bob@example.com", name: "Bob", age: 25) { id }
  cid: createUser(email: "cid@example.com", name: "Cid") { id }
}"#,
        )
        .await;
    let user = |k: &str| users[k]["id"].as_str().expect("an id").to_owned();
    let (ann, bob, cid) = (user("ann"), user("bob"), user("cid"));
    assert!(ann < bob && bob < cid, "cuids sort in creation order");
    let posts = four_posts(srv).await;
    let Posts {
        alpha, beta, gamma, ..
    } = &posts;
    srv.data(&format!(
        r#"mutation {{
  ann: updateUser(id: "{ann}", postsIds: ["{alpha}", "{beta}"]) {{ id }}
  bob: updateUser(id: "{bob}", postsIds: ["{gamma}"]) {{ id }}
}}"#
    ))
    .await;
    let rest = srv
        .data(&format!(
            r#"mutation {{
  news: createCategory(name: "news", postsIds: ["{alpha}", "{beta}"]) {{ id }}
  tech: createCategory(name: "tech", postsIds: ["{beta}", "{gamma}"]) {{ id }}
  misc: createCategory(name: "misc") {{ id }}
  great: createComment(text: "great post", postId: "{alpha}") {{ id }}
  fine: createComment(text: "fine", postId: "{alpha}") {{ id }}
  meh: createComment(text: "meh", postId: "{gamma}") {{ id }}
}}"#
        ))
        .await;
    let id = |k: &str| rest[k]["id"].as_str().expect("an id").to_owned();
    let great = id("great");
    let agreed = srv
        .create(
            "Comment",
            &format!(r#"text: "agreed", postId: "{alpha}", parentId: "{great}""#),
        )
        .await;
    let blog = Blog {
        ann,
        bob,
        cid,
        news: id("news"),
        tech: id("tech"),
        misc: id("misc"),
        great,
        fine: id("fine"),
        meh: id("meh"),
        agreed,
        posts,
    };
    assert!(
        blog.news < blog.tech && blog.tech < blog.misc,
        "cuids sort in creation order: {blog:?}"
    );
    assert!(
        blog.great < blog.fine && blog.fine < blog.meh && blog.meh < blog.agreed,
        "cuids sort in creation order: {blog:?}"
    );
    blog
}

/// Replaces every `{name}` placeholder of `text` by the id of that name in the [`blog`] fixture
/// (`{ann}`, `{bob}`, `{cid}`, `{alpha}`…`{delta}`, `{news}`, `{tech}`, `{misc}`, `{great}`,
/// `{fine}`, `{meh}`, `{agreed}`).
pub fn with_ids(text: &str, b: &Blog) -> String {
    let pairs: [(&str, &str); 14] = [
        ("{ann}", &b.ann),
        ("{bob}", &b.bob),
        ("{cid}", &b.cid),
        ("{alpha}", &b.posts.alpha),
        ("{beta}", &b.posts.beta),
        ("{gamma}", &b.posts.gamma),
        ("{delta}", &b.posts.delta),
        ("{news}", &b.news),
        ("{tech}", &b.tech),
        ("{misc}", &b.misc),
        ("{great}", &b.great),
        ("{fine}", &b.fine),
        ("{meh}", &b.meh),
        ("{agreed}", &b.agreed),
    ];
    pairs
        .iter()
        .fold(text.to_owned(), |acc, (k, v)| acc.replace(k, v))
}

/// An id that is well-formed but belongs to no node.
pub const MISSING: &str = "cnotthere0000000000000000";
