//! `svc export [-e FILE.zip] [-t TARGET]` (reference §8.5): pages through the export endpoint
//! for nodes, then lists, then relations, and writes each page as it arrives into the zip as
//! `<type>/<NNNNNN>.json` = `{"valueType":"<type>","values":<out.jsonElements>}`.
//!
//! The archive is written to `FILE.zip.part` and renamed when complete, so an interrupted
//! export never leaves a file that looks finished.

use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, Result, bail};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use zip::ZipWriter;
use zip::write::SimpleFileOptions;

use super::progress::Progress;
use super::{Endpoint, FILE_TYPES, count, human_bytes};
use crate::commands::context::{Context, TargetArg};

/// `svc export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The archive to write (must end in `.zip`); default: `export-<timestamp>.zip` in the
    /// current directory.
    #[arg(short, long, value_name = "FILE.zip")]
    pub export_path: Option<PathBuf>,
    #[command(flatten)]
    pub target: TargetArg,
}

/// An export response: `{"out": {"jsonElements": [...], "size": n}, "cursor": {...}, "isFull"}`.
#[derive(Deserialize)]
struct Page<'a> {
    #[serde(borrow)]
    out: Option<Out<'a>>,
    cursor: Option<Cursor>,
}

#[derive(Deserialize)]
struct Out<'a> {
    #[serde(rename = "jsonElements", borrow)]
    json_elements: Option<&'a RawValue>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
struct Cursor {
    table: i64,
    row: i64,
    field: i64,
    array: i64,
}

impl Cursor {
    const START: Cursor = Cursor {
        table: 0,
        row: 0,
        field: 0,
        array: 0,
    };

    /// The reference loops while the sum of the fields is ≥ 0; done is all `-1`.
    fn is_done(&self) -> bool {
        self.table + self.row + self.field + self.array < 0
    }
}

/// What one type's export came to.
#[derive(Default)]
struct Tally {
    files: u64,
    elements: u64,
    bytes: u64,
    failed: bool,
}

pub fn export(args: &ExportArgs) -> Result<()> {
    let path = match &args.export_path {
        Some(path) => path.clone(),
        None => PathBuf::from(format!(
            "export-{}.zip",
            chrono::Utc::now().format("%Y-%m-%dT%H-%M-%SZ")
        )),
    };
    if path.extension().and_then(|e| e.to_str()) != Some("zip") {
        bail!("the export path must end in `.zip`: `{}`", path.display());
    }
    let ctx = Context::load(&args.target)?;
    let endpoint = Endpoint::new(&ctx)?;
    let part = PathBuf::from(format!("{}.part", path.display()));
    let result = write_archive(&endpoint, &part);
    let tallies = match result {
        Ok(tallies) => tallies,
        Err(e) => {
            let _ = std::fs::remove_file(&part);
            return Err(e);
        }
    };
    std::fs::rename(&part, &path)
        .with_context(|| format!("cannot rename `{}` to `{}`", part.display(), path.display()))?;
    let (tallies, took) = tallies;
    let total_bytes: u64 = tallies.iter().map(|t| t.bytes).sum();
    let parts: Vec<String> = FILE_TYPES
        .iter()
        .zip(&tallies)
        .map(|(ty, t)| {
            format!(
                "{ty} {} ({})",
                count(t.elements, "element", "elements"),
                count(t.files, "file", "files")
            )
        })
        .collect();
    println!(
        "Exported to {}: {}; {} in {:.1} s.",
        path.display(),
        parts.join(", "),
        human_bytes(total_bytes),
        took.as_secs_f64()
    );
    let failed: Vec<&str> = FILE_TYPES
        .iter()
        .zip(&tallies)
        .filter(|(_, t)| t.failed)
        .map(|(ty, _)| *ty)
        .collect();
    if !failed.is_empty() {
        bail!(
            "the export is incomplete: the download of {} failed (see the warnings above)",
            failed.join(" and ")
        );
    }
    Ok(())
}

