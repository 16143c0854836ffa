//! Objects of the file store that no `File` node names: an upload whose node was never written
//! (the server stopped between completing the object and inserting the node) and a deleted
//! file whose object outlived its node (the server stopped between the deletion's commit and
//! the removal that follows it, [`super::Cleanup`]), with the image variants computed from
//! either. The binary's `sweep-files` subcommand removes them (docs/operations.md, "Files
//! that no node names").
//!
//! Only keys of this service's layout are looked at (`{service id}/{secret}` and
//! `variants/{service id}/{secret}/…`), and only objects older than a grace period, so that an
//! upload still between its object and its node is left alone.

use std::time::Duration;

use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use object_store::path::Path as Key;
use object_store::{ObjectMeta, ObjectStoreExt};

use super::Files;
use crate::engine::read::find_row;
use crate::model::{ModelMeta, Val, is_valid_id};
use crate::storage::{Counted, Counter, Db};

/// What a sweep found and did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Swept {
    /// Files whose node exists: kept.
    pub kept: u64,
    /// Objects younger than the grace period: not looked up, kept.
    pub recent: u64,
    /// The keys of the objects no node names (removed, or to be removed on a dry run), in the
    /// order they were found.
    pub orphans: Vec<String>,
    /// Their bytes in all.
    pub orphan_bytes: u64,
}

/// Finds the objects of `files`' store under this service's keys, older than `grace`, whose
/// secret no `File` node of `db` holds, and removes them unless `dry_run`.
pub async fn sweep(
    files: &Files,
    db: &Db,
    grace: Duration,
    dry_run: bool,
) -> Result<Swept, String> {
    let Some(model) = files.model else {
        return Err("the service has no `File` type, so it keeps no files".into());
    };
    let secret = model
        .field_index("secret")
        .ok_or("the `File` type has no `secret` field")?;
    // A grace period longer than the calendar leaves every object alone.
    let cutoff = chrono::Duration::from_std(grace)
        .ok()
        .and_then(|grace| Utc::now().checked_sub_signed(grace))
        .unwrap_or(DateTime::<Utc>::MIN_UTC);
    let mut sweeper = Sweeper {
        files,
        db,
        model,
        secret,
        cutoff,
        dry_run,
        last: None,
        swept: Swept::default(),
    };
    // `{service id}/{secret}`: the uploads.
    sweeper
        .walk(&Key::from(files.service_id.as_str()), 1)
        .await?;
    // `variants/{service id}/{secret}/…`: what the Image API computed from them.
    sweeper
        .walk(&Key::from_iter(["variants", files.service_id.as_str()]), 2)
        .await?;
    Ok(sweeper.swept)
}

struct Sweeper<'a> {
    files: &'a Files,
    db: &'a Db,
    model: &'static ModelMeta,
    /// The index of `File.secret`.
    secret: usize,
    cutoff: DateTime<Utc>,
    dry_run: bool,
    /// The secret looked up last and whether a node holds it: a file's variants are listed one
    /// after the other (they share a directory, and S3 lists in key order).
    last: Option<(String, bool)>,
    swept: Swept,
}

impl Sweeper<'_> {
    /// Every object under `prefix`, whose secret is its key's part at `at`.
    async fn walk(&mut self, prefix: &Key, at: usize) -> Result<(), String> {
        let store = self.files.store.clone();
        let mut listed = store.list(Some(prefix));
        while let Some(meta) = listed.next().await {
            let meta = meta.map_err(|e| format!("cannot list the file store: {e}"))?;
            self.visit(meta, at).await?;
        }
        Ok(())
    }

    async fn visit(&mut self, meta: ObjectMeta, at: usize) -> Result<(), String> {
        let parts: Vec<String> = meta
            .location
            .parts()
            .map(|p| p.as_ref().to_owned())
            .collect();
        let Some(secret) = parts.get(at) else {
            return Ok(());
        };
        // An upload's key has exactly two parts; a variant's at least four. Anything else, or a
        // secret that is no id, was not written by this service: left alone.
        let ours = if at == 1 {
            parts.len() == 2
        } else {
            parts.len() > 3
        };
        if !ours || !is_valid_id(secret) {
            return Ok(());
        }
        if meta.last_modified > self.cutoff {
            self.swept.recent += 1;
            return Ok(());
        }
        if self.is_named(secret).await? {
            if at == 1 {
                self.swept.kept += 1;
            }
            return Ok(());
        }
        if !self.dry_run {
            match self.files.store.delete(&meta.location).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(format!("cannot remove `{}`: {e}", meta.location)),
            }
        }
        self.swept.orphans.push(meta.location.to_string());
        self.swept.orphan_bytes += meta.size;
        Ok(())
    }

    /// Whether a `File` node holds this secret.
    async fn is_named(&mut self, secret: &str) -> Result<bool, String> {
        if let Some((last, named)) = &self.last
            && last == secret
        {
            return Ok(*named);
        }
        let counter = Counter::new();
        let reads = Counted {
            conn: self.db.reader(),
            counter: &counter,
        };
        let row = find_row(
            &reads,
            self.model,
            self.secret,
            &Val::String(secret.to_owned()),
        )
        .await
        .map_err(|e| format!("cannot read the `File` nodes: {}", e.message()))?;
        self.last = Some((secret.to_owned(), row.is_some()));
        Ok(row.is_some())
    }
}
