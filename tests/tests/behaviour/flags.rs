//! Every flag and `SVC_*` variable of the server binary is in docs/svc-yml.md, the reference of
//! what a user can set, so a new setting cannot ship undocumented.

use std::process::Command;

/// The `--flags` and `SVC_*` variables `example-server <command> --help` lists.
fn settings(command: &str) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_example-server"))
        .args([command, "--help"])
        .output()
        .expect("cannot run the example-server binary");
    assert!(out.status.success(), "{out:?}");
    let help = String::from_utf8(out.stdout).expect("UTF-8 help");
    let mut found = Vec::new();
    for word in help.split(|c: char| c.is_whitespace() || c == '[' || c == ',') {
        let name: String = word
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        let flag = name.starts_with("--") && name.len() > 2;
        let variable = name.starts_with("SVC_");
        if (flag || variable) && !["--help", "--version"].contains(&name.as_str()) {
            found.push(name);
        }
    }
    found
}

#[test]
fn every_setting_of_the_server_is_documented() {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/svc-yml.md"))
        .expect("docs/svc-yml.md");
    let serve = settings("serve");
    // The test would prove nothing if it read no settings.
    for known in [
        "--port",
        "SVC_DATABASE_URL",
        "--sqlite-cache-mib",
        "SVC_SQLITE_CACHE_MIB",
    ] {
        assert!(serve.iter().any(|s| s == known), "{known} not in {serve:?}");
    }
    let mut missing: Vec<String> = serve
        .into_iter()
        .chain(settings("migrate"))
        .chain(settings("platform-token"))
        .chain(settings("sweep-files"))
        .filter(|name| !mentions(&docs, name))
        .collect();
    missing.sort();
    missing.dedup();
    assert!(missing.is_empty(), "not in docs/svc-yml.md: {missing:?}");
}

/// Whether `docs` names `name` as a whole word (`--dry-run` is not named by `--dry-runs`).
fn mentions(docs: &str, name: &str) -> bool {
    docs.match_indices(name).any(|(at, _)| {
        let before = docs[..at].chars().next_back();
        let after = docs[at + name.len()..].chars().next();
        let word =
            |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        !word(before) && !word(after)
    })
}
