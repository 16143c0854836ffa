//! Data-driven front-end tests, apollo-rs style.
//!
//! Every directory under `test_data/diagnostics/` holds a service (`svc.yml` plus types files)
//! that must fail, and `expected.txt` with the exact rendered diagnostics. Every directory under
//! `test_data/models/` holds a valid service and `expected.txt` with the dump of its model.
//! Run with `UPDATE_EXPECT=1` to rewrite the expected files after an intended change.

use std::fs;
use std::path::{Path, PathBuf};

use svc_generator::frontend::load;
use svc_generator::model::dump::dump;

fn cases(kind: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("test_data")
        .join(kind);
    let mut dirs: Vec<PathBuf> = fs::read_dir(&root)
        .unwrap_or_else(|err| panic!("cannot list {}: {err}", root.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no cases in {}", root.display());
    dirs
}

/// Compares with `expected.txt`, or rewrites it under `UPDATE_EXPECT=1`. Returns a failure text.
fn compare(dir: &Path, actual: &str) -> Option<String> {
    let path = dir.join("expected.txt");
    if std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1") {
        fs::write(&path, actual)
            .unwrap_or_else(|err| panic!("cannot write {}: {err}", path.display()));
        return None;
    }
    let expected = fs::read_to_string(&path).unwrap_or_default();
    if expected == actual {
        return None;
    }
    let mut diff = String::new();
    let (exp, act): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    for i in 0..exp.len().max(act.len()) {
        match (exp.get(i), act.get(i)) {
            (Some(e), Some(a)) if e == a => diff.push_str(&format!("   {e}\n")),
            (e, a) => {
                if let Some(e) = e {
                    diff.push_str(&format!(" - {e}\n"));
                }
                if let Some(a) = a {
                    diff.push_str(&format!(" + {a}\n"));
                }
            }
        }
    }
    Some(format!(
        "{} differs from the actual output (- expected, + actual; UPDATE_EXPECT=1 rewrites it):\n{diff}",
        path.display()
    ))
}

fn run(kind: &str, render: impl Fn(&Path) -> Result<String, String>) {
    let mut failures = Vec::new();
    for dir in cases(kind) {
        match render(&dir) {
            Ok(actual) => failures.extend(compare(&dir, &actual)),
            Err(why) => failures.push(format!("{}: {why}", dir.display())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn diagnostics() {
    run("diagnostics", |dir| match load(&dir.join("svc.yml")) {
        Ok(loaded) => Err(format!(
            "expected errors, got a model:\n{}",
            dump(&loaded.model)
        )),
        Err(failure) => Ok(failure.to_string()),
    });
}

#[test]
fn models() {
    run("models", |dir| match load(&dir.join("svc.yml")) {
        Ok(loaded) => {
            // Loading twice must give the same model: output is deterministic.
            let again = load(&dir.join("svc.yml")).map_err(|f| f.to_string())?;
            if *again.model != *loaded.model {
                return Err("two loads gave different models".into());
            }
            if !loaded.inputs.iter().all(|p| p.is_absolute() && p.exists()) {
                return Err(format!(
                    "inputs are not absolute existing paths: {:?}",
                    loaded.inputs
                ));
            }
            Ok(dump(&loaded.model))
        }
        Err(failure) => Err(format!("expected a model, got:\n{failure}")),
    });
}

/// The example service, the generator's end-to-end consumer, passes the front end (its build
/// script would fail too, but this says why without building the runtime).
#[test]
fn example_model_loads() {
    let svc_yml = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("example-model")
        .join("svc.yml");
    if let Err(failure) = load(&svc_yml) {
        panic!("{}:\n{failure}", svc_yml.display());
    }
}

/// The fenced blocks of `page` (a path under the workspace) whose info string is `lang`.
fn fenced(page: &str, lang: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(page);
    let text = fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
    let mut blocks = Vec::new();
    let mut open: Option<String> = None;
    for line in text.lines() {
        match &mut open {
            None if line.trim_end() == format!("```{lang}") => open = Some(String::new()),
            None => {}
            Some(block) if line.trim_end() == "```" => {
                blocks.push(std::mem::take(block));
                open = None;
            }
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
        }
    }
    blocks
}

/// docs/model.md's example model passes the front end, and the build error it shows is the one
/// the generator prints for that mistake (test case 0029).
#[test]
fn the_model_pages_examples_hold() {
    let models = fenced("docs/model.md", "graphql");
    let example = models.first().expect("docs/model.md shows a model");
    let dir = std::env::temp_dir().join(format!("svc-model-page-{}", std::process::id()));
    fs::create_dir_all(&dir).expect("a temporary directory");
    fs::write(dir.join("types.graphql"), example).expect("types.graphql");
    fs::write(dir.join("svc.yml"), "types: ./types.graphql\n").expect("svc.yml");
    let loaded = load(&dir.join("svc.yml"));
    let _ = fs::remove_dir_all(&dir);
    if let Err(failure) = loaded {
        panic!("docs/model.md's example model fails:\n{failure}");
    }
    let shown = fenced("docs/model.md", "text");
    let error = shown.first().expect("docs/model.md shows a build error");
    let case = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("test_data/diagnostics/0029_invalid_default_values/expected.txt");
    let expected = fs::read_to_string(&case).expect("case 0029");
    assert!(
        expected.contains(error.as_str()),
        "docs/model.md shows an error that case 0029 does not print:\n{error}"
    );
}