/// A page on its way into the archive: the server's answer and where its elements are in it.
struct Downloaded {
    name: String,
    file_type: &'static str,
    body: Vec<u8>,
    elements: std::ops::Range<usize>,
    count: u64,
    started: Instant,
}

impl Downloaded {
    /// The document's text before its elements: `{"valueType":"<type>","values":`.
    fn head(&self) -> String {
        format!("{{\"valueType\":\"{}\",\"values\":", self.file_type)
    }

    /// The document's length: the head, the elements and the closing brace.
    fn bytes(&self) -> u64 {
        (self.head().len() + self.elements.len() + 1) as u64
    }
}

/// Pages downloaded ahead of a type's writer.
const AHEAD: usize = 2;

/// Writes the archive at `part`; what each type came to, and the time it took.
///
/// The three types are exported side by side (the server works on a page of one type while a
/// page of another is in flight), each into a zip of its own (`part` plus `.nodes`, …) by a
/// thread of its own, which compresses and writes each page as it arrives, at most [`AHEAD`]
/// pages behind, so memory stays bounded. The three are then copied, compressed as they are,
/// into the archive: nodes, lists, relations, each type's files by number.
fn write_archive(endpoint: &Endpoint, part: &Path) -> Result<(Vec<Tally>, std::time::Duration)> {
    let started = Instant::now();
    let now = chrono::Utc::now();
    // The fastest deflate level: JSON compresses well at any, and compressing is most of what
    // the client does.
    let mut options = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .compression_level(Some(1));
    {
        use chrono::{Datelike as _, Timelike as _};
        if let Ok(time) = zip::DateTime::from_date_and_time(
            u16::try_from(now.year()).unwrap_or(1980),
            now.month() as u8,
            now.day() as u8,
            now.hour() as u8,
            now.minute() as u8,
            now.second() as u8,
        ) {
            options = options.last_modified_time(time);
        }
    }
    let pieces: Vec<PathBuf> = FILE_TYPES
        .iter()
        .map(|ty| PathBuf::from(format!("{}.{ty}", part.display())))
        .collect();
    let result = download(endpoint, &pieces, options).and_then(|tallies| {
        let file =
            File::create(part).with_context(|| format!("cannot create `{}`", part.display()))?;
        let mut zip = ZipWriter::new(BufWriter::new(file));
        for piece in &pieces {
            let archive = File::open(piece)
                .map_err(anyhow::Error::from)
                .and_then(|f| Ok(zip::ZipArchive::new(std::io::BufReader::new(f))?))
                .with_context(|| format!("cannot read `{}`", piece.display()))?;
            zip.merge_archive(archive)
                .with_context(|| format!("cannot write `{}`", part.display()))?;
        }
        let mut out = zip
            .finish()
            .with_context(|| format!("cannot finish `{}`", part.display()))?;
        out.flush()
            .with_context(|| format!("cannot write `{}`", part.display()))?;
        Ok(tallies)
    });
    for piece in &pieces {
        let _ = std::fs::remove_file(piece);
    }
    Ok((result?, started.elapsed()))
}

