//! Configuration files: the service directory's `.svcrc` (targets), the user's `~/.svcrc`
//! (clusters, platform token) and `.svc/local.yml` (the local server's port and database URL).

use anyhow::{Context as _, Result, anyhow, bail};
use std::path::{Path, PathBuf};

use serde_yaml::{Mapping, Value};

/// A YAML file read as a mapping (empty when the file does not exist).
#[derive(Debug)]
pub struct YamlFile {
    pub path: PathBuf,
    pub root: Mapping,
}

impl YamlFile {
    pub fn load(path: PathBuf) -> Result<YamlFile> {
        let root = match std::fs::read_to_string(&path) {
            Ok(text) if text.trim().is_empty() => Mapping::new(),
            Ok(text) => match serde_yaml::from_str::<Value>(&text)
                .with_context(|| format!("cannot parse `{}`", path.display()))?
            {
                Value::Mapping(map) => map,
                Value::Null => Mapping::new(),
                _ => bail!("`{}` must hold a YAML mapping", path.display()),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Mapping::new(),
            Err(e) => {
                return Err(e).with_context(|| format!("cannot read `{}`", path.display()));
            }
        };
        Ok(YamlFile { path, root })
    }

    pub fn save(&self) -> Result<()> {
        let text = serde_yaml::to_string(&self.root)
            .with_context(|| format!("cannot write `{}`", self.path.display()))?;
        if let Some(parent) = self.path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create `{}`", parent.display()))?;
        }
        std::fs::write(&self.path, text)
            .with_context(|| format!("cannot write `{}`", self.path.display()))
    }

    /// The string at a key path, e.g. `["clusters", "local", "host"]`.
    pub fn get(&self, path: &[&str]) -> Option<String> {
        let mut value = self.root.get(path.first()?)?;
        for key in &path[1..] {
            value = value.as_mapping()?.get(key)?;
        }
        match value {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    }

    /// Sets the string at a key path, creating the mappings on the way.
    pub fn set(&mut self, path: &[&str], value: Value) {
        let mut map = &mut self.root;
        for key in &path[..path.len() - 1] {
            let key = Value::String((*key).to_owned());
            if !map.get(&key).is_some_and(Value::is_mapping) {
                map.insert(key.clone(), Value::Mapping(Mapping::new()));
            }
            map = map
                .get_mut(&key)
                .and_then(Value::as_mapping_mut)
                .expect("just inserted");
        }
        map.insert(Value::String(path[path.len() - 1].to_owned()), value);
    }
}

/// `~/.svcrc` (HOME decides where it is).
pub fn global() -> Result<YamlFile> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .context("HOME is not set: cannot find `~/.svcrc`")?;
    YamlFile::load(Path::new(&home).join(".svcrc"))
}

/// The service directory's `.svcrc`.
pub fn local(service_dir: &Path) -> Result<YamlFile> {
    YamlFile::load(service_dir.join(".svcrc"))
}

/// `.svc/local.yml`: how `svc deploy` runs the local server (`port`, `databaseUrl`).
pub fn server_settings(service_dir: &Path) -> Result<YamlFile> {
    YamlFile::load(service_dir.join(".svc").join("local.yml"))
}

/// A deployment target: `<cluster>/<service id>`.
#[derive(Debug, Clone)]
pub struct Target {
    pub name: String,
    pub cluster: String,
    /// Unknown until the first deploy.
    pub service_id: Option<String>,
}

impl Target {
    pub fn is_local(&self) -> bool {
        self.cluster == "local"
    }
}

/// The target named by `-t`, else `SVC_TARGET`, else `targets.default` in `.svcrc`, else `local`.
/// A name is looked up in `targets:`; a value `<cluster>/<id>` may also be given directly.
pub fn target(local_rc: &YamlFile, requested: Option<&str>) -> Result<Target> {
    let requested = requested
        .map(str::to_owned)
        .or_else(|| std::env::var("SVC_TARGET").ok().filter(|t| !t.is_empty()));
    let name = match requested {
        Some(name) => name,
        None => local_rc
            .get(&["targets", "default"])
            .unwrap_or_else(|| "local".to_owned()),
    };
    // `default: dev` names another entry; follow a few such steps.
    let mut value = name.clone();
    for _ in 0..4 {
        if value.contains('/') {
            break;
        }
        match local_rc.get(&["targets", &value]) {
            Some(next) if next != value => value = next,
            _ => break,
        }
    }
    match value.split_once('/') {
        Some((cluster, id)) if !cluster.is_empty() && !id.is_empty() => Ok(Target {
            name,
            cluster: cluster.to_owned(),
            service_id: Some(id.to_owned()),
        }),
        _ if value == "local" => Ok(Target {
            name,
            cluster: "local".to_owned(),
            service_id: None,
        }),
        _ => Err(anyhow!(
            "unknown target `{name}`: `.svcrc` has no such entry in `targets:` (expected `<cluster>/<service id>`)"
        )),
    }
}

/// Hides the password of a database URL.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rc(text: &str) -> YamlFile {
        YamlFile {
            path: PathBuf::from(".svcrc"),
            root: serde_yaml::from_str(text).unwrap(),
        }
    }

    #[test]
    fn targets() {
        let file = rc("targets:\n  default: dev\n  dev: local/abc\n  prod: remote/xyz\n");
        let t = target(&file, None).unwrap();
        assert_eq!((t.name.as_str(), t.cluster.as_str()), ("dev", "local"));
        assert_eq!(t.service_id.as_deref(), Some("abc"));
        let t = target(&file, Some("prod")).unwrap();
        assert_eq!(t.cluster, "remote");
        assert!(target(&file, Some("nope")).is_err());
        let t = target(&rc("{}"), Some("local")).unwrap();
        assert!(t.is_local() && t.service_id.is_none());
    }

    #[test]
    fn set_and_get() {
        let mut file = rc("{}");
        file.set(&["clusters", "local", "clusterSecret"], Value::from("s"));
        assert_eq!(
            file.get(&["clusters", "local", "clusterSecret"]).as_deref(),
            Some("s")
        );
    }

    #[test]
    fn redacts() {
        assert_eq!(redact("postgres://u:pw@h/db"), "postgres://u:***@h/db");
        assert_eq!(redact("sqlite:///a/b.db"), "sqlite:///a/b.db");
    }
}
