//! The example service, generated from `svc.yml` and `types.graphql` by the build script.

include!(concat!(env!("OUT_DIR"), "/svc.rs"));
