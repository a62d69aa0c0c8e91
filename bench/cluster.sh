#!/usr/bin/env bash
# The cluster's costs (docs/cluster.md, "Capacity"): the same message load on
#   1. one node on SQLite,
#   2. one node on PostgreSQL,
#   3. three nodes on one PostgreSQL (a cluster), half the pairs with both clients on one node
#      and half split across two nodes, run at the same time,
#   4. the same three nodes with every pair split across two nodes (a cross-node message's own cost),
# each with the shipped defaults that matter for cost (archive on, XEP-0198 with an <r/> after
# every message, so each acknowledgement waits for the commit). Reports delivered msg/s, p50 and
# p99 latency (cross-node against same-node in run 3), and CPU per 10k delivered messages spent
# by the parleyd processes and by PostgreSQL (utime+stime from /proc over the whole run of the
# load generator, logins included). PostgreSQL runs here, throwaway, with fsync on.
#
# Needs the release builds of parleyd and ParleyBench (make bench builds them) and PostgreSQL.
# Knobs: PAIRS (per run; run 3 splits them) PHASE_SECONDS WINDOW THREADS WARMUP (seconds) KEEP_TMP
# RUNS (which of 1 2 3 4 to run; 4 needs 3) PG_OPTIONS (more postgres -c settings, e.g. "-c log_min_duration_statement=20")
set -euo pipefail
cd "$(dirname "$0")/.."

PAIRS=${PAIRS:-40}
PHASE_SECONDS=${PHASE_SECONDS:-10}
WINDOW=${WINDOW:-4}
THREADS=${THREADS:-2}
PROSODY=/bin/true  # bench_require checks every server of lib.sh; this script runs none of Prosody.
. bench/lib.sh
bench_require cluster.sh
bench_raise_file_limit cluster.sh $((4 * PAIRS + 1000))
bench_tmp parley-cluster-bench /var/tmp
pg_pid=""
node_pids=()
cleanup_cluster() {
    for pid in "${node_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${node_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    [ -n "$pg_pid" ] && runuser -u postgres -- "$pg_bin/pg_ctl" -D "$tmp/postgres/data" -m immediate stop > /dev/null 2>&1 || true
    bench_cleanup
}
trap cleanup_cluster EXIT

# PostgreSQL refuses to run as root: as the postgres user, its files in $tmp/postgres.
pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
pg_port=$(free_port)
chmod 755 "$tmp"
mkdir -p "$tmp/postgres" && chown postgres "$tmp/postgres"
runuser -u postgres -- "$pg_bin/initdb" -D "$tmp/postgres/data" -A trust -U parley -E UTF8 --locale=C > /dev/null
runuser -u postgres -- "$pg_bin/pg_ctl" -D "$tmp/postgres/data" -l "$tmp/postgres/log" -w \
    -o "-p $pg_port -k $tmp/postgres -c listen_addresses=127.0.0.1 -c max_connections=200 ${PG_OPTIONS:-}" start > /dev/null
pg_pid=$(head -1 "$tmp/postgres/data/postmaster.pid")
pg_url="postgres://parley@127.0.0.1:$pg_port/parley?sslmode=disable"
runuser -u postgres -- "$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U parley parley

# Runs 3 and 4 use accounts of their own: messages a run left in flight went to offline
# storage when its node stopped, and would arrive in the next run out of sequence.
USERS=$((6 * PAIRS))
# The accounts: seeded in a SQLite file, copied into PostgreSQL by parleyd itself.
mkdir -p "$tmp/seed"
"$BENCH" seed-users --users "$USERS" --password "$PASSWORD" --sqlite "$tmp/seed/parley.sqlite" > /dev/null

