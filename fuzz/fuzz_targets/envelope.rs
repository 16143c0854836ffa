//! The GraphQL request envelope, POSTed to the example service over HTTP.
//! The target's code and header are in `src/targets/envelope.rs`; the smoke test (`tests/smoke.rs`)
//! runs the same function on stable.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| svc_fuzz::targets::envelope::run(data));
