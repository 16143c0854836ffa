//! `svc export` and `svc import` end to end: the real `svc` binary against real `example-model`
//! servers, started in this test's process on a fresh SQLite file or PostgreSQL schema each.
//!
//! Each service directory is a temporary directory holding the example's `svc.yml`,
//! `types.graphql` and permission files (the CLI reads the model from them to check archives)
//! with a `.svcrc` whose default target is `test/example`; the temporary HOME's `~/.svcrc` gives
//! the cluster `test` the server's URL and, as its secret, a platform token the server issued.
//! So the CLI finds the server as it finds any remote cluster, and nothing is built by cargo.
//!
//! Covered: export into a zip of numbered pages and import into a second, empty service (every
//! node, list and edge equal); a failing file (exit status 1, its failures printed, the files
//! before it kept), then a rerun that skips what was imported; an archive written by hand in the
//! original's layout and element shapes (reference §8.2); client-side validation that names the
//! file, element and field and uploads nothing; a resume state of another archive that is not
//! applied; pages and documents the server refuses (warnings, exit status 1); and progress output without carriage returns or escape sequences when stderr is not
//! a terminal. PostgreSQL is expected at 127.0.0.1:5432 (or `SVC_TEST_POSTGRES_URL`); outside CI
//! its tests print a notice and pass when it is unreachable.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::{Value, json};

mod support;

use support::{PostgresSchema, unique};

const MASTER_TOKEN: &str = "svc-cli-ndf-master-token";
const SECRET: &str = "svc-cli-ndf-secret-0123456789abcdef";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Db {
    Sqlite,
    Postgres,
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(future)
}

// ---------------------------------------------------------------------------------------------
// Databases

/// A fresh database: a SQLite file in a temporary directory, or a PostgreSQL schema (dropped at
/// the end).
struct TestDb {
    url: String,
    _dir: Option<tempfile::TempDir>,
    _schema: Option<PostgresSchema>,
}

