//! The File API (seed §2.1, §4.5–§4.6, reference §1.5 and §9.1): uploads over real multipart
//! requests, the `File` node they write and how the Simple API shows it, downloads with ranges
//! and validators, the fields only the system writes, the size cap, and deletion removing the
//! stored object.

/// Declares test bodies that run on a server per database and store: SQLite and PostgreSQL,
/// each with the local store and with S3 (`name::sqlite`, `name::postgres`, `name::sqlite_s3`,
/// `name::postgres_s3`).
macro_rules! store_tests {
    ($( $(#[$meta:meta])* async fn $name:ident($srv:ident) $body:block )*) => {$(
        $(#[$meta])*
        async fn $name($srv: &crate::support::Server) $body

        mod $name {
            use crate::stores::Store;
            use crate::support::{Db, Server};

            async fn run(db: Db, store: Store) {
                // `None` only outside CI, when PostgreSQL or moto cannot run (after a notice).
                let Some(srv) = Server::start_with_store(db, store).await else { return };
                super::$name(&srv).await;
            }

            #[tokio::test]
            async fn sqlite() {
                run(Db::Sqlite, Store::Local).await;
            }

            #[tokio::test]
            async fn postgres() {
                run(Db::Postgres, Store::Local).await;
            }

            #[tokio::test]
            async fn sqlite_s3() {
                run(Db::Sqlite, Store::S3).await;
            }

            #[tokio::test]
            async fn postgres_s3() {
                run(Db::Postgres, Store::S3).await;
            }
        }
    )*};
}

mod images;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{SERVICE_ID, ScratchDir, Server, is_cuid};

/// One part of a `multipart/form-data` body.
struct Part<'a> {
    name: &'a str,
    filename: Option<&'a str>,
    content_type: Option<&'a str>,
    bytes: &'a [u8],
}

impl<'a> Part<'a> {
    fn data(filename: &'a str, bytes: &'a [u8]) -> Part<'a> {
        Part {
            name: "data",
            filename: Some(filename),
            content_type: Some("application/octet-stream"),
            bytes,
        }
    }
}

const BOUNDARY: &str = "svc-test-boundary-7MA4YWxkTrZu0gW";

/// The body of a `multipart/form-data` request with these parts, written out by hand so that
/// each test controls exactly what the server receives.
fn multipart(parts: &[Part<'_>]) -> Vec<u8> {
    let mut body = Vec::new();
    for part in parts {
        body.extend_from_slice(format!("--{BOUNDARY}\r\n").as_bytes());
        let mut disposition = format!("Content-Disposition: form-data; name=\"{}\"", part.name);
        if let Some(filename) = part.filename {
            disposition.push_str(&format!("; filename=\"{filename}\""));
        }
        body.extend_from_slice(disposition.as_bytes());
        body.extend_from_slice(b"\r\n");
        if let Some(ty) = part.content_type {
            body.extend_from_slice(format!("Content-Type: {ty}\r\n").as_bytes());
        }
        body.extend_from_slice(b"\r\n");
        body.extend_from_slice(part.bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
    body
}

/// POSTs `parts` to the File API of service `id`, without any credentials.
async fn upload_to(srv: &Server, id: &str, parts: &[Part<'_>]) -> reqwest::Response {
    srv.anonymous()
        .post(srv.url(&format!("/file/v1/{id}")))
        .header(
            "Content-Type",
            format!("multipart/form-data; boundary={BOUNDARY}"),
        )
        .body(multipart(parts))
        .send()
        .await
        .expect("the upload request")
}

/// Uploads one file and returns the answer's JSON, checking the status and `Request-Id`.
async fn upload(srv: &Server, filename: &str, bytes: &[u8]) -> Value {
    let res = upload_to(srv, SERVICE_ID, &[Part::data(filename, bytes)]).await;
    assert_eq!(res.status(), 200, "upload of {filename}");
    let request_id = res.headers()["Request-Id"].to_str().unwrap().to_owned();
    assert!(
        request_id.strip_prefix("local:file:").is_some_and(is_cuid),
        "{request_id}"
    );
    res.json().await.expect("the upload answers JSON")
}

/// The bytes `0, 1, …, 255, 0, 1, …` of a file of `len` bytes.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// The bytes the server stored for the file with `secret`, if it holds any.
async fn stored(srv: &Server, secret: &str) -> Option<Vec<u8>> {
    srv.store.get(&format!("{SERVICE_ID}/{secret}")).await
}

/// Every key in the server's store, and for a local store every file in its directory too
/// (anything half written would show there).
async fn everything_stored(srv: &Server) -> Vec<String> {
    let mut all = srv.store.keys().await;
    if let Some(dir) = &srv.store.dir {
        let prefix = format!("{}/", dir.display());
        all.extend(
            files_under(dir)
                .into_iter()
                .map(|f| format!("file {}", f.strip_prefix(&prefix).unwrap_or(&f))),
        );
    }
    all
}

/// Every file under `dir`, recursively (the store's objects and anything half written).
fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                out.extend(files_under(&path));
            } else {
                out.push(path.display().to_string());
            }
        }
    }
    out.sort();
    out
}

