//! `svc-generator`: the schema compiler of svc. It reads a service definition (`svc.yml` plus the
//! `types.graphql` files it lists), checks it against the rules of the reference, and produces a
//! validated [`model::Model`] that the emitters turn into Rust.
//!
//! # Use from a build script
//!
//! A service is an ordinary crate with `svc-runtime` as dependency, `svc-generator` as build
//! dependency, and this `build.rs`:
//!
//! ```no_run
//! // build.rs: the whole of `fn main`
//! svc_generator::build("svc.yml");
//! ```
//!
//! `src/lib.rs` includes the result with `include!(concat!(env!("OUT_DIR"), "/svc.rs"));` and
//! `src/main.rs` runs it with `svc_runtime::run::<my_service::Service>()`. The build prints every
//! diagnostic with `file:line:col` and fails if there is any.
//!
//! # Use from a macro
//!
//! `svc_macros::service!("svc.yml")` expands to the same code without a build script: both go
//! through [`generate`], which returns the code and its input files instead of writing them.
//!
//! Entry point of the front end: [`frontend::load`]; of the emitters: [`emit::generate`]. Data flow: [`source`] → [`syntax`] → [`model::validate`] →
//! [`model::Valid`]`<`[`model::Model`]`>`; every problem on the way is a [`diagnostics::Diagnostic`].

// Every public item is documented; CI (clippy with `-D warnings`, and `cargo doc`) holds it so.
#![warn(missing_docs)]

pub mod diagnostics;
pub mod emit;
pub mod frontend;
pub mod model;
pub mod naming;
pub mod permissions;
pub mod service_functions;
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
    /// The generated code could not be written to `OUT_DIR`.
    #[error("cannot write `{path}`: {source}")]
    Write {
        /// The file that could not be written (`<out_dir>/svc.rs`).
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// What [`generate`] produces for one service.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The whole generated module as formatted Rust source (what `$OUT_DIR/svc.rs` holds).
    pub code: String,
    /// Every input file read (absolute paths): `svc.yml`, the types files and the permission
    /// query files. A build script watches them with `rerun-if-changed`; the `service!` macro
    /// makes its expansion depend on them.
    pub inputs: Vec<PathBuf>,
    /// The environment variables `svc.yml`'s `${env:…}` looked up, set or not: a build script
    /// watches them with `rerun-if-env-changed`, and the `service!` macro's expansion reads them
    /// with `option_env!` so that the compiler tracks them.
    pub env: Vec<String>,
}

/// Reads, validates and generates the service at `svc_yml`, writing nothing. This is the one
/// generation path: [`generate_to`] (and so [`build`]) writes its result to a file, and the
/// `service!` macro of `svc-macros` expands to it. On problems in the model the
/// [`frontend::Failure`] renders every diagnostic with its `file:line:col`.
pub fn generate(svc_yml: &Path) -> Result<Generated, Box<frontend::Failure>> {
    let loaded = frontend::load(svc_yml).map_err(Box::new)?;
    let cx = emit::EmitCx {
        source_name: svc_yml.file_name().map_or_else(
            || "svc.yml".to_owned(),
            |n| n.to_string_lossy().into_owned(),
        ),
    };
    Ok(Generated {
        code: emit::generate(&loaded.model, &cx),
        inputs: loaded.inputs,
        env: loaded.env_read,
    })
}

/// Generates the service code for `svc_yml` into `out_dir/svc.rs` (see [`generate`]). Returns
/// every input file read (for `rerun-if-changed`).
pub fn generate_to(svc_yml: &Path, out_dir: &Path) -> Result<Vec<PathBuf>, Error> {
    Ok(generate_into(svc_yml, out_dir)?.inputs)
}

/// [`generate_to`], answering what [`generate`] does.
fn generate_into(svc_yml: &Path, out_dir: &Path) -> Result<Generated, Error> {
    let generated = generate(svc_yml).map_err(Error::Model)?;
    let path = out_dir.join(OUTPUT_FILE);
    write::write_if_changed(&path, &generated.code)
        .map_err(|source| Error::Write { path, source })?;
    Ok(generated)
}

/// `svc_yml` resolved against the `CARGO_MANIFEST_DIR` of the crate being built (as it is when
/// cargo runs a build script or expands a proc macro); unchanged when that is not set or when
/// `svc_yml` is absolute.
pub fn manifest_relative(svc_yml: &Path) -> PathBuf {
    match std::env::var_os("CARGO_MANIFEST_DIR") {
        Some(dir) => PathBuf::from(dir).join(svc_yml),
        None => svc_yml.to_path_buf(),
    }
}

/// The build-script entry: reads `svc_yml` (relative to the crate), writes `$OUT_DIR/svc.rs`, and
/// tells cargo to rerun when any input changes. On errors it prints them all and exits with 1, so
/// the build fails with the model's diagnostics instead of a panic trace.
pub fn build(svc_yml: impl AsRef<Path>) {
    let svc_yml = manifest_relative(svc_yml.as_ref());
    println!("cargo:rerun-if-changed={}", svc_yml.display());
    let Some(out_dir) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        eprintln!(
            "error: `svc_generator::build` must run inside a build script (OUT_DIR is not set)"
        );
        std::process::exit(1);
    };
    match generate_into(&svc_yml, &out_dir) {
        Ok(generated) => {
            for input in generated.inputs {
                println!("cargo:rerun-if-changed={}", input.display());
            }
            for name in generated.env {
                println!("cargo:rerun-if-env-changed={name}");
            }
        }
        Err(err) => {
            if let Error::Model(failure) = &err {
                for name in &failure.env_read {
                    println!("cargo:rerun-if-env-changed={name}");
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `build()` and the `service!` macro share one path: the file `generate_to` writes is exactly
    /// the code `generate` returns, and both report the same inputs.
    #[test]
    fn generate_to_writes_what_generate_returns() {
        let svc_yml =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("test_data/models/0008_permissions/svc.yml");
        let out = std::env::temp_dir().join(format!("svc-generate-to-{}", std::process::id()));
        let inputs = generate_to(&svc_yml, &out).unwrap_or_else(|err| panic!("{err}"));
        let generated = generate(&svc_yml).unwrap_or_else(|err| panic!("{err}"));
        let written = std::fs::read_to_string(out.join(OUTPUT_FILE));
        let _ = std::fs::remove_dir_all(&out);
        assert_eq!(written.ok().as_deref(), Some(generated.code.as_str()));
        assert_eq!(inputs, generated.inputs);
        assert!(
            inputs.len() > 2,
            "svc.yml, types and permission files: {inputs:?}"
        );
    }
}
