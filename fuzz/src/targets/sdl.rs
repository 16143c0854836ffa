//! The model front end of the generator: a fuzzed `svc.yml` with its types files and permission
//! query files, in memory, through `svc_generator::frontend::check` (parsing and validating the
//! model), rendering every diagnostic, and, for a model that passes, the emitters.
//!
//! The input is `svc.yml`'s text, then files, each after a line `#### <path>`: a path without
//! `/` is a types file (in that order), any other (`permissions/user.graphql`) is a file the
//! model names (a permission query).
//!
//! Odd input must come back as diagnostics, never as a panic (ARCHITECTURE.md, "Invariants"),
//! and the code emitted for a valid model must parse as Rust.

use svc_generator::emit::{EmitCx, generate};
use svc_generator::frontend::check;
use svc_generator::source::Sources;

const SEPARATOR: &str = "#### ";

/// Runs one input (the module's header says what it is and what must hold).
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut parts: Vec<(String, String)> = vec![("svc.yml".to_owned(), String::new())];
    for line in text.split_inclusive('\n') {
        match line.strip_prefix(SEPARATOR) {
            Some(path) => parts.push((path.trim().to_owned(), String::new())),
            None => parts.last_mut().map(|p| p.1.push_str(line)).unwrap_or(()),
        }
    }
    let mut sources = Sources::new();
    let mut config = None;
    let mut types = Vec::new();
    for (path, text) in parts {
        let is_types = path != "svc.yml" && !path.contains('/');
        let id = sources.add(path, text);
        if config.is_none() {
            config = Some(id);
        } else if is_types {
            types.push(id);
        }
    }
    let Some(config) = config else {
        return;
    };
    match check(&sources, config, &types) {
        Err(diagnostics) => {
            let rendered = diagnostics.render(&sources);
            assert!(!rendered.is_empty(), "a failed check without a diagnostic");
        }
        Ok(model) => {
            let code = generate(
                &model,
                &EmitCx {
                    source_name: "svc.yml".to_owned(),
                },
            );
            if let Err(e) = syn::parse_file(&code) {
                panic!("the generated code does not parse as Rust: {e}\n{code}");
            }
        }
    }
}
