//! `svc-generator`: the schema compiler of svc. It reads a service definition (`svc.yml` plus the
//! `types.graphql` files it lists), checks it against the rules of the reference, and produces a
//! validated [`model::Model`] that the emitters turn into Rust.
//!
//! # Use from a build script
//!
//! A service is an ordinary crate with `svc-runtime` as dependency, `svc-generator` as build
//! dependency, and this `build.rs`:
//!
//! ```text
//! fn main() {
//!     svc_generator::build("svc.yml");
//! }
//! ```
//!
//! `src/lib.rs` includes the result with `include!(concat!(env!("OUT_DIR"), "/svc.rs"));` and
//! `src/main.rs` runs it with `svc_runtime::run::<my_service::Service>()`. The build prints every
//! diagnostic with `file:line:col` and fails if there is any.
//!
//! Entry point of the front end: [`frontend::load`]; of the emitters: [`emit::generate`]. Data flow: [`source`] → [`syntax`] → [`model::validate`] →
//! [`model::Valid`]`<`[`model::Model`]`>`; every problem on the way is a [`diagnostics::Diagnostic`].

pub mod diagnostics;
pub mod emit;
pub mod frontend;
pub mod model;
pub mod naming;
pub mod permissions;
pub mod source;
pub mod syntax;
pub mod write;

use std::path::{Path, PathBuf};

/// Name of the generated file in `OUT_DIR`.
pub const OUTPUT_FILE: &str = "svc.rs";

/// Why [`generate_to`] failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The model has problems; the text lists every one with its position.
    #[error("{0}")]
    Model(Box<frontend::Failure>),
    #[error("cannot write `{path}`: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Generates the service code for `svc_yml` into `out_dir/svc.rs`. Returns every input file read
/// (for `rerun-if-changed`).
pub fn generate_to(svc_yml: &Path, out_dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let loaded = frontend::load(svc_yml).map_err(|f| Error::Model(Box::new(f)))?;
    let cx = emit::EmitCx {
        source_name: svc_yml.file_name().map_or_else(
            || "svc.yml".to_owned(),
            |n| n.to_string_lossy().into_owned(),
        ),
    };
    let code = emit::generate(&loaded.model, &cx);
    let path = out_dir.join(OUTPUT_FILE);
    write::write_if_changed(&path, &code).map_err(|source| Error::Write { path, source })?;
    Ok(loaded.inputs)
}

/// The build-script entry: reads `svc_yml` (relative to the crate), writes `$OUT_DIR/svc.rs`, and
/// tells cargo to rerun when any input changes. On errors it prints them all and exits with 1, so
/// the build fails with the model's diagnostics instead of a panic trace.
pub fn build(svc_yml: impl AsRef<Path>) {
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
    let svc_yml = match &manifest_dir {
        Some(dir) => dir.join(svc_yml.as_ref()),
        None => svc_yml.as_ref().to_path_buf(),
    };
    println!("cargo:rerun-if-changed={}", svc_yml.display());
    let Some(out_dir) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        eprintln!(
            "error: `svc_generator::build` must run inside a build script (OUT_DIR is not set)"
        );
        std::process::exit(1);
    };
    match generate_to(&svc_yml, &out_dir) {
        Ok(inputs) => {
            for input in inputs {
                println!("cargo:rerun-if-changed={}", input.display());
            }
        }
        Err(err) => {
            if let Error::Model(failure) = &err {
                // Types files named in svc.yml are watched too, so fixing them reruns the build.
                for (_, file) in failure.sources.iter() {
                    if let Some(dir) = svc_yml.parent() {
                        println!("cargo:rerun-if-changed={}", dir.join(&file.path).display());
                    }
                }
            }
            eprintln!("{err}");
            eprintln!("error: the svc model has errors; the service was not generated");
            std::process::exit(1);
        }
    }
}
