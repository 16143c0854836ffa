//! One upload (seed §4.5, reference §9.1): the bytes of the form part `data` streamed into the
//! store, at most [`Files::max_upload`] of them, then the `File` node that records them.
//!
//! Memory stays bounded whatever the size: the bytes go on to the store in parts of
//! [`PART_BYTES`], with at most one part in flight beside the one being filled.

use std::fmt::Display;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use object_store::{ObjectStoreExt, WriteMultipart};
use serde::Serialize;

use super::Files;
use crate::engine::Request;
use crate::engine::write::create_unobserved;
use crate::model::{ApiError, ModelMeta, Val, Write, cuid, get};

/// The size of the parts an upload is written in (S3's smallest part but the last).
pub const PART_BYTES: usize = 5 * 1024 * 1024;

/// The content type of a file whose name tells none, and that did not say its own.
const UNKNOWN_TYPE: &str = "application/octet-stream";

/// Why an upload failed. Nothing is stored and no node is written when one does.
#[derive(Debug)]
pub enum UploadError {
    /// The service's `File` type has required fields the File API cannot fill (seed §7).
    RequiredFields(Vec<&'static str>),
    /// The service has no `File` type.
    NoFileType,
    /// The file is larger than the limit (in bytes).
    TooLarge(u64),
    /// The request's body could not be read.
    Body(String),
    /// The store failed.
    Store(String),
    /// The node could not be written.
    Node(ApiError),
}

impl UploadError {
    /// The HTTP status that answers it.
    pub fn status(&self) -> u16 {
        match self {
            UploadError::RequiredFields(_) | UploadError::NoFileType => 400,
            UploadError::TooLarge(_) => 413,
            UploadError::Body(_) => 400,
            // An error with the reference's code is the upload's own (a name too long, …).
            UploadError::Node(e) if e.code().is_some() => 400,
            UploadError::Store(_) | UploadError::Node(_) => 500,
        }
    }

    /// What the client is told.
    pub fn message(&self) -> String {
        match self {
            UploadError::RequiredFields(fields) => format!(
                "Files cannot be uploaded while the File type has required fields the File API cannot fill: {}. Make them optional or give them a default value.",
                fields.join(", ")
            ),
            UploadError::NoFileType => "This service has no File type.".to_owned(),
            UploadError::TooLarge(limit) => {
                format!("The file is too large: an upload may hold at most {limit} bytes.")
            }
            UploadError::Body(e) => format!("The upload could not be read: {e}"),
            UploadError::Node(e) if e.code().is_some() => e.message(),
            UploadError::Store(_) | UploadError::Node(_) => {
                "The file could not be stored. Please try again.".to_owned()
            }
        }
    }

    /// The cause, for the server's log, when the client is not told it.
    pub fn cause(&self) -> Option<String> {
        match self {
            UploadError::Store(e) => Some(e.clone()),
            UploadError::Node(e) if e.code().is_none() => Some(format!("{e:?}")),
            _ => None,
        }
    }
}

/// What an upload answers (reference §9.1), in this key order.
#[derive(Debug, Serialize)]
pub struct Uploaded {
    /// The id of the `File` node the upload created.
    pub id: String,
    /// The file's secret (a cuid): whoever holds it may download the file.
    pub secret: String,
    /// The file's public address, `{files_url}/{service id}/{secret}`.
    pub url: String,
    /// The file's name (the part's `filename`, or `file`).
    pub name: String,
    /// The file's MIME type, from its name, else as the upload declared it.
    #[serde(rename = "contentType")]
    pub content_type: String,
    /// The file's size in bytes (uploads are limited to what an `Int` holds).
    pub size: i32,
}

/// The fields of `File` an upload writes, beside those every node gets.
const WRITTEN: [&str; 5] = ["secret", "name", "size", "url", "contentType"];

/// The fields of `meta` (the `File` type) that an upload would leave empty although they are
/// required: required scalars without a default, and required to-one relations.
pub fn unfillable(meta: &ModelMeta) -> Vec<&'static str> {
    let scalars = meta.fields.iter().enumerate().filter(|(i, f)| {
        f.required
            && f.default.is_none()
            && f.exposed
            && ![meta.id, meta.created_at, meta.updated_at].contains(i)
            && !WRITTEN.contains(&f.name)
    });
    let relations = meta.relations.iter().filter(|r| r.required && !r.list);
    scalars
        .map(|(_, f)| f.name)
        .chain(relations.map(|r| r.name))
        .collect()
}

/// The content type of a file: from its name (reference §9.1), else the one the upload declared
/// for its part, else `application/octet-stream`.
pub fn content_type(name: &str, declared: Option<&str>) -> String {
    match mime_guess::from_path(name).first() {
        Some(mime) => mime.essence_str().to_owned(),
        None => declared
            .filter(|d| !d.is_empty())
            .unwrap_or(UNKNOWN_TYPE)
            .to_owned(),
    }
}

