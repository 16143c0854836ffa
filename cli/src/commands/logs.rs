//! `svc logs`: the local server's log, its last lines, or followed as it grows; with
//! `--function NAME`, only the invocations of that function (the records the server writes to
//! its log, one per invocation: `svc: function-log {json}`).

use std::io::{Read, Seek, SeekFrom, Write};
use std::time::Duration;

use anyhow::{Context as _, Result};

use crate::project::Service;
use crate::server;

/// What a line of the log becomes: itself, or with `function`, the invocation record it holds
/// for that function (formatted), or nothing.
fn shown_line(line: &str, function: Option<&str>) -> Option<String> {
    let Some(function) = function else {
        return Some(line.to_owned());
    };
    let record = line.split_once("svc: function-log ")?.1;
    let record: serde_json::Value = serde_json::from_str(record).ok()?;
    if record["functionName"] != function {
        return None;
    }
    let text = |key: &str| record[key].as_str().unwrap_or_default().to_owned();
    Some(format!(
        "{} {} {} ms {} {}",
        text("timestamp"),
        text("status"),
        record["duration"].as_u64().unwrap_or_default(),
        text("requestId"),
        record["message"]
    ))
}

/// The lines of `text` to print.
fn picked(text: &str, function: Option<&str>) -> Vec<String> {
    text.lines()
        .filter_map(|l| shown_line(l, function))
        .collect()
}

pub fn logs(tail: Option<usize>, follow: bool, function: Option<&str>) -> Result<()> {
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
    let shown = match (tail, function) {
        (None, None) => text,
        _ => {
            let lines = picked(&text, function);
            let n = tail.unwrap_or(lines.len());
            let mut out = lines[lines.len().saturating_sub(n)..].join("\n");
            if !out.is_empty() {
                out.push('\n');
            }
            out
        }
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
                let chunk = match function {
                    None => chunk,
                    Some(_) => {
                        let text = String::from_utf8_lossy(&chunk);
                        let mut out = picked(&text, function).join("\n");
                        if !out.is_empty() {
                            out.push('\n');
                        }
                        out.into_bytes()
                    }
                };
                let _ = stdout.write_all(&chunk);
                let _ = stdout.flush();
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_records_are_picked_by_name() {
        let log = concat!(
            "svc: serving\n",
            r#"svc: function-log {"functionName":"hello","requestId":"r1","status":"SUCCESS","duration":3,"timestamp":"2026-11-26 01:02:03.004","message":{"returnValue":{"message":"Hi"}}}"#,
            "\n",
            r#"svc: function-log {"functionName":"other","requestId":"r2","status":"FAILURE","duration":1,"timestamp":"2026-11-26 01:02:04.000","message":{"error":"x"}}"#,
            "\n",
        );
        assert_eq!(
            picked(log, Some("hello")),
            [r#"2026-11-26 01:02:03.004 SUCCESS 3 ms r1 {"returnValue":{"message":"Hi"}}"#]
        );
        assert_eq!(picked(log, None).len(), 3);
        assert!(picked(log, Some("nope")).is_empty());
    }
}
