//! The service crate the CLI works on: where it is, its name, where cargo puts its binary, and
//! building it.

use anyhow::{Context as _, Result, bail};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A service crate: a directory with `svc.yml` and `Cargo.toml`.
#[derive(Debug, Clone)]
pub struct Service {
    pub dir: PathBuf,
}

impl Service {
    /// The service around the current directory (it or the nearest parent with `svc.yml` and
    /// `Cargo.toml`).
    pub fn find() -> Result<Service> {
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let mut dir = cwd.as_path();
        loop {
            if dir.join("svc.yml").is_file() && dir.join("Cargo.toml").is_file() {
                return Ok(Service {
                    dir: dir.to_path_buf(),
                });
            }
            match dir.parent() {
                Some(parent) => dir = parent,
                None => {
                    bail!(
                        "no service here: neither `{}` nor a parent directory holds `svc.yml` and `Cargo.toml` (create one with `svc init DIR`)",
                        cwd.display()
                    );
                }
            }
        }
    }

    /// `.svc/` inside the service directory (data, pid, log).
    pub fn state_dir(&self) -> PathBuf {
        self.dir.join(".svc")
    }

    /// The crate's name and the path of its debug binary, from `cargo metadata`.
    pub fn metadata(&self) -> Result<Metadata> {
        let manifest = self.dir.join("Cargo.toml");
        let output = cargo()
            .args([
                "metadata",
                "--format-version",
                "1",
                "--no-deps",
                "--manifest-path",
            ])
            .arg(&manifest)
            .stderr(Stdio::inherit())
            .output()
            .context("cannot run cargo")?;
        if !output.status.success() {
            bail!("`cargo metadata` failed for `{}`", manifest.display());
        }
        let json: serde_json::Value = serde_json::from_slice(&output.stdout)
            .context("cannot read the output of `cargo metadata`")?;
        let target_dir = json["target_directory"]
            .as_str()
            .context("`cargo metadata` printed no target directory")?;
        let canonical = manifest.canonicalize().unwrap_or(manifest.clone());
        let package = json["packages"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| {
                p["manifest_path"]
                    .as_str()
                    .is_some_and(|m| Path::new(m) == canonical || Path::new(m) == manifest)
            })
            .with_context(|| format!("`{}` defines no package", manifest.display()))?;
        let name = package["name"]
            .as_str()
            .context("`cargo metadata` printed a package without a name")?
            .to_owned();
        let binary = Path::new(target_dir)
            .join("debug")
            .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
        Ok(Metadata { name, binary })
    }

    /// `cargo build` of the service (its output goes to the terminal's stderr).
    pub fn build(&self) -> Result<()> {
        eprintln!("Building the service…");
        // From the service's directory, so that cargo reads its `.cargo/config.toml`.
        let status = cargo()
            .current_dir(&self.dir)
            .arg("build")
            .arg("--manifest-path")
            .arg(self.dir.join("Cargo.toml"))
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit())
            .status()
            .context("cannot run cargo")?;
        if status.success() {
            Ok(())
        } else {
            bail!("the service does not build (see cargo's messages above); nothing was deployed")
        }
    }
}

/// What cargo knows about the service crate.
#[derive(Debug, Clone)]
pub struct Metadata {
    pub name: String,
    pub binary: PathBuf,
}

/// The cargo that runs this CLI's builds: `$CARGO` when set (inside cargo), else `cargo`.
fn cargo() -> Command {
    let program = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    Command::new(program)
}
