//! Decoding hostile images: the Image API's decode and transform path
//! (`svc_runtime::files::images::transform::apply`: decode within the limits, turn upright,
//! crop, resize, encode) on fuzzed image bytes. The input's first byte is the length of an
//! operation path (`500x300`, `10x20:300x200/100x`, as after a file's secret), which follows it;
//! the image's bytes are the rest.
//!
//! A variant that is computed must decode again, in the format it came in, with the size the
//! operations ask for: at most `MAX_SIDE` a side.

use svc_runtime::files::images::ops::{MAX_SIDE, Ops, parse};
use svc_runtime::files::images::transform::apply;

/// Runs one input (the module's header says what it is and what must hold).
pub fn run(data: &[u8]) {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let n = usize::from(n).min(rest.len());
    let (path, bytes) = rest.split_at(n);
    let Ok(path) = std::str::from_utf8(path) else {
        return;
    };
    let segments: Vec<&str> = path.split('/').collect();
    let Ok(ops) = parse(&segments) else {
        return;
    };
    // A resize that would make an image larger than the API allows is the `image_ops`
    // target's finding; here it would only allocate until the process is out of memory.
    if too_large(bytes, &ops) {
        return;
    }
    let Ok(out) = apply(bytes, &ops) else {
        return;
    };
    let format = image::guess_format(bytes).expect("a computed variant of an image of no format");
    let again = image::load_from_memory_with_format(&out, format)
        .unwrap_or_else(|e| panic!("the variant of {path:?} does not decode as {format:?}: {e}"));
    assert!(
        again.width() <= MAX_SIDE && again.height() <= MAX_SIDE,
        "the variant of {path:?} is {}x{}",
        again.width(),
        again.height()
    );
}

/// Whether `ops` would resize the image (as its header describes it, upright either way, after
/// the crop) to more than `MAX_SIDE` a side.
fn too_large(bytes: &[u8], ops: &Ops) -> bool {
    let Some(resize) = ops.resize else {
        return false;
    };
    let reader = image::ImageReader::new(std::io::Cursor::new(bytes)).with_guessed_format();
    let Ok((w, h)) = reader
        .map_err(|_| ())
        .and_then(|r| r.into_dimensions().map_err(|_| ()))
    else {
        return false;
    };
    [(w, h), (h, w)].into_iter().any(|(w, h)| {
        let (w, h) = match ops.crop {
            Some(c) if c.x < w && c.y < h => (c.width.min(w - c.x), c.height.min(h - c.y)),
            _ => (w, h),
        };
        let (tw, th) = resize.target(w.max(1), h.max(1));
        tw > MAX_SIDE || th > MAX_SIDE
    })
}
