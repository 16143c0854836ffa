#!/usr/bin/env bash
# Reading 100 nodes under a permission query, against the same read with a root token, on one
# example-model server (SQLite by default; pass `--postgres URL` for PostgreSQL). Prints
# requests per second, latencies and the ratio. Options: --seconds N (per round, default 3),
# --rounds N (default 3), --clients N (default 8), --smoke (one short round).
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo run --release --quiet -p svc-bench --bin permissions -- "$@"
