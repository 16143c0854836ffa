//! Downloads (seed §4.6, reference §9.1): a file is served to anyone who holds its secret,
//! whole or as one byte range, streamed from the store.

use std::ops::Range;

use bytes::Bytes;
use futures_util::stream::BoxStream;
use object_store::{GetOptions, GetRange, ObjectStore};

use super::Files;
use crate::engine::Request;
use crate::engine::read::row_by;
use crate::model::{ApiResult, Val, get, is_valid_id};

/// A stored file, as its `File` node describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The file's secret (a cuid) as stored: its address, and its object's key in the store.
    pub secret: String,
    /// The file's name as uploaded.
    pub name: String,
    /// The file's MIME type (`contentType`).
    pub content_type: String,
    /// The file's size in bytes.
    pub size: u64,
}

impl Stored {
    /// A strong validator of the file's bytes: a secret names one upload, whose bytes never
    /// change.
    pub fn etag(&self) -> String {
        format!("\"{}\"", self.secret)
    }

    /// `Content-Disposition` as the reference's store sets it: the name percent-encoded, plain
    /// and as UTF-8.
    pub fn disposition(&self) -> String {
        let name = percent_encoded(&self.name);
        format!("filename=\"{name}\"; filename*=\"UTF-8''{name}\"")
    }
}

/// The file with this secret, if there is one.
pub async fn find(files: &Files, req: &Request, secret: &str) -> ApiResult<Option<Stored>> {
    let Some(meta) = files.model else {
        return Ok(None);
    };
    // Secrets are cuids: anything else names no file, and never reaches the store as a key.
    if !is_valid_id(secret) {
        return Ok(None);
    }
    let Some(index) = meta.field_index("secret") else {
        return Ok(None);
    };
    let Some(row) = row_by(req, meta, index, &Val::String(secret.to_owned())).await? else {
        return Ok(None);
    };
    let column = |name: &str| meta.field_index(name).unwrap_or(index);
    let size: i32 = get(&row, column("size"))?;
    Ok(Some(Stored {
        // As stored: unique strings compare without regard to case, and the key is the
        // stored secret, not the spelling the request used.
        secret: get(&row, index)?,
        name: get(&row, column("name"))?,
        content_type: get(&row, column("contentType"))?,
        size: u64::try_from(size).unwrap_or(0),
    }))
}

/// What a request's `Range` header asks of a file of `size` bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ranged {
    /// The whole file: no range, a malformed one, or several (which are served whole).
    Whole,
    /// The bytes `start..end`.
    Part(Range<u64>),
    /// A range that holds no byte of the file (416).
    Unsatisfiable,
}

/// Reads a `Range` header (RFC 9110 §14): one range of bytes, `a-b`, `a-` or `-n`.
pub fn ranged(header: Option<&str>, size: u64) -> Ranged {
    let Some(spec) = header.and_then(|h| h.trim().strip_prefix("bytes=")) else {
        return Ranged::Whole;
    };
    if spec.contains(',') {
        return Ranged::Whole;
    }
    let Some((first, last)) = spec.trim().split_once('-') else {
        return Ranged::Whole;
    };
    let number = |s: &str| {
        let s = s.trim();
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<u64>().ok())
            .flatten()
    };
    match (first.trim().is_empty(), number(first), number(last)) {
        // `-n`: the last n bytes.
        (true, _, Some(n)) => {
            if n == 0 || size == 0 {
                Ranged::Unsatisfiable
            } else {
                Ranged::Part(size.saturating_sub(n)..size)
            }
        }
        (false, Some(start), end) if last.trim().is_empty() || end.is_some() => {
            if start >= size {
                return Ranged::Unsatisfiable;
            }
            match end {
                Some(end) if end < start => Ranged::Whole,
                Some(end) => Ranged::Part(start..end.saturating_add(1).min(size)),
                None => Ranged::Part(start..size),
            }
        }
        _ => Ranged::Whole,
    }
}

/// The bytes of `stored` (or of `range` of them), as a stream from the store.
pub async fn open(
    files: &Files,
    stored: &Stored,
    range: Option<Range<u64>>,
) -> Result<BoxStream<'static, Result<Bytes, object_store::Error>>, object_store::Error> {
    let options = GetOptions {
        range: range.map(GetRange::Bounded),
        ..GetOptions::default()
    };
    let got = files
        .store
        .get_opts(&files.key(&stored.secret), options)
        .await?;
    Ok(got.into_stream())
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn percent_encoded(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_as_rfc_9110_reads_them() {
        let r = |h: &str| ranged(Some(h), 100);
        assert_eq!(ranged(None, 100), Ranged::Whole);
        assert_eq!(r("bytes=0-9"), Ranged::Part(0..10));
        assert_eq!(r("bytes=90-"), Ranged::Part(90..100));
        assert_eq!(r("bytes=90-1000"), Ranged::Part(90..100));
        assert_eq!(r("bytes=-10"), Ranged::Part(90..100));
        assert_eq!(r("bytes=-1000"), Ranged::Part(0..100));
        assert_eq!(r("bytes=100-"), Ranged::Unsatisfiable);
        assert_eq!(r("bytes=-0"), Ranged::Unsatisfiable);
        assert_eq!(r("bytes=5-2"), Ranged::Whole);
        assert_eq!(r("bytes=0-1,5-6"), Ranged::Whole);
        assert_eq!(r("bytes=a-b"), Ranged::Whole);
        assert_eq!(r("items=0-9"), Ranged::Whole);
        assert_eq!(r("bytes=-"), Ranged::Whole);
        assert_eq!(ranged(Some("bytes=0-"), 0), Ranged::Unsatisfiable);
    }

    #[test]
    fn names_are_percent_encoded_in_the_disposition() {
        let stored = Stored {
            secret: "s".into(),
            name: "my photo é.png".into(),
            content_type: "image/png".into(),
            size: 1,
        };
        assert_eq!(
            stored.disposition(),
            "filename=\"my%20photo%20%C3%A9.png\"; filename*=\"UTF-8''my%20photo%20%C3%A9.png\""
        );
    }
}
