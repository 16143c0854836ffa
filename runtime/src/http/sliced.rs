//! [`Sliced`]: a response body complete in memory, handed to the HTTP layer a slice at a time.

use std::pin::Pin;
use std::task::{Context, Poll};

use actix_web::body::{BodySize, MessageBody};
use actix_web::{HttpResponse, HttpResponseBuilder};
use bytes::Bytes;

/// How much of the body is handed over at once.
const SLICE: usize = 64 * 1024;

/// A body already whole in memory, sent with its length, a slice at a time. actix's HTTP/1
/// writer copies what a body yields into its write buffer until the buffer holds 32 KiB: a
/// 10 MB body yielded in one piece is copied into a buffer grown to 10 MB, whose memory the
/// allocator returns afterwards and the kernel zeroes again for the next response. In slices
/// (views of the one text, not copies) the buffer stays small.
#[derive(Debug)]
pub(super) struct Sliced(Bytes);

impl Sliced {
    pub(super) fn new(body: impl Into<Bytes>) -> Sliced {
        Sliced(body.into())
    }
}

/// `res` with `body`: in slices when it is longer than one ([`Sliced`]), as it is otherwise
/// (one piece, which actix keeps without boxing it).
pub(super) fn respond(res: &mut HttpResponseBuilder, body: impl Into<Bytes>) -> HttpResponse {
    let body = body.into();
    if body.len() > SLICE {
        res.body(Sliced::new(body))
    } else {
        res.body(body)
    }
}

impl MessageBody for Sliced {
    type Error = std::convert::Infallible;

    fn size(&self) -> BodySize {
        BodySize::Sized(self.0.len() as u64)
    }

    fn poll_next(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        let rest = &mut self.get_mut().0;
        if rest.is_empty() {
            return Poll::Ready(None);
        }
        let slice = rest.split_to(rest.len().min(SLICE));
        Poll::Ready(Some(Ok(slice)))
    }
}

#[cfg(test)]
mod tests {
    use std::future::poll_fn;

    use super::*;

    /// The slices are the body, in order, none over [`SLICE`], and the size is the whole length
    /// from the start.
    #[tokio::test]
    async fn a_sliced_body_is_the_whole_body_with_its_length() {
        for len in [0, 1, SLICE - 1, SLICE, SLICE + 1, 10 * SLICE + 123] {
            let text: String = (0..len)
                .map(|i| char::from(b'a' + (i % 26) as u8))
                .collect();
            let mut body = Sliced::new(text.clone());
            assert_eq!(body.size(), BodySize::Sized(len as u64));
            let mut got = Vec::new();
            let mut slices = 0;
            while let Some(slice) = poll_fn(|cx| Pin::new(&mut body).poll_next(cx)).await {
                let slice = slice.unwrap_or_else(|never| match never {});
                assert!(!slice.is_empty() && slice.len() <= SLICE, "{}", slice.len());
                got.extend_from_slice(&slice);
                slices += 1;
            }
            assert_eq!(got, text.as_bytes(), "{len}");
            assert_eq!(slices, len.div_ceil(SLICE), "{len}");
        }
    }
}
