//! The local server that `svc deploy` runs in the background: started detached with its output in
//! `.svc/server.log` and its pid in `.svc/server.pid`, stopped by `svc down` or the next deploy.

use anyhow::{Context as _, Result, bail};
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::project::Service;

/// How long a starting server may take to answer.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a stopping server may take before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

pub fn pid_file(service: &Service) -> PathBuf {
    service.state_dir().join("server.pid")
}

pub fn log_file(service: &Service) -> PathBuf {
    service.state_dir().join("server.log")
}

/// The pid of the service's running server, if there is one.
pub fn running(service: &Service) -> Option<u32> {
    let text = std::fs::read_to_string(pid_file(service)).ok()?;
    let pid: u32 = text.trim().parse().ok()?;
    alive(pid).then_some(pid)
}

/// Whether the process lives (and, where `/proc` tells, is a service's `serve`, not a process
/// that got the pid later).
fn alive(pid: u32) -> bool {
    let proc_dir = Path::new("/proc").join(pid.to_string());
    if Path::new("/proc/self").exists() {
        let Ok(stat) = std::fs::read_to_string(proc_dir.join("stat")) else {
            return false;
        };
        // `pid (comm) S …`: a zombie has exited already.
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next());
        if state == Some("Z") {
            return false;
        }
        let cmdline = std::fs::read(proc_dir.join("cmdline")).unwrap_or_default();
        return cmdline.split(|b| *b == 0).any(|arg| arg == b"serve");
    }
    Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn signal(pid: u32, name: &str) {
    let _ = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .stderr(Stdio::null())
        .status();
}

/// Stops the running server; `Ok(Some(pid))` when there was one.
pub fn stop(service: &Service) -> Result<Option<u32>> {
    let pid = running(service);
    if let Some(pid) = pid {
        signal(pid, "TERM");
        let deadline = Instant::now() + STOP_TIMEOUT;
        while alive(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        if alive(pid) {
            signal(pid, "KILL");
            std::thread::sleep(Duration::from_millis(200));
            if alive(pid) {
                bail!("cannot stop the server (pid {pid})");
            }
        }
    }
    let _ = std::fs::remove_file(pid_file(service));
    Ok(pid)
}

/// A server that answers.
#[derive(Debug)]
pub struct Started {
    pub pid: u32,
    pub service_id: Option<String>,
}

/// Starts `<binary> serve --port PORT [--database-url URL]` in the background and waits until
/// it answers `GET /status`.
pub fn start(
    service: &Service,
    binary: &Path,
    port: u16,
    database_url: Option<&str>,
) -> Result<Started> {
    let log_path = log_file(service);
    std::fs::create_dir_all(service.state_dir())
        .with_context(|| format!("cannot create `{}`", service.state_dir().display()))?;
    let mut log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("cannot open `{}`", log_path.display()))?;
    let offset = log.seek(SeekFrom::End(0)).unwrap_or(0);
    let _ = writeln!(
        log,
        "--- svc deploy: starting {} serve --port {port}",
        binary.display()
    );
    let err_log = log
        .try_clone()
        .with_context(|| format!("cannot open `{}`", log_path.display()))?;
    let mut command = Command::new(binary);
    command
        .arg("serve")
        .arg("--port")
        .arg(port.to_string())
        .current_dir(&service.dir)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err_log);
    if let Some(url) = database_url {
        command.arg("--database-url").arg(url);
    }
    #[cfg(unix)]
    {
        // Its own process group: a Ctrl-C in the terminal that ran `svc deploy` leaves it be.
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    let mut child = command
        .spawn()
        .with_context(|| format!("cannot start `{}`", binary.display()))?;
    let pid = child.id();
    std::fs::write(pid_file(service), format!("{pid}\n"))
        .with_context(|| format!("cannot write `{}`", pid_file(service).display()))?;
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            let _ = std::fs::remove_file(pid_file(service));
            bail!(
                "the server exited ({status}) before it answered:\n{}",
                read_from(&log_path, offset)
            );
        }
        // Its own first line, not just any server on the port (another service may hold it).
        if read_from(&log_path, offset).contains("svc: serving") && crate::commands::status_ok(port)
        {
            break;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_file(pid_file(service));
            bail!(
                "the server did not answer on port {port} within {} s:\n{}",
                START_TIMEOUT.as_secs(),
                read_from(&log_path, offset)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let service_id = service_id_in(&read_from(&log_path, offset));
    Ok(Started { pid, service_id })
}

/// The log's text from `offset` on.
fn read_from(path: &Path, offset: u64) -> String {
    let mut text = String::new();
    if let Ok(mut file) = std::fs::File::open(path) {
        let _ = file.seek(SeekFrom::Start(offset));
        let _ = file.read_to_string(&mut text);
    }
    text
}

/// The id in the server's first line: ``svc: serving `name` (service id ID) on …``.
fn service_id_in(log: &str) -> Option<String> {
    let start = log.find("(service id ")? + "(service id ".len();
    let end = log[start..].find(')')? + start;
    Some(log[start..end].to_owned())
}

/// A free TCP port on this machine, for a first deploy.
pub fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("cannot find a free port")?;
    listener
        .local_addr()
        .map(|a| a.port())
        .context("cannot find a free port")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_service_id() {
        let log = "--- start\nsvc: serving `shop` (service id cjabc123) on sqlite:///x\n";
        assert_eq!(service_id_in(log).as_deref(), Some("cjabc123"));
        assert_eq!(service_id_in("nothing"), None);
    }
}
