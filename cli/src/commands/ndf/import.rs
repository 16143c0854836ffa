//! `svc import -d FILE.zip [-t TARGET]` (reference §8.5): checks every document of the archive
//! against the service's model, then uploads the documents of `nodes/`, `lists/` and
//! `relations/`, each folder in the order of the files' numbers, one request per file, its bytes
//! as they are.
//!
//! The documents of each folder go up two at a time (`--jobs`), so the server reads one while
//! it writes the other; those of `lists/` one at a time, in order, when the chunks of one list
//! are in two files (they are appended as they come).
//!
//! Resume: `.import/state.json` in the service directory holds, per folder, the number up to
//! which every file is imported, the names of files imported past it (two in flight may finish
//! in either order), and a fingerprint of all those files (their names, sizes and CRC-32s); a
//! rerun skips them. A state written for another archive (the files it says were imported
//! differ) is not applied: the import starts over, and says so. The state is removed when
//! everything is imported.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, Result, anyhow, bail};
use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use svc_generator::model::Model;
use zip::ZipArchive;

use super::progress::{Progress, Totals};
use super::validate::{self, Problem};
use super::{Answer, Endpoint, FILE_TYPES, MAX_FILE_BYTES, count, human_bytes};
use crate::commands::context::{Context, TargetArg};

/// `svc import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The archive to import: a `.zip` with the folders `nodes/`, `lists/` and `relations/` of
    /// numbered NDF documents (`1.json`, `000001.json`, …).
    #[arg(
        short = 'd',
        long = "data",
        visible_short_alias = 's',
        visible_alias = "source",
        value_name = "FILE.zip"
    )]
    pub data: PathBuf,
    /// How many documents of one folder are sent at once: with 2 the server reads one while
    /// it writes the other. With 1 the files go strictly one after the other, so of two files
    /// that conflict (the same id, say) the later one fails. The files of `lists/` go one at a
    /// time, in order, when one list has values in two of them.
    #[arg(short = 'j', long = "jobs", value_name = "N", default_value_t = 2,
          value_parser = clap::value_parser!(u16).range(1..=16))]
    pub jobs: u16,
    #[command(flatten)]
    pub target: TargetArg,
}

/// How many problems are printed before the rest are only counted.
const SHOWN_PROBLEMS: usize = 50;

/// One document of the archive.
#[derive(Debug, Clone)]
struct Entry {
    /// Index of the entry in the zip.
    index: usize,
    /// Its name in the zip (`nodes/000001.json`).
    name: String,
    /// Position of its folder in [`FILE_TYPES`].
    kind: usize,
    /// The number in its name (`000001.json` → 1).
    number: u64,
    size: u64,
    crc32: u32,
    /// Counted in the first pass.
    elements: u64,
}

/// `.import/state.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
struct State {
    #[serde(default)]
    nodes: u64,
    #[serde(default)]
    lists: u64,
    #[serde(default)]
    relations: u64,
    /// The archive's file name, for messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    archive: Option<String>,
    /// The fingerprint of the files imported so far (see [`fingerprint`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    imported: Option<String>,
    /// Files imported past their folder's number: one that finished while the file before it
    /// was still being written, or after it failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    ahead: Vec<String>,
}

impl State {
    fn done(&self, kind: usize) -> u64 {
        match kind {
            0 => self.nodes,
            1 => self.lists,
            _ => self.relations,
        }
    }

    fn set(&mut self, kind: usize, number: u64) {
        match kind {
            0 => self.nodes = number,
            1 => self.lists = number,
            _ => self.relations = number,
        }
    }

    /// Whether `entry` is imported.
    fn has(&self, entry: &Entry) -> bool {
        entry.number <= self.done(entry.kind) || self.ahead.contains(&entry.name)
    }

    /// Records `entry` as imported: its folder's number moves past every file imported without
    /// a gap (`entries` in order), and what stays past a gap is named in `ahead`.
    fn mark(&mut self, entries: &[Entry], entry: &Entry) {
        self.ahead.push(entry.name.clone());
        for e in entries.iter().filter(|e| e.kind == entry.kind) {
            if e.number <= self.done(e.kind) {
                continue;
            }
            let Some(at) = self.ahead.iter().position(|name| *name == e.name) else {
                break;
            };
            self.ahead.remove(at);
            self.set(e.kind, e.number);
        }
    }
}

