//! The playground pages (`GET /simple/v1/<id>`, `GET /relay/v1/<id>`): GraphiQL served by the
//! service itself, its files embedded in the binary (crate `svc-playground`) under
//! `/playground/`. Over HTTP: the files' media types and caching, 404 for other names, and pages
//! that name no other host. In headless Chromium whose network ends at the loopback interface:
//! the page renders, runs a query typed into it, sends the `Authorization` header typed into
//! GraphiQL's Headers editor, and makes no request that leaves the machine.
//!
//! The page does not depend on the database, so these tests run on SQLite only. The browser test
//! needs `node`, `npm` (see `crate::node`) and Chromium: outside CI it says so and passes
//! without them; in CI (`CI=true`) their absence fails it. So does, in CI, a build that could
//! not fetch GraphiQL (the page then says so instead).

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::node::run_script;
use crate::support::{ALIAS, Db, Server};

/// The playground pages of both APIs (under the alias).
const PAGES: [&str; 2] = ["/simple/v1/", "/relay/v1/"];

/// `GET` of `path`: the status, the header `name`s' values ("" when absent) and the body.
async fn get(srv: &Server, path: &str, names: &[&str]) -> (u16, Vec<String>, String) {
    let res = srv
        .anonymous()
        .get(srv.url(path))
        .send()
        .await
        .expect("the request failed");
    let status = res.status().as_u16();
    let headers = names
        .iter()
        .map(|name| {
            res.headers()
                .get(*name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    (status, headers, res.text().await.expect("the body"))
}

/// Whether the server's build embedded GraphiQL (the page says when it did not). In CI a build
/// without it fails the test; elsewhere the test is skipped after a notice.
fn embedded(html: &str) -> bool {
    if !html.contains("could not be fetched") {
        return true;
    }
    assert!(
        !std::env::var("CI").is_ok_and(|v| v == "true"),
        "CI=true, but this build has no playground (its build could not fetch GraphiQL): {html}"
    );
    eprintln!("notice: this build has no playground (GraphiQL was not fetched); skipping");
    false
}

/// The values of the `src` and `href` attributes of `html`, in the page's order.
fn links(html: &str) -> Vec<&str> {
    let mut links = Vec::new();
    for attr in ["src=\"", "href=\""] {
        for (i, _) in html.match_indices(attr) {
            let rest = &html[i + attr.len()..];
            links.push((i, &rest[..rest.find('"').expect("a closing quote")]));
        }
    }
    links.sort();
    links.into_iter().map(|(_, link)| link).collect()
}

/// Both pages are HTML with a title, a Content-Security-Policy that keeps them on their own
/// origin, no URL of another host, and GraphiQL posting to the page's own path; every file they
/// load is served from `/playground/` with its media type, cached for good when its name carries
/// a version.
#[tokio::test]
async fn the_pages_load_only_files_the_service_serves() {
    let srv = Server::start(Db::Sqlite)
        .await
        .expect("SQLite is always available");
    for page in PAGES {
        let path = format!("{page}{ALIAS}");
        let (status, headers, html) =
            get(&srv, &path, &["content-type", "content-security-policy"]).await;
        assert_eq!(status, 200, "{path}");
        assert_eq!(headers[0], "text/html; charset=utf-8", "{path}");
        assert!(
            !html.contains("http://") && !html.contains("https://"),
            "{path} names a URL: {html}"
        );
        assert!(
            html.contains(&format!("<title>GraphQL playground · {path}</title>")),
            "{path}: {html}"
        );
        if !embedded(&html) {
            return;
        }
        assert!(
            headers[1].contains("default-src 'none'") && headers[1].contains("connect-src 'self'"),
            "{path}: {}",
            headers[1]
        );
        assert!(
            html.contains(&format!("data-endpoint=\"{path}\"")),
            "{path}: {html}"
        );
        let mut kinds = Vec::new();
        for link in links(&html) {
            if link == "data:," {
                continue; // the empty icon
            }
            let name = link
                .strip_prefix("/playground/")
                .unwrap_or_else(|| panic!("{path} loads {link}, not a file of /playground/"));
            let (status, headers, body) = get(&srv, link, &["content-type", "cache-control"]).await;
            assert_eq!(status, 200, "{link}");
            assert!(body.len() > 500, "{link}: {body}");
            let expected = if name.ends_with(".css") {
                "text/css; charset=utf-8"
            } else {
                "text/javascript; charset=utf-8"
            };
            assert_eq!(headers[0], expected, "{link}");
            // Versioned names are kept for good, ours revalidated.
            let versioned = name.contains("-4.1.2.") || name.contains("-18.3.1.");
            let cache = if versioned {
                "public, max-age=31536000, immutable"
            } else {
                "no-cache"
            };
            assert_eq!(headers[1], cache, "{link}");
            kinds.push(name.to_owned());
        }
        assert_eq!(
            kinds,
            [
                "graphiql-4.1.2.min.css",
                "react-18.3.1.production.min.js",
                "react-dom-18.3.1.production.min.js",
                "graphiql-4.1.2.min.js",
                "init.js",
            ],
            "{path}"
        );
    }
    // The packages' licences, named in the page.
    let (status, headers, text) = get(&srv, "/playground/LICENSES.txt", &["content-type"]).await;
    assert_eq!(
        (status, headers[0].as_str()),
        (200, "text/plain; charset=utf-8")
    );
    for package in ["graphiql 4.1.2", "react 18.3.1", "react-dom 18.3.1"] {
        assert!(text.contains(package), "{package}: {text}");
    }
}

/// Names that are not the playground's files are 404, and so are other methods.
#[tokio::test]
async fn other_names_under_playground_are_not_found() {
    let srv = Server::start(Db::Sqlite)
        .await
        .expect("SQLite is always available");
    for path in [
        "/playground/",
        "/playground/graphiql.min.js",
        "/playground/graphiql-4.1.1.min.js",
        "/playground/index.html",
        "/playground/..%2FCargo.toml",
        "/playground/init.js/x",
        "/playground",
    ] {
        let (status, _, body) = get(&srv, path, &[]).await;
        assert_eq!((status, body.as_str()), (404, ""), "{path}");
    }
    let res = srv
        .anonymous()
        .post(srv.url("/playground/init.js"))
        .send()
        .await
        .expect("the request failed");
    assert_eq!(res.status().as_u16(), 404);
}

/// Chromium's path: `$SVC_CHROMIUM`, else `chromium` or `chromium-browser` on the PATH. `None`
/// outside CI when there is none (after a notice); in CI that fails the test.
fn chromium() -> Option<PathBuf> {
    let found = std::env::var_os("SVC_CHROMIUM")
        .map(PathBuf::from)
        .or_else(|| {
            let path = std::env::var_os("PATH")?;
            std::env::split_paths(&path)
                .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
                .find(|file| file.is_file())
        });
    if found.is_none() {
        assert!(
            !std::env::var("CI").is_ok_and(|v| v == "true"),
            "CI=true, but Chromium is not on the PATH (the playground test needs it; \
             `apt-get install chromium`, or set SVC_CHROMIUM)"
        );
        eprintln!(
            "notice: Chromium is missing; skipping the playground's browser test (install \
             `chromium` or set SVC_CHROMIUM to run it)"
        );
    }
    found
}

/// The JSON after `prefix` on its line of the script's output.
fn line(stdout: &str, prefix: &str) -> Value {
    let text = stdout
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line: {stdout}"));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("`{prefix}` is not JSON ({e}): {text}"))
}

/// On both pages, in headless Chromium that cannot reach beyond 127.0.0.1: GraphiQL renders, and
/// a query typed into it runs from the page's execute button, first without headers (an
/// anonymous request: the users' emails are refused with 3008), then with
/// `{"Authorization": "Bearer <root token>"}` typed into the Headers editor (the request carries
/// the header, and the emails come back). Every request the page made went to 127.0.0.1 (or was
/// a `data:` URL), and among them are the page's files and its API.
#[tokio::test]
async fn graphiql_runs_a_query_with_the_typed_authorization_header_offline() {
    let srv = Server::start(Db::Sqlite)
        .await
        .expect("SQLite is always available");
    let (_, _, html) = get(&srv, &format!("/simple/v1/{ALIAS}"), &[]).await;
    if !embedded(&html) {
        return;
    }
    let Some(chromium) = chromium() else {
        return;
    };
    let chromium = chromium.to_string_lossy().into_owned();
    srv.create("User", r#"email: "ann@example.com", name: "Ann""#)
        .await;
    let token = srv.root_token();
    let headers = json!({ "Authorization": format!("Bearer {token}") }).to_string();
    let cases = [
        (
            "/simple/v1/",
            "{ allUsers { email } }",
            json!({ "allUsers": [{ "email": "ann@example.com" }] }),
        ),
        (
            "/relay/v1/",
            "{ viewer { allUsers { edges { node { email } } } } }",
            json!({ "viewer": { "allUsers": { "edges": [{ "node": { "email": "ann@example.com" } }] } } }),
        ),
    ];
    for (page, query, data) in cases {
        let path = format!("{page}{ALIAS}");
        let url = srv.url(&path);
        let Some(stdout) = run_script(
            "playground.mjs",
            &[&url, query, &headers],
            &[("SVC_CHROMIUM", &chromium)],
        )
        .await
        else {
            return;
        };
        // Without headers: anonymous, the emails refused.
        let first = line(&stdout, "first ");
        assert_eq!(
            first["sent"]["authorization"],
            Value::Null,
            "{path}: {first:#}"
        );
        let shown = &first["shown"];
        assert_eq!(shown["errors"][0]["code"], json!(3008), "{path}: {shown:#}");
        assert_eq!(
            shown["errors"][0]["message"],
            json!("Insufficient Permissions"),
            "{path}: {shown:#}"
        );
        assert!(
            !shown.to_string().contains("ann@example.com"),
            "{path}: {shown:#}"
        );
        // With the header typed into GraphiQL: sent, and the root token's answer shown.
        let second = line(&stdout, "second ");
        assert_eq!(
            second["sent"]["authorization"],
            json!(format!("Bearer {token}")),
            "{path}: {second:#}"
        );
        assert_eq!(second["shown"], json!({ "data": data }), "{path}");
        // Nothing left the loopback interface; the page, its files and its API were asked for.
        let requests = line(&stdout, "requests ");
        let requests: Vec<&str> = requests
            .as_array()
            .expect("a list")
            .iter()
            .map(|r| r.as_str().expect("a URL"))
            .collect();
        let origin = srv.url("");
        for request in &requests {
            assert!(
                request.starts_with(&format!("{origin}/")) || request.starts_with("data:"),
                "{path}: the page asked for {request}"
            );
        }
        for wanted in [
            url.clone(),
            srv.url("/playground/graphiql-4.1.2.min.js"),
            srv.url("/playground/graphiql-4.1.2.min.css"),
            srv.url("/playground/init.js"),
        ] {
            assert!(
                requests.contains(&wanted.as_str()),
                "{path}: no request for {wanted}: {requests:?}"
            );
        }
        // The page itself, then at least the two queries (and GraphiQL's introspection).
        assert!(
            requests.iter().filter(|r| **r == url).count() >= 3,
            "{path}: {requests:?}"
        );
    }
}
