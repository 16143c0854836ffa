//! Parsing of the two input languages, keeping positions: `svc.yml` ([`config`]) and the GraphQL
//! SDL of the `types:` files ([`sdl`]).
//!
//! Architecture invariant: nothing here knows the data-model rules. Syntax reports only what makes
//! a file unreadable or a key unknown; meaning is checked by the model's validation
//! (`model/validate/`).

pub mod config;
mod positions;
pub mod sdl;
mod variables;
