//! Multipart upload bodies, POSTed to the File API.
//! The target's code and header are in `src/targets/multipart.rs`; the smoke test (`tests/smoke.rs`)
//! runs the same function on stable.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| svc_fuzz::targets::multipart::run(data));
