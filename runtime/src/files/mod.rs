//! Files (seed §4.5–§4.6, reference §9.1): uploads streamed into an object store, each recorded
//! as a node of the system type `File`; downloads by the file's secret, with ranges; the stored
//! object of a deleted `File` node removed once the deletion has committed.
//!
//! An upload's object lives at `{service id}/{secret}`, as in the reference. The store is
//! `object_store`'s: a local directory by default (under the service's `.svc/`), or any
//! S3-compatible store ([`open_store`]), which several instances of a service share. The object is
//! written through a multipart upload, which only becomes visible under its key when it
//! completes, so no reader ever sees half a file; it is written before its node, and removed again
//! when the node cannot be written.

pub mod download;
pub mod images;
pub mod sweep;
pub mod upload;

use std::sync::Arc;

use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::path::Path as Key;
use object_store::prefix::PrefixStore;
use object_store::{ObjectStore, ObjectStoreExt};

use crate::engine::{Change, ChangeKind, Observer};
use crate::model::{ModelMeta, ServiceMeta, Val};

/// The most bytes an upload may hold unless configured otherwise (the seed's 200 MB).
pub const DEFAULT_MAX_UPLOAD: u64 = 200 * 1024 * 1024;

/// The File API's store and addresses, shared by the upload and download routes and by the
/// observer that removes deleted files.
#[derive(Debug)]
pub struct Files {
    store: Arc<dyn ObjectStore>,
    /// The service id, the first segment of every key.
    service_id: String,
    /// `{files_url}`: where downloads are served publicly; `None`: this server's `/files/v1`
    /// at the address the upload was sent to.
    files_url: Option<String>,
    /// The most bytes one upload may hold.
    pub max_upload: u64,
    /// The system type `File`, when the service has it (every service built by the generator
    /// does; a hand-written `ServiceMeta` may not).
    pub model: Option<&'static ModelMeta>,
}

impl Files {
    /// Opens the store at `location` ([`open_store`]).
    pub fn open(
        location: &str,
        service: &'static ServiceMeta,
        service_id: String,
        files_url: Option<String>,
        max_upload: u64,
    ) -> Result<Files, String> {
        Ok(Files {
            store: open_store(location)?,
            service_id,
            files_url: files_url.map(|u| u.trim_end_matches('/').to_owned()),
            max_upload,
            model: service.models.iter().copied().find(|m| m.is_file()),
        })
    }

    /// The key of the object of the file with this secret.
    fn key(&self, secret: &str) -> Key {
        Key::from_iter([self.service_id.as_str(), secret])
    }

    /// Where the variants computed from the file with this secret are kept (the Image API's);
    /// they go with the file.
    fn variants(&self, secret: &str) -> Key {
        Key::from_iter(["variants", self.service_id.as_str(), secret])
    }

    /// The public address of the file with this secret: `{files_url}/{service id}/{secret}`;
    /// `here` is this server's `/files/v1` as the client reached it, for when no `files_url`
    /// is configured.
    pub fn url(&self, here: &str, secret: &str) -> String {
        let base = self.files_url.as_deref().unwrap_or(here);
        format!("{base}/{}/{secret}", self.service_id)
    }

    /// Removes the object of the file with this secret and the variants computed from it.
    /// Errors are logged: the node is gone already, and an object left behind is only space.
    async fn remove(&self, secret: &str) {
        let key = self.key(secret);
        if let Err(e) = self.store.delete(&key).await
            && !matches!(e, object_store::Error::NotFound { .. })
        {
            eprintln!("svc: could not remove the stored file `{key}`: {e}");
        }
        let prefix = self.variants(secret);
        let listed = self
            .store
            .list(Some(&prefix))
            .map(|m| m.map(|m| m.location));
        let mut removed = self.store.delete_stream(Box::pin(listed));
        use futures_util::StreamExt;
        while let Some(res) = removed.next().await {
            if let Err(e) = res
                && !matches!(e, object_store::Error::NotFound { .. })
            {
                eprintln!("svc: could not remove a variant of `{key}`: {e}");
            }
        }
    }
}

