//! The rule that keeps the runtime in layers: a module imports only from layers below its own
//! (ARCHITECTURE.md, "Runtime layers"). The test reads every `crate::…` and `super::…` path in the code
//! of every file under `src/` and fails, naming the file and line, on one that points to its own
//! layer's siblings or up. A second test keeps what only some layers may name in those layers:
//! the SQL dialect and the database drivers (ARCHITECTURE.md, "Invariants").

use std::path::{Path, PathBuf};

/// Every layer with its rank: a layer may import the layers of lower rank, and its own folder.
/// Layers of equal rank do not import each other. `api` is the API layer's shared part; its
/// sub-folders are APIs of their own, beside each other. Names of subsystems still to come are
/// given their place here, so that they arrive in the right one.
const LAYERS: &[(&str, u32)] = &[
    ("model", 0),
    ("storage", 1),
    ("query", 2),
    ("migrate", 2),
    ("auth", 2),
    ("permissions", 3),
    ("engine", 4),
    ("plan", 4),
    ("events", 5),
    ("api", 6),
    ("api/simple", 7),
    ("api/permission", 7),
    ("api/system", 7),
    ("api/relay", 7),
    ("api/subscriptions", 7),
    ("ndf", 7),
    ("files", 7),
    ("functions", 7),
    ("http", 8),
    ("launch", 9),
];

/// The folders of `api/` that are APIs of their own.
const APIS: &[&str] = &["simple", "permission", "system", "relay", "subscriptions"];

fn rank(layer: &str) -> Option<u32> {
    LAYERS.iter().find(|(l, _)| *l == layer).map(|(_, r)| *r)
}

/// The layer of a module path (`["api", "simple", "query"]` is in `api/simple`); `None` for the
/// crate root's own files (`lib.rs`, the generated code's facade), which may import anything.
fn layer_of(module: &[String]) -> Option<String> {
    let first = module.first()?;
    if first == "api"
        && let Some(second) = module.get(1)
        && APIS.contains(&second.as_str())
    {
        return Some(format!("api/{second}"));
    }
    rank(first).map(|_| first.clone())
}

/// The module path of a source file relative to `src/` (`engine/read.rs` is `["engine",
/// "read"]`, `engine/mod.rs` is `["engine"]`).
fn module_of(file: &Path) -> Vec<String> {
    let mut parts: Vec<String> = file
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs");
        if stem != "mod" && stem != "lib" {
            parts.push(stem.to_owned());
        }
    }
    parts
}

/// An import that breaks the rule.
#[derive(Debug, PartialEq)]
struct Breach {
    line: usize,
    from: String,
    to: String,
}

/// The imports of `code` (the file at `module`) that point to a layer not below its own.
fn breaches(module: &[String], code: &str) -> Vec<Breach> {
    let Some(own) = layer_of(module) else {
        return Vec::new();
    };
    let own_rank = rank(&own).unwrap_or(u32::MAX);
    let mut out = Vec::new();
    for (line, path) in paths(&without_comments(code)) {
        let Some(target) = resolve(module, &path) else {
            continue;
        };
        let Some(to) = layer_of(&target) else {
            continue;
        };
        let allowed = to == own || rank(&to).is_some_and(|r| r < own_rank);
        let breach = Breach {
            line,
            from: own.clone(),
            to,
        };
        // One per line and layer: `engine::{Request, read}` is one breach.
        if !allowed && !out.contains(&breach) {
            out.push(breach);
        }
    }
    out
}

/// `code` with every line's `//` comment cut off (doc comments included), lines kept.
fn without_comments(code: &str) -> String {
    code.lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths in `code` that start with `crate::` or `super::` (not `$crate::`, a macro's path to
/// the crate's facade), each with the line it starts on and as its segments. A `{…}` group,
/// also one over several lines, gives one path per item (`crate::{engine::X, model}` is
/// `crate::engine::X` and `crate::model`).
fn paths(code: &str) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(at) = code[from..].find(start) {
            let at = from + at;
            from = at + start.len();
            let before = at.checked_sub(1).map(|i| bytes[i]);
            if before.is_some_and(|b| b == b'$' || b == b'_' || b.is_ascii_alphanumeric()) {
                continue;
            }
            // `super::super::x` is one path, found once, at its first `super`.
            if start == "super::" && code[..at].ends_with("super::") {
                continue;
            }
            let line = code[..at].matches('\n').count() + 1;
            for path in use_tree(&code[at..], Vec::new()) {
                out.push((line, path));
            }
        }
    }
    out
}