store_tests! {
    /// The answer is the reference's object, in its key order, and the node is in the Simple API.
    async fn an_upload_answers_with_its_file_node(srv) {
        let bytes = pattern(1000);
        let uploaded = upload(srv, "photo.png", &bytes).await;
        let keys: Vec<&String> = uploaded.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["id", "secret", "url", "name", "contentType", "size"]);
        let id = uploaded["id"].as_str().unwrap();
        let secret = uploaded["secret"].as_str().unwrap();
        assert!(is_cuid(id) && is_cuid(secret) && id != secret, "{uploaded}");
        assert_eq!(
            uploaded,
            json!({
                "id": id,
                "secret": secret,
                "url": srv.url(&format!("/files/v1/{SERVICE_ID}/{secret}")),
                "name": "photo.png",
                "contentType": "image/png",
                "size": 1000,
            })
        );
        assert_eq!(stored(srv, secret).await, Some(bytes));
        let read = srv
            .data(&format!(
                r#"{{ File(id: "{id}") {{ id secret url name contentType size }}
                     allFiles(filter: {{ name_ends_with: ".png" }}) {{ id }}
                     _allFilesMeta {{ count }} }}"#
            ))
            .await;
        assert_eq!(
            read,
            json!({
                "File": uploaded,
                "allFiles": [{ "id": id }],
                "_allFilesMeta": { "count": 1 },
            })
        );
    }

    /// A part `data` without a file name is stored as `file`, with the type the part declared.
    async fn an_upload_without_a_filename_is_named_file(srv) {
        let res = upload_to(
            srv,
            SERVICE_ID,
            &[
                Part { name: "note", filename: None, content_type: None, bytes: b"ignored" },
                Part { name: "data", filename: None, content_type: Some("text/plain"), bytes: b"hello" },
            ],
        )
        .await;
        assert_eq!(res.status(), 200);
        let uploaded: Value = res.json().await.unwrap();
        assert_eq!(uploaded["name"], "file");
        assert_eq!(uploaded["contentType"], "text/plain");
        assert_eq!(uploaded["size"], 5);
        let secret = uploaded["secret"].as_str().unwrap();
        assert_eq!(stored(srv, secret).await.as_deref(), Some(&b"hello"[..]));
    }

    /// Uploads that cannot be: no part `data`, no multipart body, an unknown service. Nothing is
    /// stored and no node is written.
    async fn bad_uploads_are_refused_and_store_nothing(srv) {
        let res = upload_to(
            srv,
            SERVICE_ID,
            &[Part { name: "file", filename: Some("a.txt"), content_type: None, bytes: b"x" }],
        )
        .await;
        assert_eq!(res.status(), 400);
        let body: Value = res.json().await.unwrap();
        assert!(
            body["error"].as_str().unwrap().starts_with("The upload has no form part named `data`"),
            "{body}"
        );
        let res = srv
            .anonymous()
            .post(srv.url(&format!("/file/v1/{SERVICE_ID}")))
            .header("Content-Type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 400);
        let body: Value = res.json().await.unwrap();
        assert!(
            body["error"].as_str().unwrap().starts_with("The upload is not a readable multipart/form-data body"),
            "{body}"
        );
        let res = upload_to(srv, "nope", &[Part::data("a.txt", b"x")]).await;
        assert_eq!(res.status(), 404);
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["code"], 3016);
        assert_eq!(body["error"], "Project not found: 'nope'");
        assert_eq!(srv.data("{ _allFilesMeta { count } }").await, json!({ "_allFilesMeta": { "count": 0 } }));
        assert_eq!(everything_stored(srv).await, Vec::<String>::new());
    }

    /// `GET` on the upload endpoint answers 202 `OK`; `OPTIONS` allows the asking origin.
    async fn the_upload_endpoint_answers_get_and_options(srv) {
        let url = srv.url(&format!("/file/v1/{SERVICE_ID}"));
        let res = srv.anonymous().get(&url).send().await.unwrap();
        assert_eq!(res.status(), 202);
        assert!(res.headers().contains_key("Request-Id"));
        assert_eq!(res.text().await.unwrap(), "OK");
        let res = srv
            .anonymous()
            .request(reqwest::Method::OPTIONS, &url)
            .header("Origin", "https://app.example")
            .header("Access-Control-Request-Method", "POST")
            .header("Access-Control-Request-Headers", "x-upload-token")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 202);
        let header = |name: &str| res.headers()[name].to_str().unwrap().to_owned();
        assert_eq!(header("Access-Control-Allow-Origin"), "https://app.example");
        assert_eq!(header("Access-Control-Allow-Headers"), "x-upload-token");
        assert_eq!(header("Access-Control-Allow-Methods"), "GET, POST, OPTIONS");
    }

    /// Downloads: the whole file with its headers, ranges, validators, unknown secrets.
    async fn downloads_serve_ranges_and_validators(srv) {
        let bytes = pattern(1000);
        let uploaded = upload(srv, "report 2026.pdf", &bytes).await;
        let url = uploaded["url"].as_str().unwrap().to_owned();
        let secret = uploaded["secret"].as_str().unwrap();
        let get = |headers: &[(&str, &str)]| {
            let mut req = srv.anonymous().get(&url);
            for (name, value) in headers {
                req = req.header(*name, *value);
            }
            req.send()
        };
        let res = get(&[]).await.unwrap();
        assert_eq!(res.status(), 200);
        let header = |res: &reqwest::Response, name: &str| {
            res.headers().get(name).map(|v| v.to_str().unwrap().to_owned())
        };
        let etag = format!("\"{secret}\"");
        assert_eq!(header(&res, "Content-Type").as_deref(), Some("application/pdf"));
        assert_eq!(
            header(&res, "Content-Disposition").as_deref(),
            Some("filename=\"report%202026.pdf\"; filename*=\"UTF-8''report%202026.pdf\"")
        );
        assert_eq!(header(&res, "ETag"), Some(etag.clone()));
        assert_eq!(header(&res, "Accept-Ranges").as_deref(), Some("bytes"));
        assert_eq!(header(&res, "Content-Length").as_deref(), Some("1000"));
        assert_eq!(
            header(&res, "Cache-Control").as_deref(),
            Some("public, max-age=31536000, immutable")
        );
        assert_eq!(res.bytes().await.unwrap().as_ref(), bytes.as_slice());

        for (range, start, end) in [("bytes=10-19", 10, 20), ("bytes=990-", 990, 1000), ("bytes=-5", 995, 1000), ("bytes=900-5000", 900, 1000)] {
            let res = get(&[("Range", range)]).await.unwrap();
            assert_eq!(res.status(), 206, "{range}");
            assert_eq!(
                header(&res, "Content-Range"),
                Some(format!("bytes {start}-{}/1000", end - 1)),
                "{range}"
            );
            assert_eq!(res.bytes().await.unwrap().as_ref(), &bytes[start..end], "{range}");
        }
        let res = get(&[("Range", "bytes=1000-")]).await.unwrap();
        assert_eq!(res.status(), 416);
        assert_eq!(header(&res, "Content-Range").as_deref(), Some("bytes */1000"));
        // A range whose `If-Range` names other bytes gets the whole file.
        let res = get(&[("Range", "bytes=0-9"), ("If-Range", "\"other\"")]).await.unwrap();
        assert_eq!(res.status(), 200);
        assert_eq!(res.bytes().await.unwrap().len(), 1000);
        let res = get(&[("Range", "bytes=0-9"), ("If-Range", etag.as_str())]).await.unwrap();
        assert_eq!(res.status(), 206);
        let res = get(&[("If-None-Match", etag.as_str())]).await.unwrap();
        assert_eq!(res.status(), 304);
        assert_eq!(header(&res, "ETag"), Some(etag.clone()));
        let res = srv.anonymous().head(&url).send().await.unwrap();
        assert_eq!(res.status(), 200);
        assert_eq!(header(&res, "Content-Length").as_deref(), Some("1000"));

        // Unique strings compare without regard to case: the secret in capitals names the same
        // file, which is served from its stored key.
        let res = srv
            .anonymous()
            .get(srv.url(&format!("/files/v1/{SERVICE_ID}/{}", secret.to_uppercase())))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        assert_eq!(header(&res, "ETag"), Some(etag.clone()));
        assert_eq!(res.bytes().await.unwrap().as_ref(), bytes.as_slice());
        for path in [
            format!("/files/v1/{SERVICE_ID}/cunknownsecret000000000"),
            format!("/files/v1/{SERVICE_ID}/..%2F..%2Fetc%2Fpasswd"),
        ] {
            let res = srv.anonymous().get(srv.url(&path)).send().await.unwrap();
            assert_eq!(res.status(), 404, "{path}");
            let body: Value = res.json().await.unwrap();
            assert_eq!(body["error"], "File not found", "{path}");
        }
        let res = srv
            .anonymous()
            .get(srv.url(&format!("/files/v1/other/{secret}")))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 404);
    }

}

