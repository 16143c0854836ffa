//! Docs that cannot rot: runs the examples of `docs/getting-started.md` and of the API pages
//! (`docs/api/*.md`) as a reader would, in order, against the service the guide builds; and the
//! README's tour against the example service, started as the README's first command starts it.
//!
//! A fenced block takes part when its info string has the word `doctest` after the language;
//! the other blocks are only shown. The kinds (docs/api/README.md says the same for writers):
//!
//! - ```` ```sh doctest ````: a bash script (`set -euo pipefail`). The working directory and the
//!   exported variables carry over from one block to the next, across pages.
//! - ```` ```graphql doctest ````: the text is POSTed as `{"query": …}` to the URL in `$API`
//!   (`endpoint=VAR` names another variable), with `Authorization: Bearer $TOKEN` when `TOKEN`
//!   is set (`token=VAR` names another variable, `token=none` sends none).
//! - ```` ```LANG doctest file=PATH ````: the text is written to `PATH` (under the current
//!   directory); nothing runs.
//! - `needs=node` / `needs=postgres` / `needs=s3`: the block runs only when Node.js and npm are
//!   on the PATH / PostgreSQL is reachable (with `createdb`) / an S3 API server and the AWS CLI
//!   could be set up (moto's server and `awscli` from PyPI, installed once into a virtualenv
//!   under `~/.cache/svc-test/docs-s3`); otherwise it is skipped with a notice (with `CI=true`
//!   that fails).
//!
//! The next fenced block after a run block, when its info string is `json expect` or `text
//! expect`, is what the block must print (`json_matches` and `text_matches` say how it is
//! compared).
//!
//! What a reader's machine has and this one does not is swapped in, in blocks and expected
//! outputs alike ([`Reader::new`]): `60000` becomes a free port; the guide's database `blog`
//! (`createdb -h localhost -U postgres blog`, `postgres://postgres@localhost:5432/blog`) a
//! database of the test's own, which the block creates and the test drops; the S3 bucket
//! `uploads` a bucket of the test's S3 API server, which the AWS CLI reaches through
//! `AWS_ENDPOINT_URL` and the server through the store URL's `endpoint=`, with the keys `test`;
//! the release build of section 13 the debug build `svc deploy` made (`cargo build --release`
//! runs as `cargo build`, `./target/release/` is the target directory's `debug/`): a release
//! build of the runtime would take this machine half an hour; and `cargo install --locked --path cli`
//! a debug install from this checkout into the temporary HOME's `.cargo`, whose `bin` comes
//! first on the PATH (before the folder of this test's own `svc`).
//!
//! The run starts in an empty directory with a temporary HOME and `svc` first on the PATH, so
//! `svc init` and `svc deploy` build the guide's service for real (in the same target directory
//! as this test, like the end-to-end tests).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod support;

use support::{PostgresDatabase, target_dir, tool_homes};

/// The pages the test runs, in this order: the guide first, as it builds the service the API
/// pages use.
const PAGES: &[&str] = &[
    "docs/getting-started.md",
    "docs/api/simple.md",
    "docs/api/relay.md",
    "docs/api/system.md",
    "docs/api/subscriptions.md",
    "docs/api/files.md",
    "docs/api/ndf.md",
];

/// How long one block may run: a `svc deploy` compiles the service's crate.
const BLOCK_TIMEOUT: Duration = Duration::from_secs(20 * 60);

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Sh,
    Graphql,
    File(String),
}

#[derive(Debug, Clone, PartialEq)]
enum Expect {
    Json(String),
    Text(String),
}

/// A fenced block marked `doctest`, with the output it must print.
#[derive(Debug, Clone)]
struct Block {
    page: String,
    line: usize,
    kind: Kind,
    attrs: BTreeMap<String, String>,
    text: String,
    expect: Option<Expect>,
}

impl Block {
    fn place(&self) -> String {
        format!("{}:{}", self.page, self.line)
    }
}

/// A fenced block of a Markdown page: its opening line (1-based), info string and text.
struct Fence {
    line: usize,
    info: Vec<String>,
    text: String,
}

