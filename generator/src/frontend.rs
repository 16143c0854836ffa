//! The front end's public entry: from the path of `svc.yml` to a validated model, or to every
//! problem found, rendered with positions.
//!
//! [`load`] does the I/O (and records every file it read, for `cargo:rerun-if-changed`); [`check`]
//! is the same pipeline over files already in memory, for tests and tools.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::diagnostics::{Diagnostic, Diagnostics};
use crate::model::{Handler, Model, Valid};
use crate::source::{FileId, Sources};
use crate::syntax::config::{self, Config};
use crate::syntax::sdl;
use crate::{permissions, service_functions};

/// A service that passed every check.
#[derive(Debug)]
pub struct Loaded {
    /// The validated model, with JavaScript handlers' module directory set (relative to
    /// `CARGO_MANIFEST_DIR` when `svc.yml` lies under it).
    pub model: Valid<Model>,
    /// The files read (`svc.yml`, the types files, the permission query files, the resolvers'
    /// schema files and the subscriptions' query files), by the paths diagnostics show.
    pub sources: Sources,
    /// Every file read (absolute paths), for `cargo:rerun-if-changed`.
    pub inputs: Vec<PathBuf>,
    /// The environment variables `svc.yml`'s `${env:…}` looked up, for
    /// `cargo:rerun-if-env-changed`.
    pub env_read: Vec<String>,
}

/// A service with problems. `Display` renders all of them.
#[derive(Debug)]
pub struct Failure {
    /// The files that were read, which the diagnostics point into.
    pub sources: Sources,
    /// Every problem found, sorted by position.
    pub diagnostics: Diagnostics,
    /// The environment variables `svc.yml`'s `${env:…}` looked up (setting one may fix a
    /// problem).
    pub env_read: Vec<String>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.diagnostics.render(&self.sources))
    }
}

impl std::error::Error for Failure {}

/// Reads `svc.yml`, the types files and the permission query files it lists, and validates them.
///
/// Paths in diagnostics are relative to the directory of `svc.yml` (which itself shows as its file
/// name), so messages read the same on every machine. A types file that cannot be read is reported
/// at the `types:` entry that names it.
pub fn load(svc_yml: &Path) -> Result<Loaded, Failure> {
    let mut sources = Sources::new();
    let svc_yml = std::path::absolute(svc_yml).unwrap_or_else(|_| svc_yml.to_path_buf());
    let text = match std::fs::read_to_string(&svc_yml) {
        Ok(text) => text,
        Err(err) => {
            let mut diagnostics = Diagnostics::new();
            diagnostics.push(
                Diagnostic::global(format!("could not read `{}`: {err}", svc_yml.display()))
                    .with_help("pass the path of the service's `svc.yml`"),
            );
            return Err(Failure {
                sources,
                diagnostics,
                env_read: Vec::new(),
            });
        }
    };
    let dir = svc_yml.parent().map(Path::to_path_buf).unwrap_or_default();
    let shown = svc_yml
        .file_name()
        .map_or_else(|| PathBuf::from("svc.yml"), PathBuf::from);
    let config_file = sources.add(shown, text);
    let mut diags = Diagnostics::new();
    let config = config::parse(&sources, config_file, &process_env, &mut diags);
    let mut inputs = vec![svc_yml.clone()];
    let mut type_files = Vec::new();
    let mut all_read = true;
    for entry in &config.types {
        let path = dir.join(&entry.value);
        inputs.push(path.clone());
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let shown = entry.value.strip_prefix("./").unwrap_or(&entry.value);
                type_files.push(sources.add(shown, text));
            }
            Err(err) => {
                all_read = false;
                diags.push(
                    Diagnostic::new(
                        entry.span,
                        format!(
                            "could not read the types file `{}`: {}",
                            entry.value,
                            io_reason(&err)
                        ),
                    )
                    .with_help("paths under `types:` are relative to the directory of `svc.yml`"),
                );
            }
        }
    }
    // Permission query files, once each. One that cannot be read stays out of `sources`, and
    // the permission check reports it with the reference's text at the `query:` value.
    for p in &config.permissions {
        let Some(query) = &p.query else {
            continue;
        };
        let (path, _) = permissions::split_query_value(&query.value);
        let shown = permissions::shown_path(path);
        if p.operation.value == "*" || sources.find(shown).is_some() {
            continue;
        }
        let full = dir.join(path);
        if let Ok(text) = std::fs::read_to_string(&full) {
            inputs.push(full);
            sources.add(shown, text);
        }
    }
    // Resolvers' schema files and server-side subscriptions' query files, once each; one that
    // cannot be read stays out of `sources` and `service_functions::resolvers` reports it at its value.
    for f in &config.functions {
        let Some(schema) = f.schema.as_ref().or(f.query.as_ref()) else {
            continue;
        };
        let shown = permissions::shown_path(&schema.value);
        if sources.find(shown).is_some() {
            continue;
        }
        let full = dir.join(&schema.value);
        if let Ok(text) = std::fs::read_to_string(&full) {
            inputs.push(full);
            sources.add(shown, text);
        }
    }
    let res = if all_read {
        run(&sources, &config, &type_files, diags)
    } else {
        diags.sort();
        Err(diags)
    };
    match res {
        Ok(model) => Ok(Loaded {
            model: with_module_dir(model, &dir),
            sources,
            inputs,
            env_read: config.env_read,
        }),
        Err(diagnostics) => Err(Failure {
            sources,
            diagnostics,
            env_read: config.env_read,
        }),
    }
}

