//! JavaScript handlers (`code:`, reference §7.1): modules written for the original's managed
//! runtime, run in Node.js worker processes the server starts and supervises.
//!
//! - Each worker is `node` running `worker.js` (ours), with a heap limit. It loads a module at
//!   its first invocation and keeps it (CommonJS `module.exports = fn`, `module.exports.default`,
//!   and ES modules' `export default`), and answers one invocation at a time: the event goes in
//!   as a line of JSON on its standard input; the answer comes back as a marked line of JSON on
//!   its standard output, with what the handler wrote through `console` (the invocation's logs).
//! - The pool holds up to `workers` processes; an invocation waits for a free one.
//! - A worker that does not answer within the function's timeout is killed; one that exits (a
//!   crash, `process.exit`, its heap limit) is replaced by a new one at the next invocation. The
//!   invocation gets the failure, with the end of what the worker wrote to standard error.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value as J, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Semaphore;

/// The worker's program.
const WORKER: &str = include_str!("worker.js");
/// What starts an answer line on a worker's standard output.
const MARK: &str = "\u{1e}svc:";
/// How much of a worker's standard error is kept for a failure's text.
const STDERR_TAIL: usize = 2000;

/// How the pool runs Node.js.
#[derive(Clone)]
pub struct NodeOptions {
    /// The `node` binary.
    pub binary: String,
    /// Worker processes at most.
    pub workers: usize,
    /// Each worker's heap limit in megabytes (`--max-old-space-size`).
    pub memory_mb: u32,
    /// The workers' whole environment (`worker_environment` of the server's).
    pub environment: Vec<(OsString, OsString)>,
}

impl std::fmt::Debug for NodeOptions {
    /// Without the environment's values, which may hold credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeOptions")
            .field("binary", &self.binary)
            .field("workers", &self.workers)
            .field("memory_mb", &self.memory_mb)
            .field(
                "environment",
                &format!("{} variables", self.environment.len()),
            )
            .finish()
    }
}

/// The environment of the Node.js workers: the server's, without its own settings (`SVC_*`:
/// the secret that signs every token, the master token, the database's URL). Handlers are the
/// service's code, but the npm packages they load run with them, and none of them needs the
/// keys to the whole service; what a handler needs comes from its `environment:` in `svc.yml`.
pub fn worker_environment(
    server: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    server
        .into_iter()
        .filter(|(name, _)| !name.to_string_lossy().starts_with("SVC_"))
        .collect()
}

/// What a JavaScript handler's invocation came to.
#[derive(Debug)]
pub struct Ran {
    /// `Ok(value)`: what the handler returned (`null` for `undefined`); `Err(text)`: it threw,
    /// or its worker failed.
    pub outcome: Result<J, String>,
    /// What it wrote through `console`, a line per call.
    pub logs: Vec<String>,
}

/// The workers of one server.
pub struct NodePool {
    options: NodeOptions,
    idle: Mutex<VecDeque<Worker>>,
    slots: Semaphore,
}

impl std::fmt::Debug for NodePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodePool")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    stderr: Arc<Mutex<String>>,
}

impl NodePool {
    /// Checks that `options.binary` runs; the pool starts its workers when first asked.
    pub async fn start(options: NodeOptions) -> Result<Arc<NodePool>, String> {
        let version = Command::new(&options.binary)
            .arg("--version")
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .await
            .map_err(|e| format!("cannot run `{}`: {e}", options.binary))?;
        if !version.status.success() {
            return Err(format!(
                "`{} --version` failed ({})",
                options.binary, version.status
            ));
        }
        let workers = options.workers.max(1);
        Ok(Arc::new(NodePool {
            options,
            idle: Mutex::new(VecDeque::new()),
            slots: Semaphore::new(workers),
        }))
    }

