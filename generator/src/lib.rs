//! `svc-generator`: the schema compiler of svc. It reads a service definition (`svc.yml` plus the
//! `types.graphql` files it lists), checks it against the rules of the reference, and produces a
//! validated [`model::Model`] that the emitters turn into Rust.
//!
//! Entry point: [`frontend::load`]. Data flow: [`source`] → [`syntax`] → [`model::validate`] →
//! [`model::Valid`]`<`[`model::Model`]`>`; every problem on the way is a [`diagnostics::Diagnostic`].

pub mod diagnostics;
pub mod frontend;
pub mod model;
pub mod naming;
pub mod source;
pub mod syntax;