impl TestDb {
    /// `None` outside CI when PostgreSQL is unreachable (after a notice).
    fn create(db: Db) -> Option<TestDb> {
        match db {
            Db::Sqlite => {
                let dir = tempfile::tempdir().expect("a temporary directory");
                let url = format!("sqlite://{}", dir.path().join("data.db").display());
                Some(TestDb {
                    url,
                    _dir: Some(dir),
                    _schema: None,
                })
            }
            Db::Postgres => {
                let schema = PostgresSchema::create("svc_cli_ndf")?;
                Some(TestDb {
                    url: schema.url.clone(),
                    _dir: None,
                    _schema: Some(schema),
                })
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Services

/// A running `example-model` server with a service directory and a HOME that point the CLI
/// at it.
struct Service {
    running: Option<svc_runtime::Running>,
    port: u16,
    token: String,
    dir: tempfile::TempDir,
    home: tempfile::TempDir,
    _db: TestDb,
    /// The server's file store; after the server (fields drop in order).
    _store: tempfile::TempDir,
}

impl Service {
    /// `None` outside CI when PostgreSQL is unreachable.
    fn start(db: Db, export_page_limit: usize) -> Option<Service> {
        let database = TestDb::create(db)?;
        let store = tempfile::Builder::new()
            .prefix("svc-files-ndf-")
            .tempdir()
            .expect("a file store");
        let options = svc_runtime::Options {
            port: 0,
            database_url: Some(database.url.clone()),
            service_id: Some(format!("ndf-{}", unique())),
            alias: Some("example".into()),
            secret: Some(SECRET.into()),
            master_token: Some(MASTER_TOKEN.into()),
            export_page_limit,
            file_store: Some(store.path().display().to_string()),
            ..Default::default()
        };
        let running = svc_runtime::spawn::<example_model::Service>(options)
            .unwrap_or_else(|e| panic!("cannot start example-model on {}: {e}", database.url));
        let port = running.port;
        let token = platform_token(port);

        let dir = tempfile::tempdir().expect("a service directory");
        let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../example-model");
        copy_dir(
            &example.join("permissions"),
            &dir.path().join("permissions"),
        );
        for file in ["svc.yml", "types.graphql"] {
            std::fs::copy(example.join(file), dir.path().join(file))
                .unwrap_or_else(|e| panic!("cannot copy {file}: {e}"));
        }
        write(
            &dir.path().join("Cargo.toml"),
            "[package]\nname = \"example\"\nversion = \"0.1.0\"\nedition = \"2024\"\n",
        );
        write(
            &dir.path().join(".svcrc"),
            "targets:\n  default: test/example\n",
        );
        let home = tempfile::tempdir().expect("a HOME");
        write(
            &home.path().join(".svcrc"),
            &format!(
                "clusters:\n  test:\n    host: http://127.0.0.1:{port}\n    clusterSecret: {token}\n"
            ),
        );
        Some(Service {
            running: Some(running),
            port,
            token,
            dir,
            home,
            _db: database,
            _store: store,
        })
    }

    fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Runs `svc ARGS` in the service directory (stdin, stdout and stderr are not terminals).
    fn svc(&self, args: &[&str]) -> Run {
        let mut command = Command::new(env!("CARGO_BIN_EXE_svc"));
        command
            .args(args)
            .current_dir(self.dir())
            .env("HOME", self.home.path());
        for var in ["SVC_TARGET", "SVC_PLATFORM_TOKEN"] {
            command.env_remove(var);
        }
        let output: Output = command.output().expect("cannot run svc");
        let run = Run {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        };
        eprintln!(
            "$ svc {} ({:?})\n{}{}",
            args.join(" "),
            run.code,
            run.stdout,
            run.stderr
        );
        run
    }

    /// A GraphQL request to the Simple API (as admin: a platform token); its `data`.
    fn data(&self, query: &str) -> Value {
        let body = post(
            &format!("http://127.0.0.1:{}/simple/v1/example", self.port),
            Some(&self.token),
            &json!({ "query": query }),
        );
        assert!(body.get("errors").is_none(), "{query}\n→ {body}");
        body["data"].clone()
    }

    fn state_file(&self) -> PathBuf {
        self.dir().join(".import").join("state.json")
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            running.stop();
        }
    }
}

/// The outcome of one `svc` run.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    fn ok(&self) -> &Self {
        assert_eq!(
            self.code,
            Some(0),
            "svc failed:\n{}{}",
            self.stdout,
            self.stderr
        );
        self
    }

    /// Plain text: no carriage return, no escape sequence (no bars when not a terminal).
    fn plain(&self) -> &Self {
        for text in [&self.stdout, &self.stderr] {
            assert!(
                !text.contains('\r') && !text.contains('\u{1b}'),
                "control characters in the output: {text:?}"
            );
        }
        self
    }
}

fn post(url: &str, token: Option<&str>, body: &Value) -> Value {
    block_on(async {
        let mut request = reqwest::Client::new()
            .post(url)
            .timeout(Duration::from_secs(60))
            .json(body);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let res = request.send().await.expect("the request failed");
        res.json::<Value>().await.expect("a JSON answer")
    })
}

/// A platform token from `authenticateCustomer` with the master token.
fn platform_token(port: u16) -> String {
    let body = post(
        &format!("http://127.0.0.1:{port}/system"),
        None,
        &json!({ "query": format!(r#"mutation {{ authenticateCustomer(input: {{ auth0IdToken: "{MASTER_TOKEN}" }}) {{ token }} }}"#) }),
    );
    body["data"]["authenticateCustomer"]["token"]
        .as_str()
        .unwrap_or_else(|| panic!("authenticateCustomer failed: {body}"))
        .to_owned()
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("a directory");
    for entry in std::fs::read_dir(from).expect("a directory to copy") {
        let entry = entry.expect("an entry");
        if entry.file_type().expect("a type").is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name())).expect("a copy");
        }
    }
}

/// Writes a zip with `files` (name, text) in that order.
fn zip_of(path: &Path, files: &[(&str, String)]) {
    let file = std::fs::File::create(path).expect("a zip file");
    let mut zip = zip::ZipWriter::new(file);
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, text) in files {
        zip.start_file(*name, options).expect("an entry");
        zip.write_all(text.as_bytes()).expect("its text");
    }
    zip.finish().expect("a finished zip");
}

/// The entries of a zip: (name, text), in archive order.
fn entries(path: &Path) -> Vec<(String, String)> {
    let file = std::fs::File::open(path).expect("the zip");
    let mut zip = zip::ZipArchive::new(file).expect("a zip archive");
    (0..zip.len())
        .map(|i| {
            let mut entry = zip.by_index(i).expect("an entry");
            let name = entry.name().expect("a name").into_owned();
            let mut text = String::new();
            entry.read_to_string(&mut text).expect("UTF-8 text");
            (name, text)
        })
        .collect()
}

