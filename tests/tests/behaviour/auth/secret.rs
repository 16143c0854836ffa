//! The service secret: generated at first start and kept in the database (tokens survive a
//! restart), or taken from `SVC_SECRET`; never shown in the server's output. Also the server's
//! `platform-token` subcommand, run as the real binary.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{
    ALIAS, MASTER_TOKEN, SECRET, SERVICE_ID, Server, TestDatabase, mint, mint_with, node_claims,
    node_token, platform_claims,
};

const USER_QUERY: &str = "{ user { id } }";

/// A node token for `id` issued by the server through `generateNodeToken`.
async fn issued_node_token(srv: &Server, id: &str) -> String {
    let root = srv.root_token();
    let query = format!(
        r#"mutation {{ generateNodeToken(input: {{ rootToken: "{root}", serviceId: "{SERVICE_ID}", nodeId: "{id}", modelName: "User" }}) {{ token }} }}"#
    );
    let res = srv.system_as(None, &json!({ "query": query })).await;
    res["data"]["generateNodeToken"]["token"]
        .as_str()
        .unwrap_or_else(|| panic!("generateNodeToken failed: {res}"))
        .to_owned()
}

/// A platform token issued by the server through `authenticateCustomer`.
async fn issued_platform_token(srv: &Server) -> String {
    let query = format!(
        r#"mutation {{ authenticateCustomer(input: {{ auth0IdToken: "{MASTER_TOKEN}" }}) {{ token }} }}"#
    );
    let res = srv.system_as(None, &json!({ "query": query })).await;
    res["data"]["authenticateCustomer"]["token"]
        .as_str()
        .unwrap_or_else(|| panic!("authenticateCustomer failed: {res}"))
        .to_owned()
}

fn user(id: &str) -> Value {
    json!({ "data": { "user": { "id": id } } })
}

fn no_user() -> Value {
    json!({ "data": { "user": null } })
}