/// Streams `body` into the store as the file `name` and writes its `File` node. `here` is this
/// server's `/files/v1` as the client reached it (for the file's `url`).
pub async fn upload<S, E>(
    files: &Files,
    req: &Arc<Request>,
    here: &str,
    name: String,
    content_type: String,
    mut body: S,
) -> Result<Uploaded, UploadError>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: Display,
{
    let meta = files.model.ok_or(UploadError::NoFileType)?;
    let missing = unfillable(meta);
    if !missing.is_empty() {
        return Err(UploadError::RequiredFields(missing));
    }
    // `size` is an `Int` (reference §1.5): no file may be larger than it can hold.
    let limit = files.max_upload.min(i32::MAX as u64);
    let secret = cuid();
    let key = files.key(&secret);
    let store = |e: object_store::Error| UploadError::Store(e.to_string());
    let mut writer = WriteMultipart::new_with_chunk_size(
        files.store.put_multipart(&key).await.map_err(store)?,
        PART_BYTES,
    );
    let mut size: u64 = 0;
    while let Some(chunk) = body.next().await {
        let failed = match chunk {
            Err(e) => Some(UploadError::Body(e.to_string())),
            Ok(chunk) => {
                size += chunk.len() as u64;
                if size > limit {
                    Some(UploadError::TooLarge(limit))
                } else {
                    match writer.wait_for_capacity(1).await {
                        Ok(()) => {
                            writer.put(chunk);
                            None
                        }
                        Err(e) => Some(store(e)),
                    }
                }
            }
        };
        if let Some(e) = failed {
            // An aborted upload leaves nothing under the key; its own failure changes nothing
            // for the client.
            let _ = writer.abort().await;
            return Err(e);
        }
    }
    writer.finish().await.map_err(store)?;
    let size = i32::try_from(size).unwrap_or(i32::MAX);
    let url = files.url(here, &secret);
    let mut values = Vec::new();
    for (field, value) in [
        ("secret", Val::String(secret.clone())),
        ("name", Val::String(name.clone())),
        ("size", Val::Int(size)),
        ("url", Val::String(url.clone())),
        ("contentType", Val::String(content_type.clone())),
    ] {
        if let Some(i) = meta.field_index(field) {
            values.push((i, Some(value)));
        }
    }
    let write = Write {
        values,
        rels: Vec::new(),
    };
    let id = match create_unobserved(req, meta, write).await {
        Ok(row) => get::<String, _>(&row, meta.id).map_err(|e| UploadError::Node(e.into())),
        Err(e) => Err(UploadError::Node(e)),
    };
    match id {
        Ok(id) => Ok(Uploaded {
            id,
            secret,
            url,
            name,
            content_type,
            size,
        }),
        Err(e) => {
            let _ = files.store.delete(&key).await;
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{FieldMeta, Kind, Lit, RelFieldMeta};

    const fn text(name: &'static str) -> FieldMeta {
        FieldMeta::new(name, Kind::String)
    }

    static OWNER: ModelMeta = ModelMeta {
        name: "User",
        plural: "Users",
        table: "User",
        filter_name: "UserFilter",
        order_by_name: "UserOrderBy",
        fields: &[FieldMeta::new("id", Kind::Id).required().unique()],
        id: 0,
        created_at: 0,
        updated_at: 0,
        relations: &[],
    };

    /// A `File` with the system fields and extra fields of every kind.
    static FILE: ModelMeta = ModelMeta {
        name: "File",
        plural: "Files",
        table: "File",
        filter_name: "FileFilter",
        order_by_name: "FileOrderBy",
        fields: &[
            FieldMeta::new("id", Kind::Id).required().unique(),
            text("secret").required().unique(),
            text("name").required(),
            FieldMeta::new("size", Kind::Int).required(),
            text("url").required().unique(),
            text("contentType").required(),
            FieldMeta::new("createdAt", Kind::DateTime).required(),
            FieldMeta::new("updatedAt", Kind::DateTime).required(),
            text("caption"),
            text("owner_note").required(),
            text("kind").required().default(Lit::String("doc")),
        ],
        id: 0,
        created_at: 6,
        updated_at: 7,
        relations: &[
            RelFieldMeta::new("owner", 0, "_UserFiles", &OWNER, 0).required(),
            RelFieldMeta::new("viewer", 1, "_Viewers", &OWNER, 0),
            RelFieldMeta::new("tags", 2, "_Tags", &OWNER, 0).list(),
        ],
    };

    #[test]
    fn required_fields_an_upload_cannot_fill() {
        assert_eq!(unfillable(&FILE), ["owner_note", "owner"]);
        let e = UploadError::RequiredFields(unfillable(&FILE));
        assert_eq!(e.status(), 400);
        assert_eq!(
            e.message(),
            "Files cannot be uploaded while the File type has required fields the File API cannot fill: owner_note, owner. Make them optional or give them a default value."
        );
    }

    #[test]
    fn node_errors_with_a_code_are_the_uploads_own() {
        let long = UploadError::Node(ApiError::ValueTooLong("name"));
        assert_eq!(
            (long.status(), long.message(), long.cause()),
            (400, "Value for field name is too long.".to_owned(), None)
        );
        let internal = UploadError::Node(ApiError::Internal("disk full".into()));
        assert_eq!(internal.status(), 500);
        assert_eq!(
            internal.message(),
            "The file could not be stored. Please try again."
        );
        assert!(internal.cause().is_some_and(|c| c.contains("disk full")));
    }

    #[test]
    fn content_types_come_from_the_name_first() {
        assert_eq!(content_type("a.png", Some("text/plain")), "image/png");
        assert_eq!(content_type("photo.JPG", None), "image/jpeg");
        assert_eq!(content_type("notes", Some("text/plain")), "text/plain");
        assert_eq!(content_type("notes", None), UNKNOWN_TYPE);
        assert_eq!(content_type("notes", Some("")), UNKNOWN_TYPE);
    }
}
