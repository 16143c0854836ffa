//! The Image API's operation grammar.
//! The target's code and header are in `src/targets/image_ops.rs`; the smoke test (`tests/smoke.rs`)
//! runs the same function on stable.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| svc_fuzz::targets::image_ops::run(data));