/// The paths of the use tree (or plain path) at the start of `text`, each after `prefix`.
fn use_tree(text: &str, prefix: Vec<String>) -> Vec<Vec<String>> {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':' || c.is_whitespace()))
        .unwrap_or(text.len());
    let mut path = prefix;
    path.extend(
        text[..end]
            .split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            // `x as y` renames: only `x` is the path.
            .map(|s| s.split_whitespace().next().unwrap_or(s).to_owned()),
    );
    if !text[end..].starts_with('{') || !text[..end].trim_end().ends_with("::") {
        return vec![path];
    }
    let group = &text[end + 1..];
    let mut out = Vec::new();
    let (mut depth, mut item) = (0usize, 0usize);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                out.extend(group_item(&group[item..i], &path));
                return out;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.extend(group_item(&group[item..i], &path));
                item = i + 1;
            }
            _ => {}
        }
    }
    out
}

/// The paths of one item of a `{…}` group (`self` is the group's own path, `*` adds nothing).
fn group_item(item: &str, path: &[String]) -> Vec<Vec<String>> {
    let item = item.trim();
    if item.is_empty() || item == "*" || item == "self" || item.starts_with("self ") {
        return vec![path.to_vec()];
    }
    use_tree(item, path.to_vec())
}

/// The module a path names from the file at `module`, from the crate root; `None` for a path
/// that climbs above the root.
fn resolve(module: &[String], path: &[String]) -> Option<Vec<String>> {
    let mut target: Vec<String> = match path.first().map(String::as_str) {
        Some("crate") => Vec::new(),
        Some("super") => module.to_vec(),
        _ => return None,
    };
    for segment in path {
        match segment.as_str() {
            "crate" => {}
            "super" => {
                target.pop()?;
            }
            _ => target.push(segment.clone()),
        }
    }
    Some(target)
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Names only some layers may use, each with those layers and the invariant it keeps.
const CONFINED: &[(&str, &[&str], &str)] = &[
    (
        "Backend::",
        &["storage", "query", "migrate"],
        "no SQL dialect branch outside `storage/`, `query/` and `migrate/`",
    ),
    (
        "sqlx::",
        &["storage"],
        "no database connection outside `storage/`",
    ),
    (
        "rusqlite::",
        &["storage"],
        "no database connection outside `storage/`",
    ),
    (
        "tokio_postgres::",
        &["storage"],
        "no database connection outside `storage/`",
    ),
];

/// The lines of `code` (the file at `module`) that use a name its layer may not, each with the
/// name and the invariant.
fn confined_uses(module: &[String], code: &str) -> Vec<(usize, &'static str, &'static str)> {
    let Some(own) = layer_of(module) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (n, line) in without_comments(code).lines().enumerate() {
        for (name, layers, why) in CONFINED {
            if !layers.contains(&own.as_str()) && line.contains(name) {
                out.push((n + 1, *name, *why));
            }
        }
    }
    out
}

/// Every `.rs` file under the runtime's `src/`, sorted, with its path relative to `src/`.
fn runtime_sources() -> Vec<(PathBuf, PathBuf)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|file| {
            let relative = file.strip_prefix(&src).unwrap_or(&file).to_path_buf();
            (file, relative)
        })
        .collect()
}

