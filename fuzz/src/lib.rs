//! What the fuzz targets share: the example service started once per fuzzing process (on a
//! SQLite file and a local file store under `$TMPDIR`, on a free port of the loopback), a small
//! HTTP/1.1 client that talks to it over one kept-alive connection, and the checks every answer
//! of the server must pass (no 5xx, no "Whoops" internal error, an answer within the time limit).
//!
//! A panic anywhere in the process (a harness check here, or a handler on one of the server's
//! threads) aborts it through libFuzzer's panic hook, so the input that caused it is kept as a
//! crash.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde_json::{Value, json};

pub mod filters;
pub mod targets;

/// The master token the server is started with (exchanged for a platform token).
const MASTER_TOKEN: &str = "fuzz-master-token";

/// The service id (and alias) the server answers to.
pub const SERVICE: &str = "fuzz";

/// How long one answer may take before it counts as a hang.
const ANSWER_WITHIN: Duration = Duration::from_secs(20);

/// The text of the reference's internal error ([`svc_runtime`] answers it for any error it did
/// not expect): client input must never cause one.
const WHOOPS: &str = "Whoops. Looks like an internal server error";

/// The example service, started on first use, and what the targets need to talk to it.
pub struct Server {
    /// Keeps the server running for the life of the process.
    _running: svc_runtime::Running,
    pub port: u16,
    /// `Authorization: Bearer …` of an admin (a platform token).
    pub admin: String,
    /// The process's working directory (database, file store).
    pub dir: PathBuf,
    http: Mutex<Http>,
}

static SERVER: OnceLock<Server> = OnceLock::new();

/// The server of this process, started (and its admin token fetched) on first call; `seed`
/// runs once after that, with the server (to import the data a target wants).
pub fn server_with(seed: fn(&Server)) -> &'static Server {
    SERVER.get_or_init(|| {
        let server = start();
        seed(&server);
        server
    })
}

/// [`server_with`] with nothing imported.
pub fn server() -> &'static Server {
    server_with(|_| {})
}

fn start() -> Server {
    ignore_sigpipe();
    let dir = std::env::temp_dir().join(format!("svc-fuzz-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the fuzzing directory");
    let options = svc_runtime::Options {
        port: 0,
        database_url: Some(format!("sqlite://{}", dir.join("data.db").display())),
        service_id: Some(SERVICE.to_owned()),
        alias: Some(SERVICE.to_owned()),
        secret: Some("fuzz-secret-fuzz-secret-fuzz-secret".to_owned()),
        master_token: Some(MASTER_TOKEN.to_owned()),
        file_store: Some(dir.join("files").display().to_string()),
        ..svc_runtime::Options::default()
    };
    let running = svc_runtime::spawn::<example_model::Service>(options)
        .unwrap_or_else(|e| panic!("the example service did not start: {e}"));
    let port = running.port;
    let mut http = Http::new(port);
    let answer = http.post_json(
        "/system",
        &[],
        &json!({
            "query": "mutation ($t: String!) { authenticateCustomer(input: { auth0IdToken: $t }) { token } }",
            "variables": { "t": MASTER_TOKEN },
        }),
    );
    let token = answer["data"]["authenticateCustomer"]["token"]
        .as_str()
        .unwrap_or_else(|| panic!("authenticateCustomer gave no token: {answer}"))
        .to_owned();
    Server {
        _running: running,
        port,
        admin: format!("Bearer {token}"),
        dir,
        http: Mutex::new(http),
    }
}

/// libFuzzer's `main` is not Rust's, which would ignore SIGPIPE: a server that closes the
/// connection while a request is written must give an error, not end the process.
fn ignore_sigpipe() {
    // SAFETY: setting a signal's disposition to "ignore" has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

impl Server {
    /// Sends one request and checks the answer (see [`Response::check`]).
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Response {
        let mut http = self.http.lock().unwrap_or_else(|e| e.into_inner());
        let response = http.request(method, path, headers, body);
        response.check(method, path, body);
        response
    }

    /// POSTs `body` (JSON) and returns the answer as JSON (it must be JSON).
    pub fn post_json(&self, path: &str, headers: &[(&str, &str)], body: &Value) -> Value {
        let mut http = self.http.lock().unwrap_or_else(|e| e.into_inner());
        http.post_json(path, headers, body)
    }
}

/// One answer of the server.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON; panics (a finding) when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("the answer is not JSON ({e}): {}", self.text()))
    }

    /// What no answer to any request may be: a 5xx status, or the internal error's text.
    pub fn check(&self, method: &str, path: &str, request: &[u8]) {
        let shown = String::from_utf8_lossy(&request[..request.len().min(2000)]).into_owned();
        assert!(
            self.status < 500,
            "HTTP {} for {method} {path}\nrequest body: {shown}\nanswer: {}",
            self.status,
            self.text()
        );
        // (Unless the request itself holds the text, which an error message may quote.)
        let quoted = String::from_utf8_lossy(request).contains("Whoops");
        assert!(
            quoted || !self.text().contains(WHOOPS),
            "internal error for {method} {path}\nrequest body: {shown}\nanswer: {}",
            self.text()
        );
    }
}

