//! The File API's routes (seed §4.5–§4.6, reference §9.1): `POST /file/v1/<id>` takes an upload
//! (multipart, the file in the part `data`), `GET` and `OPTIONS` on it answer 202 as the
//! original's did, and `GET /files/v1/<id>/<secret>` serves a file to anyone who holds its
//! secret, whole or as one range, with a validator and long cache headers;
//! `GET /images/v1/<id>/<secret>/<ops>` serves an image resized, cropped or renamed.
//!
//! No authorization applies: anyone may upload, and the secret is what guards a download.

use std::sync::Arc;

use actix_multipart::Multipart;
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder, web};
use futures_util::StreamExt;

use super::Service;
use crate::auth::Principal;
use crate::engine::Request;
use crate::files::Files;
use crate::files::download::{self, Ranged};
use crate::files::images::{ImageError, Images, Served};
use crate::files::upload::{self, UploadError};
use crate::model::{ServiceDef, cuid};
use crate::storage::Counter;

/// A year: files never change under their secret.
const CACHE_CONTROL: &str = "public, max-age=31536000, immutable";

/// The name of an upload whose part `data` has no `filename`.
const UNNAMED: &str = "file";

fn request_id() -> String {
    format!("local:file:{}", cuid())
}

/// The engine's request of the File and Image APIs: the system's own, which no permission
/// limits (the secret is what guards a file).
fn system_request<S: ServiceDef>(service: &Service<S>) -> Arc<Request> {
    Request::new(
        service.state.clone(),
        Arc::new(Counter::new()),
        Principal::Admin,
    )
}

/// `res` with the bytes `range` of `stored` (all of them when `None`) streamed from the store.
async fn streamed(
    files: &Files,
    stored: &download::Stored,
    range: Option<std::ops::Range<u64>>,
    mut res: HttpResponseBuilder,
    request_id: &str,
) -> HttpResponse {
    let length = range.as_ref().map_or(stored.size, |r| r.end - r.start);
    if length == 0 {
        return res.finish();
    }
    match download::open(files, stored, range).await {
        Ok(bytes) => res
            .no_chunking(length)
            .streaming(bytes.map(|chunk| chunk.map_err(std::io::Error::other))),
        Err(object_store::Error::NotFound { .. }) => error(404, None, "File not found", request_id),
        Err(e) => {
            eprintln!("svc: reading the file of {request_id} failed: {e}");
            error(500, None, "The file could not be read.", request_id)
        }
    }
}

/// An error of the File API: `{"code"?, "requestId", "error"}` with an HTTP status that says
/// what went wrong.
fn error(status: u16, code: Option<u32>, message: &str, request_id: &str) -> HttpResponse {
    let mut body = serde_json::Map::new();
    if let Some(code) = code {
        body.insert("code".into(), code.into());
    }
    body.insert("requestId".into(), request_id.into());
    body.insert("error".into(), message.into());
    HttpResponse::build(StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST))
        .insert_header(("Request-Id", request_id))
        .json(serde_json::Value::Object(body))
}

/// The service's Image API, and through it its files, when `id` names this service (and it
/// serves files).
fn served<'s, S: ServiceDef>(service: &'s Service<S>, id: &str) -> Option<&'s Images> {
    service.images.as_ref().filter(|_| service.knows(id))
}

fn not_found_project(id: &str, request_id: &str) -> HttpResponse {
    error(
        404,
        Some(3016),
        &format!("Project not found: '{id}'"),
        request_id,
    )
}

