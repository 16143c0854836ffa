//! The example service, generated from `svc.yml` and `types.graphql` by the build script.
//!
//! The crate is compiled without the implicit prelude: that proves the generated code names every
//! item by its full path and does not depend on what the including crate imports.

#![no_implicit_prelude]

::core::include!(::core::concat!(::core::env!("OUT_DIR"), "/svc.rs"));
