# What the benchmark scripts beside `bench/run` share (sourced, not run): a work directory, the
# processes and databases they start (all stopped or dropped on exit, also on failure or Ctrl-C),
# free ports, waiting for a server, fresh PostgreSQL databases.
#
# The sourcing script sets `bench_name`, `pg` (a PostgreSQL URL without database) and `keep`
# (true to keep the work directory and databases), and defines `say` and `die` first.

# ---------------------------------------------------------------- cleanup of what we start
work="$(mktemp -d "${TMPDIR:-/tmp}/svc-bench-${bench_name:-run}.XXXXXX")"
pids=()
databases=()
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
  done
  if ! $keep; then
    for db in "${databases[@]}"; do
      psql "$pg/postgres" -qAtc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
    done
    rm -rf "$work"
  else
    say "kept $work and the databases ${databases[*]:-}"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Stops a server we started (its pid), and forgets it.
stop_pid() {
  local pid="$1" kept=() p
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  for p in "${pids[@]}"; do
    [ "$p" = "$pid" ] || kept+=("$p")
  done
  pids=("${kept[@]}")
}

# Runs a command in the background and waits for it, so that a signal runs the traps at once.
run_wait() {
  "$@" &
  local pid=$! status=0
  pids+=("$pid")
  wait "$pid" || status=$?
  unset 'pids[-1]'
  return "$status"
}

# A free TCP port below the kernel's range for outgoing connections' local ports (as bench/run):
# ten thousand client sockets take ports from that range.
free_port() {
  local port low
  low="$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)"
  [ "$low" -gt 21000 ] 2>/dev/null || low=32768
  for _ in $(seq 1 100); do
    port=$((20000 + RANDOM % (low - 20000)))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return
    fi
  done
  die "no free port found"
}

# Waits until `pid` listens on `port`; shows its log if it dies or takes too long.
wait_port() {
  local pid="$1" port="$2" log="$3" name="$4"
  for _ in $(seq 1 600); do
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; die "$name exited during start-up"; }
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      return
    fi
    sleep 0.1
  done
  cat "$log" >&2
  die "$name did not start listening on port $port within 60 s"
}

pg_reachable() {
  command -v psql >/dev/null 2>&1 && psql "$pg/postgres" -qAtc 'SELECT 1' >/dev/null 2>&1
}

fresh_database() {
  local db="$1"
  psql "$pg/postgres" -qAtc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1
  psql "$pg/postgres" -qAtc "CREATE DATABASE $db" >/dev/null
  databases+=("$db")
}

drop_database() {
  local db="$1" kept=() d
  $keep || psql "$pg/postgres" -qAtc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
  $keep && return
  for d in "${databases[@]}"; do
    [ "$d" = "$db" ] || kept+=("$d")
  done
  databases=("${kept[@]}")
}

# start_svc NAME DATABASE_URL: the example service (`$svc_bin`, master token `$master_token`) as
# service `bench`; sets $server_pid and $target (`svc=http://127.0.0.1:PORT`).
start_svc() {
  local name="$1" url="$2" log="$work/$1.log" port attempt
  for attempt in 1 2 3; do
    port="$(free_port)"
    # The load comes from one address, many sockets at a time: no per-address or rate bound.
    SVC_MAX_SOCKETS_PER_ADDRESS=0 SVC_MAX_SOCKET_MESSAGES=0 \
    # shellcheck disable=SC2086 # SVC_BENCH_WRAP: a command the server runs under (a profiler).
    SVC_MASTER_TOKEN="$master_token" ${SVC_BENCH_WRAP:-} "$svc_bin" serve --port "$port" --database-url "$url" \
      --service-id bench --alias bench >"$log" 2>&1 &
    server_pid=$!
    pids+=("$server_pid")
    for _ in $(seq 1 50); do
      kill -0 "$server_pid" 2>/dev/null || break
      (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
      sleep 0.1
    done
    if ! kill -0 "$server_pid" 2>/dev/null && [ "$attempt" -lt 3 ] &&
      grep -q "Address already in use" "$log"; then
      say "$name: port $port was taken, trying another"
      continue
    fi
    break
  done
  wait_port "$server_pid" "$port" "$log" "$name"
  target="svc=http://127.0.0.1:$port"
}