/// `model` with the directory JavaScript handlers' modules are relative to (`dir`, that of
/// `svc.yml`): relative to `CARGO_MANIFEST_DIR` when it lies under it, so the generated code
/// names no path of the machine it was built on.
fn with_module_dir(model: Valid<Model>, dir: &Path) -> Valid<Model> {
    if !model
        .functions
        .iter()
        .any(|f| matches!(f.handler, Handler::Code { .. }))
    {
        return model;
    }
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
    let shown = match manifest.as_deref().and_then(|m| dir.strip_prefix(m).ok()) {
        Some(relative) => relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/"),
        None => dir.display().to_string(),
    };
    let mut model = model.into_inner();
    for f in &mut model.functions {
        if let Handler::Code { dir, .. } = &mut f.handler {
            dir.clone_from(&shown);
        }
    }
    Valid::assume_valid(model)
}

/// An environment variable of this process, for `${env:…}` in `svc.yml` (one that is not valid
/// Unicode counts as not set).
fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Validates files that are already loaded: `config_file` is `svc.yml`, `type_files` are the
/// types files in concatenation order. No I/O; the `types:` entries of the config are not read,
/// and permission query files are looked up in `sources` by their path as written (without a
/// leading `./`).
pub fn check(
    sources: &Sources,
    config_file: FileId,
    type_files: &[FileId],
) -> Result<Valid<Model>, Diagnostics> {
    let mut diags = Diagnostics::new();
    let config = config::parse(sources, config_file, &process_env, &mut diags);
    run(sources, &config, type_files, diags)
}

/// Parses the types files and validates them with the config. `diags` holds the config's
/// problems so far; everything is reported together.
fn run(
    sources: &Sources,
    config: &Config,
    type_files: &[FileId],
    mut diags: Diagnostics,
) -> Result<Valid<Model>, Diagnostics> {
    let mut parsed = Vec::new();
    let mut syntax_ok = true;
    for &file in type_files {
        match sdl::parse(sources, file, &mut diags) {
            Some(f) => parsed.push(f),
            None => syntax_ok = false,
        }
    }
    // With a syntax error the schema is incomplete, and model rules would report follow-up
    // errors about whatever the broken part declared.
    if syntax_ok {
        // The system types come last, unless the service declares a type of that name itself
        // (the rules of `validate::system` then check its declaration).
        if !parsed.iter().any(|f| declares(f, "File")) {
            parsed.extend(sdl::parse(sources, FileId::SYSTEM, &mut diags));
        }
        match validate(sources, &parsed, config) {
            Ok(model) if diags.is_empty() => return Ok(model),
            Ok(_) => {}
            Err(more) => diags.extend(more),
        }
    }
    diags.sort();
    Err(diags)
}

/// Whether a types file defines a type (of any kind) named `name`.
fn declares(file: &sdl::SdlFile, name: &str) -> bool {
    file.document
        .definitions
        .iter()
        .any(|d| d.name().is_some_and(|n| n == name))
}

