//! A lean HTTP/1.1 client for the measured loops: each client loop keeps one connection of its
//! own, writes a request whose head was formatted once per cell, and reads the response with
//! `httparse`, its body framed by `Content-Length` or chunked.
//!
//! The load generator shares the machine's cores with the servers it measures, so what it
//! spends per request is taken from them, and the more so the faster they are (pgbench, the
//! raw-SQL peer, spends almost nothing). reqwest, which the suite used before, costs a pooled
//! connection's checkout, a request and header map, a `hyper` dispatch task and a
//! `serde_json::Value` for each request body.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long one request may take, from its first byte written to its response's last read.
const TIMEOUT: Duration = Duration::from_secs(60);
/// Response heads with more headers than this are refused.
const MAX_HEADERS: usize = 64;

/// Where requests go, and the part of their head that never changes.
#[derive(Debug)]
pub struct Endpoint {
    /// `host:port`, for connecting.
    authority: String,
    /// `host[:port]` as the URL gave it, for the `Host` header.
    host: String,
    /// The request line and the fixed headers, up to `Content-Length: ` (posts only).
    head: Vec<u8>,
}

/// The authority of `url` (`http://host[:port][/path]`), with the port, and its path.
fn split_url(url: &str) -> Result<(String, &str, &str), String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("not an http:// URL: {url}"))?;
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    if authority.is_empty() {
        return Err(format!("no host in {url}"));
    }
    let with_port = if authority.contains(':') {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    Ok((with_port, authority, path))
}

impl Endpoint {
    /// The server of `url`, for [`Conn::get`]s of paths on it.
    pub fn server(url: &str) -> Result<Endpoint, String> {
        let (authority_with_port, authority, _) = split_url(url)?;
        Ok(Endpoint {
            authority: authority_with_port,
            host: authority.to_owned(),
            head: Vec::new(),
        })
    }

    /// A `POST` of JSON to `url` (`http://host[:port][/path]`), with `Authorization: Bearer`
    /// when there is a token.
    pub fn post_json(url: &str, token: Option<&str>) -> Result<Endpoint, String> {
        let (authority_with_port, authority, path) = split_url(url)?;
        let mut head = format!(
            "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
             Accept: application/json\r\n"
        );
        if let Some(token) = token {
            head.push_str(&format!("Authorization: Bearer {token}\r\n"));
        }
        head.push_str("Content-Length: ");
        Ok(Endpoint {
            authority: authority_with_port,
            host: authority.to_owned(),
            head: head.into_bytes(),
        })
    }
}

/// A response: status, body and the value of one header the caller asked for.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub body: bytes::Bytes,
    /// The value of the header named in [`Conn::post`]'s `header`, if it was present.
    pub header: Option<String>,
}

/// One client loop's connection, opened on first use and again after the server closed it.
pub struct Conn<'a> {
    endpoint: &'a Endpoint,
    stream: Option<TcpStream>,
    /// Bytes read and not yet consumed.
    buf: Vec<u8>,
    /// The request being written.
    out: Vec<u8>,
    /// Whether the open connection has carried a response already (so the server may close it
    /// as idle between two requests).
    reused: bool,
}

/// Why reading a response failed.
enum ReadErr {
    /// The connection ended before any byte of the response.
    ClosedBeforeResponse,
    Other(String),
}

impl From<std::io::Error> for ReadErr {
    fn from(e: std::io::Error) -> ReadErr {
        ReadErr::Other(format!("reading the response failed: {e}"))
    }
}