#[test]
fn confined_names_stay_in_their_layers() {
    let mut found = Vec::new();
    for (file, relative) in runtime_sources() {
        let code = std::fs::read_to_string(&file).unwrap_or_default();
        for (line, name, why) in confined_uses(&module_of(&relative), &code) {
            found.push(format!(
                "src/{}:{line}: `{name}`: {why}",
                relative.display()
            ));
        }
    }
    assert!(
        found.is_empty(),
        "names outside their layers:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_confined_name_outside_its_layers_is_found() {
    let module = |path: &str| module_of(Path::new(path));
    let code = "fn f(b: Backend) {\n    if b == Backend::Postgres {}\n    // Backend::Sqlite in a comment\n}\n\
                use sqlx::PgPool;\n";
    assert_eq!(
        confined_uses(&module("engine/write.rs"), code),
        vec![
            (
                2,
                "Backend::",
                "no SQL dialect branch outside `storage/`, `query/` and `migrate/`"
            ),
            (5, "sqlx::", "no database connection outside `storage/`"),
        ]
    );
    assert_eq!(confined_uses(&module("query/page.rs"), code).len(), 1);
    assert!(confined_uses(&module("storage/sqlite/writer.rs"), code).is_empty());
}

#[test]
fn every_import_points_down() {
    let files = runtime_sources();
    assert!(files.len() > 50, "the runtime's sources: {files:?}");
    let mut found = Vec::new();
    for (file, relative) in &files {
        let module = module_of(relative);
        // The crate root's files: `lib.rs`, the generated code's facade, and this test.
        let root = module.is_empty() || matches!(module[0].as_str(), "codegen" | "layers");
        if !root && layer_of(&module).is_none() {
            found.push(format!(
                "src/{}: the folder `{}` is not a layer (add it to LAYERS, and to ARCHITECTURE.md)",
                relative.display(),
                module[0]
            ));
        }
        let code = std::fs::read_to_string(file).unwrap_or_default();
        for breach in breaches(&module, &code) {
            found.push(format!(
                "src/{}:{}: `{}` imports `{}`, which is not below it",
                relative.display(),
                breach.line,
                breach.from,
                breach.to
            ));
        }
    }
    assert!(
        found.is_empty(),
        "imports that point up or sideways:\n{}",
        found.join("\n")
    );
}

#[test]
fn an_import_up_or_sideways_is_found() {
    let module = |path: &str| module_of(Path::new(path));
    let code = "use crate::model::Val;\nuse crate::engine::Request; // up\n\
                pub(crate) fn f() { crate::storage::Sql::new(b); }\n\
                use super::super::api::Tables;\n/// [`crate::http`] in a doc comment\n";
    assert_eq!(
        breaches(&module("storage/sql.rs"), code),
        vec![
            Breach {
                line: 2,
                from: "storage".into(),
                to: "engine".into()
            },
            Breach {
                line: 4,
                from: "storage".into(),
                to: "api".into()
            },
        ]
    );
    // Siblings of one rank, and APIs beside each other, do not import each other.
    assert_eq!(
        breaches(&module("query/page.rs"), "use crate::auth::Principal;").len(),
        1
    );
    assert_eq!(
        breaches(
            &module("api/simple/query.rs"),
            "use crate::api::permission::X;"
        )
        .len(),
        1
    );
    // Down, within the layer, the API layer's shared part, and the macro facade are fine.
    let fine = "use crate::query::Page;\nuse super::Request;\nuse crate::api::registry::x;\n\
                $crate::__codegen::Cells";
    assert!(breaches(&module("api/simple/query.rs"), fine).is_empty());
    assert!(breaches(&module("engine/read.rs"), "use super::Request;").is_empty());
    // Groups, also over several lines and nested, are followed item by item.
    let grouped = "use crate::{\n    model::Val,\n    engine::{Request, read},\n};\n\
                   use crate::{self as root, http::Service as S};\n";
    assert_eq!(
        breaches(&module("storage/db.rs"), grouped),
        vec![
            Breach {
                line: 1,
                from: "storage".into(),
                to: "engine".into()
            },
            Breach {
                line: 5,
                from: "storage".into(),
                to: "http".into()
            },
        ]
    );
    // From a folder's `mod.rs`, `super::` is the layer above the folder.
    assert_eq!(
        breaches(
            &module("storage/mod.rs"),
            "use super::{api::Tables, model};"
        )
        .len(),
        1
    );
}
