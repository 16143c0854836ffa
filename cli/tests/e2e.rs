//! End-to-end tests of the `svc` binary: each runs the real command line in a temporary
//! directory, with a temporary HOME, through the whole story of a service: `svc init` (the
//! scaffold must build), `svc deploy` (build, migrate, background server), queries over HTTP,
//! `svc root-token` (its token must act as a root token: the template's `svc.yml` has no
//! permissions, so anonymous mutations are denied), then an edit of the model (a field added,
//! one removed): `deploy --dry-run` shows the plan and changes nothing, `deploy` refuses the
//! destructive step, `deploy --force` applies it and keeps the other fields' data; then a field
//! renamed with `@rename(oldName:)` and one made required with `@migrationValue` deploy without
//! `--force` and keep every value. One test runs
//! on SQLite, one on PostgreSQL (at 127.0.0.1:5432 or `SVC_TEST_POSTGRES_URL`; skipped with a
//! notice when unreachable, except in CI where that fails).
//!
//! The generated services build in the same target directory as this test (`CARGO_TARGET_DIR`,
//! else the workspace's `target/`) and start from a copy of the workspace's `Cargo.lock`, so only
//! the small service crate is compiled by each deploy.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod support;

use support::{PostgresSchema, target_dir, tool_homes};

/// A temporary HOME and work directory for one test.
struct Sandbox {
    home: tempfile::TempDir,
    work: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        Sandbox {
            home: tempfile::tempdir().expect("a temporary HOME"),
            work: tempfile::tempdir().expect("a temporary work directory"),
        }
    }

    /// Runs `svc ARGS` in `dir`.
    fn svc(&self, dir: &Path, args: &[&str]) -> Output {
        self.svc_with(dir, args, &[])
    }

    /// Runs `svc ARGS` in `dir` with the environment variables `env` set too.
    fn svc_with(&self, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_svc"));
        command
            .args(args)
            .current_dir(dir)
            .env("HOME", self.home.path())
            .env("CARGO_TARGET_DIR", target_dir());
        for (var, value) in env {
            command.env(var, value);
        }
        for (var, dir) in tool_homes() {
            command.env(var, dir);
        }
        for var in [
            "SVC_TARGET",
            "SVC_PLATFORM_TOKEN",
            "SVC_DATABASE_URL",
            "SVC_PORT",
            "SVC_SERVICE_ID",
            "SVC_ALIAS",
            "SVC_SECRET",
        ] {
            command.env_remove(var);
        }
        let started = Instant::now();
        let output = command.output().expect("cannot run svc");
        eprintln!(
            "$ svc {} ({:.1} s, {})\n{}{}",
            args.join(" "),
            started.elapsed().as_secs_f64(),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// Runs `svc ARGS` in `dir` and returns its stdout; panics when it fails.
    fn ok(&self, dir: &Path, args: &[&str]) -> String {
        let output = self.svc(dir, args);
        assert!(
            output.status.success(),
            "`svc {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

/// Stops the service's server when the test ends, whether it passed or not.
struct ServerGuard<'a> {
    sandbox: &'a Sandbox,
    dir: PathBuf,
}

impl Drop for ServerGuard<'_> {
    fn drop(&mut self) {
        let _ = self.sandbox.svc(&self.dir, &["down"]);
    }
}

/// `svc info --json`.
fn info(sandbox: &Sandbox, dir: &Path) -> Value {
    let out = sandbox.ok(dir, &["info", "--json"]);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("`svc info --json`: {e}: {out}"))
}

/// POSTs a GraphQL query to the Simple API, with a bearer token when given.
fn query(url: &str, token: Option<&str>, query: &str) -> Value {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let mut request = reqwest::Client::new()
            .post(url)
            .timeout(Duration::from_secs(30))
            .json(&json!({ "query": query }));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let res = request.send().await.expect("the server answers");
        res.json::<Value>().await.expect("a JSON answer")
    })
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The whole story on one service; `database_url` selects PostgreSQL.
fn story(name: &str, database_url: Option<&str>) {
    let started = Instant::now();
    let sandbox = Sandbox::new();
    let dir = sandbox.work.path().join(name);
    let dir_arg = dir.to_str().expect("a UTF-8 path");

    // init: a crate of its own with the template's files.
    let out = sandbox.ok(sandbox.work.path(), &["init", dir_arg, "--name", name]);
    assert!(
        out.contains(&format!("Created the service `{name}`")),
        "{out}"
    );
    for file in [
        "Cargo.toml",
        "Cargo.lock",
        "build.rs",
        "src/main.rs",
        "src/lib.rs",
        "src/functions.rs",
        "src/hello.graphql",
        "svc.yml",
        "types.graphql",
        ".gitignore",
        ".cargo/config.toml",
    ] {
        assert!(dir.join(file).is_file(), "`svc init` wrote no `{file}`");
    }
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).expect("Cargo.toml");
    assert!(manifest.contains("\n[workspace]\n"), "{manifest}");
    assert!(
        manifest.contains(&format!("name = \"{name}\"")),
        "{manifest}"
    );
    // A second init into a directory with files is refused.
    let again = sandbox.svc(sandbox.work.path(), &["init", dir_arg]);
    assert_eq!(again.status.code(), Some(1));
    assert!(stderr(&again).contains("not empty"), "{}", stderr(&again));

    // Commands that need a service refuse outside one.
    let nowhere = sandbox.svc(sandbox.work.path(), &["info"]);
    assert_eq!(nowhere.status.code(), Some(1));
    assert!(stderr(&nowhere).contains("no service here"));

    // First deploy: the scaffold builds and serves with no edits.
    let _guard = ServerGuard {
        sandbox: &sandbox,
        dir: dir.clone(),
    };
    let mut deploy = vec!["deploy"];
    if let Some(url) = database_url {
        deploy.extend(["--database-url", url]);
    }
    let out = sandbox.ok(&dir, &deploy);
    assert!(
        out.contains("Created the tables of a new database."),
        "{out}"
    );
    assert!(out.contains("Simple API:"), "{out}");
    let rc = std::fs::read_to_string(dir.join(".svcrc")).expect("deploy writes .svcrc");
    assert!(rc.contains("default: local"), "{rc}");
    let info1 = info(&sandbox, &dir);
    assert_eq!(info1["running"], json!(true), "{info1}");
    let id = info1["serviceId"]
        .as_str()
        .expect("a service id")
        .to_owned();
    assert!(rc.contains(&format!("local: local/{id}")), "{rc}");
    let simple = info1["endpoints"]["simple"]
        .as_str()
        .expect("a Simple API endpoint")
        .to_owned();
    assert!(simple.ends_with(&format!("/simple/v1/{id}")), "{simple}");
    if database_url.is_some() {
        assert!(
            info1["databaseUrl"]
                .as_str()
                .is_some_and(|u| u.starts_with("postgres://")),
            "{info1}"
        );
    }
    assert!(dir.join(".svc/server.pid").is_file());
    let logs = sandbox.ok(&dir, &["logs", "--tail", "20"]);
    assert!(logs.contains("svc: serving"), "{logs}");
    let playground = sandbox.ok(&dir, &["playground"]);
    assert_eq!(playground.trim(), simple);

    // Anonymous requests are denied (no permissions); the root token may do anything.
    let create = r#"mutation { createUser(name: "Ada", email: "ada@example.com") { id name } }"#;
    let denied = query(&simple, None, create);
    assert_eq!(denied["errors"][0]["code"], json!(3008), "{denied}");
    assert_eq!(sandbox.ok(&dir, &["root-token"]).trim(), "default");
    let token = sandbox
        .ok(&dir, &["root-token", "default"])
        .trim()
        .to_owned();
    assert_eq!(token.split('.').count(), 3, "not a JWT: {token}");
    let created = query(&simple, Some(&token), create);
    assert_eq!(
        created["data"]["createUser"]["name"],
        json!("Ada"),
        "{created}"
    );
    // The template's `hello` resolver, a Rust function compiled into the service; resolvers are
    // not subject to permissions.
    let hello = query(&simple, None, r#"{ hello(name: "svc") { message } }"#);
    assert_eq!(
        hello,
        json!({ "data": { "hello": { "message": "Hello svc" } } })
    );
    // Its invocation is in the server's log, which `svc logs --function` picks out.
    let calls = function_calls(&sandbox, &dir, "hello");
    assert_eq!(calls.lines().count(), 1, "{calls}");
    assert!(
        calls.contains(" SUCCESS ") && calls.contains(r#"{"returnValue":{"message":"Hello svc"}}"#),
        "{calls}"
    );
    assert_eq!(sandbox.ok(&dir, &["logs", "--function", "nope"]), "");
    let unknown = sandbox.svc(&dir, &["root-token", "nope"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(
        stderr(&unknown).contains("`default`"),
        "{}",
        stderr(&unknown)
    );

    // Edit the model: add `User.age`, remove `User.email`.
    let types = std::fs::read_to_string(dir.join("types.graphql")).expect("types.graphql");
    assert!(types.contains("  email: String @isUnique\n"), "{types}");
    std::fs::write(
        dir.join("types.graphql"),
        types.replace("  email: String @isUnique\n", "  age: Int\n"),
    )
    .expect("write types.graphql");
    let old_fields = "{ allUsers { name email } }";

    // A dry run shows the plan and changes nothing: the server still serves the old model.
    let mut dry_run = deploy.clone();
    dry_run.push("--dry-run");
    let out = sandbox.ok(&dir, &dry_run);
    assert!(out.contains("Remove the field `User.email`"), "{out}");
    assert!(out.contains("Add the field `User.age`"), "{out}");
    assert!(out.contains("--force"), "{out}");
    let before = query(&simple, Some(&token), old_fields);
    assert_eq!(
        before["data"]["allUsers"],
        json!([{ "name": "Ada", "email": "ada@example.com" }]),
        "{before}"
    );

    // Without --force the destructive step is refused, with the reference's message.
    let refused = sandbox.svc(&dir, &deploy);
    assert_eq!(refused.status.code(), Some(1));
    let message = stderr(&refused);
    assert!(message.contains("destructive changes"), "{message}");
    assert!(message.contains("svc deploy --force"), "{message}");
    let still = query(&simple, Some(&token), old_fields);
    assert_eq!(still, before);

    // With --force it is applied; the kept fields keep their data.
    let mut force = deploy.clone();
    force.push("--force");
    let out = sandbox.ok(&dir, &force);
    assert!(out.contains("Applied:"), "{out}");
    assert!(out.contains("Remove the field `User.email`"), "{out}");
    let info2 = info(&sandbox, &dir);
    assert_eq!(info2["serviceId"], json!(id), "the service keeps its id");
    assert_eq!(info2["port"], info1["port"], "the service keeps its port");
    assert_ne!(info2["pid"], info1["pid"], "the server was restarted");
    let token = sandbox
        .ok(&dir, &["root-token", "default"])
        .trim()
        .to_owned();
    let after = query(&simple, Some(&token), "{ allUsers { name age } }");
    assert_eq!(
        after["data"]["allUsers"],
        json!([{ "name": "Ada", "age": null }]),
        "{after}"
    );
    let gone = query(&simple, Some(&token), old_fields);
    assert!(gone["errors"][0]["message"].is_string(), "{gone}");
    let updated = query(
        &simple,
        Some(&token),
        r#"mutation { createUser(name: "Grace", age: 85) { name age } }"#,
    );
    assert_eq!(updated["data"]["createUser"]["age"], json!(85), "{updated}");

    // A deploy with nothing to change keeps the data too.
    let out = sandbox.ok(&dir, &deploy);
    assert!(out.contains("The database is up to date."), "{out}");

    // Rename `name` with `@rename` and make `age` required with `@migrationValue`: neither is
    // destructive, nothing is lost, and nodes without an age get the migration value.
    let types = std::fs::read_to_string(dir.join("types.graphql")).expect("types.graphql");
    let types = types
        .replace(
            "  name: String!\n",
            "  fullName: String! @rename(oldName: \"name\")\n",
        )
        .replace(
            "  age: Int\n",
            "  age: Int! @migrationValue(value: \"18\")\n",
        );
    std::fs::write(dir.join("types.graphql"), types).expect("write types.graphql");
    // With Node.js, also a JavaScript resolver whose module depends on a package: the deploy
    // runs `npm install` for it.
    let javascript = node_and_npm();
    if javascript {
        add_javascript_resolver(&dir);
    }
    let deployed = sandbox.svc(&dir, &deploy);
    assert!(deployed.status.success(), "{}", stderr(&deployed));
    let out = String::from_utf8_lossy(&deployed.stdout).into_owned();
    if javascript {
        assert!(
            stderr(&deployed).contains("Installing the dependencies of `greet`: npm install in ."),
            "{}",
            stderr(&deployed)
        );
    }
    assert!(
        out.contains("Rename the field `User.name` to `fullName`"),
        "{out}"
    );
    assert!(
        out.contains("Change the field `User.age`: now required (nodes without a value set to its migration value 18)"),
        "{out}"
    );
    let token = sandbox
        .ok(&dir, &["root-token", "default"])
        .trim()
        .to_owned();
    let renamed = query(&simple, Some(&token), "{ allUsers { fullName age } }");
    assert_eq!(
        renamed["data"]["allUsers"],
        json!([{ "fullName": "Ada", "age": 18 }, { "fullName": "Grace", "age": 85 }]),
        "{renamed}"
    );

    if javascript {
        let greeted = query(&simple, None, r#"{ greet(name: "Ada") { message } }"#);
        assert_eq!(
            greeted,
            json!({ "data": { "greet": { "message": "Hello Ada, from a package" } } })
        );
        // What the handler wrote through `console` is in its invocation's log record.
        let calls = function_calls(&sandbox, &dir, "greet");
        assert!(calls.contains("greeting Ada"), "{calls}");
        // `${env:SVC_E2E_GREET_FROM, 'from a package'}` in svc.yml gave the default above; with
        // the variable set, the next deploy builds again (the build script declared it with
        // `rerun-if-env-changed`) and the handler's environment has its value.
        let from = [("SVC_E2E_GREET_FROM", "from the environment")];
        let deployed = sandbox.svc_with(&dir, &deploy, &from);
        assert!(deployed.status.success(), "{}", stderr(&deployed));
        let greeted = query(&simple, None, r#"{ greet(name: "Ada") { message } }"#);
        assert_eq!(
            greeted,
            json!({ "data": { "greet": { "message": "Hello Ada, from the environment" } } })
        );
    }

    // down stops the server.
    let out = sandbox.ok(&dir, &["down"]);
    assert!(out.contains("Stopped the server"), "{out}");
    let info3 = info(&sandbox, &dir);
    assert_eq!(info3["running"], json!(false), "{info3}");
    let not_running = sandbox.svc(&dir, &["root-token"]);
    assert_eq!(not_running.status.code(), Some(1));
    eprintln!(
        "the {name} story took {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// `svc logs --function NAME`, once it prints something (at most 10 s): the server writes
/// function records from a thread of their own, after the response.
fn function_calls(sandbox: &Sandbox, dir: &Path, name: &str) -> String {
    let mut calls = String::new();
    for _ in 0..100 {
        calls = sandbox.ok(dir, &["logs", "--function", name]);
        if !calls.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    calls
}

/// Whether `node` and `npm` are on the PATH; outside CI their absence skips the JavaScript part
/// of the story, after a notice.
fn node_and_npm() -> bool {
    let runs = |program: &str| {
        Command::new(program)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if runs("node") && runs("npm") {
        return true;
    }
    assert!(
        !std::env::var("CI").is_ok_and(|v| v == "true"),
        "CI=true, but `node` or `npm` is not on the PATH"
    );
    eprintln!("notice: `node` or `npm` is missing; skipping the JavaScript resolver of the story");
    false
}

/// Adds the resolver `greet` to the service in `dir`: a JavaScript module that greets with a
/// package (`greeter`, a local one, so no registry is needed) named in the service's
/// `package.json`.
fn add_javascript_resolver(dir: &Path) {
    let write = |path: &str, text: &str| {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("a directory");
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    };
    write(
        "package.json",
        r#"{ "name": "e2e-functions", "private": true, "dependencies": { "greeter": "file:./greeter" } }"#,
    );
    write(
        "greeter/package.json",
        r#"{ "name": "greeter", "version": "1.0.0", "main": "index.js" }"#,
    );
    write(
        "greeter/index.js",
        "module.exports = (name, from) => `Hello ${name}, ${from}`;\n",
    );
    write(
        "src/greet.js",
        "const greeter = require('greeter');\n\
         module.exports = async (event) => {\n  \
           console.log('greeting', event.data.name);\n  \
           return { data: { message: greeter(event.data.name, process.env.GREET_FROM) } };\n};\n",
    );
    write(
        "src/greet.graphql",
        "type GreetPayload {\n  message: String!\n}\n\nextend type Query {\n  greet(name: String!): GreetPayload\n}\n",
    );
    let svc_yml = std::fs::read_to_string(dir.join("svc.yml")).expect("svc.yml");
    write(
        "svc.yml",
        &format!(
            "{svc_yml}  greet:\n    type: resolver\n    schema: ./src/greet.graphql\n    handler:\n      code:\n        src: ./src/greet.js\n        environment:\n          GREET_FROM: ${{env:SVC_E2E_GREET_FROM, 'from a package'}}\n"
        ),
    );
}

#[test]
fn init_deploy_edit_sqlite() {
    story("svc-e2e-sqlite", None);
}

#[test]
fn init_deploy_edit_postgres() {
    let Some(schema) = PostgresSchema::create("svc_cli_e2e") else {
        return;
    };
    story("svc-e2e-postgres", Some(&schema.url));
}

#[test]
fn login_stores_tokens_in_home() {
    let sandbox = Sandbox::new();
    let out = sandbox.ok(sandbox.work.path(), &["login", "--token", "abc"]);
    assert!(out.contains("platform token"), "{out}");
    sandbox.ok(
        sandbox.work.path(),
        &[
            "login",
            "--token",
            "secret",
            "--cluster",
            "local",
            "--host",
            "http://localhost:60000",
        ],
    );
    let rc = std::fs::read_to_string(sandbox.home.path().join(".svcrc")).expect("~/.svcrc");
    let rc: Value = serde_yaml::from_str(&rc).expect("~/.svcrc is YAML");
    assert_eq!(rc["platformToken"], json!("abc"));
    assert_eq!(rc["clusters"]["local"]["clusterSecret"], json!("secret"));
    assert_eq!(
        rc["clusters"]["local"]["host"],
        json!("http://localhost:60000")
    );
}