impl<'a> Conn<'a> {
    pub fn new(endpoint: &'a Endpoint) -> Conn<'a> {
        Conn {
            endpoint,
            stream: None,
            buf: Vec::with_capacity(16 * 1024),
            out: Vec::with_capacity(1024),
            reused: false,
        }
    }

    /// Posts `body` and reads the whole response. A connection the server closed before
    /// answering, after it had answered on it before (an idle keep-alive connection it let
    /// go), is replaced and the request sent again: the server never read it.
    pub async fn post(&mut self, body: &[u8], header: &str) -> Result<Response, String> {
        self.out.clear();
        self.out.extend_from_slice(&self.endpoint.head);
        self.out
            .extend_from_slice(body.len().to_string().as_bytes());
        self.out.extend_from_slice(b"\r\n\r\n");
        self.out.extend_from_slice(body);
        self.send(header).await
    }

    /// Gets `path` from the endpoint's server and reads the whole response.
    pub async fn get(&mut self, path: &str, header: &str) -> Result<Response, String> {
        self.out.clear();
        self.out.extend_from_slice(b"GET ");
        self.out.extend_from_slice(path.as_bytes());
        self.out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
        self.out.extend_from_slice(self.endpoint.host.as_bytes());
        self.out.extend_from_slice(b"\r\n\r\n");
        self.send(header).await
    }

    /// Sends the request in `out`, as [`Conn::post`] says.
    async fn send(&mut self, header: &str) -> Result<Response, String> {
        let exchange = async {
            loop {
                let retry = self.reused;
                match self.exchange(header).await {
                    Err(ReadErr::ClosedBeforeResponse) if retry => continue,
                    Err(ReadErr::ClosedBeforeResponse) => {
                        return Err("the server closed the connection without answering".into());
                    }
                    Err(ReadErr::Other(e)) => return Err(e),
                    Ok(response) => return Ok(response),
                }
            }
        };
        match tokio::time::timeout(TIMEOUT, exchange).await {
            Ok(result) => result,
            Err(_) => {
                self.stream = None;
                Err(format!("no response within {} s", TIMEOUT.as_secs()))
            }
        }
    }

    /// Writes the request in `out` on the open connection (or a new one) and reads the answer.
    /// On any failure the connection is dropped.
    async fn exchange(&mut self, header: &str) -> Result<Response, ReadErr> {
        if self.stream.is_none() {
            let stream = TcpStream::connect(&self.endpoint.authority)
                .await
                .map_err(|e| {
                    ReadErr::Other(format!(
                        "cannot connect to {}: {e}",
                        self.endpoint.authority
                    ))
                })?;
            stream
                .set_nodelay(true)
                .map_err(|e| ReadErr::Other(format!("cannot set TCP_NODELAY: {e}")))?;
            self.stream = Some(stream);
            self.reused = false;
            self.buf.clear();
        }
        let result = self.write_and_read(header).await;
        match &result {
            Ok((_, keep)) if *keep => self.reused = true,
            _ => {
                self.stream = None;
                self.reused = false;
                self.buf.clear();
            }
        }
        result.map(|(response, _)| response)
    }

    /// Returns the response and whether the connection may carry another request.
    async fn write_and_read(&mut self, header: &str) -> Result<(Response, bool), ReadErr> {
        let stream = self.stream.as_mut().expect("connected above");
        if let Err(e) = stream.write_all(&self.out).await {
            // A reused connection the server closed may fail the write rather than the read.
            return Err(if self.reused {
                ReadErr::ClosedBeforeResponse
            } else {
                ReadErr::Other(format!("sending the request failed: {e}"))
            });
        }
        loop {
            let head = parse_head(&self.buf, header).map_err(ReadErr::Other)?;
            if let Some(head) = head {
                if (100..200).contains(&head.status) {
                    // An interim response (`100 Continue`): the real one follows.
                    self.buf.drain(..head.len);
                    continue;
                }
                return self.read_body(head).await;
            }
            match fill(stream, &mut self.buf).await {
                Ok(true) => {}
                // The server closed the connection (or reset it, when it closed it with our
                // request unread) before answering.
                Ok(false) if self.buf.is_empty() => return Err(ReadErr::ClosedBeforeResponse),
                Err(e) if self.buf.is_empty() && self.reused && closed(&e) => {
                    return Err(ReadErr::ClosedBeforeResponse);
                }
                Ok(false) => {
                    return Err(ReadErr::Other(
                        "the connection ended inside the response head".into(),
                    ));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    async fn read_body(&mut self, head: Head) -> Result<(Response, bool), ReadErr> {
        let stream = self.stream.as_mut().expect("connected above");
        let no_body = head.status == 204 || head.status == 304;
        let (body, keep) = match head.framing {
            _ if no_body => {
                self.buf.drain(..head.len);
                (Vec::new(), head.keep_alive)
            }
            Framing::Length(n) => {
                while self.buf.len() < head.len + n {
                    if !fill(stream, &mut self.buf).await? {
                        return Err(ReadErr::Other(
                            "the connection ended inside the body".into(),
                        ));
                    }
                }
                let body = self.buf[head.len..head.len + n].to_vec();
                self.buf.drain(..head.len + n);
                (body, head.keep_alive)
            }
            Framing::Chunked => loop {
                if let Some((body, used)) =
                    dechunk(&self.buf[head.len..]).map_err(ReadErr::Other)?
                {
                    self.buf.drain(..head.len + used);
                    break (body, head.keep_alive);
                }
                if !fill(stream, &mut self.buf).await? {
                    return Err(ReadErr::Other(
                        "the connection ended inside the body".into(),
                    ));
                }
            },
            Framing::UntilClose => {
                while fill(stream, &mut self.buf).await? {}
                let body = self.buf[head.len..].to_vec();
                self.buf.clear();
                (body, false)
            }
        };
        Ok((
            Response {
                status: head.status,
                body: body.into(),
                header: head.header,
            },
            keep,
        ))
    }
}

/// Whether `e` says the peer closed or reset the connection.
fn closed(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(e.kind(), ConnectionReset | ConnectionAborted | BrokenPipe)
}

/// Reads more bytes into `buf`; `false` when the connection ended.
async fn fill(stream: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    if buf.capacity() - buf.len() < 4096 {
        buf.reserve(16 * 1024);
    }
    Ok(stream.read_buf(buf).await? > 0)
}

/// How a response's body ends.
#[derive(Debug, PartialEq)]
enum Framing {
    Length(usize),
    Chunked,
    /// No length and not chunked: the body runs to the end of the connection.
    UntilClose,
}

/// A parsed response head.
#[derive(Debug, PartialEq)]
struct Head {
    status: u16,
    /// Its length in bytes, up to and including the blank line.
    len: usize,
    framing: Framing,
    keep_alive: bool,
    header: Option<String>,
}

/// Parses the response head at the start of `buf`; `None` while it is incomplete. `header` names
/// a header whose value the caller wants.
fn parse_head(buf: &[u8], header: &str) -> Result<Option<Head>, String> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let len = match response.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(format!("not an HTTP/1.1 response head: {e}")),
    };
    let status = response.code.ok_or("a response head without a status")?;
    // HTTP/1.0 closes after each response unless it says otherwise; 1.1 keeps it open.
    let mut keep_alive = response.version == Some(1);
    let mut framing = Framing::UntilClose;
    let mut wanted = None;
    for h in response.headers.iter() {
        let value = || std::str::from_utf8(h.value).map(str::trim);
        if h.name.eq_ignore_ascii_case("content-length") {
            let n = value()
                .ok()
                .and_then(|v| v.parse().ok())
                .ok_or("an unreadable Content-Length")?;
            if framing != Framing::Chunked {
                framing = Framing::Length(n);
            }
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            if value().is_ok_and(|v| v.to_ascii_lowercase().ends_with("chunked")) {
                framing = Framing::Chunked;
            }
        } else if h.name.eq_ignore_ascii_case("connection") {
            let v = value().unwrap_or("").to_ascii_lowercase();
            if v.contains("close") {
                keep_alive = false;
            } else if v.contains("keep-alive") {
                keep_alive = true;
            }
        } else if h.name.eq_ignore_ascii_case(header) {
            wanted = value().ok().map(str::to_owned);
        }
    }
    Ok(Some(Head {
        status,
        len,
        framing,
        keep_alive,
        header: wanted,
    }))
}

/// Decodes a chunked body at the start of `buf`: the body and the bytes it took, or `None`
/// while it is incomplete. Chunk extensions and trailers are skipped.
fn dechunk(buf: &[u8]) -> Result<Option<(Vec<u8>, usize)>, String> {
    let mut body = Vec::new();
    let mut at = 0;
    loop {
        let Some(eol) = find_crlf(&buf[at..]) else {
            return Ok(None);
        };
        let line = std::str::from_utf8(&buf[at..at + eol]).map_err(|_| "a bad chunk size")?;
        let size = line.split(';').next().unwrap_or("").trim();
        let size =
            usize::from_str_radix(size, 16).map_err(|_| format!("a bad chunk size {line:?}"))?;
        at += eol + 2;
        if size == 0 {
            // Trailers, each ending in CRLF, then an empty line.
            loop {
                let Some(eol) = find_crlf(&buf[at..]) else {
                    return Ok(None);
                };
                at += eol + 2;
                if eol == 0 {
                    return Ok(Some((body, at)));
                }
            }
        }
        if buf.len() < at + size + 2 {
            return Ok(None);
        }
        body.extend_from_slice(&buf[at..at + size]);
        if &buf[at + size..at + size + 2] != b"\r\n" {
            return Err("a chunk not followed by CRLF".into());
        }
        at += size + 2;
    }
}

fn find_crlf(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|w| w == b"\r\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_give_status_framing_and_the_wanted_header() {
        let head =
            b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nSvc-Sql-Statements: 2\r\n\r\n{\"data\":{}}";
        assert_eq!(
            parse_head(head, "svc-sql-statements").unwrap(),
            Some(Head {
                status: 200,
                len: head.len() - 11,
                framing: Framing::Length(12),
                keep_alive: true,
                header: Some("2".into()),
            })
        );
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
        let head = parse_head(chunked, "x").unwrap().unwrap();
        assert_eq!(
            (head.framing, head.keep_alive, head.header),
            (Framing::Chunked, false, None)
        );
        let old = b"HTTP/1.0 500 Internal Server Error\r\n\r\n";
        let head = parse_head(old, "x").unwrap().unwrap();
        assert_eq!(
            (head.status, head.framing, head.keep_alive),
            (500, Framing::UntilClose, false)
        );
        assert_eq!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Le", "x").unwrap(),
            None
        );
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", "x").is_err());
        assert!(parse_head(b"<html>\r\n\r\n", "x").is_err());
    }

    #[test]
    fn chunked_bodies_are_joined_and_end_after_the_trailers() {
        let body = b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: x\r\n\r\nNEXT";
        let (decoded, used) = dechunk(body).unwrap().unwrap();
        assert_eq!(
            (decoded.as_slice(), &body[used..]),
            (&b"hello world"[..], &b"NEXT"[..])
        );
        // Every proper prefix is incomplete.
        for end in 0..used {
            assert_eq!(
                dechunk(&body[..end]).unwrap(),
                None,
                "prefix of {end} bytes"
            );
        }
        assert!(dechunk(b"zz\r\n").is_err());
        assert!(dechunk(b"2\r\nabXY").is_err());
    }

    #[test]
    fn endpoints_format_their_head_once() {
        let e = Endpoint::post_json("http://127.0.0.1:8080/simple/v1/bench", Some("t")).unwrap();
        assert_eq!(e.authority, "127.0.0.1:8080");
        assert_eq!(
            String::from_utf8(e.head).unwrap(),
            "POST /simple/v1/bench HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: \
             application/json\r\nAccept: application/json\r\nAuthorization: Bearer t\r\n\
             Content-Length: "
        );
        let e = Endpoint::post_json("http://localhost", None).unwrap();
        assert_eq!(e.authority, "localhost:80");
        assert!(Endpoint::post_json("https://x/", None).is_err());
    }

    /// How the test server ends a connection after its answers.
    #[derive(Clone, Copy, PartialEq)]
    enum End {
        /// Reads the next request and closes the connection (FIN) without answering.
        Close,
        /// The same with a reset (RST).
        Reset,
        /// Leaves it open.
        Open,
    }

    /// Reads one request (head and `Content-Length` body) from `s`, keeping what follows in `buf`.
    async fn read_request(s: &mut tokio::net::TcpStream, buf: &mut Vec<u8>) -> String {
        loop {
            let text = String::from_utf8_lossy(buf).to_string();
            if let Some(end) = text.find("\r\n\r\n")
                && let Some(len) = text
                    .lines()
                    .find_map(|l| l.strip_prefix("Content-Length: "))
                && buf.len() >= end + 4 + len.parse::<usize>().unwrap()
            {
                let total = end + 4 + len.parse::<usize>().unwrap();
                return String::from_utf8(buf.drain(..total).collect()).unwrap();
            }
            let mut chunk = [0u8; 1024];
            let n = s.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the client closed the connection");
            buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// A real exchange over loopback: keep-alive, a chunked answer, and a server that lets an
    /// idle connection go, by closing it and by resetting it: the request is sent again on a
    /// new connection.
    #[tokio::test]
    async fn a_connection_is_kept_and_replaced_when_the_server_closes_it() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let mut requests = Vec::new();
            for (answers, end) in [(2usize, End::Close), (1, End::Reset), (1, End::Open)] {
                let (mut s, _) = listener.accept().await.unwrap();
                let mut buf = Vec::new();
                for i in 0..answers {
                    requests.push(read_request(&mut s, &mut buf).await);
                    let answer: &[u8] = if i == 0 {
                        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-N: 1\r\n\r\nok"
                    } else {
                        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
                    };
                    s.write_all(answer).await.unwrap();
                }
                if end != End::Open {
                    read_request(&mut s, &mut buf).await;
                }
                if end == End::Reset {
                    // A zero linger resets the connection on drop (and does not block).
                    #[allow(deprecated)]
                    s.set_linger(Some(Duration::ZERO)).unwrap();
                }
            }
            requests
        });
        let endpoint = Endpoint::post_json(&format!("http://127.0.0.1:{port}/x"), None).unwrap();
        let mut conn = Conn::new(&endpoint);
        let first = conn.post(b"{\"a\":1}", "x-n").await.unwrap();
        assert_eq!(
            (first.status, &first.body[..], first.header.as_deref()),
            (200, &b"ok"[..], Some("1"))
        );
        let second = conn.post(b"{}", "x-n").await.unwrap();
        assert_eq!((&second.body[..], second.header), (&b"abc"[..], None));
        // Sent on the first connection, which the server closes; answered on the second.
        let third = conn.post(b"[]", "x-n").await.unwrap();
        assert_eq!(&third.body[..], b"ok");
        // Sent on the second, which the server resets; answered on the third.
        let fourth = conn.post(b"[1]", "x-n").await.unwrap();
        assert_eq!(&fourth.body[..], b"ok");
        let requests = server.await.unwrap();
        assert_eq!(requests.len(), 4);
        assert!(requests[0].starts_with("POST /x HTTP/1.1\r\nHost: 127.0.0.1:"));
        assert!(requests[0].ends_with("Content-Length: 7\r\n\r\n{\"a\":1}"));
        assert!(requests[2].ends_with("\r\n\r\n[]"));
        assert!(requests[3].ends_with("\r\n\r\n[1]"));
    }

    /// A connection that a server closes before its first answer is an error, not a retry
    /// (the request may have been read).
    #[tokio::test]
    async fn a_new_connection_closed_without_an_answer_is_an_error() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            read_request(&mut s, &mut Vec::new()).await
        });
        let endpoint = Endpoint::post_json(&format!("http://127.0.0.1:{port}/"), None).unwrap();
        let err = Conn::new(&endpoint).post(b"{}", "x").await.unwrap_err();
        assert_eq!(err, "the server closed the connection without answering");
        assert!(server.await.unwrap().ends_with("\r\n\r\n{}"));
    }
}
