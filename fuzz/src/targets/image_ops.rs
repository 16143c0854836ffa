//! The image-operation grammar: the Image API's path after a file's secret (`500x300`,
//! `500x300!`, `500x`, `x300`, `10x20:300x200`, `photo.png`, docs/api/files.md), split on `/` and
//! read by `svc_runtime::files::images::ops::parse`, as the route reads it.
//!
//! What a parsed address asks for must be within the API's bounds: every size and crop side
//! positive and at most `MAX_SIDE`, the third segment only a name, and the size a resize gives
//! an image the API may decode (at most `MAX_INPUT_SIDE` a side) fits inside the box it asked
//! for, and is within `MAX_SIDE` or refused (no address makes the server allocate a larger
//! image).

use svc_runtime::files::images::ops::{MAX_SIDE, Resize, parse};
use svc_runtime::files::images::transform::MAX_INPUT_SIDE;

/// Runs one input (the module's header says what it is and what must hold).
pub fn run(data: &[u8]) {
    let Ok(path) = std::str::from_utf8(data) else {
        return;
    };
    let segments: Vec<&str> = path.split('/').collect();
    let Ok(ops) = parse(&segments) else {
        return;
    };
    assert!(
        segments.iter().filter(|s| !s.is_empty()).count() <= 3,
        "{path:?}: more than three segments accepted"
    );
    let _ = ops.key();
    if let Some(c) = ops.crop {
        assert!(
            (1..=MAX_SIDE).contains(&c.width) && (1..=MAX_SIDE).contains(&c.height),
            "{path:?}: crop {c:?}"
        );
    }
    let Some(resize) = ops.resize else {
        return;
    };
    let (bw, bh) = match resize {
        Resize::Fit { width, height } | Resize::Exact { width, height } => (width, height),
        Resize::Width(w) => (w, MAX_SIDE),
        Resize::Height(h) => (MAX_SIDE, h),
    };
    assert!(
        (1..=MAX_SIDE).contains(&bw) && (1..=MAX_SIDE).contains(&bh),
        "{path:?}: resize {resize:?}"
    );
    // Images of the extreme shapes the API decodes.
    let sides = [
        1,
        2,
        3,
        7,
        100,
        999,
        1000,
        4097,
        MAX_INPUT_SIDE - 1,
        MAX_INPUT_SIDE,
    ];
    for &w in &sides {
        for &h in &sides {
            // A side past the bound is refused (the Image API answers with the text).
            let Ok((tw, th)) = resize.bounded_target(w, h) else {
                continue;
            };
            assert!(
                (1..=MAX_SIDE).contains(&tw) && (1..=MAX_SIDE).contains(&th),
                "{path:?}: {resize:?} makes an image of {w}x{h} {tw}x{th}, more than {MAX_SIDE} a side"
            );
            if let Resize::Fit { width, height } = resize {
                assert!(
                    tw <= width && th <= height,
                    "{path:?}: {w}x{h} -> {tw}x{th} does not fit"
                );
            }
        }
    }
}