/// The fenced blocks of a Markdown page (backtick fences at the start of a line).
fn fences(markdown: &str) -> Result<Vec<Fence>, String> {
    let mut fences = Vec::new();
    let mut open: Option<(usize, usize, Vec<String>, String)> = None;
    for (index, line) in markdown.lines().enumerate() {
        let ticks = line.chars().take_while(|&c| c == '`').count();
        match &mut open {
            None if ticks >= 3 => {
                let info = line[ticks..]
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect();
                open = Some((index + 1, ticks, info, String::new()));
            }
            None => {}
            Some((_, width, _, _)) if ticks >= *width && line.trim_end().len() == ticks => {
                let (line, _, info, text) = open.take().expect("an open fence");
                fences.push(Fence { line, info, text });
            }
            Some((_, _, _, text)) => {
                text.push_str(line);
                text.push('\n');
            }
        }
    }
    match open {
        Some((line, ..)) => Err(format!("the fence opened at line {line} is never closed")),
        None => Ok(fences),
    }
}

/// The `doctest` blocks of a page, each with the `expect` block that follows it.
fn blocks(page: &str, markdown: &str) -> Result<Vec<Block>, String> {
    let fences = fences(markdown).map_err(|e| format!("{page}: {e}"))?;
    let mut blocks: Vec<Block> = Vec::new();
    let mut last_ran: Option<usize> = None;
    for fence in fences {
        let place = format!("{page}:{}", fence.line);
        let lang = fence.info.first().map(String::as_str).unwrap_or("");
        let words = fence.info.get(1..).unwrap_or(&[]);
        if words.first().map(String::as_str) == Some("expect") {
            let expect = match lang {
                "json" => Expect::Json(fence.text),
                "text" => Expect::Text(fence.text),
                other => return Err(format!("{place}: `{other} expect`: json or text only")),
            };
            let Some(index) = last_ran.take() else {
                return Err(format!("{place}: an `expect` block follows no run block"));
            };
            blocks[index].expect = Some(expect);
            continue;
        }
        last_ran = None;
        if !words.iter().any(|w| w == "doctest") {
            continue;
        }
        let mut attrs = BTreeMap::new();
        for word in words.iter().filter(|w| *w != "doctest") {
            let Some((key, value)) = word.split_once('=') else {
                return Err(format!("{place}: `{word}`: attributes are key=value"));
            };
            attrs.insert(key.to_owned(), value.to_owned());
        }
        let kind = match (lang, attrs.remove("file")) {
            (_, Some(path)) => Kind::File(path),
            ("sh", None) => Kind::Sh,
            ("graphql", None) => Kind::Graphql,
            (other, None) => {
                return Err(format!(
                    "{place}: `{other} doctest` runs nothing: sh, graphql, or file=PATH"
                ));
            }
        };
        if !matches!(kind, Kind::File(_)) {
            last_ran = Some(blocks.len());
        }
        blocks.push(Block {
            page: page.to_owned(),
            line: fence.line,
            kind,
            attrs,
            text: fence.text,
            expect: None,
        });
    }
    Ok(blocks)
}

