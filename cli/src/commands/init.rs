//! `svc init`: renders the templates in the workspace's `templates/` into a new service crate.

use anyhow::{Context as _, Result, bail};
use std::path::{Path, PathBuf};

use handlebars::Handlebars;
use serde_json::json;

/// Each template, embedded in the binary, and the file it becomes.
const TEMPLATES: &[(&str, &str, &str)] = &[
    (
        "Cargo.toml",
        "Cargo.toml",
        include_str!("../../../templates/Cargo.toml.hbs"),
    ),
    (
        "build.rs",
        "build.rs",
        include_str!("../../../templates/build.rs.hbs"),
    ),
    (
        "lib.rs",
        "src/lib.rs",
        include_str!("../../../templates/lib.rs.hbs"),
    ),
    (
        "functions.rs",
        "src/functions.rs",
        include_str!("../../../templates/functions.rs.hbs"),
    ),
    (
        "hello.graphql",
        "src/hello.graphql",
        include_str!("../../../templates/hello.graphql.hbs"),
    ),
    (
        "main.rs",
        "src/main.rs",
        include_str!("../../../templates/main.rs.hbs"),
    ),
    (
        "svc.yml",
        "svc.yml",
        include_str!("../../../templates/svc.yml.hbs"),
    ),
    (
        "types.graphql",
        "types.graphql",
        include_str!("../../../templates/types.graphql.hbs"),
    ),
    (
        "gitignore",
        ".gitignore",
        include_str!("../../../templates/gitignore.hbs"),
    ),
    (
        "cargo-config.toml",
        ".cargo/config.toml",
        include_str!("../../../templates/cargo-config.toml.hbs"),
    ),
];

/// The directory this CLI was built from, when it still exists: then the new service depends on
/// the runtime and generator of this checkout by path.
fn checkout() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent()?;
    (root.join("runtime/Cargo.toml").is_file() && root.join("generator/Cargo.toml").is_file())
        .then(|| root.to_path_buf())
}

pub fn init(dir: &Path, name: Option<&str>) -> Result<()> {
    if dir.exists() {
        let mut entries =
            std::fs::read_dir(dir).with_context(|| format!("cannot read `{}`", dir.display()))?;
        if entries.next().is_some() {
            bail!(
                "`{}` exists and is not empty; choose a new directory",
                dir.display()
            );
        }
    }
    let name = match name {
        Some(name) => {
            check_name(name)?;
            name.to_owned()
        }
        None => name_from_dir(dir)?,
    };
    let (runtime, generator) = match checkout() {
        Some(root) => (
            format!(
                "{{ path = {} }}",
                toml_string(&root.join("runtime").display().to_string())
            ),
            format!(
                "{{ path = {} }}",
                toml_string(&root.join("generator").display().to_string())
            ),
        ),
        None => {
            let version = toml_string(env!("CARGO_PKG_VERSION"));
            (version.clone(), version)
        }
    };
    let data = json!({
        "name": name,
        "lib": name.replace('-', "_"),
        "runtime": runtime,
        "generator": generator,
    });
    let mut registry = Handlebars::new();
    registry.set_strict_mode(true);
    registry.register_escape_fn(handlebars::no_escape);
    let mut files = Vec::new();
    for (template, path, text) in TEMPLATES {
        let rendered = registry
            .render_template(text, &data)
            .with_context(|| format!("cannot render the template `{template}`"))?;
        files.push((dir.join(path), rendered));
    }
    for (path, text) in &files {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create `{}`", parent.display()))?;
        }
        std::fs::write(path, text).with_context(|| format!("cannot write `{}`", path.display()))?;
    }
    // The checkout's lock file pins the same dependency versions the checkout was built with, so
    // a shared target directory reuses those builds (cargo drops the entries it does not need).
    if let Some(root) = checkout() {
        let lock = root.join("Cargo.lock");
        if lock.is_file() {
            std::fs::copy(&lock, dir.join("Cargo.lock"))
                .with_context(|| format!("cannot copy `{}`", lock.display()))?;
        }
    }
    println!("Created the service `{name}` in {}:", dir.display());
    for (path, _) in &files {
        let shown = path.strip_prefix(dir).unwrap_or(path);
        println!("  {}", shown.display());
    }
    println!("\nNext:\n  cd {}\n  svc deploy", dir.display());
    Ok(())
}

/// A crate name: ASCII letters, digits, `-` and `_`, starting with a letter.
fn check_name(name: &str) -> Result<()> {
    let mut chars = name.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if valid {
        Ok(())
    } else {
        bail!(
            "`{name}` is not a valid crate name: use ASCII letters, digits, `-` and `_`, starting with a letter"
        )
    }
}

/// The crate name derived from the directory's name (lower case, other characters as `-`).
fn name_from_dir(dir: &Path) -> Result<String> {
    let absolute =
        std::path::absolute(dir).with_context(|| format!("cannot resolve `{}`", dir.display()))?;
    let base = absolute
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let name = name.trim_matches('-').to_owned();
    if check_name(&name).is_err() {
        bail!(
            "cannot derive a crate name from the directory `{}`; pass `--name NAME`",
            dir.display()
        );
    }
    Ok(name)
}

/// A TOML basic string.
fn toml_string(text: &str) -> String {
    let mut out = String::from('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(check_name("my-service").is_ok());
        assert!(check_name("9lives").is_err());
        assert!(check_name("a b").is_err());
        assert_eq!(name_from_dir(Path::new("/tmp/My Shop")).unwrap(), "my-shop");
    }

    /// The line of a cargo configuration that sets `LIBSQLITE3_FLAGS`.
    fn sqlite_flags(config: &str) -> Option<&str> {
        config
            .lines()
            .find(|line| line.starts_with("LIBSQLITE3_FLAGS"))
    }

    /// A new service compiles SQLite as the workspace does, so its build shares the workspace's
    /// (a different `LIBSQLITE3_FLAGS` rebuilds libsqlite3-sys and all that depends on it).
    #[test]
    fn services_build_sqlite_like_the_workspace() {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.cargo/config.toml");
        let workspace = std::fs::read_to_string(&workspace).expect("the workspace's config");
        let (_, _, template) = TEMPLATES
            .iter()
            .find(|(name, _, _)| *name == "cargo-config.toml")
            .expect("the template");
        assert!(sqlite_flags(template).is_some());
        assert_eq!(sqlite_flags(template), sqlite_flags(&workspace));
    }

    #[test]
    fn toml_strings() {
        assert_eq!(toml_string(r#"C:\a "b""#), r#""C:\\a \"b\"""#);
    }
}