/// Everything the example model holds, ordered, for comparing two services.
const EVERYTHING: &str = r#"{
  allUsers(orderBy: id_ASC) { id email name role age verified nicknames createdAt updatedAt
    posts(orderBy: id_ASC) { id } friends(orderBy: id_ASC) { id }
    followers(orderBy: id_ASC) { id } following(orderBy: id_ASC) { id } profile { id } }
  allPosts(orderBy: id_ASC) { id createdAt slug title body votes rating published status
    publishedAt metadata tags scores externalId author { id } pinnedIn { id }
    categories(orderBy: id_ASC) { id } comments(orderBy: id_ASC) { id } }
  allCategories(orderBy: id_ASC) { id name position color pinnedPost { id } }
  allChildren(orderBy: id_ASC) { id name birthday weight moods settings twin { id } }
  allComments(orderBy: id_ASC) { id text post { id } parent { id } }
  allProfiles(orderBy: id_ASC) { id bio user { id } }
}"#;

/// Fills a service with every kind of value and relation of the example model.
fn seed(srv: &Service) {
    let users = srv.data(
        r#"mutation {
  ann: createUser(email: "ann@example.com", name: "Ann", age: 30, role: ADMIN, nicknames: ["annie", "A"]) { id }
  bob: createUser(email: "bob@example.com", name: "Bob", age: 25) { id }
  cid: createUser(email: "cid@example.com", name: "Cid") { id }
}"#,
    );
    let id = |v: &Value, k: &str| v[k]["id"].as_str().expect("an id").to_owned();
    let (ann, bob, cid) = (id(&users, "ann"), id(&users, "bob"), id(&users, "cid"));
    let scores: Vec<i32> = (0..300).collect();
    let posts = srv.data(&format!(
        r#"mutation {{
  alpha: createPost(slug: "alpha", title: "Alpha", authorId: "{ann}", rating: 4.5, status: PUBLISHED,
    publishedAt: "2017-11-29T14:35:13.123Z", metadata: "{{\"k\": [1, 2, {{\"x\": null}}]}}",
    tags: ["a", "b"], scores: {scores:?}, externalId: "ext-1", body: "ünïcödé ✓") {{ id }}
  beta: createPost(slug: "beta", title: "Beta", authorId: "{bob}") {{ id }}
}}"#
    ));
    let (alpha, beta) = (id(&posts, "alpha"), id(&posts, "beta"));
    let rest = srv.data(&format!(
        r#"mutation {{
  news: createCategory(name: "news", postsIds: ["{alpha}", "{beta}"], pinnedPostId: "{beta}") {{ id }}
  great: createComment(text: "great post", postId: "{alpha}") {{ id }}
  profile: createProfile(bio: "hello", userId: "{ann}") {{ id }}
  u: updateUser(id: "{ann}", friendsIds: ["{bob}", "{cid}"], followersIds: ["{bob}"]) {{ id }}
  a: createChild(name: "Ada", moods: [DRAFT, ARCHIVED]) {{ id }}
  b: createChild(name: "Bo") {{ id }}
}}"#
    ));
    let great = id(&rest, "great");
    srv.data(&format!(
        r#"mutation {{
  reply: createComment(text: "agreed", postId: "{alpha}", parentId: "{great}") {{ id }}
  twins: updateChild(id: "{}", twinId: "{}") {{ id }}
}}"#,
        id(&rest, "a"),
        id(&rest, "b")
    ));
}

