//! Our node scripts (`tests/js/`) and the npm packages they use (graphql-http's audit,
//! graphql-js, relay-compiler, Apollo Client, puppeteer-core driving Chromium): installed once
//! per machine under `~/.cache/svc-npm/tests`, the scripts copied beside them, run with node.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

/// Runs the script `name` of `tests/js/` with node, with `args` and the environment variables
/// `env`; its standard output. Fails the test when the script fails. `None` outside CI when
/// `node` or `npm` is missing (after a notice).
pub async fn run_script(name: &'static str, args: &[&str], env: &[(&str, &str)]) -> Option<String> {
    let script = tokio::task::spawn_blocking(move || node_script(name))
        .await
        .expect("the installer panicked")?;
    let mut command = Command::new("node");
    command.arg(&script).args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    let out = tokio::task::spawn_blocking(move || command.output())
        .await
        .expect("node's thread panicked")
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{name} failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(stdout)
}

/// The pinned npm packages the scripts use, installed once per machine outside the clone.
const GRAPHQL_HTTP: &str = "graphql-http@1.23.1";
const GRAPHQL: &str = "graphql@16.15.0";
const RELAY_COMPILER: &str = "relay-compiler@21.0.1";
const APOLLO_CLIENT: &str = "@apollo/client@4.3.8";
const RXJS: &str = "rxjs@7.8.2";
/// Drives the machine's Chromium (it downloads no browser of its own: see the install below).
/// 24.x: 25 needs Node.js 22.
const PUPPETEER_CORE: &str = "puppeteer-core@24.43.1";

/// Installs the npm packages (once) under `~/.cache/svc-npm/` and copies the script `name` of
/// `tests/js/` beside them (ES modules resolve packages from the script's own folder); its
/// path. `None` outside CI when `node` or `npm` is missing (after a notice).
fn node_script(name: &str) -> Option<PathBuf> {
    static INSTALL: Mutex<()> = Mutex::new(());
    let _one_at_a_time = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    let has = |tool: &str| {
        Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !has("node") || !has("npm") {
        assert!(
            !std::env::var("CI").is_ok_and(|v| v == "true"),
            "CI=true, but `node` and `npm` are not both on the PATH ({name} needs them)"
        );
        eprintln!(
            "notice: `node` or `npm` is missing; skipping {name} (install Node.js to run it)"
        );
        return None;
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let dir = home.join(".cache/svc-npm/tests");
    // The marker holds what was installed: another list of packages installs again.
    let marker = dir.join(".installed");
    let packages = format!(
        "{GRAPHQL_HTTP} {GRAPHQL} {RELAY_COMPILER} {APOLLO_CLIENT} {RXJS} {PUPPETEER_CORE}"
    );
    if std::fs::read_to_string(&marker).ok().as_deref() != Some(packages.as_str()) {
        std::fs::create_dir_all(&dir).expect("create the npm cache folder");
        std::fs::write(dir.join("package.json"), "{\"private\":true}\n")
            .expect("write package.json");
        let out = Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--silent",
                GRAPHQL_HTTP,
                GRAPHQL,
                RELAY_COMPILER,
                APOLLO_CLIENT,
                RXJS,
                PUPPETEER_CORE,
            ])
            // The tests use the machine's Chromium.
            .env("PUPPETEER_SKIP_DOWNLOAD", "1")
            .current_dir(&dir)
            .output()
            .expect("npm runs");
        assert!(
            out.status.success(),
            "npm install {GRAPHQL_HTTP} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(&marker, &packages).expect("write the install marker");
    }
    let script = dir.join(name);
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("js")
            .join(name),
        &script,
    )
    .expect("copy the script");
    Some(script)
}
