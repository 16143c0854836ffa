#!/usr/bin/env bash
# Build cost of a generated service (issue 5 goals: a rebuild after a one-field change in
# types.graphql takes at most 30 s on 2 cores; at most 400 lines of generated code per type).
#
# Measures, on example-model with a warm dependency cache:
#   1. the rebuild after adding one field to `types.graphql` (the generator runs again and the
#      service crate recompiles), against
#   2. the rebuild after touching `src/lib.rs` only (same generated code: the compile alone),
# and counts the lines of the generated `svc.rs` per model type. `types.graphql` is restored
# on exit. Options: --release (measure the release profile), --runs N (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/svc-target}"

profile=()
runs=1
while [ $# -gt 0 ]; do
  case "$1" in
    --release) profile=(--release) ;;
    --runs) runs="$2"; shift ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done

types=example-model/types.graphql
backup="$(mktemp)"
cp "$types" "$backup"
restore() { cp "$backup" "$types"; rm -f "$backup"; }
trap restore EXIT

build() { cargo build -q -p example-model "${profile[@]}"; }
calc() { awk "BEGIN { printf \"%.2f\", $1 }"; }
seconds() { local start end; start=$(date +%s.%N); "$@"; end=$(date +%s.%N); calc "$end - $start"; }

echo "== warming up (dependencies and the example service)"
build

field_total=0
touch_total=0
for i in $(seq 1 "$runs"); do
  # A new optional field on Post, different in every run so the generated code changes.
  sed "s/^type Post @model {$/type Post @model {\n  benchField$i$RANDOM: String/" "$backup" > "$types"
  t=$(seconds build)
  field_total=$(calc "$field_total + $t")
  touch example-model/src/lib.rs
  t=$(seconds build)
  touch_total=$(calc "$touch_total + $t")
done
restore
trap - EXIT
build

field=$(calc "$field_total / $runs")
touch_only=$(calc "$touch_total / $runs")
out=$(cargo build -p example-model "${profile[@]}" --message-format=json 2>/dev/null \
  | grep '"reason":"build-script-executed"' | grep '"package_id":"[^"]*example-model' \
  | sed 's/.*"out_dir":"\([^"]*\)".*/\1/' | tail -1)
lines=$(wc -l < "$out/svc.rs")
models=$(grep -c '@model' "$types")
per_type=$((lines / models))

echo "build benchmark (example-model, ${profile[*]:-debug} profile, $runs run(s), $(nproc) cores)"
printf "  rebuild after a one-field change      %6.1f s   (goal ≤ 30 s)\n" "$field"
printf "  rebuild after touching src/lib.rs     %6.1f s   (the compile alone: the peer)\n" "$touch_only"
printf "  ratio field change ÷ touch            %6.2f×\n" "$(calc "$field / $touch_only")"
printf "  generated code                        %6d lines for %d types = %d lines per type (goal ≤ 400)\n" "$lines" "$models" "$per_type"
