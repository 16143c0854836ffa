//! The storage layer's own paths, driven directly: PostgreSQL's statement and pipelined
//! connections, SQLite's reads and writes on the calling thread.

mod caches;
mod connections;
mod lite;
mod pipe;
mod writer;