/// Checks the parsed types files and `svc.yml` together and builds the model: the rules of
/// reference §1 ([`crate::model::validate`]), then the functions and the permission queries,
/// which need the model. This is the only way to a [`Valid<Model>`].
///
/// `files` are in the order `svc.yml` lists them (their concatenation is the schema); the
/// permission query files are looked up in `sources` (see [`permissions`]). Query files are
/// loaded and parsed even when the model has errors; they are checked against the permission
/// schema only when it has none.
pub fn validate(
    sources: &Sources,
    files: &[sdl::SdlFile],
    config: &Config,
) -> Result<Valid<Model>, Diagnostics> {
    let mut diags = Diagnostics::new();
    let mut query_diags = Diagnostics::new();
    let queries = permissions::select_queries(sources, config, &mut query_diags);
    let resolvers = service_functions::resolvers(sources, config, &mut diags);
    if let Some(mut model) = crate::model::validate::rules(files, config, &mut diags) {
        service_functions::lower(&mut model, sources, config, resolvers, &mut query_diags);
        permissions::compile(&mut model, config, &queries, &mut query_diags);
        if query_diags.is_empty() {
            return Ok(Valid::assume_valid(model));
        }
    }
    diags.extend(query_diags);
    diags.sort();
    Err(diags)
}

/// A model from one types file (`t.graphql`, with `svc.yml` naming only it), through the whole
/// front end; panics with the rendered diagnostics. For tests.
#[cfg(test)]
pub(crate) fn model_from_sdl(types: &str) -> Valid<Model> {
    let mut sources = Sources::new();
    let config = sources.add("svc.yml", "types: t.graphql\n");
    let file = sources.add("t.graphql", types);
    check(&sources, config, &[file]).unwrap_or_else(|d| panic!("{}", d.render(&sources)))
}

/// A short, platform-independent reason (OS messages differ between systems, and rendered
/// diagnostics are compared byte for byte in tests).
fn io_reason(err: &std::io::Error) -> String {
    match err.kind() {
        std::io::ErrorKind::NotFound => "the file does not exist".to_owned(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        kind => kind.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_check(yml: &str, types: &[&str]) -> Result<Valid<Model>, String> {
        let mut sources = Sources::new();
        let config = sources.add("svc.yml", yml);
        let files: Vec<FileId> = types
            .iter()
            .enumerate()
            .map(|(i, t)| sources.add(format!("t{i}.graphql"), *t))
            .collect();
        check(&sources, config, &files).map_err(|d| d.render(&sources))
    }

    #[test]
    fn check_works_in_memory() {
        let model = run_check(
            "types: [t0.graphql, t1.graphql]\n",
            &[
                "type A @model { id: ID! @isUnique b: B @relation(name: \"AB\") }",
                "type B @model { id: ID! @isUnique a: A @relation(name: \"AB\") }",
            ],
        );
        let model = model.unwrap_or_else(|e| panic!("{e}"));
        // The two declared types, then the system type `File`.
        let names: Vec<&str> = model.types.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["A", "B", "File"]);
        assert_eq!(model.relations.len(), 1);
    }

    /// Odd inputs must come back as diagnostics, never as a panic.
    #[test]
    fn odd_inputs_do_not_panic() {
        let deep = format!(
            "type A @model {{ id: {}ID{} }}",
            "[".repeat(300),
            "]".repeat(300)
        );
        let long = format!(
            "type B @model {{ id: ID! @isUnique x: Int @defaultValue(value: \"{}\") }}",
            "9".repeat(400)
        );
        let inputs: Vec<(&str, Vec<&str>)> = vec![
            ("", vec![]),
            ("- a\n- b\n", vec![]),
            (
                "types: 1\npermissions: {a: 1}\nrootTokens: x\nfunctions: [1]\n",
                vec![],
            ),
            (
                "types: t0.graphql\n\u{0}\u{ff}:\n  - é: [\n",
                vec!["\u{feff}"],
            ),
            (
                "types: t0.graphql\npermissions:\n  - 1\n  - operation: 2\n  - {operation: '*', fields: [1]}\n",
                vec!["type"],
            ),
            (
                "types: t0.graphql\nfunctions:\n  f:\n    type: operationAfter\n    operation: x\n    handler: {code: {}, webhook: 1}\n",
                vec!["enum E { é }"],
            ),
            ("types: t0.graphql\n", vec![deep.as_str()]),
            ("types: t0.graphql\n", vec![long.as_str()]),
            (
                "types: t0.graphql\n",
                vec![
                    "type A @model { id: ID! @isUnique d: DateTime @defaultValue(value: \"9999-12-31T23:59:59-23:59\") }",
                ],
            ),
            (
                "types: t0.graphql\n",
                vec!["type A @model @rename { id: ID! @isUnique a: [A!]! @relation(name: \"\") }"],
            ),
        ];
        for (yml, types) in inputs {
            let res = run_check(yml, &types);
            assert!(res.is_err(), "{yml:?} {types:?} should fail");
        }
    }
}
