//! Filter and orderBy inputs of `all<Model>s` queries, on a seeded SQLite database.
//! The target's code and header are in `src/targets/filter.rs`; the smoke test (`tests/smoke.rs`)
//! runs the same function on stable.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| svc_fuzz::targets::filter::run(data));
