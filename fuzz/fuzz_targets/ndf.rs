//! NDF import and export bodies, POSTed as an admin.
//! The target's code and header are in `src/targets/ndf.rs`; the smoke test (`tests/smoke.rs`)
//! runs the same function on stable.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| svc_fuzz::targets::ndf::run(data));