pub fn import(args: &ImportArgs) -> Result<()> {
    let source = &args.data;
    if source.extension().and_then(|e| e.to_str()) != Some("zip") {
        bail!("the archive must be a `.zip` file: `{}`", source.display());
    }
    if !source.is_file() {
        bail!("there is no archive `{}`", source.display());
    }
    let ctx = Context::load(&args.target)?;
    let svc_yml = ctx.service.dir.join("svc.yml");
    let model = svc_generator::frontend::load(&svc_yml)
        .map_err(|failure| {
            anyhow!(
                "the service's model has problems, fix them first:\n{}",
                failure.to_string().trim_end()
            )
        })?
        .model
        .into_inner();
    let endpoint = Endpoint::new(&ctx)?;
    let started = Instant::now();

    let mut archive = open(source)?;
    let mut entries = plan(&mut archive, source)?;
    let lists_apart = check(&mut archive, &mut entries, &model, source)?;

    let archive_name = source
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let state_path = ctx.service.dir.join(".import").join("state.json");
    let mut state = load_state(&state_path, &entries, &archive_name)?;

    let pending: Vec<&Entry> = entries.iter().filter(|e| !state.has(e)).collect();
    let progress = Progress::new(Some(Totals {
        files: pending.len() as u64,
        elements: pending.iter().map(|e| e.elements).sum(),
        bytes: pending.iter().map(|e| e.size).sum(),
    }));
    for entry in entries.iter().filter(|e| state.has(e)) {
        progress.println(&format!("Skipping file {} (already imported)", entry.name));
    }
    let mut uploaded = [0u64; 3];
    let mut bytes = 0u64;
    for (kind, file_type) in FILE_TYPES.iter().enumerate() {
        let mut todo = pending.iter().filter(|e| e.kind == kind);
        // The chunks of a list given in two files are appended in the files' order.
        let window = if *file_type == "lists" && !lists_apart {
            1
        } else {
            usize::from(args.jobs)
        };
        let mut in_flight = FuturesUnordered::new();
        // The first failure; the files in flight beside it are waited for and recorded.
        let mut failed: Option<Failed> = None;
        loop {
            while failed.is_none() && in_flight.len() < window {
                let Some(&entry) = todo.next() else {
                    break;
                };
                progress.start_file(&entry.name);
                match read_entry(&mut archive, entry, source) {
                    Ok(body) => {
                        let endpoint = &endpoint;
                        let started = Instant::now();
                        in_flight.push(async move {
                            (entry, started, endpoint.send("import", body).await)
                        });
                    }
                    Err(e) => failed = Some(Failed::Local(e)),
                }
            }
            let Some((entry, started, answer)) = endpoint.block_on(in_flight.next()) else {
                break;
            };
            match answer
                .map_err(Failed::Local)
                .and_then(|a| outcome(entry, &a))
            {
                Ok(()) => {
                    state.mark(&entries, entry);
                    state.archive = Some(archive_name.clone());
                    state.imported = Some(fingerprint(&entries, &state));
                    save_state(&state_path, &state)?;
                    uploaded[entry.kind] += entry.elements;
                    bytes += entry.size;
                    progress.file_done(&entry.name, entry.elements, entry.size, started.elapsed());
                }
                Err(failure) => {
                    failed.get_or_insert(failure);
                }
            }
        }
        if let Some(failure) = failed {
            progress.finish();
            let error = failure.report();
            return Err(match state.ahead.is_empty() {
                true => error,
                false => anyhow!(
                    "{error:#}. Imported beside it, and skipped by the rerun: {}",
                    state.ahead.join(", ")
                ),
            });
        }
    }
    progress.finish();
    remove_state(&state_path)?;
    warn_missing_partners(&endpoint, &model);
    let parts: Vec<String> = FILE_TYPES
        .iter()
        .zip(uploaded)
        .map(|(ty, n)| format!("{ty} {}", count(n, "element", "elements")))
        .collect();
    println!(
        "Imported {}: {}; {} in {:.1} s.",
        source.display(),
        parts.join(", "),
        human_bytes(bytes),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn open(source: &Path) -> Result<ZipArchive<BufReader<File>>> {
    let file = File::open(source).with_context(|| format!("cannot open `{}`", source.display()))?;
    ZipArchive::new(BufReader::new(file))
        .with_context(|| format!("`{}` is not a zip archive", source.display()))
}

/// The documents of the archive in upload order: nodes, lists, relations, each by number.
/// Other files are ignored; a `.json` file in one of the three folders whose name is not a
/// number, or two files with the same number, are errors.
fn plan(archive: &mut ZipArchive<BufReader<File>>, source: &Path) -> Result<Vec<Entry>> {
    let mut entries = Vec::new();
    let mut problems = Vec::new();
    let mut numbers: BTreeMap<(usize, u64), String> = BTreeMap::new();
    for index in 0..archive.len() {
        let file = archive
            .by_index_raw(index)
            .with_context(|| format!("cannot read the entries of `{}`", source.display()))?;
        if !file.is_file() {
            continue;
        }
        let name = file
            .name()
            .with_context(|| format!("an entry of `{}` has an unreadable name", source.display()))?
            .into_owned();
        let Some((folder, file_name)) = name.split_once('/') else {
            continue;
        };
        let Some(kind) = FILE_TYPES.iter().position(|t| *t == folder) else {
            continue;
        };
        let Some(stem) = file_name.strip_suffix(".json") else {
            continue;
        };
        let number = if !stem.is_empty() && stem.bytes().all(|b| b.is_ascii_digit()) {
            stem.parse::<u64>().ok()
        } else {
            None
        };
        let Some(number) = number else {
            problems.push(format!(
                "{name}: the files of `{folder}/` are named by number (`1.json`, `000001.json`, …)"
            ));
            continue;
        };
        if let Some(first) = numbers.insert((kind, number), name.clone()) {
            problems.push(format!("{name}: `{first}` has the same number ({number})"));
            continue;
        }
        entries.push(Entry {
            index,
            name,
            kind,
            number,
            size: file.size(),
            crc32: file.crc32(),
            elements: 0,
        });
    }
    if !problems.is_empty() {
        for p in &problems {
            eprintln!("{p}");
        }
        bail!(
            "the archive `{}` cannot be imported ({}); nothing was imported",
            source.display(),
            count(problems.len() as u64, "problem", "problems")
        );
    }
    if entries.is_empty() {
        bail!(
            "the archive `{}` holds no NDF documents: expected `nodes/`, `lists/` and `relations/` folders of numbered `.json` files at its root",
            source.display()
        );
    }
    entries.sort_by_key(|e| (e.kind, e.number));
    Ok(entries)
}

/// What the check found in one file.
struct Checked {
    elements: u64,
    problems: Vec<Problem>,
    /// Of a `lists/` file: a hash of each list it appends to (type, id, field), sorted, once.
    lists: Vec<u64>,
}

/// The first pass: every document read and checked against the model, one at a time, before
/// anything is uploaded. Counts each document's elements. Returns whether the files of
/// `lists/` may be sent side by side: no list has values in two of them (a hash of each list
/// per file is kept until the check ends; two lists with the same hash only make the files go
/// one at a time).
fn check(
    archive: &mut ZipArchive<BufReader<File>>,
    entries: &mut [Entry],
    model: &Model,
    source: &Path,
) -> Result<bool> {
    // The files are read and checked on every core, each thread with the archive open on its
    // own; the problems are reported in the files' order.
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, entries.len().max(1));
    // Thread 0 is this one, on the archive already open here.
    let mut results: Vec<(usize, Checked)> = std::thread::scope(|scope| {
        let entries = &*entries;
        let workers: Vec<_> = (1..threads)
            .map(|t| {
                scope.spawn(move || -> Result<Vec<(usize, Checked)>> {
                    let mut archive = open(source)?;
                    let mut out = Vec::new();
                    for (i, entry) in entries.iter().enumerate().skip(t).step_by(threads) {
                        out.push((i, check_entry(&mut archive, entry, model, source)?));
                    }
                    Ok(out)
                })
            })
            .collect();
        let mut results = Vec::new();
        for (i, entry) in entries.iter().enumerate().step_by(threads) {
            results.push((i, check_entry(archive, entry, model, source)?));
        }
        for worker in workers {
            let found = worker
                .join()
                .unwrap_or_else(|_| Err(anyhow!("a thread checking the archive failed")))?;
            results.extend(found);
        }
        Ok::<_, anyhow::Error>(results)
    })?;
    results.sort_by_key(|(i, _)| *i);
    let mut problems: Vec<Problem> = Vec::new();
    let mut lists = Vec::new();
    for (i, checked) in results {
        entries[i].elements = checked.elements;
        problems.extend(checked.problems);
        lists.push(checked.lists);
    }
    if problems.is_empty() {
        return Ok(apart(&lists));
    }
    for p in problems.iter().take(SHOWN_PROBLEMS) {
        eprintln!("{p}");
    }
    if problems.len() > SHOWN_PROBLEMS {
        eprintln!("… and {} more", problems.len() - SHOWN_PROBLEMS);
    }
    bail!(
        "the archive `{}` does not fit the service's model ({}); nothing was imported",
        source.display(),
        count(problems.len() as u64, "problem", "problems")
    )
}

/// Whether no list (its hash) is in two of `files` (each a file's lists, each once).
fn apart(files: &[Vec<u64>]) -> bool {
    let mut seen = HashSet::new();
    files.iter().flatten().all(|list| seen.insert(*list))
}

/// One file's elements and problems (and the lists it appends to).
fn check_entry(
    archive: &mut ZipArchive<BufReader<File>>,
    entry: &Entry,
    model: &Model,
    source: &Path,
) -> Result<Checked> {
    let file_type = FILE_TYPES[entry.kind];
    let problem = |message: String| Problem {
        file: entry.name.clone(),
        index: None,
        field: None,
        message,
    };
    let refused = |message: String| Checked {
        elements: 0,
        problems: vec![problem(message)],
        lists: Vec::new(),
    };
    if entry.size > MAX_FILE_BYTES {
        return Ok(refused(format!(
            "is {}; an import request may hold at most 10 MB (split it into several files)",
            human_bytes(entry.size)
        )));
    }
    let body = read_entry(archive, entry, source)?;
    let mut lists = Vec::new();
    let mut each = |element: &Value| {
        if file_type == "lists" {
            lists.extend(list_of(element));
        }
    };
    let (elements, problems) =
        match validate::document_text(model, &entry.name, file_type, &body, &mut each) {
            Ok(checked) => checked,
            Err(e) => return Ok(refused(format!("is not a JSON document: {e}"))),
        };
    lists.sort_unstable();
    lists.dedup();
    Ok(Checked {
        elements,
        problems,
        lists,
    })
}

/// A hash of the list a `lists` element appends to: its type (in lower case, as the server
/// matches it), node id and field, whatever the element's key order; `None` for an element that
/// is no object.
fn list_of(element: &Value) -> Option<u64> {
    use std::hash::{DefaultHasher, Hash as _, Hasher as _};
    let element = element.as_object()?;
    let mut hasher = DefaultHasher::new();
    let ty = element.get("_typeName").and_then(Value::as_str);
    ty.map(str::to_ascii_lowercase).hash(&mut hasher);
    element.get("id").and_then(Value::as_str).hash(&mut hasher);
    let mut fields: Vec<&str> = element
        .keys()
        .map(String::as_str)
        .filter(|k| *k != "_typeName" && *k != "id")
        .collect();
    fields.sort_unstable();
    fields.hash(&mut hasher);
    Some(hasher.finish())
}

fn read_entry(
    archive: &mut ZipArchive<BufReader<File>>,
    entry: &Entry,
    source: &Path,
) -> Result<Vec<u8>> {
    let mut file = archive
        .by_index(entry.index)
        .with_context(|| format!("cannot read `{}` in `{}`", entry.name, source.display()))?;
    let mut body = Vec::with_capacity(usize::try_from(entry.size).unwrap_or(0));
    file.read_to_end(&mut body)
        .with_context(|| format!("cannot read `{}` in `{}`", entry.name, source.display()))?;
    Ok(body)
}

/// Imports write nodes before their edges, so a required to-one relation (`author: User!`) is
/// only complete once the archive's relations are in: after the import, warns of the nodes
/// whose required relation is still empty (an archive without those edges), one count per
/// field. Such nodes read as errors until they are connected.
fn warn_missing_partners(endpoint: &Endpoint, model: &Model) {
    use svc_generator::model::FieldKind;
    let mut fields = Vec::new();
    for ty in &model.types {
        for field in &ty.fields {
            if field.required && !field.list && matches!(field.kind, FieldKind::Relation { .. }) {
                fields.push((ty.name.as_str(), field.name.as_str()));
            }
        }
    }
    if fields.is_empty() {
        return;
    }
    let query: Vec<String> = fields
        .iter()
        .enumerate()
        .map(|(i, (ty, field))| {
            format!(
                "f{i}: _all{}Meta(filter: {{ {field}: null }}) {{ count }}",
                svc_generator::naming::plural(ty)
            )
        })
        .collect();
    match endpoint.query(&format!("{{ {} }}", query.join(" "))) {
        Ok(data) => {
            for (i, (ty, field)) in fields.iter().enumerate() {
                let missing = data[format!("f{i}")]["count"].as_u64().unwrap_or(0);
                if missing > 0 {
                    eprintln!(
                        "warning: {} {} no `{field}`, which `{ty}` requires: connect {} with a relations file",
                        count(missing, &format!("{ty} node"), &format!("{ty} nodes")),
                        if missing == 1 { "has" } else { "have" },
                        if missing == 1 { "it" } else { "them" }
                    );
                }
            }
        }
        Err(e) => eprintln!("warning: could not count the nodes missing a required relation: {e}"),
    }
}

/// Why a file was not imported.
enum Failed {
    /// The server answered with the failures of its elements: the lines to print, and the error.
    Elements(Vec<String>, anyhow::Error),
    /// The server refused the request, or it could not be sent.
    Local(anyhow::Error),
}

impl Failed {
    /// Prints what is to be printed; the command's error.
    fn report(self) -> anyhow::Error {
        match self {
            Failed::Elements(lines, error) => {
                for line in lines {
                    eprintln!("{line}");
                }
                error
            }
            Failed::Local(error) => error,
        }
    }
}

/// What the server's answer to the upload of `entry` says.
fn outcome(entry: &Entry, answer: &Answer) -> Result<(), Failed> {
    let parsed: Option<Value> = serde_json::from_slice(&answer.body).ok();
    match &parsed {
        Some(Value::Array(failures)) if failures.is_empty() => Ok(()),
        Some(Value::Array(failures)) => Err(Failed::Elements(
            failure_lines(entry, failures),
            anyhow!(
                "the import of `{}` failed; nothing of it was written. The files before it are imported: fix it and run the same command again to go on from `{}`",
                entry.name,
                entry.name
            ),
        )),
        _ => {
            let reason = parsed
                .as_ref()
                .and_then(|b| b.get("error"))
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| format!("HTTP {}: {}", answer.status, answer.excerpt()));
            Err(Failed::Local(anyhow!(
                "the server refused `{}` (request ID {}): {reason}",
                entry.name,
                answer.request_id(parsed.as_ref())
            )))
        }
    }
}

