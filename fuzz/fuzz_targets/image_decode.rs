//! Decoding and transforming hostile images.
//! The target's code and header are in `src/targets/image_decode.rs`; the smoke test (`tests/smoke.rs`)
//! runs the same function on stable.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| svc_fuzz::targets::image_decode::run(data));