/// Whether `actual` matches `expected`: objects with the same keys (in any order), arrays of
/// the same length, equal scalars; the expected string `"…"` matches any value, and a string
/// ending in `…` any string that starts with what comes before it. On a mismatch, the path of
/// the first difference.
fn json_matches(expected: &Value, actual: &Value, path: &str) -> Result<(), String> {
    match (expected, actual) {
        (Value::String(e), _) if e == "…" => Ok(()),
        (Value::String(e), Value::String(a)) if e.ends_with('…') => {
            let prefix = e.trim_end_matches('…');
            if a.starts_with(prefix) {
                Ok(())
            } else {
                Err(format!("{path}: {a:?} does not start with {prefix:?}"))
            }
        }
        (Value::Object(e), Value::Object(a)) => {
            let missing: Vec<_> = e.keys().filter(|k| !a.contains_key(*k)).collect();
            let extra: Vec<_> = a.keys().filter(|k| !e.contains_key(*k)).collect();
            if !missing.is_empty() || !extra.is_empty() {
                return Err(format!(
                    "{path}: keys missing {missing:?}, keys not expected {extra:?}"
                ));
            }
            e.iter()
                .try_for_each(|(k, v)| json_matches(v, &a[k], &format!("{path}.{k}")))
        }
        (Value::Array(e), Value::Array(a)) => {
            if e.len() != a.len() {
                return Err(format!(
                    "{path}: {} elements, {} expected",
                    a.len(),
                    e.len()
                ));
            }
            e.iter()
                .zip(a)
                .enumerate()
                .try_for_each(|(i, (e, a))| json_matches(e, a, &format!("{path}[{i}]")))
        }
        (Value::Number(e), Value::Number(a)) if e.as_f64() == a.as_f64() => Ok(()),
        (e, a) if e == a => Ok(()),
        (e, a) => Err(format!("{path}: {a} where {e} is expected")),
    }
}

/// Whether `line` matches `pattern`, where each `…` of the pattern matches any characters.
fn line_matches(pattern: &str, line: &str) -> bool {
    let mut parts = pattern.split('…');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = line.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// Whether each non-empty line of `expected` occurs in `actual`, in order (`line_matches`, on
/// lines with their surrounding whitespace trimmed). On a mismatch, the line not found.
fn text_matches(expected: &str, actual: &str) -> Result<(), String> {
    let mut lines = actual.lines().map(str::trim);
    for wanted in expected.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if !lines.any(|line| line_matches(wanted, line)) {
            return Err(format!("no line (in order) matches {wanted:?}"));
        }
    }
    Ok(())
}

/// Whether `program --version` runs.
fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// What the run does with a block.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Can {
    Run,
    /// Skip this block only.
    Skip,
    /// Skip this block and every block after it.
    Stop,
}

/// The S3 API server (moto's) and the AWS CLI the guide's move of files to S3 runs against,
/// with the bucket `uploads`. The server stops with this value.
struct S3 {
    endpoint: String,
    /// A folder holding only `aws`, put first on the PATH.
    tools: PathBuf,
    server: std::process::Child,
}

/// What the virtualenv holds (a change installs it again).
const S3_PACKAGES: &[&str] = &["moto[server]==5.2.5", "awscli==1.45.11"];

impl S3 {
    /// `None` outside CI when it cannot be set up (after a notice).
    fn start() -> Option<S3> {
        match S3::set_up() {
            Ok(s3) => Some(s3),
            Err(e) => {
                assert!(!in_ci(), "CI=true, but the S3 blocks cannot run: {e}");
                eprintln!("notice: the S3 blocks are skipped: {e}");
                None
            }
        }
    }

