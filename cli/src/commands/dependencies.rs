//! The npm dependencies of a service's JavaScript handlers (`code:`): `svc deploy` runs
//! `npm install` in each directory whose `package.json` a handler's module would resolve
//! packages from (the nearest one above the module, up to the service's directory).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context as _, Result, bail};
use svc_generator::model::{Handler, Model};

/// A directory with a `package.json` and the functions whose modules use it.
#[derive(Debug, PartialEq)]
pub struct Package {
    pub dir: PathBuf,
    pub functions: Vec<String>,
}

/// The packages the `code:` handlers of `model` use, in the order of their first function.
pub fn packages(service_dir: &Path, model: &Model) -> Vec<Package> {
    let mut packages: Vec<Package> = Vec::new();
    for f in &model.functions {
        let Handler::Code { src, .. } = &f.handler else {
            continue;
        };
        let module = service_dir.join(src);
        let Some(dir) = nearest_package(service_dir, &module) else {
            continue;
        };
        match packages.iter_mut().find(|p| p.dir == dir) {
            Some(package) => package.functions.push(f.name.clone()),
            None => packages.push(Package {
                dir,
                functions: vec![f.name.clone()],
            }),
        }
    }
    packages
}

/// The nearest directory above `module` holding a `package.json`, not above `service_dir`.
fn nearest_package(service_dir: &Path, module: &Path) -> Option<PathBuf> {
    let top = std::path::absolute(service_dir).unwrap_or_else(|_| service_dir.to_path_buf());
    let module = std::path::absolute(module).unwrap_or_else(|_| module.to_path_buf());
    let mut dir = module.parent()?;
    loop {
        if dir.join("package.json").is_file() {
            return Some(dir.to_path_buf());
        }
        if dir == top || !dir.starts_with(&top) {
            return None;
        }
        dir = dir.parent()?;
    }
}

/// Runs `npm install` (npm's output on stderr) for each package, saying so first.
pub fn install(service_dir: &Path, packages: &[Package]) -> Result<()> {
    for package in packages {
        let shown = match package.dir.strip_prefix(service_dir) {
            Ok(p) if p.as_os_str().is_empty() => ".".to_owned(),
            Ok(p) => format!("./{}", p.display()),
            Err(_) => package.dir.display().to_string(),
        };
        let names = package
            .functions
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ");
        eprintln!("Installing the dependencies of {names}: npm install in {shown}…");
        let status = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund"])
            .current_dir(&package.dir)
            .stdout(Stdio::from(std::io::stderr()))
            .stderr(Stdio::inherit())
            .status();
        match status {
            Ok(status) if status.success() => {}
            Ok(status) => bail!(
                "`npm install` in {shown} failed ({status}); the dependencies of {names} are missing, nothing was deployed"
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
                "{names} depend on packages ({shown}/package.json), but `npm` is not on the PATH: install Node.js with npm; nothing was deployed"
            ),
            Err(e) => {
                return Err(e).with_context(|| format!("cannot run `npm install` in {shown}"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("a directory");
        std::fs::write(path, text).expect("a file");
    }

    /// A service with three JavaScript handlers: two under `src/` (with a `package.json` at
    /// the service's root) and one under `lib/` (with its own); and a webhook.
    fn service(dir: &Path) -> Model {
        write(
            &dir.join("svc.yml"),
            "types: ./types.graphql\nfunctions:\n  \
             a:\n    type: operationBefore\n    operation: Note.create\n    handler:\n      code: ./src/a.js\n  \
             b:\n    type: operationAfter\n    operation: Note.create\n    handler:\n      code:\n        src: src/deep/b.js\n  \
             c:\n    type: operationBefore\n    operation: Note.update\n    handler:\n      code: ./lib/c.js\n  \
             d:\n    type: operationBefore\n    operation: Note.delete\n    handler:\n      webhook: http://127.0.0.1:1/\n",
        );
        write(
            &dir.join("types.graphql"),
            "type Note @model {\n  id: ID! @isUnique\n  text: String\n}\n",
        );
        svc_generator::frontend::load(&dir.join("svc.yml"))
            .unwrap_or_else(|f| panic!("{f}"))
            .model
            .into_inner()
    }

    #[test]
    fn handlers_use_the_nearest_package_json_in_the_service() {
        let dir = tempfile::tempdir().expect("a directory");
        let model = service(dir.path());
        assert_eq!(packages(dir.path(), &model), vec![]);
        write(&dir.path().join("package.json"), "{}");
        write(&dir.path().join("lib/package.json"), "{}");
        assert_eq!(
            packages(dir.path(), &model),
            vec![
                Package {
                    dir: dir.path().to_path_buf(),
                    functions: vec!["a".into(), "b".into()],
                },
                Package {
                    dir: dir.path().join("lib"),
                    functions: vec!["c".into()],
                },
            ]
        );
    }

    /// `npm install` of a package with a local dependency (no registry needed); skipped
    /// outside CI when npm is missing.
    #[test]
    fn install_runs_npm_install() {
        let npm = Command::new("npm").arg("--version").output();
        if !npm.is_ok_and(|o| o.status.success()) {
            assert!(
                !std::env::var("CI").is_ok_and(|v| v == "true"),
                "CI=true, but `npm` is not on the PATH"
            );
            eprintln!("notice: `npm` is missing; skipping the test of npm install");
            return;
        }
        let dir = tempfile::tempdir().expect("a directory");
        let model = service(dir.path());
        write(
            &dir.path().join("package.json"),
            r#"{ "name": "svc-test", "private": true, "dependencies": { "greeter": "file:./greeter" } }"#,
        );
        write(
            &dir.path().join("greeter/package.json"),
            r#"{ "name": "greeter", "version": "1.0.0", "main": "index.js" }"#,
        );
        write(
            &dir.path().join("greeter/index.js"),
            "module.exports = (n) => `hi ${n}`;\n",
        );
        install(dir.path(), &packages(dir.path(), &model)).expect("npm install");
        assert!(
            dir.path().join("node_modules/greeter/index.js").is_file(),
            "npm installed the dependency"
        );
        // A broken package.json fails the deploy, naming the directory.
        write(&dir.path().join("lib/package.json"), "{ not json");
        let e =
            install(dir.path(), &packages(dir.path(), &model)).expect_err("a broken package.json");
        assert!(e.to_string().contains("./lib"), "{e}");
        assert!(e.to_string().contains("`c`"), "{e}");
    }
}