/// The server's failures of one file: each element's index and message.
fn failure_lines(entry: &Entry, failures: &[Value]) -> Vec<String> {
    let mut lines = vec![format!(
        "The import of {} failed ({}):",
        entry.name,
        count(failures.len() as u64, "failure", "failures")
    )];
    for failure in failures {
        let index = failure
            .get("index")
            .map_or_else(|| "?".to_owned(), Value::to_string);
        let message = failure
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| failure.to_string(), str::to_owned);
        lines.push(format!("  {}, element {index}: {message}", entry.name));
    }
    lines
}

/// FNV-1a (64 bits) over the name, size and CRC-32 of the files the state counts as imported.
fn fingerprint(entries: &[Entry], state: &State) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            hash ^= u64::from(*b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for entry in entries.iter().filter(|e| state.has(e)) {
        feed(entry.name.as_bytes());
        feed(&[0]);
        feed(&entry.size.to_le_bytes());
        feed(&entry.crc32.to_le_bytes());
    }
    format!("{hash:016x}")
}

/// The resume state for this archive: the saved one when it is this archive's (or has no
/// fingerprint: the reference's format, written by hand), else zeros (with a notice).
fn load_state(path: &Path, entries: &[Entry], archive_name: &str) -> Result<State> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(State::default()),
        Err(e) => return Err(e).with_context(|| format!("cannot read `{}`", path.display())),
    };
    let state: State = match serde_json::from_str(&text) {
        Ok(state) => state,
        Err(e) => {
            eprintln!(
                "The resume state `{}` cannot be read ({e}); starting over.",
                shown(path)
            );
            return Ok(State::default());
        }
    };
    if state == State::default() {
        return Ok(state);
    }
    if let Some(saved) = &state.imported
        && *saved != fingerprint(entries, &state)
    {
        eprintln!(
            "The resume state `{}` was written for another archive{} (the files it counts as imported differ); starting over with `{archive_name}`.",
            shown(path),
            state
                .archive
                .as_deref()
                .map(|a| format!(" (`{a}`)"))
                .unwrap_or_default()
        );
        return Ok(State::default());
    }
    eprintln!(
        "Resuming from `{}`: nodes {}, lists {}, relations {} already imported{}.",
        shown(path),
        state.nodes,
        state.lists,
        state.relations,
        if state.ahead.is_empty() {
            String::new()
        } else {
            format!(", and {}", state.ahead.join(", "))
        }
    );
    Ok(state)
}