/// The object store at `location`:
///
/// - a directory, or a `file://` URL of one (created when missing);
/// - `s3://BUCKET[/PREFIX][?endpoint=URL&region=R&access_key_id=K&secret_access_key=S]`: any
///   S3-compatible store. What the URL leaves out comes from the usual `AWS_*` variables
///   (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT`, …); an
///   `http://` endpoint is allowed without TLS.
pub fn open_store(location: &str) -> Result<Arc<dyn ObjectStore>, String> {
    if let Some(rest) = location.strip_prefix("s3://") {
        return open_s3(location, rest);
    }
    let dir = match location.strip_prefix("file://") {
        Some(path) => path,
        None if location.contains("://") => {
            return Err(format!(
                "the file store `{}` is not supported: give a directory, a `file://` URL or an `s3://` URL",
                redacted(location)
            ));
        }
        None => location,
    };
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("could not create the file store `{dir}`: {e}"))?;
    let store = LocalFileSystem::new_with_prefix(dir)
        .map_err(|e| format!("could not open the file store `{dir}`: {e}"))?;
    Ok(Arc::new(store))
}

fn open_s3(location: &str, rest: &str) -> Result<Arc<dyn ObjectStore>, String> {
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (bucket, prefix) = path.split_once('/').unwrap_or((path, ""));
    if bucket.is_empty() {
        return Err(format!(
            "the file store `{}` names no bucket: write `s3://BUCKET[/PREFIX]`",
            redacted(location)
        ));
    }
    // HTTPS to the store goes through rustls with ring's cryptography; the first store opened
    // installs it for the process (a second call finds it there, which is no error).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        builder = match key {
            "endpoint" => builder
                .with_allow_http(value.starts_with("http://"))
                .with_endpoint(value),
            "region" => builder.with_region(value),
            "access_key_id" => builder.with_access_key_id(value),
            "secret_access_key" => builder.with_secret_access_key(value),
            other => {
                return Err(format!(
                    "the file store `{}` has an unknown setting `{other}` (endpoint, region, access_key_id, secret_access_key)",
                    redacted(location)
                ));
            }
        };
    }
    let store = builder.build().map_err(|e| {
        format!(
            "could not open the file store `{}`: {e}",
            redacted(location)
        )
    })?;
    Ok(if prefix.trim_matches('/').is_empty() {
        Arc::new(store)
    } else {
        Arc::new(PrefixStore::new(store, prefix.trim_matches('/')))
    })
}

/// A store location without the value of its `secret_access_key`, for messages and logs.
pub fn redacted(location: &str) -> String {
    match location.split_once("secret_access_key=") {
        Some((before, after)) => {
            let rest = after.find('&').map_or("", |at| &after[at..]);
            format!("{before}secret_access_key=<redacted>{rest}")
        }
        None => location.to_owned(),
    }
}

/// Removes the stored files of `File` nodes once their deletion has committed. It wants no other
/// change ([`Observer::active`] is false): the deletions of `File` nodes are reported to every
/// observer whatever they want.
#[derive(Debug)]
pub struct Cleanup {
    files: Arc<Files>,
}

impl Cleanup {
    /// The observer that removes the deleted files of `files`' store.
    pub fn new(files: Arc<Files>) -> Cleanup {
        Cleanup { files }
    }
}

impl Observer for Cleanup {
    fn committed(&self, changes: &[Change]) {
        let secrets: Vec<String> = changes
            .iter()
            .filter_map(|change| match change {
                Change::Node {
                    model,
                    kind: ChangeKind::Deleted,
                    previous: Some(previous),
                    ..
                } if model.is_file() => {
                    let index = model.field_index("secret")?;
                    match previous.get(index) {
                        Some(Val::String(secret)) => Some(secret.clone()),
                        _ => None,
                    }
                }
                _ => None,
            })
            .collect();
        if secrets.is_empty() {
            return;
        }
        let files = self.files.clone();
        tokio::spawn(async move {
            for secret in secrets {
                files.remove(&secret).await;
            }
        });
    }

    fn active(&self) -> bool {
        false
    }
}
