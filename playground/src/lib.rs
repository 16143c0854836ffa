//! The GraphQL playground: a GraphiQL page for each client API, served by the service itself.
//!
//! The page loads nothing but the files of [`asset`], which the server serves under [`PATH`]
//! from this binary: GraphiQL's browser bundle and stylesheet (its fonts are inside it), React,
//! and a short script of ours that starts GraphiQL against the page's endpoint. The page works
//! on a network without internet access, and its Content-Security-Policy
//! ([`CONTENT_SECURITY_POLICY`]) holds the browser to the page's own origin.
//!
//! The third-party files are not in the repository: the build script fetches them from the npm
//! registry at pinned versions and integrities (see `build.rs`). A build that could not fetch
//! them serves, in place of the playground, a page that says so ([`available`] is false).

/// The path under which [`asset`]'s files are served: `/playground/<name>`. The client APIs
/// live under `/simple/`, `/relay/` and `/system`, so it meets none of their routes.
pub const PATH: &str = "/playground/";

/// The version of GraphiQL the page runs.
pub const GRAPHIQL_VERSION: &str = env!("SVC_PLAYGROUND_GRAPHIQL");

/// One file the page loads (or, for the licences, links to).
#[derive(Debug)]
pub struct Asset {
    /// The file's name under [`PATH`].
    pub name: &'static str,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// Its `Cache-Control`: for good for the third-party files, whose names carry their
    /// versions; revalidated for ours, which may change within a version.
    pub cache_control: &'static str,
    pub bytes: &'static [u8],
}

const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
#[cfg_attr(svc_playground_missing, allow(dead_code))]
const TEXT: &str = "text/plain; charset=utf-8";
#[cfg_attr(svc_playground_missing, allow(dead_code))]
const FOR_GOOD: &str = "public, max-age=31536000, immutable";
#[cfg_attr(svc_playground_missing, allow(dead_code))]
const REVALIDATE: &str = "no-cache";

/// A third-party file the build script fetched into `OUT_DIR`, served under the same name
/// (`$name` is the pieces of that name), for good.
#[cfg(not(svc_playground_missing))]
macro_rules! fetched {
    ($content_type:expr, $($name:expr),+) => {
        Asset {
            name: concat!($($name),+),
            content_type: $content_type,
            cache_control: FOR_GOOD,
            bytes: include_bytes!(concat!(env!("OUT_DIR"), "/", $($name),+)),
        }
    };
}

/// The embedded files, in the order the page loads them (the script of ours last).
#[cfg(not(svc_playground_missing))]
const ASSETS: &[Asset] = &[
    fetched!(
        CSS,
        "graphiql-",
        env!("SVC_PLAYGROUND_GRAPHIQL"),
        ".min.css"
    ),
    fetched!(
        JS,
        "react-",
        env!("SVC_PLAYGROUND_REACT"),
        ".production.min.js"
    ),
    fetched!(
        JS,
        "react-dom-",
        env!("SVC_PLAYGROUND_REACT_DOM"),
        ".production.min.js"
    ),
    fetched!(JS, "graphiql-", env!("SVC_PLAYGROUND_GRAPHIQL"), ".min.js"),
    // Ours: starts GraphiQL.
    Asset {
        name: "init.js",
        content_type: JS,
        cache_control: REVALIDATE,
        bytes: include_bytes!("init.js"),
    },
    Asset {
        name: "LICENSES.txt",
        content_type: TEXT,
        cache_control: REVALIDATE,
        bytes: include_bytes!(concat!(env!("OUT_DIR"), "/LICENSES.txt")),
    },
];

/// Without GraphiQL there is nothing to serve: the page only says why.
#[cfg(svc_playground_missing)]
const ASSETS: &[Asset] = &[];

/// Whether the build embedded GraphiQL; when not, [`page`] explains that instead.
pub fn available() -> bool {
    !ASSETS.is_empty()
}

/// The file served as `PATH` + `name`, if there is one.
pub fn asset(name: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|a| a.name == name)
}

/// Every file served under [`PATH`].
pub fn assets() -> &'static [Asset] {
    ASSETS
}

/// The `Content-Security-Policy` of the page: scripts, styles, fonts, images and requests from
/// its own origin only (GraphiQL inserts style elements and its fonts are `data:` URLs).
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
    style-src 'self' 'unsafe-inline'; font-src 'self' data:; img-src 'self' data:; \
    connect-src 'self'; base-uri 'none'; form-action 'none'";

