//! The fuzz targets' smoke, on the stable toolchain and without libFuzzer (`.ci/run` runs it):
//! every target's `run` (`src/targets/`) on every input of `regressions/<target>/` (each a crash
//! found once, which must pass now), every input of `corpus/<target>/`, and then on seeded
//! random mutations of those inputs (bit flips, interesting bytes, insertions, deletions,
//! duplicated ranges, the target's dictionary words, splices of two inputs) for a bounded time.
//! The mutations are not guided by coverage, as libFuzzer's are (`bench/fuzz` does that, on
//! nightly); they are the same on every run for a given seed.
//!
//! Each target runs in a process of its own (this binary again, with `SVC_FUZZ_SMOKE_TARGET`
//! set), since the HTTP targets start one server per process and some seed it. A panic on any
//! thread of that process (a target's check, or a handler of the server) aborts it, after the
//! input that caused it is written to `<target dir>/tmp/fuzz-smoke/<target>/` and named.
//!
//! ```text
//! cargo test --manifest-path fuzz/Cargo.toml --no-default-features --test smoke [-- TARGET...]
//! SVC_FUZZ_SMOKE_SECONDS (default 10) a target, SVC_FUZZ_SMOKE_SEED (default 1)
//! ```

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use svc_fuzz::targets::ALL;

const TARGET_VAR: &str = "SVC_FUZZ_SMOKE_TARGET";

fn main() -> ExitCode {
    match std::env::var(TARGET_VAR) {
        Ok(name) => child(&name),
        Err(_) => parent(),
    }
}

/// Runs each target asked for (all by default) in a process of its own.
fn parent() -> ExitCode {
    let asked: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    for name in &asked {
        if !ALL.iter().any(|(n, _)| n == name) {
            eprintln!("smoke: no target {name}");
            return ExitCode::FAILURE;
        }
    }
    let exe = std::env::current_exe().expect("the test's own path");
    let mut failed = Vec::new();
    for (name, _) in ALL {
        if !asked.is_empty() && !asked.iter().any(|a| a == name) {
            continue;
        }
        let status = Command::new(&exe)
            .env(TARGET_VAR, name)
            .status()
            .expect("the test runs itself");
        if !status.success() {
            failed.push(*name);
        }
    }
    if failed.is_empty() {
        println!("smoke: every target passed");
        ExitCode::SUCCESS
    } else {
        println!("smoke: FAILED: {}", failed.join(", "));
        ExitCode::FAILURE
    }
}

/// The input being run, for the panic hook: its label and bytes.
static CURRENT: Mutex<Option<(String, Vec<u8>)>> = Mutex::new(None);

fn set_current(label: String, data: &[u8]) {
    *CURRENT.lock().unwrap_or_else(|e| e.into_inner()) = Some((label, data.to_vec()));
}

/// Runs the target `name` on its regressions, its corpus and the mutations of both.
fn child(name: &str) -> ExitCode {
    let Some((_, run)) = ALL.iter().find(|(n, _)| *n == name) else {
        eprintln!("smoke: no target {name}");
        return ExitCode::FAILURE;
    };
    let crashes = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("fuzz-smoke")
        .join(name);
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        hook(info);
        let current = CURRENT.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((label, data)) = current {
            let _ = std::fs::create_dir_all(&crashes);
            let file = crashes.join(label.replace(['/', ' '], "-"));
            let _ = std::fs::write(&file, &data);
            eprintln!(
                "smoke: {} FAILED on {label} ({} bytes), kept as {}",
                file.parent()
                    .and_then(Path::file_name)
                    .map(|n| n.to_string_lossy())
                    .unwrap_or_default(),
                data.len(),
                file.display()
            );
        }
        // A panic on a server thread must fail the input too, as under libFuzzer.
        std::process::abort();
    }));
    let seconds: u64 = number("SVC_FUZZ_SMOKE_SECONDS", 10);
    let mut rng = Rng(number("SVC_FUZZ_SMOKE_SEED", 1).max(1));
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let regressions = inputs(&dir.join("regressions").join(name));
    let corpus = inputs(&dir.join("corpus").join(name));
    let dict = dictionary(&dir.join("dict").join(format!("{name}.dict")));
    let started = Instant::now();
    for (path, data) in regressions.iter().chain(&corpus) {
        set_current(path.display().to_string(), data);
        run(data);
    }
    let seeds: Vec<&[u8]> = regressions
        .iter()
        .chain(&corpus)
        .map(|(_, d)| d.as_slice())
        .collect();
    let mut mutations = 0u64;
    let until = Instant::now() + Duration::from_secs(seconds);
    while !seeds.is_empty() && Instant::now() < until {
        let base = seeds[rng.below(seeds.len())];
        let data = mutate(&mut rng, base, &seeds, &dict);
        set_current(format!("mutation-{mutations}"), &data);
        run(&data);
        mutations += 1;
    }
    *CURRENT.lock().unwrap_or_else(|e| e.into_inner()) = None;
    println!(
        "smoke: {name}: {} regressions, {} corpus inputs, {mutations} mutations in {:.1} s: passed",
        regressions.len(),
        corpus.len(),
        started.elapsed().as_secs_f64()
    );
    ExitCode::SUCCESS
}