    fn spawn(&self) -> Result<Worker, String> {
        let mut child = Command::new(&self.options.binary)
            .arg(format!("--max-old-space-size={}", self.options.memory_mb))
            .arg("--input-type=commonjs")
            // ES module syntax in a `.js` file outside a `"type": "module"` package.
            .arg("--experimental-detect-module")
            .arg("--no-warnings")
            .arg("-e")
            .arg(WORKER)
            .env_clear()
            .envs(self.options.environment.iter().cloned())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start `{}`: {e}", self.options.binary))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err("the worker's pipes are missing".to_owned());
        };
        let tail = Arc::new(Mutex::new(String::new()));
        let keep = tail.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut tail = keep.lock().unwrap_or_else(|e| e.into_inner());
                tail.push_str(&line);
                tail.push('\n');
                if tail.len() > STDERR_TAIL {
                    let cut = tail.len() - STDERR_TAIL;
                    let cut = (cut..tail.len())
                        .find(|&i| tail.is_char_boundary(i))
                        .unwrap_or(tail.len());
                    tail.drain(..cut);
                }
            }
        });
        Ok(Worker {
            child,
            stdin,
            stdout: BufReader::new(stdout).lines(),
            stderr: tail,
        })
    }

    /// Invokes the module `module` (its default export) with `event`, `environment` added to
    /// its `process.env` for the call, within `timeout`.
    pub async fn invoke(
        &self,
        module: &Path,
        environment: &[(&str, &str)],
        event: &J,
        timeout: Duration,
    ) -> Ran {
        let Ok(_slot) = self.slots.acquire().await else {
            return failed("the Node.js pool is closed".to_owned(), Vec::new());
        };
        let pooled = self
            .idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front();
        let mut worker = match pooled {
            Some(w) => w,
            None => match self.spawn() {
                Ok(w) => w,
                Err(e) => return failed(e, Vec::new()),
            },
        };
        let env: serde_json::Map<String, J> = environment
            .iter()
            .map(|(k, v)| ((*k).to_owned(), J::from(*v)))
            .collect();
        let request = json!({ "module": module, "env": env, "event": event });
        let mut logs = Vec::new();
        let exchange = async {
            let mut line = request.to_string();
            line.push('\n');
            worker
                .stdin
                .write_all(line.as_bytes())
                .await
                .map_err(|_| ())?;
            worker.stdin.flush().await.map_err(|_| ())?;
            loop {
                match worker.stdout.next_line().await {
                    Ok(Some(line)) => match line.strip_prefix(MARK) {
                        Some(answer) => return Ok(answer.to_owned()),
                        // The handler wrote to standard output itself.
                        None => logs.push(line),
                    },
                    _ => return Err(()),
                }
            }
        };
        let answered = tokio::time::timeout(timeout, exchange).await;
        match answered {
            Ok(Ok(answer)) => {
                let ran = read_answer(&answer, logs);
                self.idle
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push_back(worker);
                ran
            }
            Ok(Err(())) => {
                // The worker is gone: what it said on the way out is the failure.
                let status = tokio::time::timeout(Duration::from_secs(2), worker.child.wait())
                    .await
                    .ok()
                    .and_then(Result::ok);
                tokio::time::sleep(Duration::from_millis(20)).await;
                let tail = worker
                    .stderr
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .trim()
                    .to_owned();
                let how = match status.and_then(|s| s.code()) {
                    Some(code) => format!("exited with code {code}"),
                    None => "was killed".to_owned(),
                };
                let text = if tail.is_empty() {
                    format!("The function's Node.js worker {how}")
                } else {
                    format!("The function's Node.js worker {how}: {}", last_lines(&tail))
                };
                failed(text, logs)
            }
            Err(_) => {
                // Killed on drop; the next invocation starts another worker.
                let _ = worker.child.start_kill();
                failed(
                    format!(
                        "The function did not answer within {} ms; its Node.js worker was replaced",
                        timeout.as_millis()
                    ),
                    logs,
                )
            }
        }
    }
}

/// The path of a module named in `svc.yml`, relative to the service's directory.
pub fn module_path(service_dir: &Path, src: &str) -> PathBuf {
    let path = Path::new(src);
    if path.is_absolute() {
        path.to_owned()
    } else {
        service_dir.join(path)
    }
}

fn failed(text: String, logs: Vec<String>) -> Ran {
    Ran {
        outcome: Err(text),
        logs,
    }
}