db_tests! {
    /// `secret`, `url`, `contentType` and `size` are written by the File API only (3019); the
    /// name can change, and downloads then carry the new one. No mutation creates a file.
    async fn file_fields_the_system_owns_are_read_only(srv) {
        let uploaded = upload(srv, "a.txt", b"abc").await;
        let id = uploaded["id"].as_str().unwrap();
        for (field, value) in [("secret", "\"x\""), ("url", "\"x\""), ("contentType", "\"x\""), ("size", "3")] {
            let res = srv
                .gql(&format!(r#"mutation {{ updateFile(id: "{id}", {field}: {value}) {{ id }} }}"#))
                .await;
            assert_eq!(res["data"]["updateFile"], Value::Null, "{res}");
            assert_eq!(res["errors"][0]["code"], 3019, "{res}");
            assert_eq!(
                res["errors"][0]["message"],
                format!("The field {field} is read only."),
                "{res}"
            );
        }
        let res = srv
            .gql(r#"mutation { updateManyFiles(data: { size: 1 }) { count } }"#)
            .await;
        assert_eq!(res["errors"][0]["code"], 3019, "{res}");
        let renamed = srv
            .data(&format!(r#"mutation {{ updateFile(id: "{id}", name: "b.txt") {{ name secret size }} }}"#))
            .await;
        assert_eq!(
            renamed,
            json!({ "updateFile": { "name": "b.txt", "secret": uploaded["secret"], "size": 3 } })
        );
        let res = srv
            .anonymous()
            .get(uploaded["url"].as_str().unwrap())
            .send()
            .await
            .unwrap();
        assert_eq!(
            res.headers()["Content-Disposition"].to_str().unwrap(),
            "filename=\"b.txt\"; filename*=\"UTF-8''b.txt\""
        );
        for mutation in [
            r#"mutation { createFile(name: "x") { id } }"#,
            r#"mutation { updateOrCreateFile(update: { id: "x" }, create: { name: "x" }) { id } }"#,
        ] {
            let res = srv.gql(mutation).await;
            crate::support::assert_validation_error(&res, "File");
        }
    }

    /// The Relay API has `File` too: in `viewer` and through `node(id)`, without `createFile`.
    async fn the_relay_api_has_files(srv) {
        let uploaded = upload(srv, "a.txt", b"abc").await;
        let id = uploaded["id"].as_str().unwrap();
        let relay = srv.url(&format!("/relay/v1/{SERVICE_ID}"));
        let read = srv
            .post_url_as(
                &relay,
                Some(srv.root_token()),
                &json!({ "query": format!(r#"{{ viewer {{ allFiles {{ edges {{ node {{ id name size }} }} }} }} node(id: "{id}") {{ ... on File {{ contentType }} }} }}"#) }),
            )
            .await;
        assert_eq!(
            read,
            json!({ "data": {
                "viewer": { "allFiles": { "edges": [{ "node": { "id": id, "name": "a.txt", "size": 3 } }] } },
                "node": { "contentType": "text/plain" },
            } })
        );
        let create = srv
            .post_url_as(
                &relay,
                Some(srv.root_token()),
                &json!({ "query": r#"mutation { createFile(input: { name: "x", clientMutationId: "1" }) { clientMutationId } }"# }),
            )
            .await;
        crate::support::assert_validation_error(&create, "createFile");
    }

    /// `File.read` permissions apply as to any type: anonymous clients see names, not secrets.
    async fn file_read_permissions_guard_the_secret(srv) {
        upload(srv, "a.txt", b"abc").await;
        let anonymous = srv.post_as(None, &json!({ "query": "{ allFiles { name size } }" })).await;
        assert_eq!(anonymous, json!({ "data": { "allFiles": [{ "name": "a.txt", "size": 3 }] } }));
        let secret = srv.post_as(None, &json!({ "query": "{ allFiles { name secret } }" })).await;
        assert_eq!(secret["errors"][0]["code"], 3008, "{secret}");
        assert!(secret.to_string().contains("a.txt") || secret["data"].is_null(), "{secret}");
        assert!(!secret.to_string().contains("\"secret\":\"c"), "the secret leaked: {secret}");
    }

}

store_tests! {
    /// Deleting a `File` node removes its object once the deletion has committed; the other
    /// files stay.
    async fn deleting_a_file_removes_its_object(srv) {
        let kept = upload(srv, "kept.txt", b"kept").await;
        let gone = upload(srv, "gone.txt", b"gone").await;
        let gone_secret = gone["secret"].as_str().unwrap();
        assert!(stored(srv, gone_secret).await.is_some());
        let deleted = srv
            .data(&format!(r#"mutation {{ deleteFile(id: "{}") {{ name }} }}"#, gone["id"].as_str().unwrap()))
            .await;
        assert_eq!(deleted, json!({ "deleteFile": { "name": "gone.txt" } }));
        let mut waited = 0;
        while stored(srv, gone_secret).await.is_some() && waited < 100 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            waited += 1;
        }
        assert_eq!(stored(srv, gone_secret).await, None, "the object of a deleted file stays");
        assert!(stored(srv, kept["secret"].as_str().unwrap()).await.is_some());
        let res = srv.anonymous().get(gone["url"].as_str().unwrap()).send().await.unwrap();
        assert_eq!(res.status(), 404);
        let res = srv.anonymous().get(kept["url"].as_str().unwrap()).send().await.unwrap();
        assert_eq!(res.bytes().await.unwrap().as_ref(), b"kept");
    }
}

db_cases! {
    /// An upload one byte over the cap gets 413 and leaves neither an object nor a node.
    async fn an_upload_over_the_cap_stores_nothing(db) {
        let Some(srv) = Server::start_with_max_upload(db, 1000).await else { return };
        let fits = upload(&srv, "fits.bin", &pattern(1000)).await;
        assert_eq!(fits["size"], 1000);
        let res = upload_to(&srv, SERVICE_ID, &[Part::data("over.bin", &pattern(1001))]).await;
        assert_eq!(res.status(), 413);
        let body: Value = res.json().await.unwrap();
        assert_eq!(
            body["error"],
            "The file is too large: an upload may hold at most 1000 bytes."
        );
        assert_eq!(
            srv.data("{ allFiles { name } }").await,
            json!({ "allFiles": [{ "name": "fits.bin" }] })
        );
        let key = format!("{SERVICE_ID}/{}", fits["secret"].as_str().unwrap());
        assert_eq!(
            everything_stored(&srv).await,
            [key.clone(), format!("file {key}")],
            "only the upload that fits is stored"
        );
    }
}

/// A figure of `/proc/<pid>/status` in bytes (`VmRSS`: resident now; `VmHWM`: the peak).
pub(crate) fn memory(pid: u32, field: &str) -> u64 {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the server's status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .unwrap_or_else(|| panic!("no {field} in the server's status"))
}

/// Sends one upload of `len` bytes over a plain TCP connection, written in 64 KiB pieces as they
/// are made (so the client never holds the file), and returns the answer's status and body.
async fn stream_upload(port: u16, len: usize) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let head = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"data\"; filename=\"big.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
    );
    let tail = format!("\r\n--{BOUNDARY}--\r\n");
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let request = format!(
        "POST /file/v1/{SERVICE_ID} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{head}",
        head.len() + len + tail.len()
    );
    stream
        .write_all(request.as_bytes())
        .await
        .expect("send the head");
    let piece = pattern(64 * 1024);
    let mut sent = 0;
    while sent < len {
        let n = piece.len().min(len - sent);
        stream.write_all(&piece[..n]).await.expect("send the file");
        sent += n;
    }
    stream
        .write_all(tail.as_bytes())
        .await
        .expect("send the tail");
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .await
        .expect("the answer");
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = answer
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    (status, body)
}

db_cases! {
    /// A 150 MB upload, to the real binary, grows its resident memory by less than 32 MB.
    async fn a_large_upload_keeps_memory_bounded(db) {
        let Some(database) = crate::support::TestDatabase::create(db).await else { return };
        // The 150 MiB object goes whether the test passes or not.
        let (store, served) = served_with_store(&database.url, &format!("memory-{db:?}"));
        let store = store.path();
        // One small upload first, so that what every request allocates once is in `before`.
        let (status, _) = stream_upload(served.port, 1000).await;
        assert_eq!(status, 200);
        let before = memory(served.pid(), "VmRSS");
        let len = 150 * 1024 * 1024;
        let (status, body) = stream_upload(served.port, len).await;
        assert_eq!(status, 200, "{body}");
        let answer: Value = serde_json::from_str(&body).expect("the upload's answer");
        assert_eq!(answer["size"], len);
        let peak = memory(served.pid(), "VmHWM");
        let growth = peak.saturating_sub(before);
        let stored = object_path_in(store, answer["secret"].as_str().unwrap());
        assert_eq!(std::fs::metadata(&stored).map(|m| m.len()).ok(), Some(len as u64));
        eprintln!("a 150 MiB upload grew the server's resident memory by {} KiB", growth / 1024);
        assert!(
            growth < 32 * 1024 * 1024,
            "the server's resident memory grew by {} MiB during a 150 MiB upload",
            growth / (1024 * 1024)
        );
    }
}

db_cases! {
    /// The buffers of image transforms go back to the system as soon as no other transform is
    /// to come, not when their blocking threads end after 10 s idle (docs/operations.md, "Memory
    /// after a large response"). The real binary, its resident memory read from `/proc`.
    async fn image_transforms_return_their_memory(db) {
        let Some(database) = crate::support::TestDatabase::create(db).await else { return };
        let (_store, mut served) = served_with_store(&database.url, &format!("images-memory-{db:?}"));
        let base = format!("http://127.0.0.1:{}", served.port);
        let client = reqwest::Client::new();
        let photo = images::picture(3000, 2000, image::ImageFormat::Jpeg);
        let part = Part { content_type: Some("image/jpeg"), ..Part::data("photo.jpg", &photo) };
        let uploaded: Value = client
            .post(format!("{base}/file/v1/{SERVICE_ID}"))
            .header("Content-Type", format!("multipart/form-data; boundary={BOUNDARY}"))
            .body(multipart(&[part]))
            .send()
            .await
            .expect("the upload")
            .json()
            .await
            .expect("the upload's answer");
        let secret = uploaded["secret"].as_str().expect("a secret").to_owned();
        let transform = |width: u32| {
            // A crop decodes its rows at full size (a fit alone would decode the picture shrunk).
            let request = client.get(format!("{base}/images/v1/{SERVICE_ID}/{secret}/0x0:2990x1990/{width}x200"));
            async move {
                let res = request.send().await.expect("the image request");
                assert_eq!(res.status(), 200);
                res.bytes().await.expect("the image").len()
            }
        };
        // What every transform allocates once is resident before the measure.
        transform(300).await;
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
        let before = memory(served.pid(), "VmRSS");
        for width in 301..305 {
            assert!(transform(width).await > 0);
        }
        let peak = memory(served.pid(), "VmHWM");
        let grown = peak.saturating_sub(before);
        // A decoded 3000 x 2000 picture is 18 MB: without that growth this test proves nothing.
        assert!(grown > 16 << 20, "the transforms grew the server by only {} KiB", grown >> 10);
        settles(&mut served, before, peak, std::time::Duration::from_secs(4)).await;
    }
}

/// The real binary on a local store of its own, in a folder named after `name` that goes with
/// the returned guard (declared before the server, so dropped after it).
fn served_with_store(database_url: &str, name: &str) -> (ScratchDir, crate::auth::secret::Served) {
    let removed = ScratchDir::new(&format!("svc-files-{name}"));
    let store_text = removed.location();
    let served = crate::auth::secret::Served::start_with(
        database_url,
        Some(crate::support::SECRET),
        &[("SVC_FILE_STORE", store_text.as_str())],
    );
    (removed, served)
}

/// Waits up to `within` for the resident memory of `served`, which went from `before` to `peak`
/// bytes, to come back within a quarter of that growth, and returns it with the time it took;
/// fails with the server's output when it does not.
pub(crate) async fn settles(
    served: &mut crate::auth::secret::Served,
    before: u64,
    peak: u64,
    within: std::time::Duration,
) -> (u64, std::time::Duration) {
    let bound = before + peak.saturating_sub(before) / 4;
    let since = std::time::Instant::now();
    let mut now = memory(served.pid(), "VmRSS");
    while now > bound && since.elapsed() < within {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        now = memory(served.pid(), "VmRSS");
    }
    let output = if now > bound {
        served.stop()
    } else {
        String::new()
    };
    assert!(
        now <= bound,
        "{} MiB before, {} MiB at the peak, still {} MiB after {within:?}\n{output}",
        before >> 20,
        peak >> 20,
        now >> 20
    );
    (now, since.elapsed())
}

/// A folder removed with everything in it when this is dropped, also when a test panics.
/// Where a server with the store `store` keeps the object of the file with `secret`.
fn object_path_in(store: &Path, secret: &str) -> std::path::PathBuf {
    store.join(SERVICE_ID).join(secret)
}

/// A service whose `File` has a required field of its own (`caption: String!`).
mod with_required_field {
    svc_macros::service!(relative_to_file = "required/svc.yml");
}

db_cases! {
    /// An upload to a service whose `File` has a required field the File API cannot fill fails
    /// with a message that names it, and stores nothing.
    async fn a_required_file_field_refuses_uploads(db) {
        let Some(database) = crate::support::TestDatabase::create(db).await else { return };
        let store = crate::stores::TestStore::create(crate::stores::Store::Local, &format!("required-{}-{db:?}", std::process::id()))
            .expect("a local store");
        let options = crate::support::options(&database.url, SERVICE_ID, "required", store.location.clone());
        let running = tokio::task::spawn_blocking(move || {
            svc_runtime::spawn::<with_required_field::Service>(options)
        })
        .await
        .expect("the spawning thread")
        .expect("the service starts");
        let url = format!("http://127.0.0.1:{}/file/v1/{SERVICE_ID}", running.port);
        let res = reqwest::Client::new()
            .post(&url)
            .header("Content-Type", format!("multipart/form-data; boundary={BOUNDARY}"))
            .body(multipart(&[Part::data("a.txt", b"abc")]))
            .send()
            .await
            .expect("the upload request");
        assert_eq!(res.status(), 400);
        let body: Value = res.json().await.unwrap();
        assert_eq!(
            body["error"],
            "Files cannot be uploaded while the File type has required fields the File API cannot fill: caption. Make them optional or give them a default value."
        );
        running.stop();
        assert_eq!(store.keys().await, Vec::<String>::new());
    }
}
