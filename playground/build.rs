//! Fetches the playground's third-party assets at build time: GraphiQL's browser bundle and
//! stylesheet, and the React it runs on, from the npm registry at pinned versions.
//!
//! No crate on crates.io ships GraphiQL's built files, and bundles of third-party code are not
//! committed to this repository, so the build downloads the three npm tarballs, checks each
//! against its pinned `sha512` integrity (the one `npm` itself records), and extracts only the
//! files the page loads (and the packages' licences) into `OUT_DIR`, which `lib.rs` embeds. The
//! download runs `curl` (or `wget` where there is no `curl`) so that no HTTP client is compiled
//! for the build. A tarball already fetched into `OUT_DIR` is reused when it still verifies.
//!
//! `SVC_PLAYGROUND_TARBALLS=<folder>` takes the tarballs from a folder instead (for builds
//! without network access), under npm's names: `graphiql-4.1.2.tgz`, `react-18.3.1.tgz`,
//! `react-dom-18.3.1.tgz`. They are verified the same way.
//!
//! When the assets cannot be had (no network, a tarball that does not verify) the build does not
//! fail: it warns, and sets the cfg `svc_playground_missing`, under which the crate serves a page
//! saying so instead of the playground. The APIs do not depend on the playground.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use base64::Engine;
use sha2::{Digest, Sha512};

/// The environment variable naming a folder that holds the tarballs.
const TARBALLS_ENV: &str = "SVC_PLAYGROUND_TARBALLS";

/// An npm package at a pinned version, and the files taken from its tarball.
struct Package {
    name: &'static str,
    version: &'static str,
    /// npm's `integrity` of the tarball (`sha512-<base64>`), as in a lockfile.
    integrity: &'static str,
    /// `(path in the tarball, file name in OUT_DIR)`; the names carry the version, so the
    /// server may let browsers cache them for good.
    files: &'static [(&'static str, &'static str)],
    /// The environment variable the version is handed to `lib.rs` in.
    version_env: &'static str,
}

/// GraphiQL 4.1.2 is the last line with a browser (UMD) bundle (5.x ships ES modules only); it
/// wants React 18 as the globals `React` and `ReactDOM`. All three are MIT-licensed.
const PACKAGES: [Package; 3] = [
    Package {
        name: "graphiql",
        version: "4.1.2",
        integrity: "sha512-rNlzQIAzm6i2KBXmVQWBgLvt0TloxFVB2d18bukvdsvjEuFDHsKx5IVOomL1W1o5WW+tE54+ioHb2AEKzO2cUg==",
        files: &[
            ("package/graphiql.min.js", "graphiql-4.1.2.min.js"),
            ("package/graphiql.min.css", "graphiql-4.1.2.min.css"),
        ],
        version_env: "SVC_PLAYGROUND_GRAPHIQL",
    },
    Package {
        name: "react",
        version: "18.3.1",
        integrity: "sha512-wS+hAgJShR0KhEvPJArfuPVN1+Hz1t0Y6n5jLrGQbkb4urgPE/0Rve+1kMB1v/oWgHgm4WIcV+i7F2pTVj+2iQ==",
        files: &[(
            "package/umd/react.production.min.js",
            "react-18.3.1.production.min.js",
        )],
        version_env: "SVC_PLAYGROUND_REACT",
    },
    Package {
        name: "react-dom",
        version: "18.3.1",
        integrity: "sha512-5m4nQKp+rZRb09LNH59GM4BxTh9251/ylbKIbpe7TpGxfJ+9kv6BLkLBXIjjspbgbnIBNqlI23tRnTWT0snUIw==",
        files: &[(
            "package/umd/react-dom.production.min.js",
            "react-dom-18.3.1.production.min.js",
        )],
        version_env: "SVC_PLAYGROUND_REACT_DOM",
    },
];

/// Every package's `LICENSE`, one after the other, go into this file of OUT_DIR.
const LICENSES: &str = "LICENSES.txt";

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed={TARBALLS_ENV}");
    println!("cargo::rustc-check-cfg=cfg(svc_playground_missing)");
    for package in &PACKAGES {
        println!(
            "cargo::rustc-env={}={}",
            package.version_env, package.version
        );
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let started = Instant::now();
    if let Err(why) = fetch_all(&out) {
        println!(
            "cargo::warning=the GraphQL playground's assets (GraphiQL from the npm registry) could \
             not be fetched: {why}. The playground pages will say so; the APIs work regardless. \
             Once the registry is reachable, `cargo clean -p svc-playground` fetches them at the \
             next build; to build the playground without network access, set {TARBALLS_ENV} to \
             a folder holding {}.",
            PACKAGES
                .iter()
                .map(tarball_name)
                .collect::<Vec<_>>()
                .join(", ")
        );
        println!("cargo::rustc-cfg=svc_playground_missing");
        return;
    }
    // Seen with `cargo build -vv`: what the assets cost the build.
    println!(
        "svc-playground: assets ready in {} ms",
        started.elapsed().as_millis()
    );
}

