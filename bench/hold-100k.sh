#!/usr/bin/env bash
# 100,000 concurrent authenticated sessions on one machine whose per-process file limit is
# 20,000 (issue 17): a cluster of NODES parleyd nodes (docs/cluster.md) on one throwaway
# PostgreSQL, each node holding SESSIONS / NODES sessions, each filled by a load-generator
# process of its own (`ParleyBench login --hold`, concurrency CONCURRENCY, SCRAM-SHA-256, bind,
# initial presence, ping, then idle), one node after the other.
#
# Reports, after each node's fill and an 8 s settle: every node's RSS, PostgreSQL's memory
# (the sum of its processes' proportional set sizes, so its shared buffers count once), the
# fill rate; at the end the totals and
#   - per held session: (sum of the nodes' RSS growth) / sessions, and PostgreSQL's growth / sessions;
#   - the directory's cost per node: a node whose own sessions are all held still grows while
#     the others fill, by the cluster directory's copy of their sessions (`cluster_sessions`
#     entries kept as remote sessions): that growth / the sessions the others added;
#   - the CPU the nodes and PostgreSQL spent per login during the fills.
# Needs the release builds of parleyd and ParleyBench, and PostgreSQL (scripts/install-deps.sh).
# Knobs: SESSIONS (100000) NODES (6) CONCURRENCY (100) SOURCES (16) THREADS (2) KEEP_TMP
set -euo pipefail
cd "$(dirname "$0")/.."

SESSIONS=${SESSIONS:-100000}
NODES=${NODES:-6}
CONCURRENCY=${CONCURRENCY:-100}
SOURCES=${SOURCES:-16}
THREADS=${THREADS:-2}
PROSODY=/bin/true  # bench_require checks every server of lib.sh; this script runs no Prosody.
. bench/lib.sh
bench_require hold-100k.sh
PER_NODE=$(((SESSIONS + NODES - 1) / NODES))
# Each node and each generator is one process: its share plus what the server keeps open.
bench_raise_file_limit hold-100k.sh $((PER_NODE + 500))
read -r port_low port_high < /proc/sys/net/ipv4/ip_local_port_range
echo "$SESSIONS sessions on $NODES nodes ($PER_NODE each); file limit $(ulimit -n) per process;" \
    "ephemeral ports $port_low-$port_high ($((port_high - port_low + 1)) per source address, $SOURCES sources)"
bench_tmp parley-hold100k /var/tmp
node_pids=()
gen_pids=()
cleanup_hold() {
    exec 3>&- 2>/dev/null || true
    for pid in "${gen_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${node_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${node_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    bench_cleanup
}
trap cleanup_hold EXIT

# Each node opens a pool of up to 20 connections and one for LISTEN (docs/cluster.md).
postgres_start
"${postgres_as[@]}" "$postgres_bin/pg_ctl" -D "$postgres_dir/data" -l "$postgres_dir/log" -w -t 60 \
    -o "-p $postgres_port -k $postgres_dir -c listen_addresses=127.0.0.1 -c max_connections=$((21 * NODES + 20))" \
    restart > /dev/null
pg_pid=$(head -1 "$postgres_dir/data/postmaster.pid")

mkdir -p "$tmp/seed"
echo "seeding $SESSIONS accounts"
"$BENCH" seed-users --users "$SESSIONS" --password "$PASSWORD" --sqlite "$tmp/seed/parley.sqlite" > /dev/null

ports=()
for ((i = 0; i < NODES; i++)); do
    port=$(free_port); ports+=("$port")
    write_parleyd_config "$port" "storage:
  backend: postgresql
  url: $postgres_url
cluster:
  enabled: true
  node_id: node-$i"
    mkdir -p "$tmp/node-$i/data"
    sed "s|$tmp/parleyd/data|$tmp/node-$i/data|" "$tmp/parleyd/parleyd.yaml" > "$tmp/node-$i/parleyd.yaml"