macro_rules! db_cases {
    ($($(#[$attr:meta])* fn $name:ident($db:ident) $body:block)*) => {
        mod sqlite {
            $(
                $(#[$attr])*
                #[test]
                fn $name() {
                    super::$name(super::Db::Sqlite);
                }
            )*
        }
        mod postgres {
            $(
                $(#[$attr])*
                #[test]
                fn $name() {
                    super::$name(super::Db::Postgres);
                }
            )*
        }
        $(
            fn $name($db: Db) $body
        )*
    };
}

db_cases! {
    /// `svc export` writes the pages of a small page limit as numbered files of the three
    /// folders; `svc import` of that archive into an empty service gives the same data; both
    /// print one plain line per file when stderr is not a terminal.
    fn export_then_import_into_another_service(db) {
        let Some(source) = Service::start(db, 400) else { return };
        seed(&source);
        let before = source.data(EVERYTHING);

        let run = source.svc(&["export", "-e", "data.zip"]);
        run.ok().plain();
        assert!(run.stdout.starts_with("Exported to data.zip: nodes "), "{}", run.stdout);
        assert!(
            run.stderr.lines().any(|l| l.starts_with("nodes/000001.json: ") && l.contains(" element") && l.ends_with(" s")),
            "one line per file: {}",
            run.stderr
        );
        let archive = source.dir().join("data.zip");
        assert!(!source.dir().join("data.zip.part").exists());
        let files = entries(&archive);
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        let mut counts = [0usize; 3];
        for (i, folder) in ["nodes", "lists", "relations"].iter().enumerate() {
            let mine: Vec<&str> = names.iter().copied().filter(|n| n.starts_with(&format!("{folder}/"))).collect();
            let expected: Vec<String> = (1..=mine.len()).map(|n| format!("{folder}/{n:06}.json")).collect();
            assert_eq!(mine, expected, "numbered from 000001 in order");
            counts[i] = mine.len();
        }
        assert_eq!(counts.iter().sum::<usize>(), names.len(), "nothing else: {names:?}");
        assert!(counts[0] > 2 && counts[1] > 2, "a small page limit makes many pages: {counts:?}");
        for (name, text) in &files {
            let doc: Value = serde_json::from_str(text).expect("a JSON document");
            let folder = name.split('/').next().expect("a folder");
            assert_eq!(doc["valueType"], json!(folder), "{name}");
            assert!(doc["values"].is_array(), "{name}");
        }
        let last = &files.iter().rfind(|(n, _)| n.starts_with("relations/")).expect("relations").1;
        assert!(last.starts_with(r#"{"valueType":"relations","values":["#), "{last}");

        let Some(target) = Service::start(db, 10_000_000) else { return };
        let archive_arg = archive.to_str().expect("a UTF-8 path");
        let run = target.svc(&["import", "--data", archive_arg]);
        run.ok().plain();
        assert!(run.stdout.starts_with("Imported "), "{}", run.stdout);
        for (name, _) in &files {
            assert!(
                run.stderr.lines().any(|l| l.starts_with(&format!("{name}: ")) && l.contains(" element")),
                "a line for {name}: {}",
                run.stderr
            );
        }
        assert!(!target.state_file().exists(), "the state is removed after a full import");
        assert!(!target.dir().join(".import").exists());
        let after = target.data(EVERYTHING);
        assert_eq!(after, before);
        assert_eq!(after["allPosts"][0]["scores"].as_array().map(Vec::len), Some(300));
    }

    /// A file the server refuses stops the import with exit status 1 and its failures (file,
    /// element, message); the files before it stay imported, the state says so, and a rerun
    /// with the file fixed skips them.
    fn resume_after_a_failing_file(db) {
        let Some(srv) = Service::start(db, 10_000_000) else { return };
        let archive = srv.dir().join("people.zip");
        let user = |id: &str, email: &str| json!({"_typeName": "User", "id": id, "email": email, "name": id});
        let nodes = |values: Value| json!({"valueType": "nodes", "values": values}).to_string();
        let file1 = nodes(json!([user("ann", "ann@example.com"), user("bob", "bob@example.com")]));
        let file3 = nodes(json!([user("dan", "dan@example.com")]));
        let lists = json!({"valueType": "lists", "values": [
            {"_typeName": "User", "id": "ann", "nicknames": ["annie"]}
        ]}).to_string();
        let relations = json!({"valueType": "relations", "values": [
            [{"_typeName": "User", "id": "ann", "fieldName": "friends"}, {"_typeName": "User", "id": "cid", "fieldName": null}]
        ]}).to_string();
        // Element 1 of file 2 takes Ann's e-mail: unique, so the server refuses the file.
        let bad2 = nodes(json!([user("cid", "cid@example.com"), user("eve", "ANN@example.com")]));
        zip_of(&archive, &[
            ("nodes/000001.json", file1.clone()),
            ("nodes/000002.json", bad2),
            ("nodes/000003.json", file3.clone()),
            ("lists/000001.json", lists.clone()),
            ("relations/000001.json", relations.clone()),
        ]);
        // One file at a time, so that file 2 (not file 1) is the one that conflicts.
        let run = srv.svc(&["import", "-d", "people.zip", "--jobs", "1"]);
        run.plain();
        assert_eq!(run.code, Some(1), "{}", run.stderr);
        assert!(run.stderr.contains("The import of nodes/000002.json failed (1 failure):"), "{}", run.stderr);
        assert!(
            run.stderr.lines().any(|l| l.starts_with("  nodes/000002.json, element 1: ") && l.contains("email")),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("error: the import of `nodes/000002.json` failed"), "{}", run.stderr);
        let state: Value = serde_json::from_str(&std::fs::read_to_string(srv.state_file()).expect("a state")).expect("JSON");
        assert_eq!((state["nodes"].clone(), state["lists"].clone(), state["relations"].clone()), (json!(1), json!(0), json!(0)));
        assert_eq!(state["archive"], json!("people.zip"));
        assert_eq!(state.get("ahead"), None, "nothing imported past file 2: {state}");
        let users = srv.data("{ allUsers(orderBy: id_ASC) { id } }");
        assert_eq!(users, json!({"allUsers": [{"id": "ann"}, {"id": "bob"}]}), "file 1 only");

        // Fixed: the same archive with another e-mail for Eve.
        let good2 = nodes(json!([user("cid", "cid@example.com"), user("eve", "eve@example.com")]));
        zip_of(&archive, &[
            ("nodes/000001.json", file1),
            ("nodes/000002.json", good2),
            ("nodes/000003.json", file3),
            ("lists/000001.json", lists),
            ("relations/000001.json", relations),
        ]);
        let run = srv.svc(&["import", "-s", "people.zip"]);
        run.ok().plain();
        assert!(run.stderr.contains("Resuming from `.import/state.json`: nodes 1, lists 0, relations 0 already imported."), "{}", run.stderr);
        assert!(run.stderr.contains("Skipping file nodes/000001.json (already imported)"), "{}", run.stderr);
        assert!(!run.stderr.contains("Skipping file nodes/000002.json"), "{}", run.stderr);
        assert!(run.stderr.lines().any(|l| l.starts_with("nodes/000002.json: 2 elements, ")), "{}", run.stderr);
        assert!(!srv.state_file().exists());
        let users = srv.data(r#"{ allUsers(orderBy: id_ASC) { id email nicknames friends(orderBy: id_ASC) { id } } }"#);
        assert_eq!(users, json!({"allUsers": [
            {"id": "ann", "email": "ann@example.com", "nicknames": ["annie"], "friends": [{"id": "cid"}]},
            {"id": "bob", "email": "bob@example.com", "nicknames": null, "friends": []},
            {"id": "cid", "email": "cid@example.com", "nicknames": null, "friends": [{"id": "ann"}]},
            {"id": "dan", "email": "dan@example.com", "nicknames": null, "friends": []},
            {"id": "eve", "email": "eve@example.com", "nicknames": null, "friends": []},
        ]}));
    }

    /// Two node files are in flight at once (`--jobs` defaults to 2): the first fails against
    /// the database, the second goes in beside it. The state names the second as imported past
    /// the gap, the error says so, and the rerun skips it.
    fn a_failing_file_beside_another(db) {
        let Some(srv) = Service::start(db, 10_000_000) else { return };
        srv.data(r#"mutation { createUser(email: "ann@example.com", name: "Ann") { id } }"#);
        let archive = srv.dir().join("more.zip");
        let user = |id: &str, email: &str| json!({"_typeName": "User", "id": id, "email": email, "name": id});
        let nodes = |values: Value| json!({"valueType": "nodes", "values": values}).to_string();
        let good2 = nodes(json!([user("bob", "bob@example.com")]));
        // Ann's e-mail, which the database holds already.
        zip_of(&archive, &[
            ("nodes/000001.json", nodes(json!([user("cid", "ANN@example.com")]))),
            ("nodes/000002.json", good2.clone()),
        ]);
        let run = srv.svc(&["import", "-d", "more.zip"]);
        run.plain();
        assert_eq!(run.code, Some(1), "{}", run.stderr);
        assert!(run.stderr.contains("The import of nodes/000001.json failed (1 failure):"), "{}", run.stderr);
        assert!(
            run.stderr.contains("Imported beside it, and skipped by the rerun: nodes/000002.json"),
            "{}",
            run.stderr
        );
        let state: Value = serde_json::from_str(&std::fs::read_to_string(srv.state_file()).expect("a state")).expect("JSON");
        assert_eq!(state["nodes"], json!(0), "{state}");
        assert_eq!(state["ahead"], json!(["nodes/000002.json"]), "{state}");
        let emails = r#"{ allUsers(orderBy: email_ASC) { email } }"#;
        assert_eq!(
            srv.data(emails),
            json!({"allUsers": [{"email": "ann@example.com"}, {"email": "bob@example.com"}]})
        );

        zip_of(&archive, &[
            ("nodes/000001.json", nodes(json!([user("cid", "cid@example.com")]))),
            ("nodes/000002.json", good2),
        ]);
        let run = srv.svc(&["import", "-d", "more.zip"]);
        run.ok().plain();
        assert!(
            run.stderr.contains("Resuming from `.import/state.json`: nodes 0, lists 0, relations 0 already imported, and nodes/000002.json."),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("Skipping file nodes/000002.json (already imported)"), "{}", run.stderr);
        assert!(!srv.state_file().exists());
        assert_eq!(
            srv.data(emails),
            json!({"allUsers": [{"email": "ann@example.com"}, {"email": "bob@example.com"}, {"email": "cid@example.com"}]})
        );
    }

    /// An archive written by hand in the original's layout and element shapes (reference §8.2:
    /// ids like `johndoe`, DateTimes with milliseconds and `Z` or with a space, lists appended
    /// over several elements, relations with side B first and a one-field self relation with
    /// `fieldName` null on one side) imports. A resume state left by another archive is not
    /// applied to it.
    fn import_a_hand_written_archive(db) {
        let Some(srv) = Service::start(db, 10_000_000) else { return };
        let nodes = r#"{"valueType":"nodes","values":[
  {"_typeName":"User","id":"johndoe","email":"john@doe.com","name":"John","createdAt":"2017-11-29T14:35:13.000Z"},
  {"_typeName":"User","id":"sarahdoe","email":"sarah@doe.com","name":"Sarah","role":"EDITOR","age":31,"verified":true,"createdAt":"2017-11-29 14:35:13","updatedAt":"2017-12-01T08:00:00.000Z"},
  {"_typeName":"Post","id":"post1","slug":"hello","title":"Hello","rating":4.5,"published":true,"status":"PUBLISHED","publishedAt":"2017-11-30T10:00:00.000Z","metadata":"{\"a\":2}"},
  {"_typeName":"Child","id":"kid1","name":"Kid","settings":{"theme":"light"}},
  {"_typeName":"Profile","id":"prof1","bio":"Fisher"},
  {"_typeName":"Profile","id":"prof2","bio":"Nobody's"}
]}"#;
        let lists = r#"{"valueType":"lists","values":[
  {"_typeName":"User","id":"johndoe","nicknames":["Fishing","Cooking"]},
  {"_typeName":"User","id":"johndoe","nicknames":["Biking"]},
  {"_typeName":"Post","id":"post1","scores":[1,2,3]}
]}"#;
        let relations = r#"{"valueType":"relations","values":[
  [{"_typeName":"Post","id":"post1","fieldName":"author"},{"_typeName":"User","id":"johndoe","fieldName":"posts"}],
  [{"_typeName":"User","id":"sarahdoe","fieldName":"friends"},{"_typeName":"User","id":"johndoe","fieldName":null}],
  [{"_typeName":"User","id":"sarahdoe","fieldName":"followers"},{"_typeName":"User","id":"johndoe","fieldName":"following"}],
  [{"_typeName":"User","id":"johndoe","fieldName":"profile"},{"_typeName":"Profile","id":"prof1","fieldName":"user"}]
]}"#;
        let archive = srv.dir().join("handmade.zip");
        zip_of(&archive, &[
            ("nodes/000001.json", nodes.to_owned()),
            ("lists/000001.json", lists.to_owned()),
            ("relations/000001.json", relations.to_owned()),
        ]);
        std::fs::create_dir_all(srv.dir().join(".import")).expect("a directory");
        write(&srv.state_file(), r#"{"nodes":1,"lists":0,"relations":0,"archive":"other.zip","imported":"0123456789abcdef"}"#);
        let run = srv.svc(&["import", "--source", "handmade.zip"]);
        run.ok().plain();
        assert!(
            run.stderr.contains("The resume state `.import/state.json` was written for another archive (`other.zip`)"),
            "{}",
            run.stderr
        );
        assert!(!run.stderr.contains("Skipping"), "{}", run.stderr);
        assert!(run.stdout.contains("nodes 6 elements, lists 3 elements, relations 4 elements"), "{}", run.stdout);
        // `Profile.user` is required: the profile the archive leaves without a user is named.
        assert!(
            run.stderr.contains("warning: 1 Profile node has no `user`, which `Profile` requires"),
            "{}",
            run.stderr
        );
        assert_eq!(run.stderr.matches("warning:").count(), 1, "{}", run.stderr);
        let data = srv.data(r#"{
  allUsers(orderBy: id_ASC) { id name role age verified nicknames createdAt updatedAt
    posts { id } friends { id } followers { id } following { id } }
  allPosts { id rating published status publishedAt metadata scores author { id } }
  allChildren { id settings weight }
}"#);
        assert_eq!(data, json!({
            "allUsers": [
                {"id": "johndoe", "name": "John", "role": "READER", "age": null, "verified": false,
                 "nicknames": ["Fishing", "Cooking", "Biking"], "createdAt": "2017-11-29T14:35:13.000Z",
                 "updatedAt": data["allUsers"][0]["updatedAt"].clone(),
                 "posts": [{"id": "post1"}], "friends": [{"id": "sarahdoe"}], "followers": [],
                 "following": [{"id": "sarahdoe"}]},
                {"id": "sarahdoe", "name": "Sarah", "role": "EDITOR", "age": 31, "verified": true,
                 "nicknames": null, "createdAt": "2017-11-29T14:35:13.000Z", "updatedAt": "2017-12-01T08:00:00.000Z",
                 "posts": [], "friends": [{"id": "johndoe"}], "followers": [{"id": "johndoe"}], "following": []}
            ],
            "allPosts": [
                {"id": "post1", "rating": 4.5, "published": true, "status": "PUBLISHED",
                 "publishedAt": "2017-11-30T10:00:00.000Z", "metadata": {"a": 2}, "scores": [1, 2, 3],
                 "author": {"id": "johndoe"}}
            ],
            "allChildren": [{"id": "kid1", "settings": {"theme": "light"}, "weight": 3.5}]
        }));
    }

    /// Client-side validation: every problem of every file, each naming the file, the element
    /// and the field, and nothing uploaded, not even the files without problems.
    fn validation_names_file_element_and_field(db) {
        let Some(srv) = Service::start(db, 10_000_000) else { return };
        let good = json!({"valueType": "nodes", "values": [
            {"_typeName": "User", "id": "ann", "email": "ann@example.com", "name": "Ann"}
        ]}).to_string();
        let bad = json!({"valueType": "nodes", "values": [
            {"_typeName": "User", "id": "bob", "email": "bob@example.com", "name": "Bob"},
            {"_typeName": "User", "id": "cid", "email": "cid@example.com", "name": "Cid", "age": "old"},
            {"_typeName": "Pet", "id": "rex"},
            {"_typeName": "User", "id": "dan", "name": "Dan", "role": "KING"}
        ]}).to_string();
        let wrong_type = json!({"valueType": "nodes", "values": []}).to_string();
        let relations = json!({"valueType": "relations", "values": [
            [{"_typeName": "User", "id": "ann", "fieldName": "posts"}, {"_typeName": "User", "id": "bob"}]
        ]}).to_string();
        zip_of(&srv.dir().join("bad.zip"), &[
            ("nodes/1.json", good),
            ("nodes/02.json", bad),
            ("lists/1.json", wrong_type),
            ("relations/1.json", relations),
            ("README.txt", "not a document".to_owned()),
        ]);
        let run = srv.svc(&["import", "-d", "bad.zip"]);
        run.plain();
        assert_eq!(run.code, Some(1));
        let expected = [
            "nodes/02.json, element 1, field `age`: expects a 32-bit integer, not \"old\"",
            "nodes/02.json, element 2, field `_typeName`: `Pet` is not a type of the model (its types: User, Post, Category, Child, Profile, Comment, File)",
            "nodes/02.json, element 3, field `role`: expects a value of Role (ADMIN, EDITOR, READER), not \"KING\"",
            "nodes/02.json, element 3, field `email`: is required (`String!`) and missing",
            "lists/1.json, field `valueType`: is `nodes`, but the file is in the folder `lists/`",
            "relations/1.json, element 0, field `0.fieldName`: `User.posts` relates to Post, not User",
            "error: the archive `bad.zip` does not fit the service's model (6 problems); nothing was imported",
        ];
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines, expected);
        assert_eq!(srv.data("{ allUsers { id } }"), json!({"allUsers": []}), "nothing uploaded");
        assert!(!srv.state_file().exists());

        // And the paths the commands refuse.
        let run = srv.svc(&["import", "-d", "bad.tar"]);
        assert_eq!(run.code, Some(1));
        assert!(run.stderr.contains("must be a `.zip` file"), "{}", run.stderr);
        let run = srv.svc(&["import", "-d", "missing.zip"]);
        assert!(run.stderr.contains("there is no archive `missing.zip`"), "{}", run.stderr);
        let run = srv.svc(&["export", "-e", "out.tar"]);
        assert_eq!(run.code, Some(1));
        assert!(run.stderr.contains("must end in `.zip`"), "{}", run.stderr);
    }

    /// A page the server refuses (here: a token that is no admin's) gets the reference's
    /// warning with the request id, the other types are still asked for, the archive is
    /// written, and the command exits with status 1; an import with such a token is refused
    /// with the server's text.
    fn refused_pages_warn_and_fail(db) {
        let Some(srv) = Service::start(db, 10_000_000) else { return };
        write(
            &srv.home.path().join(".svcrc"),
            &format!("clusters:\n  test:\n    host: http://127.0.0.1:{}\n    clusterSecret: not-a-token\n", srv.port),
        );
        let run = srv.svc(&["export", "-e", "x.zip"]);
        run.plain();
        assert_eq!(run.code, Some(1));
        for file_type in ["nodes", "lists", "relations"] {
            let warning = format!("warning: The download of {file_type} failed. You may get fragmented data. Request ID: ");
            assert!(run.stderr.lines().any(|l| l.starts_with(&warning) && l.len() > warning.len()), "{}", run.stderr);
        }
        assert!(run.stderr.contains("the server said: Insufficient permissions for bulk export"), "{}", run.stderr);
        assert!(run.stderr.contains("error: the export is incomplete: the download of nodes and lists and relations failed"), "{}", run.stderr);
        assert_eq!(entries(&srv.dir().join("x.zip")), Vec::<(String, String)>::new());

        zip_of(&srv.dir().join("one.zip"), &[("nodes/1.json", r#"{"valueType":"nodes","values":[]}"#.to_owned())]);
        let run = srv.svc(&["import", "-d", "one.zip"]);
        assert_eq!(run.code, Some(1));
        assert!(run.stderr.contains("error: the server refused `nodes/1.json` (request ID "), "{}", run.stderr);
        assert!(run.stderr.contains("Insufficient permissions for bulk import"), "{}", run.stderr);
        assert!(!srv.state_file().exists());
    }

    /// Without `-e` the archive is `export-<timestamp>.zip` in the current directory; an empty
    /// service exports one empty document per folder.
    fn export_to_the_default_path(db) {
        let Some(srv) = Service::start(db, 10_000_000) else { return };
        let run = srv.svc(&["export"]);
        run.ok().plain();
        let zips: Vec<String> = std::fs::read_dir(srv.dir())
            .expect("the directory")
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
            .filter(|n| n.ends_with(".zip"))
            .collect();
        assert_eq!(zips.len(), 1, "{zips:?}");
        assert!(zips[0].starts_with("export-") && zips[0].len() == "export-2026-01-01T00-00-00Z.zip".len(), "{zips:?}");
        let files = entries(&srv.dir().join(&zips[0]));
        assert_eq!(files, vec![
            ("nodes/000001.json".to_owned(), r#"{"valueType":"nodes","values":[]}"#.to_owned()),
            ("lists/000001.json".to_owned(), r#"{"valueType":"lists","values":[]}"#.to_owned()),
            ("relations/000001.json".to_owned(), r#"{"valueType":"relations","values":[]}"#.to_owned()),
        ]);
        assert!(run.stdout.contains("nodes 0 elements (1 file), lists 0 elements (1 file), relations 0 elements (1 file)"), "{}", run.stdout);
    }
}