/// The playground page of the API at `endpoint`, the path the page is served at (the page
/// sends its requests there, from the same origin).
pub fn page(endpoint: &str) -> String {
    let endpoint = escape(endpoint);
    if !available() {
        return format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <title>GraphQL playground · {endpoint}</title>\n</head>\n<body>\n\
             <h1>GraphQL playground</h1>\n\
             <p>The playground's assets (GraphiQL {GRAPHIQL_VERSION}, from the npm registry) could \
             not be fetched when this server was built, so it has no playground. The API works \
             regardless: send GraphQL requests with <code>POST {endpoint}</code>.</p>\n\
             </body>\n</html>\n"
        );
    }
    let mut head = String::new();
    let mut scripts = String::new();
    for asset in ASSETS {
        let href = format!("{PATH}{}", asset.name);
        if asset.content_type == CSS {
            head.push_str(&format!("<link rel=\"stylesheet\" href=\"{href}\">\n"));
        } else if asset.content_type == JS {
            scripts.push_str(&format!("<script src=\"{href}\"></script>\n"));
        }
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>GraphQL playground · {endpoint}</title>\n\
         <link rel=\"icon\" href=\"data:,\">\n{head}\
         <style>html, body, #graphiql {{ height: 100%; margin: 0; }}</style>\n\
         </head>\n<body>\n<div id=\"graphiql\" data-endpoint=\"{endpoint}\">Loading…</div>\n\
         {scripts}<!-- GraphiQL {GRAPHIQL_VERSION} and React; their licences: {PATH}LICENSES.txt -->\n\
         </body>\n</html>\n"
    )
}

/// `text` for HTML text and quoted attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test that needs the embedded assets: false (after a notice) when the build had none,
    /// except in CI, where that fails the test.
    fn has_assets() -> bool {
        if available() {
            return true;
        }
        assert!(
            !std::env::var("CI").is_ok_and(|v| v == "true"),
            "CI=true, but this build has no playground assets (see the build's warning)"
        );
        eprintln!("notice: this build has no playground assets; skipping");
        false
    }

    #[test]
    fn the_page_loads_only_its_own_files_and_names_its_endpoint() {
        let html = page("/simple/v1/example");
        assert!(
            !html.contains("http://") && !html.contains("https://"),
            "{html}"
        );
        assert!(
            !html.contains("//cdn") && !html.contains("src=\"//"),
            "{html}"
        );
        assert!(html.contains("<title>GraphQL playground · /simple/v1/example</title>"));
        if !has_assets() {
            assert!(html.contains("could not be fetched"), "{html}");
            return;
        }
        assert!(
            html.contains("data-endpoint=\"/simple/v1/example\""),
            "{html}"
        );
        for name in ["graphiql-4.1.2.min.css", "react-18.3.1.production.min.js"] {
            assert!(
                html.contains(&format!("\"/playground/{name}\"")),
                "{name}: {html}"
            );
        }
        // Every `src` and `href` is one of the files served under PATH (but for the empty icon,
        // which keeps browsers from asking for `/favicon.ico`).
        for attr in ["src=\"", "href=\""] {
            for (i, _) in html.match_indices(attr) {
                let value = &html[i + attr.len()..];
                let value = &value[..value.find('"').expect("a closing quote")];
                if value == "data:," {
                    continue;
                }
                let name = value
                    .strip_prefix(PATH)
                    .unwrap_or_else(|| panic!("{value}"));
                assert!(asset(name).is_some(), "{value} is not served");
            }
        }
        // React before GraphiQL, GraphiQL before the script that starts it.
        let at = |name: &str| html.find(name).unwrap_or_else(|| panic!("{name}"));
        assert!(at("react-18") < at("react-dom-18"));
        assert!(at("react-dom-18") < at("graphiql-4.1.2.min.js"));
        assert!(at("graphiql-4.1.2.min.js") < at("init.js"));
    }

    #[test]
    fn the_endpoint_is_escaped() {
        let html = page("/simple/v1/a\"><script>alert(1)</script>");
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(html.contains("a&quot;&gt;&lt;script&gt;"), "{html}");
    }

    #[test]
    fn the_assets_are_the_pinned_files() {
        if !has_assets() {
            return;
        }
        let names: Vec<&str> = assets().iter().map(|a| a.name).collect();
        assert_eq!(
            names,
            [
                "graphiql-4.1.2.min.css",
                "react-18.3.1.production.min.js",
                "react-dom-18.3.1.production.min.js",
                "graphiql-4.1.2.min.js",
                "init.js",
                "LICENSES.txt",
            ]
        );
        let text =
            |name: &str| String::from_utf8_lossy(asset(name).expect(name).bytes).into_owned();
        assert!(text("graphiql-4.1.2.min.js").contains("createFetcher"));
        assert!(!text("graphiql-4.1.2.min.js").contains("sourceMappingURL"));
        assert!(text("graphiql-4.1.2.min.css").contains(".graphiql-container"));
        assert!(text("react-18.3.1.production.min.js").contains("React"));
        assert!(text("react-dom-18.3.1.production.min.js").contains("createRoot"));
        let licenses = text("LICENSES.txt");
        assert_eq!(licenses.matches("MIT License").count(), 3, "{licenses}");
        assert_eq!(asset("graphiql.min.js").map(|a| a.name), None);
        assert_eq!(asset("").map(|a| a.name), None);
    }
}