fn save_state(path: &Path, state: &State) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create `{}`", dir.display()))?;
    }
    let text = serde_json::to_string(state).context("cannot write the resume state")?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text).with_context(|| format!("cannot write `{}`", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write `{}`", path.display()))
}

fn remove_state(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot remove `{}`", path.display())),
    }
    if let Some(dir) = path.parent() {
        // Only when empty: `.import/` may hold something of the user's.
        let _ = std::fs::remove_dir(dir);
    }
    Ok(())
}

/// `.import/state.json` (the path as messages show it).
fn shown(path: &Path) -> String {
    let mut parts: Vec<PathBuf> = path.iter().rev().take(2).map(PathBuf::from).collect();
    parts.reverse();
    parts.iter().collect::<PathBuf>().display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, kind: usize, number: u64, crc32: u32) -> Entry {
        Entry {
            index: 0,
            name: name.to_owned(),
            kind,
            number,
            size: 10,
            crc32,
            elements: 1,
        }
    }

    #[test]
    fn fingerprints_cover_the_imported_files_only() {
        let a = vec![
            entry("nodes/1.json", 0, 1, 7),
            entry("nodes/2.json", 0, 2, 8),
        ];
        let mut b = a.clone();
        b[1].crc32 = 9; // file 2 fixed after it failed
        let state = State {
            nodes: 1,
            ..State::default()
        };
        assert_eq!(fingerprint(&a, &state), fingerprint(&b, &state));
        let mut c = a.clone();
        c[0].crc32 = 1; // another archive
        assert_ne!(fingerprint(&a, &state), fingerprint(&c, &state));
    }

    #[test]
    fn files_imported_out_of_order_are_named_until_the_gap_closes() {
        let entries = vec![
            entry("nodes/1.json", 0, 1, 7),
            entry("nodes/2.json", 0, 2, 8),
            entry("nodes/3.json", 0, 3, 9),
            entry("relations/1.json", 2, 1, 6),
        ];
        let mut state = State::default();
        state.mark(&entries, &entries[0]);
        assert_eq!((state.nodes, state.ahead.len()), (1, 0));
        // File 3 finished while file 2 was still being written (or failed).
        state.mark(&entries, &entries[2]);
        assert_eq!(state.nodes, 1);
        assert_eq!(state.ahead, vec!["nodes/3.json".to_owned()]);
        assert!(state.has(&entries[2]) && !state.has(&entries[1]));
        let before = fingerprint(&entries, &state);
        state.mark(&entries, &entries[1]);
        assert_eq!((state.nodes, state.ahead.len()), (3, 0));
        assert_ne!(fingerprint(&entries, &state), before);
        assert!(!state.has(&entries[3]));
        let text = serde_json::to_string(&state).unwrap();
        assert!(!text.contains("ahead"), "{text}");
    }

    #[test]
    fn a_list_hashes_the_same_whatever_its_key_order() {
        let doc = serde_json::json!({"valueType": "lists", "values": [
            {"_typeName": "User", "id": "a", "nicknames": ["x"]},
            {"nicknames": ["y"], "id": "a", "_typeName": "user"},
            {"_typeName": "User", "id": "b", "nicknames": ["x"]},
            {"_typeName": "User", "id": "a", "tags": ["x"]},
        ]});
        let mut lists: Vec<u64> = doc["values"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(list_of)
            .collect();
        lists.sort_unstable();
        lists.dedup();
        // The first two are one list (the type in any case, the keys in any order).
        assert_eq!(lists.len(), 3, "{lists:?}");
        let other = serde_json::json!({"id": "a", "_typeName": "USER", "nicknames": []});
        assert!(lists.contains(&list_of(&other).unwrap()));
        assert_eq!(list_of(&serde_json::json!(["a"])), None);
    }

    #[test]
    fn lists_files_are_apart_when_no_list_is_in_two() {
        assert!(apart(&[vec![1, 2], vec![3], vec![]]));
        assert!(!apart(&[vec![1, 2], vec![2]]));
        assert!(!apart(&[vec![1], vec![], vec![4, 1]]));
        assert!(apart(&[]));
    }

    #[test]
    fn shows_the_state_path_short() {
        assert_eq!(
            shown(Path::new("/a/b/.import/state.json")),
            ".import/state.json"
        );
    }
}
