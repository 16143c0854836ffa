//! `POST /simple/v1/<id>/export` and `POST /simple/v1/<id>/import` (reference §8): NDF export
//! pages and imports, for admin tokens only (root, platform); anyone else gets 3008 with the
//! reference's text. Errors that concern the whole request come in the reference's
//! `{code?, requestId, error}` envelope, with HTTP 200.

use std::sync::Arc;

use actix_web::http::header::ContentType;
use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::Value;

use super::Service;
use super::routes::{
    authorization, json_response, new_request_id, project_not_found, request_error,
};
use crate::model::ServiceDef;
use crate::ndf::{self, Cursor, FileType};
use crate::storage::Counter;

/// Which of the two endpoints.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Way {
    Export,
    Import,
}

pub(super) async fn export<S: ServiceDef>(
    service: web::Data<Service<S>>,
    path: web::Path<String>,
    req: HttpRequest,
    body: web::Payload,
) -> HttpResponse {
    bulk(&service, &path, &req, body, Way::Export).await
}

pub(super) async fn own_export<S: ServiceDef>(
    service: web::Data<Service<S>>,
    req: HttpRequest,
    body: web::Payload,
) -> HttpResponse {
    bulk(&service, &service.service_id, &req, body, Way::Export).await
}

pub(super) async fn import<S: ServiceDef>(
    service: web::Data<Service<S>>,
    path: web::Path<String>,
    req: HttpRequest,
    body: web::Payload,
) -> HttpResponse {
    bulk(&service, &path, &req, body, Way::Import).await
}

pub(super) async fn own_import<S: ServiceDef>(
    service: web::Data<Service<S>>,
    req: HttpRequest,
    body: web::Payload,
) -> HttpResponse {
    bulk(&service, &service.service_id, &req, body, Way::Import).await
}

async fn bulk<S: ServiceDef>(
    service: &Service<S>,
    id: &str,
    req: &HttpRequest,
    body: web::Payload,
    way: Way,
) -> HttpResponse {
    let request_id = new_request_id();
    if !service.knows(id) {
        return project_not_found(id, &request_id);
    }
    let counter = Arc::new(Counter::new());
    let principal = service
        .auth()
        .resolve(&service.state.db, &counter, authorization(req))
        .await;
    if !principal.is_admin() {
        let text = match way {
            Way::Export => "Insufficient permissions for bulk export",
            Way::Import => "Insufficient permissions for bulk import",
        };
        return request_error(3008, text, &request_id);
    }
    let body = match read_body(req, body).await {
        Ok(body) => body,
        Err(message) => return error(&message, &request_id),
    };
    match way {
        Way::Export => {
            let (file_type, cursor) = match export_request(&body) {
                Ok(request) => request,
                Err(message) => return error(&message, &request_id),
            };
            let limit = service.export_page_limit;
            let resumes = &service.export_resumes;
            match ndf::export::export(&service.state, &counter, file_type, cursor, limit, resumes)
                .await
            {
                Ok(page) => super::sliced::respond(
                    HttpResponse::Ok()
                        .content_type(ContentType::json())
                        .insert_header(("Request-Id", request_id.as_str())),
                    page,
                ),
                Err(e) => error(&format!("the export failed: {}", e.message()), &request_id),
            }
        }
        Way::Import => match ndf::import::import(&service.state, &counter, body.freeze()).await {
            Ok(failures) => json_response(&failures, &request_id, Some(counter.get())),
            Err(ndf::import::RequestError(message)) => error(&message, &request_id),
        },
    }
}

/// The largest body an import or export takes (the reference's 10 MB per document).
pub(super) const MAX_BODY: usize = 10 * 1024 * 1024;

/// The request's body, read up to [`MAX_BODY`] bytes into a buffer of the length the request
/// announces (a body read into a buffer grown by doubling was copied about twice over, into
/// memory the kernel zeroed for each new size).
async fn read_body(req: &HttpRequest, mut payload: web::Payload) -> Result<web::BytesMut, String> {
    use async_graphql::futures_util::StreamExt;
    let too_large = || {
        format!(
            "the request body is larger than {} MB: split the data into documents of at most that size",
            MAX_BODY / (1024 * 1024)
        )
    };
    let announced = req
        .headers()
        .get(actix_web::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(0);
    if announced > MAX_BODY {
        return Err(too_large());
    }
    let mut body = web::BytesMut::with_capacity(announced);
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| format!("the request body could not be read: {e}"))?;
        if body.len() + chunk.len() > MAX_BODY {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// `{"requestId", "error"}`: a request the endpoint cannot take as a whole.
fn error(message: &str, request_id: &str) -> HttpResponse {
    json_response(
        &serde_json::json!({ "requestId": request_id, "error": message }),
        request_id,
        None,
    )
}

/// `{"fileType": "nodes" | "lists" | "relations", "cursor": {table, row, field, array}}`.
fn export_request(body: &[u8]) -> Result<(FileType, Cursor), String> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| format!("the body is not a JSON document: {e}"))?;
    let name = value
        .get("fileType")
        .and_then(Value::as_str)
        .ok_or("the body has no `fileType`")?;
    let file_type = FileType::parse(name)
        .ok_or_else(|| format!("unknown fileType `{name}` (nodes, lists or relations)"))?;
    let cursor = match value.get("cursor") {
        None | Some(Value::Null) => Cursor::default(),
        Some(cursor) => serde_json::from_value(cursor.clone()).map_err(|e| {
            format!("the cursor must be {{table, row, field, array}} as integers: {e}")
        })?,
    };
    Ok((file_type, cursor))
}
