//! Behaviour tests of svc services.
//!
//! This crate has no library code of its own. Its single integration test binary,
//! `tests/behaviour/main.rs`, starts the `example-model` service in-process on a free port, once
//! against a fresh SQLite file and once against a fresh PostgreSQL schema per test, and drives it
//! over HTTP exactly as a client would, asserting on whole JSON responses.
//!
//! Run it with `cargo test -p svc-tests`. PostgreSQL is expected at
//! `postgres://postgres@127.0.0.1:5432/test` (override with `SVC_TEST_POSTGRES_URL`); outside CI
//! the PostgreSQL variants print a notice and pass when it is unreachable, in CI (`CI=true`) they
//! fail.