/// Downloads every type into its zip of `pieces`; what each came to.
fn download(
    endpoint: &Endpoint,
    pieces: &[PathBuf],
    options: SimpleFileOptions,
) -> Result<Vec<Tally>> {
    let progress = Progress::new(None);
    let result = std::thread::scope(|scope| {
        let progress = &progress;
        let mut senders = Vec::new();
        let mut writers = Vec::new();
        for piece in pieces {
            let (pages, mut arrivals) = tokio::sync::mpsc::channel::<Downloaded>(AHEAD);
            senders.push(pages);
            writers.push(scope.spawn(move || -> Result<()> {
                let file = File::create(piece)
                    .with_context(|| format!("cannot create `{}`", piece.display()))?;
                let mut zip = ZipWriter::new(BufWriter::new(file));
                while let Some(page) = arrivals.blocking_recv() {
                    let name = &page.name;
                    zip.start_file(name.as_str(), options).with_context(|| {
                        format!("cannot write `{name}` into `{}`", piece.display())
                    })?;
                    let head = page.head();
                    for bytes in [head.as_bytes(), &page.body[page.elements.clone()], b"}"] {
                        zip.write_all(bytes)
                            .with_context(|| format!("cannot write `{}`", piece.display()))?;
                    }
                    progress.file_done(name, page.count, page.bytes(), page.started.elapsed());
                }
                let mut out = zip
                    .finish()
                    .with_context(|| format!("cannot finish `{}`", piece.display()))?;
                out.flush()
                    .with_context(|| format!("cannot write `{}`", piece.display()))?;
                Ok(())
            }));
        }
        let tallies = endpoint.block_on(async {
            let [nodes, lists, relations] =
                [0, 1, 2].map(|i| export_type(endpoint, FILE_TYPES[i], &senders[i], progress));
            let (nodes, lists, relations) = tokio::join!(nodes, lists, relations);
            Ok::<_, anyhow::Error>(vec![nodes?, lists?, relations?])
        });
        drop(senders);
        for writer in writers {
            writer
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("an archive's writer failed")))?;
        }
        tallies
    });
    progress.finish();
    result
}

/// Downloads every page of `file_type` into `pages`; what they came to.
async fn export_type(
    endpoint: &Endpoint,
    file_type: &'static str,
    pages: &tokio::sync::mpsc::Sender<Downloaded>,
    progress: &Progress,
) -> Result<Tally> {
    let mut tally = Tally::default();
    let mut cursor = Cursor::START;
    loop {
        let name = format!("{file_type}/{:06}.json", tally.files + 1);
        progress.start_file(&name);
        let started = Instant::now();
        let request = json!({ "fileType": file_type, "cursor": cursor });
        let answer = endpoint
            .send("export", request.to_string().into_bytes())
            .await?;
        let page: Option<Page> = serde_json::from_slice(&answer.body).ok();
        let elements = page
            .as_ref()
            .and_then(|p| p.out.as_ref())
            .and_then(|o| o.json_elements)
            .filter(|raw| raw.get().trim_start().starts_with('['));
        let (Some(elements), Some(next)) = (elements, page.as_ref().and_then(|p| p.cursor)) else {
            let body: Option<Value> = serde_json::from_slice(&answer.body).ok();
            let request_id = answer.request_id(body.as_ref());
            progress.println(&format!(
                "warning: The download of {file_type} failed. You may get fragmented data. Request ID: {request_id}"
            ));
            let reason = body
                .as_ref()
                .and_then(|b| b.get("error"))
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| format!("HTTP {}: {}", answer.status, answer.excerpt()));
            progress.println(&format!("  the server said: {reason}"));
            tally.failed = true;
            break;
        };
        let count = serde_json::from_str::<Vec<&RawValue>>(elements.get())
            .context("the server sent `jsonElements` that is not a list")?
            .len() as u64;
        // Where the elements' text is in the body (a slice of it).
        let from = elements.get().as_ptr() as usize - answer.body.as_ptr() as usize;
        let range = from..from + elements.get().len();
        let page = Downloaded {
            name,
            file_type,
            body: answer.body,
            elements: range,
            count,
            started,
        };
        let bytes = page.bytes();
        pages
            .send(page)
            .await
            .map_err(|_| anyhow::anyhow!("the archive's writer stopped"))?;
        tally.files += 1;
        tally.elements += count;
        tally.bytes += bytes;
        if next.is_done() {
            break;
        }
        if next == cursor {
            bail!(
                "the server answered the {file_type} page at {cursor:?} with the same cursor: the export would not end"
            );
        }
        cursor = next;
    }
    Ok(tally)
}
