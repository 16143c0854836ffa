//! UI tests of `service!`: a model that expands to a service the runtime accepts, and models
//! whose errors come out as `compile_error!` with the model's `file:line:col` diagnostics.
//!
//! Each case's model sits in the directory named like the case, next to it; the cases name it
//! with `relative_to_file` because trybuild compiles them in a crate of its own under
//! `target/tests/trybuild/`, where `CARGO_MANIFEST_DIR` points.
//!
//! Refresh the `.stderr` files with `TRYBUILD=overwrite cargo test -p svc-macros --test ui`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass.rs");
    t.compile_fail("tests/ui/relation_error.rs");
    t.compile_fail("tests/ui/unknown_type.rs");
    t.compile_fail("tests/ui/handler_wrong_type.rs");
    t.compile_fail("tests/ui/handler_missing.rs");
    t.compile_fail("tests/ui/subscription_field_misspelt.rs");
}