/// A minimal HTTP/1.1 client on one kept-alive connection to the server, reconnecting when the
/// server closed it.
struct Http {
    port: u16,
    conn: Option<BufReader<TcpStream>>,
}

impl Http {
    fn new(port: u16) -> Http {
        Http { port, conn: None }
    }

    fn connect(&self) -> BufReader<TcpStream> {
        let stream = TcpStream::connect(("127.0.0.1", self.port))
            .unwrap_or_else(|e| panic!("the server does not take connections: {e}"));
        stream.set_nodelay(true).ok();
        stream.set_read_timeout(Some(ANSWER_WITHIN)).ok();
        stream.set_write_timeout(Some(ANSWER_WITHIN)).ok();
        BufReader::new(stream)
    }

    fn post_json(&mut self, path: &str, headers: &[(&str, &str)], body: &Value) -> Value {
        let mut all = vec![("Content-Type", "application/json")];
        all.extend_from_slice(headers);
        let body = serde_json::to_vec(body).unwrap_or_default();
        let response = self.request("POST", path, &all, &body);
        response.check("POST", path, &body);
        response.json()
    }

    fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Response {
        // A kept connection the server has closed in the meantime fails at once; a new one
        // must work.
        let reused = self.conn.is_some();
        match self.exchange(method, path, headers, body) {
            Ok(r) => r,
            Err(e)
                if reused
                    && !matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
            {
                self.conn = None;
                self.exchange(method, path, headers, body)
                    .unwrap_or_else(|e| {
                        panic!("no answer to {method} {path} on a new connection: {e}")
                    })
            }
            Err(e) => panic!("no answer to {method} {path}: {e}"),
        }
    }

    fn exchange(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> std::io::Result<Response> {
        if self.conn.is_none() {
            self.conn = Some(self.connect());
        }
        let result = self.exchange_on_conn(method, path, headers, body);
        if result.is_err() {
            self.conn = None;
        }
        result
    }

    fn exchange_on_conn(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> std::io::Result<Response> {
        let conn = self.conn.as_mut().ok_or(std::io::ErrorKind::NotConnected)?;
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n",
            self.port
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        let mut message = head.into_bytes();
        message.extend_from_slice(body);
        let stream = conn.get_mut();
        // The server may answer (413, 400) and close before it read everything: the answer
        // counts, a failed write does not.
        let wrote = stream.write_all(&message);
        let mut line = String::new();
        if conn.read_line(&mut line)? == 0 {
            wrote?;
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("bad status line {line:?}")))?;
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            if conn.read_line(&mut line)? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((n, v)) = line.split_once(':') {
                headers.push((n.trim().to_owned(), v.trim().to_owned()));
            }
        }
        let get = |name: &str| {
            headers
                .iter()
                .find(|(n, _): &&(String, String)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.to_ascii_lowercase())
        };
        let mut body = Vec::new();
        let head_only = method == "HEAD" || status == 204 || status == 304;
        if head_only {
        } else if let Some(length) = get("content-length") {
            let length: usize = length
                .parse()
                .map_err(|_| std::io::Error::other("bad Content-Length"))?;
            body.resize(length, 0);
            conn.read_exact(&mut body)?;
        } else if get("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
            loop {
                let mut size = String::new();
                conn.read_line(&mut size)?;
                let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or(""), 16)
                    .map_err(|_| std::io::Error::other("bad chunk size"))?;
                let mut chunk = vec![0; size + 2];
                conn.read_exact(&mut chunk)?;
                if size == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..size]);
            }
        } else {
            conn.read_to_end(&mut body)?;
            self.conn = None;
        }
        let close = get("connection").is_some_and(|c| c.contains("close"));
        if close || wrote.is_err() {
            self.conn = None;
        }
        Ok(Response {
            status,
            headers,
            body,
        })
    }
}

/// The example service's Simple API path.
pub fn simple_path() -> String {
    format!("/simple/v1/{SERVICE}")
}

/// Imports one NDF document as admin and panics unless every element was written.
pub fn import_all(server: &Server, document: &Value) {
    let path = format!("{}/import", simple_path());
    let answer = server.post_json(&path, &[("Authorization", server.admin.as_str())], document);
    assert_eq!(answer, json!([]), "the seed import failed: {document}");
}
