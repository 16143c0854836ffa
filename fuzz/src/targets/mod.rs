//! The fuzz targets' code, one module a target, each a `run(data)` that panics when the input
//! breaks what the module's header says must hold. `fuzz_targets/<name>.rs` hands libFuzzer's
//! inputs to it; `tests/smoke.rs` runs it on stable over the corpus, the regressions and seeded
//! mutations of them.

pub mod envelope;
pub mod filter;
pub mod image_decode;
pub mod image_ops;
pub mod multipart;
pub mod ndf;
pub mod sdl;

/// A target's code: runs one input, and panics when it finds something.
pub type Run = fn(&[u8]);

/// Every target, by name.
pub const ALL: &[(&str, Run)] = &[
    ("sdl", sdl::run),
    ("envelope", envelope::run),
    ("filter", filter::run),
    ("ndf", ndf::run),
    ("multipart", multipart::run),
    ("image_ops", image_ops::run),
    ("image_decode", image_decode::run),
];