/// Fetches, verifies and extracts every package, and writes the licences; the first failure
/// stops it (the others would most likely fail the same way, each after its own timeout).
fn fetch_all(out: &Path) -> Result<(), String> {
    let mut licenses = String::from(
        "The GraphQL playground served by svc embeds these packages from the npm registry.\n",
    );
    for package in &PACKAGES {
        let tarball = tarball(package, out)?;
        let license = extract(package, &tarball, out)?;
        licenses.push_str(&format!(
            "\n==== {} {} ====\n\n{}",
            package.name, package.version, license
        ));
    }
    write(&out.join(LICENSES), licenses.as_bytes())
}

/// npm's file name of the package's tarball.
fn tarball_name(package: &Package) -> String {
    format!("{}-{}.tgz", package.name, package.version)
}

/// The verified tarball of `package`: from the folder of [`TARBALLS_ENV`] when it is set,
/// else from OUT_DIR when an earlier build fetched it, else downloaded from the registry.
fn tarball(package: &Package, out: &Path) -> Result<Vec<u8>, String> {
    let name = tarball_name(package);
    if let Some(dir) = std::env::var_os(TARBALLS_ENV) {
        let path = Path::new(&dir).join(&name);
        println!("cargo::rerun-if-changed={}", path.display());
        let bytes = std::fs::read(&path)
            .map_err(|e| format!("cannot read `{}` ({TARBALLS_ENV}): {e}", path.display()))?;
        verify(package, &bytes)?;
        return Ok(bytes);
    }
    let cached = out.join(&name);
    if let Ok(bytes) = std::fs::read(&cached)
        && verify(package, &bytes).is_ok()
    {
        return Ok(bytes);
    }
    let url = format!("https://registry.npmjs.org/{}/-/{name}", package.name);
    let partial = out.join(format!("{name}.part"));
    download(&url, &partial)?;
    let bytes = std::fs::read(&partial).map_err(|e| format!("cannot read the download: {e}"))?;
    verify(package, &bytes)?;
    std::fs::rename(&partial, &cached).map_err(|e| format!("cannot keep the download: {e}"))?;
    Ok(bytes)
}

/// Downloads `url` into `to` with `curl`, or with `wget` when there is no `curl`.
fn download(url: &str, to: &Path) -> Result<(), String> {
    let curl = Command::new("curl")
        .args(["--silent", "--show-error", "--fail", "--location"])
        .args([
            "--connect-timeout",
            "10",
            "--max-time",
            "300",
            "--retry",
            "1",
        ])
        .arg("--output")
        .arg(to)
        .arg(url)
        .output();
    let output = match curl {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Command::new("wget")
            .args(["--quiet", "--timeout=10", "--tries=2", "--output-document"])
            .arg(to)
            .arg(url)
            .output()
            .map_err(|e| format!("neither `curl` nor `wget` runs ({e})"))?,
        Err(e) => return Err(format!("`curl` does not run: {e}")),
    };
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "downloading {url} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// Checks `bytes` against the package's pinned integrity.
fn verify(package: &Package, bytes: &[u8]) -> Result<(), String> {
    let expected = package
        .integrity
        .strip_prefix("sha512-")
        .expect("the pinned integrity is a sha512");
    let actual = base64::engine::general_purpose::STANDARD.encode(Sha512::digest(bytes));
    if actual == expected {
        Ok(())
    } else {
        Err(format!(
            "{} has integrity sha512-{actual}, not the pinned {}",
            tarball_name(package),
            package.integrity
        ))
    }
}

/// Writes the package's files from its tarball into OUT_DIR; its licence text.
fn extract(package: &Package, tarball: &[u8], out: &Path) -> Result<String, String> {
    let fail = |e: std::io::Error| format!("cannot read {}: {e}", tarball_name(package));
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(tarball));
    let mut found = vec![false; package.files.len()];
    let mut license = None;
    for entry in archive.entries().map_err(fail)? {
        let mut entry = entry.map_err(fail)?;
        let path = entry.path().map_err(fail)?.to_string_lossy().into_owned();
        let wanted = package.files.iter().position(|(inner, _)| *inner == path);
        if wanted.is_none() && path != "package/LICENSE" {
            continue;
        }
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).map_err(fail)?;
        match wanted {
            Some(i) => {
                let (_, file) = package.files[i];
                write(&out.join(file), without_source_map(&bytes))?;
                found[i] = true;
            }
            None => license = Some(String::from_utf8_lossy(&bytes).into_owned()),
        }
    }
    if let Some(i) = found.iter().position(|f| !f) {
        return Err(format!(
            "{} has no `{}`",
            tarball_name(package),
            package.files[i].0
        ));
    }
    license.ok_or_else(|| format!("{} has no licence", tarball_name(package)))
}

/// A script without its closing `//# sourceMappingURL=` comment: the maps are not served, and
/// a browser's developer tools would ask for them.
fn without_source_map(bytes: &[u8]) -> &[u8] {
    let trimmed = bytes.trim_ascii_end();
    let start = trimmed
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    if trimmed[start..].starts_with(b"//# sourceMappingURL=") {
        &trimmed[..start]
    } else {
        bytes
    }
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| format!("cannot write `{}`: {e}", path.display()))
}
