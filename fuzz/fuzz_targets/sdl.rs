//! The model front end of the generator (svc.yml, SDL and permission queries).
//! The target's code and header are in `src/targets/sdl.rs`; the smoke test (`tests/smoke.rs`)
//! runs the same function on stable.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| svc_fuzz::targets::sdl::run(data));
