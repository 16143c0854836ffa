//! Runtime of svc services.
//!
//! A service crate's build script runs `svc-generator`, which emits typed Rust (records, enums,
//! root resolvers and data tables describing the model). That code calls the generic functions of
//! this crate, which hold every behaviour that does not depend on the model: the HTTP server and
//! request envelope, GraphQL filters and ordering, SQL for SQLite and PostgreSQL, mutations in
//! transactions, errors with the reference's codes.
//!
//! Generated code reaches this crate only through [`__codegen`].

pub mod api;
pub mod auth;
pub mod cli;
mod direct;
pub mod edges;
pub mod error;
pub mod filter;
pub mod meta;
pub mod migrate;
pub mod nested;
pub mod nulls;
pub mod permissions;
pub mod read;
pub mod record;
pub mod related;
pub mod roots;
pub mod server;
pub mod state;
pub mod storage;
pub mod system;
pub mod value;
pub mod write;

pub use cli::{Options, Running, ServiceDef, run, spawn};

#[doc(hidden)]
#[path = "codegen.rs"]
pub mod __codegen;

/// The allocator of every svc server (and of everything else linking the runtime). A request
/// allocates per row and per value on its way from the database to the response; glibc's
/// `malloc`, with its free-list consolidation, took about a sixth of the server's CPU on the
/// benchmark's nested read (see ARCHITECTURE.md, "Allocator").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
