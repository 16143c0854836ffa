//! `svc logs`: the local server's log, its last lines, or followed as it grows.

use std::io::{Read, Seek, SeekFrom, Write};
use std::time::Duration;

use anyhow::{Context as _, Result};

use crate::project::Service;
use crate::server;

pub fn logs(tail: Option<usize>, follow: bool) -> Result<()> {
    let service = Service::find()?;
    let path = server::log_file(&service);
    let mut file = std::fs::File::open(&path).with_context(|| {
        format!(
            "cannot open `{}`; the server writes it once `svc deploy` started it",
            path.display()
        )
    })?;
    let mut text = String::new();
    file.read_to_string(&mut text)
        .with_context(|| format!("cannot read `{}`", path.display()))?;
    let shown = match tail {
        Some(n) => {
            let lines: Vec<&str> = text.lines().collect();
            let mut out = lines[lines.len().saturating_sub(n)..].join("\n");
            if !out.is_empty() {
                out.push('\n');
            }
            out
        }
        None => text,
    };
    let mut stdout = std::io::stdout();
    let _ = stdout.write_all(shown.as_bytes());
    let _ = stdout.flush();
    if follow {
        let mut position = file.stream_position().unwrap_or(0);
        loop {
            std::thread::sleep(Duration::from_millis(300));
            let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            if len < position {
                position = 0;
            }
            if len > position {
                let _ = file.seek(SeekFrom::Start(position));
                let mut chunk = Vec::new();
                let _ = file.read_to_end(&mut chunk);
                position += chunk.len() as u64;
                let _ = stdout.write_all(&chunk);
                let _ = stdout.flush();
            }
        }
    }
    Ok(())
}