done
echo "copying the accounts into PostgreSQL"
"$PARLEYD" storage copy --config "$tmp/node-0/parleyd.yaml" --from-sqlite "$tmp/seed/parley.sqlite" > /dev/null 2>&1

started=$(date +%s.%N)
for ((i = 0; i < NODES; i++)); do
    "$PARLEYD" run --config "$tmp/node-$i/parleyd.yaml" > "$tmp/node-$i/out.log" 2>&1 &
    node_pids+=($!)
done
# A node listens once it has loaded what it keeps in memory for every account (block lists)
# and the cluster directory: how long that takes with SESSIONS accounts is part of the answer.
for ((i = 0; i < NODES; i++)); do
    until (exec 9<>"/dev/tcp/127.0.0.1/${ports[$i]}") 2>/dev/null; do
        kill -0 "${node_pids[$i]}" 2>/dev/null || { cat "$tmp/node-$i/out.log" >&2; exit 1; }
        if awk -v s="$started" -v n="$(date +%s.%N)" 'BEGIN { exit !(n - s > 900) }'; then
            echo "hold-100k.sh: node$i does not listen after 900 s" >&2; exit 1
        fi
        sleep 0.2
    done
done
echo "all $NODES nodes listening $(awk -v s="$started" -v n="$(date +%s.%N)" 'BEGIN { printf "%.1f", n - s }') s after their start"

rss_of() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
# PostgreSQL's processes share its buffers: the sum of their PSS counts each page once.
pg_pss() {
    local total=0 pid
    for pid in $pg_pid $(pgrep -P "$pg_pid" || true); do
        [ -r "/proc/$pid/smaps_rollup" ] && total=$((total + $(awk '/^Pss:/ { print $2 }' "/proc/$pid/smaps_rollup" 2> /dev/null || echo 0)))
    done
    echo "$total"
}
ticks_of() {
    local total=0 pid
    for pid in "$@"; do
        [ -r "/proc/$pid/stat" ] && total=$((total + $(awk '{ print $14 + $15 }' "/proc/$pid/stat")))
    done
    echo "$total"
}
pg_ticks() { echo $(($(awk '{ print $14 + $15 + $16 + $17 }' "/proc/$pg_pid/stat") + $(ticks_of $(pgrep -P "$pg_pid" || true)))); }
rss_row() {
    local row="" i
    for ((i = 0; i < NODES; i++)); do row+=$(printf ' %9s' "$(rss_of "${node_pids[$i]}")"); done
    echo "$row"
}

# Warm-up: a few logins on each node, then the idle baseline.
for ((i = 0; i < NODES; i++)); do
    "$BENCH" login --port "${ports[$i]}" --users 100 --first-user $((1 + i * PER_NODE)) --concurrency 50 --threads 1 \
        --sources "$SOURCES" --password "$PASSWORD" --timeout 60 > "$tmp/warmup.out" \
        || { cat "$tmp/warmup.out"; echo "hold-100k.sh: warm-up on node$i failed" >&2; exit 1; }
done
sleep 3
declare -a base
for ((i = 0; i < NODES; i++)); do base[$i]=$(rss_of "${node_pids[$i]}"); done
pg_base=$(pg_pss)
printf '%-22s%s %12s %8s %8s\n' "after" "$(for ((i = 0; i < NODES; i++)); do printf ' %9s' "node$i KiB"; done)" "postgres KiB" "held" "fill/s"
printf '%-22s%s %12s %8s %8s\n' "idle (warmed up)" "$(rss_row)" "$pg_base" 0 -