    fn set_up() -> Result<S3, String> {
        let home = std::env::var_os("HOME").ok_or("HOME is not set")?;
        let venv = PathBuf::from(home).join(".cache/svc-test/docs-s3");
        let marker = venv.join(".installed");
        let wanted = S3_PACKAGES.join(" ");
        if std::fs::read_to_string(&marker).ok().as_deref() != Some(wanted.as_str()) {
            eprintln!("installing {wanted} (PyPI) into {}", venv.display());
            let _ = std::fs::remove_dir_all(&venv);
            let steps: [(PathBuf, Vec<String>); 2] = [
                (
                    PathBuf::from("python3"),
                    vec!["-m".into(), "venv".into(), venv.display().to_string()],
                ),
                (
                    venv.join("bin/pip"),
                    ["install", "--quiet"]
                        .iter()
                        .chain(S3_PACKAGES)
                        .map(|a| (*a).to_owned())
                        .collect(),
                ),
            ];
            for (program, args) in steps {
                let out = Command::new(&program)
                    .args(&args)
                    .stdin(Stdio::null())
                    .output()
                    .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
                if !out.status.success() {
                    return Err(format!(
                        "{} {} failed: {}",
                        program.display(),
                        args.join(" "),
                        String::from_utf8_lossy(&out.stderr)
                    ));
                }
            }
            std::fs::write(&marker, &wanted).map_err(|e| e.to_string())?;
        }
        let tools = venv.join("tools");
        if !tools.join("aws").exists() {
            std::fs::create_dir_all(&tools).map_err(|e| e.to_string())?;
            std::os::unix::fs::symlink(venv.join("bin/aws"), tools.join("aws"))
                .map_err(|e| e.to_string())?;
        }
        let port = free_port();
        let server = Command::new(venv.join("bin/moto_server"))
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start moto_server: {e}"))?;
        let s3 = S3 {
            endpoint: format!("http://127.0.0.1:{port}"),
            tools,
            server,
        };
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if started.elapsed() > Duration::from_secs(30) {
                return Err(format!("moto_server did not listen on {port} within 30 s"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // The reader's bucket exists before the guide copies into it.
        let made = Command::new("curl")
            .args(["-sSf", "-X", "PUT", &format!("{}/uploads", s3.endpoint)])
            .stdout(Stdio::null())
            .status()
            .map_err(|e| e.to_string())?;
        if !made.success() {
            return Err(format!("creating the bucket `uploads` failed: {made}"));
        }
        Ok(s3)
    }
}

impl Drop for S3 {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// A free TCP port on the loopback interface.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// The reader's machine: a temporary HOME and work directory, and the shell state that carries
/// from one block to the next.
struct Reader {
    home: tempfile::TempDir,
    work: tempfile::TempDir,
    state: PathBuf,
    substitutions: Vec<(String, String)>,
    node: bool,
    postgres: bool,
    /// The S3 API server's endpoint and the folder that holds `aws`.
    s3: Option<(String, PathBuf)>,
}

impl Reader {
    fn new(port: u16, postgres: Option<&PostgresDatabase>, s3: Option<&S3>) -> Reader {
        let home = tempfile::tempdir().expect("a temporary HOME");
        let work = tempfile::tempdir().expect("a temporary work directory");
        let state = home.path().join("doctest-state.sh");
        std::fs::write(&state, format!("cd '{}'\n", work.path().display())).expect("the state");
        // The CLI installs from this checkout, in debug (a release build of the runtime takes
        // half an hour here), into the temporary HOME, whose `.cargo/bin` comes first on the
        // PATH: the blocks after it run the `svc` it installed.
        let install = format!(
            "cargo install --quiet --debug --locked --root \"$HOME/.cargo\" --path '{}'",
            workspace().join("cli").display()
        );
        let mut substitutions = vec![
            ("cargo install --locked --path cli".to_owned(), install),
            ("60000".to_owned(), port.to_string()),
            ("cargo build --release".to_owned(), "cargo build".to_owned()),
            (
                "./target/release/".to_owned(),
                "\"$CARGO_TARGET_DIR\"/debug/".to_owned(),
            ),
        ];
        if let Some(db) = postgres {
            substitutions.push((
                "createdb -h localhost -U postgres blog".to_owned(),
                format!("createdb --maintenance-db='{}' {}", db.maintenance, db.name),
            ));
            substitutions.push((
                "postgres://postgres@localhost:5432/blog".to_owned(),
                db.url.clone(),
            ));
        }
        if let Some(s3) = s3 {
            substitutions.push((
                "AWS_ACCESS_KEY_ID=… AWS_SECRET_ACCESS_KEY=…".to_owned(),
                "AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test".to_owned(),
            ));
            substitutions.push((
                "s3://uploads/blog?region=eu-west-1".to_owned(),
                format!(
                    "s3://uploads/blog?region=eu-west-1&endpoint={}",
                    s3.endpoint
                ),
            ));
        }
        Reader {
            home,
            work,
            state,
            substitutions,
            node: runs("node") && runs("npm"),
            postgres: postgres.is_some() && runs("createdb"),
            s3: s3.map(|s3| (s3.endpoint.clone(), s3.tools.clone())),
        }
    }

    fn substitute(&self, text: &str) -> String {
        self.substitutions
            .iter()
            .fold(text.to_owned(), |text, (from, to)| text.replace(from, to))
    }

    /// Whether the block can run here; a notice when it cannot (a failure in CI).
    ///
    /// Without Node.js the rest of the run is skipped too: the guide's later answers count what
    /// its Node.js clients wrote. The PostgreSQL blocks of the guide only move the service to
    /// another database, so the pages after them run on SQLite as well.
    fn can_run(&self, block: &Block) -> Can {
        let (have, what, then) = match block.attrs.get("needs").map(String::as_str) {
            None => return Can::Run,
            Some("node") => (self.node, "`node` and `npm` on the PATH", Can::Stop),
            Some("postgres") => (
                self.postgres,
                "PostgreSQL at 127.0.0.1:5432 (and `createdb`)",
                Can::Skip,
            ),
            Some("s3") => (
                self.s3.is_some(),
                "S3 API server and AWS CLI (python3 with venv, and PyPI, are needed once)",
                Can::Skip,
            ),
            Some(other) => panic!("{}: needs={other}: node, postgres or s3", block.place()),
        };
        if have {
            return Can::Run;
        }
        assert!(!in_ci(), "{}: CI=true, but no {what}", block.place());
        let rest = if then == Can::Stop {
            " with every block after it"
        } else {
            ""
        };
        eprintln!("notice: {}: skipped{rest}, no {what}", block.place());
        then
    }

    /// Runs a bash script in the carried state; returns its stdout, or why it failed.
    fn bash(&self, script: &str) -> Result<String, String> {
        let state = self.state.display();
        let full = format!(
            "set -euo pipefail\nsource '{state}'\n{script}\n\
             {{ export -p; printf 'cd %q\\n' \"$PWD\"; }} > '{state}.next'\n\
             mv '{state}.next' '{state}'\n"
        );
        let svc = PathBuf::from(env!("CARGO_BIN_EXE_svc"));
        let first = [
            self.home.path().join(".cargo/bin"),
            svc.parent().expect("svc's folder").to_path_buf(),
        ]
        .into_iter()
        .chain(self.s3.as_ref().map(|(_, tools)| tools.clone()));
        let path = std::env::join_paths(
            first.chain(
                std::env::var_os("PATH")
                    .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
                    .unwrap_or_default(),
            ),
        )
        .expect("a PATH");
        let real_home = std::env::var_os("HOME").map(PathBuf::from);
        let mut command = Command::new("bash");
        command
            .arg("-c")
            .arg(full)
            .current_dir(self.work.path())
            .env("HOME", self.home.path())
            .env("PATH", path)
            .env("CARGO_TARGET_DIR", target_dir())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(home) = real_home {
            // npm's downloads are cached across runs, outside the temporary HOME.
            command.env(
                "npm_config_cache",
                home.join(".cache/svc-npm/_cacache-docs"),
            );
        }
        for (var, dir) in tool_homes() {
            command.env(var, dir);
        }
        if let Some((endpoint, _)) = &self.s3 {
            // The AWS CLI's address of the S3 API (the server's is in its store URL).
            command.env("AWS_ENDPOINT_URL", endpoint);
        }
        for (var, _) in std::env::vars_os() {
            if var.to_string_lossy().starts_with("SVC_") {
                command.env_remove(var);
            }
        }
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot run bash: {e}"))?;
        // Read both pipes beside the wait, so a chatty block cannot fill one and stall.
        let mut stdout = child.stdout.take().expect("stdout");
        let mut stderr = child.stderr.take().expect("stderr");
        let out = std::thread::spawn(move || {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut stdout, &mut text).map(|_| text)
        });
        let err = std::thread::spawn(move || {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut stderr, &mut text).map(|_| text)
        });
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                break status;
            }
            if started.elapsed() > BLOCK_TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("still running after {BLOCK_TIMEOUT:?}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let stdout = out.join().expect("stdout").unwrap_or_default();
        let stderr = err.join().expect("stderr").unwrap_or_default();
        eprintln!(
            "({:.1} s, {status})\n{stdout}{stderr}",
            started.elapsed().as_secs_f64()
        );
        if status.success() {
            Ok(stdout)
        } else {
            Err(format!("{status}\n{stderr}"))
        }
    }

    /// Runs one block; returns why it failed.
    fn run(&self, block: &Block) -> Result<(), String> {
        let text = self.substitute(&block.text);
        eprintln!("--- {} ({:?})\n{text}", block.place(), block.kind);
        let output = match &block.kind {
            Kind::File(path) => {
                let script = format!(
                    "mkdir -p \"$(dirname '{path}')\"\ncat > '{path}' <<'DOCTEST_END_OF_FILE'\n{text}DOCTEST_END_OF_FILE\n"
                );
                return self.bash(&script).map(|_| ());
            }
            Kind::Sh => self.bash(&text)?,
            Kind::Graphql => {
                let body = serde_json::json!({ "query": text }).to_string();
                let request = self.home.path().join("doctest-request.json");
                std::fs::write(&request, body).map_err(|e| e.to_string())?;
                let endpoint = block.attrs.get("endpoint").map_or("API", String::as_str);
                let auth = match block.attrs.get("token").map(String::as_str) {
                    Some("none") => String::new(),
                    Some(var) => format!("${{{var}:+-H \"Authorization: Bearer ${var}\"}}"),
                    None => "${TOKEN:+-H \"Authorization: Bearer $TOKEN\"}".to_owned(),
                };
                self.bash(&format!(
                    "curl -sS -X POST \"${endpoint}\" -H 'content-type: application/json' {auth} --data-binary @'{}'",
                    request.display()
                ))?
            }
        };
        match &block.expect {
            None => Ok(()),
            Some(Expect::Text(expected)) => text_matches(&self.substitute(expected), &output)
                .map_err(|e| format!("{e}\nthe output:\n{output}")),
            Some(Expect::Json(expected)) => {
                let expected: Value = serde_json::from_str(&self.substitute(expected))
                    .map_err(|e| format!("the expected output is not JSON: {e}"))?;
                let actual: Value = serde_json::from_str(&output)
                    .map_err(|e| format!("the output is not JSON: {e}: {output}"))?;
                json_matches(&expected, &actual, "$")
                    .map_err(|e| format!("{e}\nthe output: {actual}"))
            }
        }
    }
}

impl Drop for Reader {
    /// Stops every server the guide deployed, whether the test passed or not.
    fn drop(&mut self) {
        let work = self.work.path().display();
        let _ = self.bash(&format!(
            "cd '{work}'; for dir in */; do [ -f \"$dir/.svc/server.pid\" ] && (cd \"$dir\" && svc down) || true; done"
        ));
    }
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

/// Whether the reader's tools, curl and jq (to pick values out of answers), are on the PATH;
/// a notice naming `what` is skipped when they are not (a failure in CI).
fn have_readers_tools(what: &str) -> bool {
    let missing: Vec<&str> = ["curl", "jq"].into_iter().filter(|p| !runs(p)).collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        !in_ci(),
        "CI=true, but `{}` is not on the PATH",
        missing.join("`, `")
    );
    eprintln!(
        "notice: `{}` is missing; skipping {what}",
        missing.join("`, `")
    );
    false
}

/// Runs `blocks` in order; the first failure, with its place.
fn run_all(reader: &Reader, blocks: &[Block]) -> Option<String> {
    for block in blocks {
        match reader.can_run(block) {
            Can::Run => {}
            Can::Skip => continue,
            Can::Stop => break,
        }
        // What follows a failed block depends on it: the run stops at the first failure.
        if let Err(why) = reader.run(block) {
            return Some(format!("{}: {why}", block.place()));
        }
    }
    None
}

#[test]
fn the_guide_and_the_api_pages_run_as_written() {
    if !have_readers_tools("the guide's and the API pages' examples") {
        return;
    }
    let mut all = Vec::new();
    for page in PAGES {
        let markdown = std::fs::read_to_string(workspace().join(page))
            .unwrap_or_else(|e| panic!("{page}: {e}"));
        let found = blocks(page, &markdown).unwrap_or_else(|e| panic!("{e}"));
        let runs = found
            .iter()
            .filter(|b| b.kind == Kind::Sh || b.kind == Kind::Graphql);
        assert!(runs.count() > 0, "{page} has no runnable block");
        all.extend(found);
    }
    let database = PostgresDatabase::name("svc_cli_docs");
    let s3 = S3::start();
    let reader = Reader::new(free_port(), database.as_ref(), s3.as_ref());
    // A block that cannot run here is skipped with a notice (`Reader::can_run`).
    let failure = run_all(&reader, &all);
    // The servers stop, and the S3 server and the database go, before the verdict.
    drop(reader);
    drop(s3);
    drop(database);
    if let Some(failure) = failure {
        panic!("{failure}");
    }
}

/// The example service the README's first set-up command starts, `cargo run -p example-model --
/// serve`, on a port, database and file store of the test's own (the reader's are
/// `example-model/.svc/` in the checkout). It stops with this value.
struct ExampleServer {
    /// The process group `setsid` made for the server.
    group: u32,
}

impl ExampleServer {
    /// Starts the server through `reader`, whose later blocks then reach the same database
    /// (`SVC_DATABASE_URL` and `SVC_FILE_STORE` are exported into its state).
    fn start(reader: &Reader, port: u16) -> Result<ExampleServer, String> {
        let data = reader.home.path().join("example-model");
        let pid = data.join("server.pid");
        let log = data.join("server.log");
        reader.bash(&format!(
            "mkdir -p '{data}'\n\
             export SVC_DATABASE_URL='sqlite://{data}/data.db' SVC_FILE_STORE='{data}/files'\n\
             setsid cargo run -q --manifest-path '{manifest}' -p example-model -- serve --port {port} \
               > '{log}' 2>&1 < /dev/null &\n\
             echo $! > '{pid}'",
            data = data.display(),
            manifest = workspace().join("Cargo.toml").display(),
            log = log.display(),
            pid = pid.display(),
        ))?;
        let group = std::fs::read_to_string(&pid)
            .map_err(|e| e.to_string())?
            .trim()
            .parse()
            .map_err(|e| format!("the server's pid: {e}"))?;
        let server = ExampleServer { group };
        // `cargo run` may build the binary first.
        let started = Instant::now();
        while status_code(port) != Some(200) {
            if started.elapsed() > BLOCK_TIMEOUT {
                let printed = std::fs::read_to_string(&log).unwrap_or_default();
                return Err(format!(
                    "the example service did not answer /status within {BLOCK_TIMEOUT:?}:\n{printed}"
                ));
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        Ok(server)
    }
}

impl Drop for ExampleServer {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", "--", &format!("-{}", self.group)])
            .status();
    }
}

/// The HTTP status of `GET /status` on the loopback `port`, `None` when nothing answers.
fn status_code(port: u16) -> Option<u16> {
    let out = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}"])
        .arg(format!("http://127.0.0.1:{port}/status"))
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

#[test]
fn the_readmes_tour_runs_as_written() {
    if !have_readers_tools("the README's tour") {
        return;
    }
    let markdown = std::fs::read_to_string(workspace().join("README.md")).expect("README.md");
    let tour = blocks("README.md", &markdown).unwrap_or_else(|e| panic!("{e}"));
    let runs = tour.iter().filter(|b| b.kind == Kind::Sh).count();
    assert!(runs >= 3, "the README's tour has {runs} runnable blocks");
    let port = free_port();
    let mut reader = Reader::new(port, None, None);
    // The reader runs the tour in the checkout; the test runs it elsewhere, so cargo is told
    // where the workspace is.
    reader.substitutions.push((
        "cargo run -q -p example-model --".to_owned(),
        format!(
            "cargo run -q --manifest-path '{}' -p example-model --",
            workspace().join("Cargo.toml").display()
        ),
    ));
    let server = ExampleServer::start(&reader, port).unwrap_or_else(|e| panic!("{e}"));
    let failure = run_all(&reader, &tour);
    drop(server);
    drop(reader);
    if let Some(failure) = failure {
        panic!("{failure}");
    }
}

#[test]
fn blocks_are_found_with_their_expectations() {
    let page = "text\n\n```sh doctest\necho hi\n```\n\nprose\n\n```json expect\n{\"a\": 1}\n```\n\n\
                ```graphql\n{ shown }\n```\n\n```graphql doctest endpoint=RELAY token=none\n{ run }\n```\n\n\
                ````yaml doctest file=svc.yml\ntypes: x\n```\n````\n";
    let found = blocks("p.md", page).expect("blocks");
    assert_eq!(found.len(), 3);
    assert_eq!(found[0].kind, Kind::Sh);
    assert_eq!(found[0].line, 3);
    assert_eq!(found[0].text, "echo hi\n");
    assert_eq!(
        found[0].expect,
        Some(Expect::Json("{\"a\": 1}\n".to_owned()))
    );
    assert_eq!(found[1].kind, Kind::Graphql);
    assert_eq!(found[1].attrs["endpoint"], "RELAY");
    assert_eq!(found[1].attrs["token"], "none");
    assert_eq!(found[1].expect, None);
    assert_eq!(found[2].kind, Kind::File("svc.yml".to_owned()));
    assert_eq!(found[2].text, "types: x\n```\n");
    // An expectation must follow a block that runs, and fences must close.
    assert!(blocks("p.md", "```json expect\n{}\n```\n").is_err());
    assert!(
        blocks(
            "p.md",
            "```yaml doctest file=a\nx\n```\n```json expect\n{}\n```\n"
        )
        .is_err()
    );
    assert!(blocks("p.md", "```sh doctest\necho\n").is_err());
    assert!(blocks("p.md", "```rust doctest\nfn main() {}\n```\n").is_err());
}

#[test]
fn outputs_are_compared_with_wildcards() {
    let ok = |e: &str, a: &str| {
        json_matches(
            &serde_json::from_str(e).expect("JSON"),
            &serde_json::from_str(a).expect("JSON"),
            "$",
        )
    };
    assert!(
        ok(
            r#"{"a": "…", "b": [1, "cj…"]}"#,
            r#"{"b": [1.0, "cjx1"], "a": {"x": 1}}"#
        )
        .is_ok()
    );
    assert!(ok(r#"{"a": 1}"#, r#"{"a": 2}"#).is_err());
    assert!(ok(r#"{"a": 1}"#, r#"{"a": 1, "b": 2}"#).is_err());
    assert!(ok(r#"{"a": 1, "b": 2}"#, r#"{"a": 1}"#).is_err());
    assert!(ok(r#"[1, 2]"#, r#"[1]"#).is_err());
    assert!(ok(r#"{"a": "cj…"}"#, r#"{"a": "xx"}"#).is_err());
    assert!(ok(r#"{"a": "cj…"}"#, r#"{"a": 5}"#).is_err());
    assert!(ok(r#"{"a": "x"}"#, r#"{"a": "x "}"#).is_err());
    assert!(ok(r#"null"#, r#"false"#).is_err());

    assert!(
        text_matches(
            "Deployed `blog`…\n\n  Simple API: …/simple/v1/blog\n",
            "x\nDeployed `blog` to local\n  Simple API:  http://localhost:1/simple/v1/blog\n"
        )
        .is_ok()
    );
    assert!(text_matches("b\na\n", "a\nb\n").is_err());
    assert!(text_matches("a…c\n", "abd\n").is_err());
    assert!(text_matches("a…c\n", "abcd\n").is_err());
    assert!(line_matches("…", "anything"));
    assert!(line_matches("a…b…c", "aXbYc"));
    assert!(!line_matches("a…b…c", "aXcYb"));
    assert!(line_matches("exact", "exact"));
    assert!(!line_matches("exact", "exactly"));
}