db_cases! {
    /// Without `SVC_SECRET` the server generates a secret at first start and keeps it in the
    /// database: tokens it issued work after a restart, and tokens signed with any other key
    /// do not.
    async fn generated_secret_persists(db) {
        let Some(mut srv) = Server::start_with_secret(db, None).await else { return };
        let id = srv.create("User", r#"email: "ann@example.com", name: "Ann""#).await;
        let token = issued_node_token(&srv, &id).await;
        let platform = issued_platform_token(&srv).await;
        let root = srv.root_token().to_owned();
        assert_eq!(srv.gql_as(Some(&token), USER_QUERY).await, user(&id));
        assert_eq!(srv.gql_as(Some(&node_token(&id, "User")), USER_QUERY).await, no_user(), "not signed with the test secret");

        srv.restart(None).await;
        assert_eq!(srv.gql_as(Some(&token), USER_QUERY).await, user(&id), "the node token survives a restart");
        assert_eq!(srv.root_tokens_as(Some(&platform)).await.len(), 2, "so does the platform token");
        assert_eq!(srv.root_token(), root, "root tokens keep their values");
    }

    /// `SVC_SECRET` signs and checks tokens: a token signed with it works, and after a restart
    /// with another secret only tokens of the new secret do. Stored root tokens are compared by
    /// value, so they keep working.
    async fn svc_secret_is_honoured(db) {
        let Some(mut srv) = Server::start(db).await else { return };
        let id = srv.create("User", r#"email: "ann@example.com", name: "Ann""#).await;
        let ours = node_token(&id, "User");
        let issued = issued_node_token(&srv, &id).await;
        assert_eq!(srv.gql_as(Some(&ours), USER_QUERY).await, user(&id));
        assert_eq!(srv.gql_as(Some(&issued), USER_QUERY).await, user(&id));
        let root = srv.root_token().to_owned();

        let other = "another-secret-for-the-same-database";
        srv.restart(Some(other)).await;
        assert_eq!(srv.gql_as(Some(&ours), USER_QUERY).await, no_user());
        assert_eq!(srv.gql_as(Some(&issued), USER_QUERY).await, no_user());
        let theirs = mint_with(other, &node_claims(&id, "User"));
        assert_eq!(srv.gql_as(Some(&theirs), USER_QUERY).await, user(&id));
        assert_eq!(srv.root_token(), root);
        assert_eq!(
            srv.permissions_as(Some(&root), "{ SomeUserExists }").await,
            json!({ "data": { "SomeUserExists": true } })
        );

        srv.restart(Some(SECRET)).await;
        assert_eq!(srv.gql_as(Some(&ours), USER_QUERY).await, user(&id));
        assert_eq!(srv.gql_as(Some(&theirs), USER_QUERY).await, no_user());
    }

    /// The real binary: `serve` never prints the secret or the master token (given through the
    /// environment, or generated), `--help` does not show their values, and `platform-token`
    /// prints a platform token signed with the same secret as the running server.
    async fn binary_hides_secrets_and_prints_platform_tokens(db) {
        let Some(database) = TestDatabase::create(db).await else { return };
        let client = reqwest::Client::new();

        // First start without SVC_SECRET: the server generates one and stores it.
        let mut served = Served::start(&database.url, None);
        let platform = run_binary(&["platform-token"], &database.url, None);
        assert_eq!(platform.status, Some(0), "{platform:?}");
        let token = platform.stdout.trim().to_owned();
        assert_eq!(read_root_token_names(&client, served.port, &token).await, ["admin", "backup"]);
        exercise(&client, served.port, &token).await;
        let output = served.stop();
        assert!(!has_long_hex(&output), "a generated secret may have been printed:\n{output}");
        assert!(output.contains("System API   POST"), "{output}");

        // Then with SVC_SECRET and SVC_MASTER_TOKEN.
        let mut served = Served::start(&database.url, Some(SECRET));
        let platform = run_binary(&["platform-token", "--expires-in", "60"], &database.url, Some(SECRET));
        assert_eq!(platform.status, Some(0), "{platform:?}");
        let token = platform.stdout.trim().to_owned();
        assert_eq!(read_root_token_names(&client, served.port, &token).await, ["admin", "backup"]);
        assert_eq!(read_root_token_names(&client, served.port, &mint(&platform_claims())).await, ["admin", "backup"]);
        exercise(&client, served.port, &token).await;
        let output = served.stop();
        for (name, secret) in [("SVC_SECRET", SECRET), ("SVC_MASTER_TOKEN", MASTER_TOKEN)] {
            assert!(!output.contains(secret), "{name} was printed:\n{output}");
            assert!(!platform.stderr.contains(secret), "{name} was printed:\n{platform:?}");
        }

        let help = run_binary(&["serve", "--help"], &database.url, Some(SECRET));
        assert_eq!(help.status, Some(0), "{help:?}");
        assert!(help.stdout.contains("SVC_SECRET"), "{help:?}");
        assert!(!help.stdout.contains(SECRET) && !help.stdout.contains(MASTER_TOKEN), "{help:?}");

        // A bad option value is a clear error, not a token.
        let bad = run_binary(&["platform-token", "--expires-in", "0"], &database.url, Some(SECRET));
        assert_ne!(bad.status, Some(0), "{bad:?}");
        assert!(bad.stdout.is_empty() && !bad.stderr.is_empty(), "{bad:?}");
        let empty = run_binary(&["platform-token"], &database.url, Some(""));
        assert_ne!(empty.status, Some(0), "{empty:?}");
        assert!(empty.stderr.contains("SVC_SECRET is set but empty"), "{empty:?}");
    }
}

/// Sends requests that could make a careless server log a credential: bad and good tokens,
/// a failing `authenticateCustomer`.
async fn exercise(client: &reqwest::Client, port: u16, platform: &str) {
    let simple = format!("http://127.0.0.1:{port}/simple/v1/{ALIAS}");
    for token in ["forged", platform, SECRET, MASTER_TOKEN] {
        let res = client
            .post(&simple)
            .header("Authorization", format!("Bearer {token}"))
            .json(&json!({ "query": "{ user { id } }" }))
            .send()
            .await
            .expect("request");
        assert_eq!(res.status(), 200);
    }
    let res = client
        .post(format!("http://127.0.0.1:{port}/system"))
        .json(&json!({ "query": r#"mutation { authenticateCustomer(input: { auth0IdToken: "wrong" }) { token } }"# }))
        .send()
        .await
        .expect("request");
    assert_eq!(res.status(), 200);
}

/// The names of the root tokens, read from the System API of the server on `port`.
async fn read_root_token_names(client: &reqwest::Client, port: u16, platform: &str) -> Vec<String> {
    let query = format!(
        r#"{{ viewer {{ project(id: "{SERVICE_ID}") {{ permanentAuthTokens {{ edges {{ node {{ name }} }} }} }} }} }}"#
    );
    let res: Value = client
        .post(format!("http://127.0.0.1:{port}/system"))
        .header("Authorization", format!("Bearer {platform}"))
        .json(&json!({ "query": query }))
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("json");
    res["data"]["viewer"]["project"]["permanentAuthTokens"]["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("cannot read the root tokens: {res}"))
        .iter()
        .map(|e| e["node"]["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Whether `text` holds a run of 32 or more hex digits (a generated secret is 64).
fn has_long_hex(text: &str) -> bool {
    let mut run = 0;
    for c in text.chars() {
        run = if c.is_ascii_hexdigit() { run + 1 } else { 0 };
        if run >= 32 {
            return true;
        }
    }
    false
}

/// The service binary built in this package.
fn command(args: &[&str], database_url: &str, secret: Option<&str>) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_example-server"));
    cmd.args(args)
        .args([
            "--database-url",
            database_url,
            "--service-id",
            SERVICE_ID,
            "--alias",
            ALIAS,
        ])
        .env("SVC_MASTER_TOKEN", MASTER_TOKEN)
        .env_remove("SVC_PORT")
        .env_remove("SVC_DATABASE_URL")
        .env_remove("SVC_SERVICE_ID")
        .env_remove("SVC_ALIAS")
        // The allocator's purge delay is the server's own (svc_alloc::delay_returns).
        .env_remove("MIMALLOC_PURGE_DELAY")
        .stdin(Stdio::null());
    match secret {
        Some(secret) => cmd.env("SVC_SECRET", secret),
        None => cmd.env_remove("SVC_SECRET"),
    };
    cmd
}

#[derive(Debug)]
struct Output {
    status: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs the binary to completion.
fn run_binary(args: &[&str], database_url: &str, secret: Option<&str>) -> Output {
    let out = command(args, database_url, secret)
        .output()
        .expect("cannot run the example-server binary");
    Output {
        status: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `example-server serve` running as a child process; killed when stopped or dropped.
pub(crate) struct Served {
    child: std::process::Child,
    pub(crate) port: u16,
    lines: mpsc::Receiver<String>,
    stdout: String,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl Served {
    /// Starts `serve --port 0` and waits for the line that names its port.
    pub(crate) fn start(database_url: &str, secret: Option<&str>) -> Served {
        Served::start_with(database_url, secret, &[])
    }

    /// [`Served::start`] with more environment variables.
    pub(crate) fn start_with(
        database_url: &str,
        secret: Option<&str>,
        env: &[(&str, &str)],
    ) -> Served {
        let mut child = command(&["serve", "--port", "0"], database_url, secret)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cannot start the example-server binary");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut stderr = child.stderr.take().expect("piped stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        let mut served = Served {
            child,
            port: 0,
            lines,
            stdout: String::new(),
            stderr: Some(stderr),
        };
        while served.port == 0 {
            let Ok(line) = served.lines.recv_timeout(Duration::from_secs(120)) else {
                let output = served.stop();
                panic!("the server did not start:\n{output}");
            };
            // `  Simple API   POST http://localhost:<port>/simple/v1/<id>  (or …)`
            if let Some(rest) = line.split("http://localhost:").nth(1) {
                served.port = rest
                    .split('/')
                    .next()
                    .and_then(|p| p.parse().ok())
                    .unwrap_or(0);
            }
            served.stdout.push_str(&line);
            served.stdout.push('\n');
        }
        served
    }

    /// The server's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the server and returns everything it printed (stdout, then stderr).
    pub(crate) fn stop(&mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.stdout.push_str(&line);
            self.stdout.push('\n');
        }
        let stderr = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        format!("{}{stderr}", self.stdout)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