mkfifo "$tmp/hold-stdin"
exec 3<> "$tmp/hold-stdin"
held_total=0
fill_seconds_total=0
node_ticks0=$(ticks_of "${node_pids[@]}"); pg_ticks0=$(pg_ticks)
declare -a after_own
for ((i = 0; i < NODES; i++)); do
    first=$((1 + i * PER_NODE))
    n=$((SESSIONS - i * PER_NODE < PER_NODE ? SESSIONS - i * PER_NODE : PER_NODE))
    start=$(date +%s.%N)
    "$BENCH" login --port "${ports[$i]}" --users "$n" --first-user "$first" --concurrency "$CONCURRENCY" \
        --threads "$THREADS" --sources "$SOURCES" --password "$PASSWORD" --timeout 1200 --label "node$i" --hold \
        < "$tmp/hold-stdin" > "$tmp/gen-$i.out" 2>&1 &
    gen_pids+=($!)
    until grep -qs '^HELD' "$tmp/gen-$i.out"; do
        kill -0 "${gen_pids[$i]}" 2>/dev/null || { cat "$tmp/gen-$i.out"; echo "hold-100k.sh: generator $i ended" >&2; exit 1; }
        sleep 0.2
    done
    seconds=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }')
    held=$(awk '/^HELD/ { print $2 }' "$tmp/gen-$i.out")
    grep -E '^ +failed|timed out' "$tmp/gen-$i.out" || true
    held_total=$((held_total + held))
    fill_seconds_total=$(awk -v a="$fill_seconds_total" -v b="$seconds" 'BEGIN { printf "%.2f", a + b }')
    sleep 8
    after_own[$i]=$(rss_of "${node_pids[$i]}")
    printf '%-22s%s %12s %8s %8s\n' "node$i filled" "$(rss_row)" "$(pg_pss)" "$held_total" \
        "$(awk -v n="$held" -v s="$seconds" 'BEGIN { printf "%.0f", n / s }')"
done
node_ticks=$(($(ticks_of "${node_pids[@]}") - node_ticks0)); pg_cpu=$(($(pg_ticks) - pg_ticks0))

total_base=0; total_held=0
for ((i = 0; i < NODES; i++)); do
    total_base=$((total_base + base[i])); total_held=$((total_held + $(rss_of "${node_pids[$i]}")))
done
pg_held=$(pg_pss)
# Each node writes its sessions' directory entries through its group-committed writer: the
# table may lag the binds; how far, and how long it takes to catch up, is part of the answer.
directory_rows=$(postgres_psql "SELECT count(*) FROM cluster_sessions")
lag_start=$(date +%s)
echo "directory rows right after the last settle: $directory_rows"
while [ "$directory_rows" -lt "$held_total" ] && [ $(($(date +%s) - lag_start)) -lt 120 ]; do
    sleep 2
    directory_rows=$(postgres_psql "SELECT count(*) FROM cluster_sessions")
done
echo "directory rows: $directory_rows, $(($(date +%s) - lag_start)) s later"
# The directory: node 0's growth after its own fill, over the sessions the others added.
others=$((held_total - $(awk '/^HELD/ { print $2 }' "$tmp/gen-0.out")))
echo
echo "held $held_total sessions on $NODES nodes ($directory_rows directory rows), filled at $(awk -v n="$held_total" -v s="$fill_seconds_total" 'BEGIN { printf "%.0f", n / s }') logins/s" \
    "(one node at a time), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "nodes' RSS $total_base -> $total_held KiB = $(((total_held - total_base) * 1024 / held_total)) B/session" \
    "(local session and every node's directory entry for it)"
echo "PostgreSQL PSS $pg_base -> $pg_held KiB = $(((pg_held - pg_base) * 1024 / held_total)) B/session"
echo "directory per node: node0 $(rss_of "${node_pids[0]}") KiB now, ${after_own[0]} KiB after its own fill:" \
    "$(((($(rss_of "${node_pids[0]}") - after_own[0]) * 1024) / (others > 0 ? others : 1))) B per remote session"
echo "CPU per login during the fills: nodes $((node_ticks * 1000000 / ticks_per_second / held_total)) us," \
    "PostgreSQL $((pg_cpu * 1000000 / ticks_per_second / held_total)) us"
