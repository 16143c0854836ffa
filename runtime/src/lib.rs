//! Runtime of svc services.
//!
//! A service crate's build script runs `svc-generator`, which emits typed Rust (records, enums and
//! data tables describing the model). That code calls the generic functions of this crate, which
//! hold every behaviour that does not depend on the model.
//!
//! The crate is built in layers, each a folder, and a module imports only from the layers below
//! its own (ARCHITECTURE.md has the map; a test enforces it):
//!
//! ```text
//! launch        the service binary's command line, start-up, spawn
//! http          routes, the request envelope, the reference's response shapes
//! api           the GraphQL APIs: simple/, permission/, system/ (and shared schema pieces)
//! events        committed changes as the subscriptions' events, and their bus
//! engine, plan  reads, writes and the commit point; compiled read plans
//! permissions   the compiled permission rules and permission queries as SQL
//! query, migrate, auth   the SQL of reads; schema migrations; tokens and principals
//! storage       connections, transactions, drivers, SQL text
//! model         data tables, records, values, errors, ServiceDef
//! ```
//!
//! Generated code reaches this crate only through [`__codegen`].
//!
//! # Example
//!
//! What a service writes against this crate itself are its functions' Rust handlers
//! (`handler: { rust: crate::functions::hello }` in `svc.yml`, docs/functions.md): an
//! `async fn(Event<D>) -> FunctionResult<O>`, whose types the generator writes into the
//! service's module `handlers` (here written by hand):
//!
//! ```no_run
//! use svc_runtime::functions::{Event, FunctionError, FunctionResult};
//! use svc_runtime::functions::rust::Handler;
//!
//! // `handlers::HelloArgs` and `handlers::HelloPayload`, for the resolver
//! // `hello(name: String): HelloPayload` of the function's schema extension.
//! pub struct HelloArgs {
//!     pub name: Option<String>,
//! }
//! pub struct HelloPayload {
//!     pub message: String,
//! }
//!
//! /// The resolver `hello`: `{ hello(name: "Ada") { message } }`.
//! pub async fn hello(event: Event<HelloArgs>) -> FunctionResult<HelloPayload> {
//!     let name = event.data.name.unwrap_or_else(|| "World".to_owned());
//!     if name.len() > 100 {
//!         // The client gets 5001 `function execution error: the name is too long`.
//!         return Err(FunctionError::from("the name is too long"));
//!     }
//!     Ok(Some(HelloPayload {
//!         message: format!("Hello {name}"),
//!     }))
//! }
//!
//! // What the generated glue checks when the service builds: `hello` is a handler of this type.
//! fn check<H: Handler<(), HelloArgs, HelloPayload>>(_: H) {}
//! check(hello);
//! ```

// Every public item is documented; CI (clippy with `-D warnings`, and `cargo doc`) holds it so.
#![warn(missing_docs)]

pub mod api;
pub mod auth;
pub mod engine;
pub mod events;
pub mod files;
pub mod functions;
pub mod http;
pub mod launch;
pub mod migrate;
pub mod model;
pub mod ndf;
pub mod permissions;
pub mod plan;
pub mod query;
pub mod storage;

pub use engine::{Change, ChangeKind, EdgeChange, Observer};
pub use launch::{Options, Running, StartError, run, spawn, spawn_observed};
pub use model::ServiceDef;

#[doc(hidden)]
#[path = "codegen.rs"]
pub mod __codegen;

#[cfg(test)]
mod layers;

/// The allocator of every svc server (and of everything else linking the runtime). A request
/// allocates per row and per value on its way from the database to the response; glibc's
/// `malloc`, with its free-list consolidation, took about a sixth of the server's CPU on the
/// benchmark's nested read (see docs/benchmarks.md, "Allocator").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