fn number(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The files of `dir` (none when it does not exist), by name.
fn inputs(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let data = std::fs::read(&p).expect("an input file");
            (p, data)
        })
        .collect()
}

/// The words of a libFuzzer dictionary: each line's text between its first and last `"`, with
/// `\\`, `\"` and `\xHH` read.
fn dictionary(path: &Path) -> Vec<Vec<u8>> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let mut words = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('#') {
            continue;
        }
        let (Some(a), Some(b)) = (line.find('"'), line.rfind('"')) else {
            continue;
        };
        if b <= a {
            continue;
        }
        let raw = &line.as_bytes()[a + 1..b];
        let mut word = Vec::new();
        let mut i = 0;
        while i < raw.len() {
            let hex = (raw[i] == b'\\' && raw.get(i + 1) == Some(&b'x') && i + 4 <= raw.len())
                .then(|| std::str::from_utf8(&raw[i + 2..i + 4]).ok())
                .flatten()
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            if let Some(byte) = hex {
                word.push(byte);
                i += 4;
            } else if raw[i] == b'\\' && i + 1 < raw.len() {
                word.push(raw[i + 1]);
                i += 2;
            } else {
                word.push(raw[i]);
                i += 1;
            }
        }
        if !word.is_empty() {
            words.push(word);
        }
    }
    words
}

/// xorshift64*: the same mutations on every run of a seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Bytes that often sit on a parser's edges.
const INTERESTING: &[u8] = b"\0\x01\x7f\x80\xff\"\\{}[],:-0123456789eE.\n\r\t /#x";

/// `base` changed one to four times.
fn mutate(rng: &mut Rng, base: &[u8], seeds: &[&[u8]], dict: &[Vec<u8>]) -> Vec<u8> {
    let mut v = base.to_vec();
    let cap = (base.len() * 2).max(4096);
    for _ in 0..1 + rng.below(4) {
        let at = |rng: &mut Rng, v: &Vec<u8>| rng.below(v.len() + 1);
        match rng.below(8) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = INTERESTING[rng.below(INTERESTING.len())];
            }
            2 => {
                let i = at(rng, &v);
                v.insert(i, rng.next() as u8);
            }
            3 if !v.is_empty() => {
                let i = rng.below(v.len());
                let n = (1 + rng.below(16)).min(v.len() - i);
                v.drain(i..i + n);
            }
            4 if !v.is_empty() => {
                let i = rng.below(v.len());
                let n = (1 + rng.below(64)).min(v.len() - i);
                let range = v[i..i + n].to_vec();
                let j = at(rng, &v);
                v.splice(j..j, range);
            }
            5 if !dict.is_empty() => {
                let word = &dict[rng.below(dict.len())];
                let i = at(rng, &v);
                v.splice(i..i, word.iter().copied());
            }
            6 if !dict.is_empty() && !v.is_empty() => {
                let word = &dict[rng.below(dict.len())];
                let i = rng.below(v.len());
                let n = (1 + rng.below(8)).min(v.len() - i);
                v.splice(i..i + n, word.iter().copied());
            }
            7 => {
                let other = seeds[rng.below(seeds.len())];
                let cut = at(rng, &v);
                let from = rng.below(other.len() + 1);
                v.truncate(cut);
                v.extend_from_slice(&other[from..]);
            }
            _ => {}
        }
        v.truncate(cap);
    }
    v
}