/// The worker's answer: `{ok, response, logs}` or `{ok: false, error, logs}`.
fn read_answer(answer: &str, mut logs: Vec<String>) -> Ran {
    let Ok(J::Object(mut answer)) = serde_json::from_str::<J>(answer) else {
        return failed(
            "The function's Node.js worker answered nonsense".to_owned(),
            logs,
        );
    };
    if let Some(J::Array(lines)) = answer.remove("logs") {
        logs.extend(
            lines
                .into_iter()
                .map(|l| l.as_str().map_or_else(|| l.to_string(), str::to_owned)),
        );
    }
    let outcome = if answer.get("ok") == Some(&J::Bool(true)) {
        Ok(answer.remove("response").unwrap_or(J::Null))
    } else {
        Err(answer
            .remove("error")
            .and_then(|e| e.as_str().map(str::to_owned))
            .unwrap_or_else(|| "the function failed".to_owned()))
    };
    Ran { outcome, logs }
}

/// What a worker's standard error says of its end, on one line: V8's fatal error (a heap
/// limit reached, say) when there is one, otherwise the last few lines.
fn last_lines(tail: &str) -> String {
    if let Some(fatal) = tail.lines().find(|l| l.contains("FATAL ERROR")) {
        return fatal.trim().to_owned();
    }
    let lines: Vec<&str> = tail.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(4);
    lines[start..].join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `node` runs; outside CI its absence skips the test, after a notice (the README
    /// says so).
    fn node_present() -> bool {
        let runs = std::process::Command::new("node")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !runs {
            assert!(
                !std::env::var("CI").is_ok_and(|v| v == "true"),
                "CI=true, but `node` is not on the PATH"
            );
            eprintln!("notice: `node` is missing; skipping this test of the Node.js workers");
        }
        runs
    }

    async fn pool() -> Arc<NodePool> {
        pool_of(1).await
    }

    async fn pool_of(workers: usize) -> Arc<NodePool> {
        NodePool::start(NodeOptions {
            binary: "node".to_owned(),
            workers,
            memory_mb: 64,
            environment: worker_environment(std::env::vars_os()),
        })
        .await
        .expect("Node.js is on the PATH")
    }

    fn module(dir: &Path, name: &str, source: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, source).expect("the module is written");
        path
    }

    /// CommonJS, `module.exports.default`, `.mjs` and ES syntax in a `.js` file all load;
    /// `console` output is the invocation's logs; the environment is there during the call
    /// only; a module is loaded once.
    #[tokio::test]
    async fn modules_of_every_kind_run_and_log() {
        if !node_present() {
            return;
        }
        let dir = std::env::temp_dir().join(format!("svc-node-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory");
        let pool = pool().await;
        let second = Duration::from_secs(5);
        let cjs = module(
            &dir,
            "cjs.js",
            "let calls = 0;\nmodule.exports = e => { calls += 1; console.log('seen', e.data.n, process.env.X); return { data: { n: e.data.n * 2, calls } }; };",
        );
        let ran = pool
            .invoke(&cjs, &[("X", "x1")], &json!({"data": {"n": 2}}), second)
            .await;
        assert_eq!(ran.outcome, Ok(json!({"data": {"n": 4, "calls": 1}})));
        assert_eq!(ran.logs, vec!["seen 2 x1".to_owned()]);
        let ran = pool
            .invoke(&cjs, &[], &json!({"data": {"n": 3}}), second)
            .await;
        assert_eq!(
            ran.outcome,
            Ok(json!({"data": {"n": 6, "calls": 2}})),
            "loaded once"
        );
        assert_eq!(
            ran.logs,
            vec!["seen 3 undefined".to_owned()],
            "the environment went"
        );
        let default = module(
            &dir,
            "default.js",
            "module.exports.default = async () => ({ data: 'default' });",
        );
        let esm = module(
            &dir,
            "esm.mjs",
            "export default async () => { console.error('from esm'); return { data: 'mjs' }; };",
        );
        let detected = module(
            &dir,
            "detected.js",
            "export default () => ({ data: 'detected' });",
        );
        for (path, data) in [
            (&default, "default"),
            (&esm, "mjs"),
            (&detected, "detected"),
        ] {
            let ran = pool.invoke(path, &[], &json!({}), second).await;
            assert_eq!(
                ran.outcome,
                Ok(json!({ "data": data })),
                "{}",
                path.display()
            );
        }
        let ran = pool.invoke(&esm, &[], &json!({}), second).await;
        assert_eq!(ran.logs, vec!["from esm".to_owned()]);
        let none = module(&dir, "none.js", "module.exports = 5;");
        let ran = pool.invoke(&none, &[], &json!({}), second).await;
        assert!(ran.outcome.unwrap_err().contains("exports no function"));
        let missing = dir.join("missing.js");
        let ran = pool.invoke(&missing, &[], &json!({}), second).await;
        assert!(ran.outcome.unwrap_err().contains("Cannot find module"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The server's own settings (`SVC_*`) do not reach a handler's `process.env`; the rest of
    /// its environment does.
    #[tokio::test]
    async fn handlers_do_not_see_the_servers_settings() {
        if !node_present() {
            return;
        }
        let pool = NodePool::start(NodeOptions {
            binary: "node".to_owned(),
            workers: 1,
            memory_mb: 64,
            environment: worker_environment(std::env::vars_os().chain([
                ("SVC_SECRET".into(), "the secret".into()),
                ("SVC_DATABASE_URL".into(), "postgres://x".into()),
                ("HANDLER_SETTING".into(), "seen".into()),
            ])),
        })
        .await
        .expect("Node.js is on the PATH");
        let dir = std::env::temp_dir().join(format!("svc-node-env-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory");
        let env = module(
            &dir,
            "env.js",
            "module.exports = () => ({ data: Object.keys(process.env).filter(k => k.startsWith('SVC_') || k === 'HANDLER_SETTING' || k === 'PATH').sort() });",
        );
        let ran = pool
            .invoke(
                &env,
                &[("SVC_OWN", "from svc.yml")],
                &json!({}),
                Duration::from_secs(5),
            )
            .await;
        assert_eq!(
            ran.outcome,
            Ok(json!({"data": ["HANDLER_SETTING", "PATH", "SVC_OWN"]})),
            "a handler's own `environment:` still comes through, whatever its names"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Invocations run at once on a pool of several workers: one waits for a file that only a
    /// later invocation writes. On a pool of one worker the later invocation waits for the first,
    /// which therefore times out.
    #[tokio::test]
    async fn a_pool_runs_invocations_at_once() {
        if !node_present() {
            return;
        }
        let dir = std::env::temp_dir().join(format!("svc-node-pool-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory");
        let rendezvous = module(
            &dir,
            "rendezvous.js",
            "const fs = require('fs');\n\
             module.exports = async (e) => {\n\
               if (e.data.write) { fs.writeFileSync(e.data.file, 'here'); return { data: 'wrote' }; }\n\
               while (!fs.existsSync(e.data.file)) await new Promise((r) => setTimeout(r, 10));\n\
               return { data: 'met' };\n\
             };",
        );
        for (workers, met) in [(2, true), (1, false)] {
            let pool = pool_of(workers).await;
            let file = dir.join(format!("flag-{workers}"));
            let file = file.display().to_string();
            let waiting = json!({"data": {"file": file}});
            let wait = pool.invoke(&rendezvous, &[], &waiting, Duration::from_secs(3));
            let write = async {
                // The waiting invocation takes the first worker.
                tokio::time::sleep(Duration::from_millis(200)).await;
                pool.invoke(
                    &rendezvous,
                    &[],
                    &json!({"data": {"file": file, "write": true}}),
                    Duration::from_secs(10),
                )
                .await
            };
            let (waited, wrote) = tokio::join!(wait, write);
            assert_eq!(
                wrote.outcome,
                Ok(json!({"data": "wrote"})),
                "{workers} workers"
            );
            if met {
                assert_eq!(
                    waited.outcome,
                    Ok(json!({"data": "met"})),
                    "{workers} workers"
                );
            } else {
                let error = waited.outcome.expect_err("one worker: the wait times out");
                assert!(error.contains("did not answer"), "{error}");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
