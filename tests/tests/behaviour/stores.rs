//! The file stores a test server can keep its uploads in: a fresh local directory, or a fresh
//! bucket of a real S3 API server (moto's, from PyPI), started once per test process.
//!
//! moto is installed on first use into a virtualenv under `~/.cache/svc-test/moto` (Python 3 with
//! `venv` and pip, and the PyPI registry, are needed once). Outside CI a machine without them
//! skips the S3 variants with a notice; in CI (`CI=true`) their absence fails the tests.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use futures_util::TryStreamExt;
use svc_runtime::files::open_store;

/// moto's version (its `server` extra brings the HTTP server).
const MOTO: &str = "moto[server]==5.2.5";

/// Which kind of store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    Local,
    S3,
}

/// A store for one server: its location (the `--file-store` value) and, for a directory, the
/// directory (removed when dropped).
pub struct TestStore {
    pub location: String,
    pub dir: Option<PathBuf>,
}

impl TestStore {
    /// A fresh store of `kind`; `None` only for S3 outside CI when moto cannot run (after a
    /// notice).
    pub fn create(kind: Store, unique: &str) -> Option<TestStore> {
        match kind {
            Store::Local => {
                let dir = std::env::temp_dir().join(format!("svc-files-{unique}"));
                Some(TestStore {
                    location: dir.display().to_string(),
                    dir: Some(dir),
                })
            }
            Store::S3 => {
                let endpoint = match moto() {
                    Ok(endpoint) => endpoint,
                    Err(e) if std::env::var("CI").is_ok_and(|v| v == "true") => {
                        panic!("CI=true, but the S3 API server (moto) cannot run: {e}")
                    }
                    Err(e) => {
                        eprintln!("notice: skipping this S3 test: {e}");
                        return None;
                    }
                };
                // Bucket names: 3 to 63 lower-case letters, digits and hyphens.
                let bucket: String = format!("svc-{}", unique.replace('_', "-"))
                    .to_lowercase()
                    .chars()
                    .take(63)
                    .collect();
                create_bucket(endpoint, &bucket);
                Some(TestStore {
                    location: format!(
                        "s3://{bucket}/uploads?endpoint={endpoint}&region=us-east-1&access_key_id=test&secret_access_key=test"
                    ),
                    dir: None,
                })
            }
        }
    }

    /// Every key in the store, sorted.
    pub async fn keys(&self) -> Vec<String> {
        let store = open_store(&self.location).expect("the test store opens");
        let mut keys: Vec<String> = store
            .list(None)
            .map_ok(|m| m.location.to_string())
            .try_collect()
            .await
            .expect("the test store lists");
        keys.sort();
        keys
    }

    /// The bytes of the object at `key`, if there is one.
    pub async fn get(&self, key: &str) -> Option<Vec<u8>> {
        use object_store::ObjectStoreExt;
        let store = open_store(&self.location).expect("the test store opens");
        match store.get(&object_store::path::Path::from(key)).await {
            Ok(got) => Some(got.bytes().await.expect("the object's bytes").to_vec()),
            Err(object_store::Error::NotFound { .. }) => None,
            Err(e) => panic!("reading `{key}` from the test store failed: {e}"),
        }
    }

    /// Stores `bytes` at `key`, beside the server.
    pub async fn put(&self, key: &str, bytes: &[u8]) {
        use object_store::ObjectStoreExt;
        let store = open_store(&self.location).expect("the test store opens");
        store
            .put(&object_store::path::Path::from(key), bytes.to_vec().into())
            .await
            .unwrap_or_else(|e| panic!("storing `{key}` in the test store failed: {e}"));
    }
}

impl Drop for TestStore {
    fn drop(&mut self) {
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// The endpoint of this process's moto server, started on first use.
fn moto() -> Result<&'static str, String> {
    static MOTO_SERVER: OnceLock<Result<String, String>> = OnceLock::new();
    MOTO_SERVER
        .get_or_init(start_moto)
        .as_deref()
        .map_err(Clone::clone)
}

fn start_moto() -> Result<String, String> {
    let home = std::env::var_os("HOME").ok_or("HOME is not set")?;
    let venv = PathBuf::from(home).join(".cache/svc-test/moto");
    let server = venv.join("bin/moto_server");
    let marker = venv.join(".installed");
    if std::fs::read_to_string(&marker).ok().as_deref() != Some(MOTO) {
        eprintln!("installing {MOTO} (PyPI) into {}", venv.display());
        let _ = std::fs::remove_dir_all(&venv);
        run(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
        run(Command::new(venv.join("bin/pip")).args(["install", "--quiet", MOTO]))?;
        std::fs::write(&marker, MOTO).map_err(|e| e.to_string())?;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    // The server goes with this process: a shell watches the test process and stops moto once
    // it is gone.
    let script = format!(
        "\"$0\" -H 127.0.0.1 -p {port} >/dev/null 2>&1 & m=$!; while kill -0 {pid} 2>/dev/null && kill -0 $m 2>/dev/null; do sleep 1; done; kill $m 2>/dev/null",
        pid = std::process::id()
    );
    Command::new("sh")
        .args(["-c", &script])
        .arg(&server)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", server.display()))?;
    for _ in 0..300 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(format!("http://127.0.0.1:{port}"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(format!("moto did not listen on port {port} within 30 s"))
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Creates `bucket` (moto takes an unsigned `PUT /<bucket>`).
fn create_bucket(endpoint: &str, bucket: &str) {
    let url = format!("{endpoint}/{bucket}");
    let created = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        rt.block_on(async { reqwest::Client::new().put(&url).send().await })
    })
    .join()
    .expect("the bucket thread");
    match created {
        Ok(res) if res.status().is_success() => {}
        Ok(res) => panic!(
            "creating the bucket `{bucket}` failed: HTTP {}",
            res.status()
        ),
        Err(e) => panic!("creating the bucket `{bucket}` failed: {e}"),
    }
}