node_config() { # name port [storage-and-cluster-yaml]
    local saved=$tmp
    write_parleyd_config "$2" "$3"
    mkdir -p "$saved/$1"
    sed "s|$saved/parleyd/data|$saved/$1/data|" "$saved/parleyd/parleyd.yaml" > "$saved/$1/parleyd.yaml"
}
start_node() { # name port
    "$PARLEYD" run --config "$tmp/$1/parleyd.yaml" > "$tmp/$1/out.log" 2>&1 &
    node_pids+=($!)
    for _ in $(seq 200); do
        if (exec 9<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    echo "cluster.sh: $1 did not start" >&2
    cat "$tmp/$1/out.log" >&2
    exit 1
}
stop_nodes() {
    for pid in "${node_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${node_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    node_pids=()
}
ticks() { # pids...
    local total=0 pid
    for pid in "$@"; do
        [ -r "/proc/$pid/stat" ] && total=$((total + $(awk '{ print $14 + $15 }' "/proc/$pid/stat")))
    done
    echo "$total"
}
# PostgreSQL's backends come and go with the pools: its cumulative CPU is the postmaster's
# children's (cutime+cstime once reaped) plus the live ones'.
pg_ticks() {
    local total live
    total=$(awk '{ print $14 + $15 + $16 + $17 }' "/proc/$pg_pid/stat")
    live=$(ticks $(pgrep -P "$pg_pid" || true))
    echo $((total + live))
}
# Prints the load generator's RESULT lines; its other lines (progress, failures) go to stderr.
messages() { # label port first-user pairs [peer-port]
    local peer=() out status=0
    [ -n "${5:-}" ] && peer=(--peer-port "$5")
    out=$("$BENCH" messages --port "$2" --first-user "$3" --pairs "$4" --seconds "$PHASE_SECONDS" --window "$WINDOW" \
        --phases throughput --warmup "${WARMUP:-1}" --threads "$THREADS" --password "$PASSWORD" --label "$1" --sm "${peer[@]}") \
        || status=$?
    grep -v '^RESULT' <<< "$out" >&2 || true
    grep '^RESULT' <<< "$out" || true
    [ "$status" = 0 ] || echo "cluster.sh: $1: the load generator failed (status $status: a login refused, or a message lost, out of order or answered with an error, in the warm-up or the phase)" >&2
}
report() { # label RESULT-output node-ticks pg-ticks
    local line rate delivered p50 p99
    line=$(grep '^RESULT' <<< "$2" | grep 'phase=throughput' | head -1)
    rate=$(field "$line" rate); delivered=$(field "$line" delivered)
    p50=$(field "$line" p50_ms); p99=$(field "$line" p99_ms)
    printf '%-28s | %8s %9s %8s %8s %5s %6s | %11s %11s\n' "$1" "$delivered" "$rate" "$p50" "$p99" \
        "$(field "$line" lost)" "$(field "$line" disorder)" \
        "$(awk -v t="$3" -v n="$delivered" -v hz="$ticks_per_second" 'BEGIN { if (n > 0 && t != "") printf "%.3f", t / hz / n * 10000; else print "-" }')" \
        "$(awk -v t="$4" -v n="$delivered" -v hz="$ticks_per_second" 'BEGIN { if (n > 0 && t != "") printf "%.3f", t / hz / n * 10000; else print "-" }')"
}

RUNS=${RUNS:-1 2 3 4}
runs() { [[ " $RUNS " == *" $1 "* ]]; }
rows=()
# 1. One node, SQLite.
if runs 1; then
p1=$(free_port)
node_config sqlite "$p1" ""
mkdir -p "$tmp/sqlite/data" && cp "$tmp/seed/parley.sqlite" "$tmp/sqlite/data/parley.sqlite"
start_node sqlite "$p1"
before=$(ticks "${node_pids[@]}")
out=$(messages sqlite "$p1" 1 "$PAIRS")
rows+=("$(report "1 node, SQLite" "$out" $(( $(ticks "${node_pids[@]}") - before )) "")")
stop_nodes
fi

# 2. One node, PostgreSQL (the accounts copied in once; runs 2 and 3 share the database).
pg_yaml="storage:
  backend: postgresql
  url: $pg_url"
p2=$(free_port)
node_config pg "$p2" "$pg_yaml"
"$PARLEYD" storage copy --config "$tmp/pg/parleyd.yaml" --from-sqlite "$tmp/seed/parley.sqlite" > /dev/null
if runs 2; then
start_node pg "$p2"
before=$(ticks "${node_pids[@]}"); pg_before=$(pg_ticks)
out=$(messages postgresql "$p2" 1 "$PAIRS")
rows+=("$(report "1 node, PostgreSQL" "$out" $(( $(ticks "${node_pids[@]}") - before )) $(( $(pg_ticks) - pg_before )))")
stop_nodes
fi

# 3. Three nodes: half the pairs on node a alone, half with one client on node b and one on c.
if runs 3; then
ports=()
for name in a b c; do
    port=$(free_port); ports+=("$port")
    node_config "node-$name" "$port" "$pg_yaml
cluster:
  enabled: true
  node_id: node-$name"
    start_node "node-$name" "$port"
done
half=$((PAIRS / 2))
before=$(ticks "${node_pids[@]}"); pg_before=$(pg_ticks)
messages same-node "${ports[0]}" $((2 * PAIRS + 1)) "$half" > "$tmp/same.out" &
same_pid=$!
messages cross-node "${ports[1]}" $((2 * PAIRS + 2 * half + 1)) "$half" "${ports[2]}" > "$tmp/cross.out"
wait "$same_pid"
node_cpu=$(( $(ticks "${node_pids[@]}") - before )); pg_cpu=$(( $(pg_ticks) - pg_before ))
same=$(cat "$tmp/same.out"); cross=$(cat "$tmp/cross.out")
total=$(( $(field "$(grep '^RESULT' <<< "$same" | head -1)" delivered) + $(field "$(grep '^RESULT' <<< "$cross" | head -1)" delivered) ))
rows+=("$(report "3 nodes: same-node half" "$same" "" "")")
rows+=("$(report "3 nodes: cross-node half" "$cross" "" "")")
rows+=("$(printf '%-28s | %8s %9s %8s %8s %5s %6s | %11s %11s' "3 nodes: both halves" "$total" "-" "-" "-" "-" "-" \
    "$(awk -v t="$node_cpu" -v n="$total" -v hz="$ticks_per_second" 'BEGIN { printf "%.3f", t / hz / n * 10000 }')" \
    "$(awk -v t="$pg_cpu" -v n="$total" -v hz="$ticks_per_second" 'BEGIN { printf "%.3f", t / hz / n * 10000 }')")")
# 4. The same three nodes, every pair split across nodes b and c: what a cross-node message
#    costs on its own (the capacity model's per-message figures).
if runs 4; then
    before=$(ticks "${node_pids[@]}"); pg_before=$(pg_ticks)
    out=$(messages all-cross "${ports[1]}" $((4 * PAIRS + 1)) "$PAIRS" "${ports[2]}")
    rows+=("$(report "3 nodes: all pairs cross-node" "$out" $(( $(ticks "${node_pids[@]}") - before )) $(( $(pg_ticks) - pg_before )))")
fi
stop_nodes
fi

echo
echo "cluster benchmark: $PAIRS pairs per run, $PHASE_SECONDS s at full speed ($WINDOW in flight per direction), XEP-0198 on;"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); CPU in s per 10k delivered messages, logins included"
printf '%-28s | %8s %9s %8s %8s %5s %6s | %11s %11s\n' run delivered 'msg/s' p50_ms p99_ms lost disord 'parleyd cpu' 'postgres cpu'
for row in "${rows[@]}"; do echo "$row"; done