/// `POST /file/v1/<id>`: one upload.
pub(super) async fn upload<S: ServiceDef>(
    service: web::Data<Service<S>>,
    path: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> HttpResponse {
    let request_id = request_id();
    let id = path.into_inner();
    let Some(files) = served(&service, &id).map(Images::files) else {
        return not_found_project(&id, &request_id);
    };
    let mut parts = Multipart::new(req.headers(), payload);
    let part = loop {
        match parts.next().await {
            None => {
                return error(
                    400,
                    None,
                    "The upload has no form part named `data`: send the file as multipart/form-data, in a part named `data` (curl -F \"data=@photo.png\").",
                    &request_id,
                );
            }
            Some(Err(e)) => {
                return error(
                    400,
                    None,
                    &format!("The upload is not a readable multipart/form-data body: {e}"),
                    &request_id,
                );
            }
            Some(Ok(part)) if part.name() == Some("data") => break part,
            // Other parts are read past, never kept.
            Some(Ok(mut other)) => while let Some(Ok(_)) = other.next().await {},
        }
    };
    let name = part
        .content_disposition()
        .and_then(|d| d.get_filename())
        .filter(|n| !n.is_empty())
        .unwrap_or(UNNAMED)
        .to_owned();
    let declared = part.content_type().map(|m| m.essence_str().to_owned());
    let content_type = upload::content_type(&name, declared.as_deref());
    let engine = system_request(&service);
    let here = {
        let info = req.connection_info();
        format!("{}://{}/files/v1", info.scheme(), info.host())
    };
    match upload::upload(files, &engine, &here, name, content_type, part).await {
        Ok(uploaded) => HttpResponse::Ok()
            .insert_header(("Request-Id", request_id.as_str()))
            .json(uploaded),
        Err(e) => upload_error(&e, &request_id),
    }
}

fn upload_error(e: &UploadError, request_id: &str) -> HttpResponse {
    if let Some(cause) = e.cause() {
        eprintln!("svc: upload {request_id} failed: {cause}");
    }
    error(e.status(), None, &e.message(), request_id)
}

/// `GET /file/v1/<id>`: 202 `OK`, as the original's health answer.
pub(super) async fn upload_get() -> HttpResponse {
    HttpResponse::Accepted()
        .insert_header(("Request-Id", request_id()))
        .content_type("text/plain")
        .body("OK")
}

/// `OPTIONS /file/v1/<id>`: 202 with CORS headers that allow the asking origin and the headers
/// it asks for.
pub(super) async fn upload_options(req: HttpRequest) -> HttpResponse {
    let mut res = HttpResponse::Accepted();
    res.insert_header(("Request-Id", request_id()));
    let asked = |name| req.headers().get(name).cloned();
    res.insert_header((
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        asked(header::ORIGIN).unwrap_or(HeaderValue::from_static("*")),
    ));
    if let Some(headers) = asked(header::ACCESS_CONTROL_REQUEST_HEADERS) {
        res.insert_header((header::ACCESS_CONTROL_ALLOW_HEADERS, headers));
    }
    res.insert_header((header::ACCESS_CONTROL_ALLOW_METHODS, "GET, POST, OPTIONS"));
    res.insert_header((header::VARY, "Origin"));
    res.finish()
}

/// `GET /files/v1/<id>/<secret>` (and `HEAD`): the file, whole or one range of it.
pub(super) async fn download<S: ServiceDef>(
    service: web::Data<Service<S>>,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> HttpResponse {
    let request_id = request_id();
    let (id, secret) = path.into_inner();
    let Some(files) = served(&service, &id).map(Images::files) else {
        return not_found_project(&id, &request_id);
    };
    let engine = system_request(&service);
    let stored = match download::find(files, &engine, &secret).await {
        Ok(Some(stored)) => stored,
        Ok(None) => return error(404, None, "File not found", &request_id),
        Err(e) => {
            eprintln!("svc: download {request_id} failed: {e:?}");
            return error(500, None, "The file could not be read.", &request_id);
        }
    };
    let etag = stored.etag();
    let header_text = |name| req.headers().get(name).and_then(|v| v.to_str().ok());
    let common = |res: &mut HttpResponseBuilder| {
        res.insert_header(("Request-Id", request_id.as_str()))
            .insert_header((header::ETAG, etag.as_str()))
            .insert_header((header::CACHE_CONTROL, CACHE_CONTROL))
            .insert_header((header::ACCEPT_RANGES, "bytes"));
    };
    if header_text(header::IF_NONE_MATCH)
        .is_some_and(|tags| tags.split(',').any(|t| t.trim() == etag || t.trim() == "*"))
    {
        let mut res = HttpResponse::NotModified();
        common(&mut res);
        return res.finish();
    }
    // A range applies only to the bytes its `If-Range` names.
    let range_header = match header_text(header::IF_RANGE) {
        Some(tag) if tag.trim() != etag => None,
        _ => header_text(header::RANGE),
    };
    let (mut res, range) = match download::ranged(range_header, stored.size) {
        Ranged::Whole => (HttpResponse::Ok(), None),
        Ranged::Part(range) => {
            let mut res = HttpResponse::PartialContent();
            res.insert_header((
                header::CONTENT_RANGE,
                format!("bytes {}-{}/{}", range.start, range.end - 1, stored.size),
            ));
            (res, Some(range))
        }
        Ranged::Unsatisfiable => {
            let mut res = HttpResponse::RangeNotSatisfiable();
            common(&mut res);
            res.insert_header((header::CONTENT_RANGE, format!("bytes */{}", stored.size)));
            return res.finish();
        }
    };
    common(&mut res);
    res.insert_header((header::CONTENT_TYPE, stored.content_type.as_str()))
        .insert_header((header::CONTENT_DISPOSITION, stored.disposition()));
    streamed(files, &stored, range, res, &request_id).await
}

/// `GET /images/v1/<id>/<secret>[/<ops>…]` (reference §9.2): the image, resized, cropped or
/// renamed; errors are HTTP 400 with the reference's text as the body.
pub(super) async fn image<S: ServiceDef>(
    service: web::Data<Service<S>>,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> HttpResponse {
    let request_id = request_id();
    let (id, secret) = path.into_inner();
    let Some(images) = served(&service, &id) else {
        return not_found_project(&id, &request_id);
    };
    // The operations are the rest of the path, as sent (actix has decoded only the captures).
    let prefix = format!("/images/v1/{id}/{secret}");
    let rest = req
        .path()
        .strip_prefix(&prefix)
        .or_else(|| req.match_info().get("ops"))
        .unwrap_or("");
    let segments: Vec<&str> = rest.split('/').collect();
    let engine = system_request(&service);
    let served = images.serve(&engine, &secret, &segments).await;
    let image_headers = |res: &mut HttpResponseBuilder, stored: &download::Stored| {
        res.insert_header(("Request-Id", request_id.as_str()))
            .insert_header((header::CACHE_CONTROL, "max-age=31536000"))
            .insert_header((header::CONTENT_TYPE, stored.content_type.as_str()))
            .insert_header((header::CONTENT_DISPOSITION, stored.disposition()));
    };
    match served {
        Ok(Served::Variant {
            stored,
            bytes,
            cached,
        }) => {
            let mut res = HttpResponse::Ok();
            image_headers(&mut res, &stored);
            res.insert_header(("X-Cache", if cached { "HIT" } else { "MISS" }));
            super::sliced::respond(&mut res, bytes)
        }
        Ok(Served::Original(stored)) => {
            let mut res = HttpResponse::Ok();
            image_headers(&mut res, &stored);
            streamed(images.files(), &stored, None, res, &request_id).await
        }
        Err(ImageError::NotFound) => error(404, None, "File not found", &request_id),
        Err(ImageError::Refused(text)) => HttpResponse::BadRequest()
            .insert_header(("Request-Id", request_id.as_str()))
            .content_type("text/plain; charset=utf-8")
            .body(text),
        Err(ImageError::Internal(cause)) => {
            eprintln!("svc: image {request_id} failed: {cause}");
            error(500, None, "The image could not be computed.", &request_id)
        }
    }
}

/// The legacy image paths without `/v1` (reference §9.2): 301 to the same path under `/v1`.
pub(super) async fn image_legacy(req: HttpRequest) -> HttpResponse {
    let rest = req.path().strip_prefix("/images").unwrap_or("");
    // Under `/v1` already, but without a secret.
    if rest == "/v1" || rest.starts_with("/v1/") {
        return error(404, None, "File not found", &request_id());
    }
    let query = match req.query_string() {
        "" => String::new(),
        q => format!("?{q}"),
    };
    HttpResponse::MovedPermanently()
        .insert_header((header::LOCATION, format!("/images/v1{rest}{query}")))
        .finish()
}
