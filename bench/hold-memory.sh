#!/usr/bin/env bash
# bench/hold-memory.sh PARLEYD BENCH N [GDB=1]: a fresh parleyd, 200 warm-up logins, then N held sessions;
# RSS idle -> held, and with GDB=1 glibc's malloc_stats() after malloc_trim(0).
set -euo pipefail
cd "$(dirname "$0")/.."
PARLEYD=$1 BENCH=$2 N=$3
. bench/lib.sh
ulimit -n "$(ulimit -Hn)"
bench_tmp parley-hold
parleyd_port=$(free_port); prosody_port=$(free_port)
write_parleyd_config "$parleyd_port"
mkdir -p "$tmp/prosody/data"
"$BENCH" seed-users --users "$N" --password "$PASSWORD" --sqlite "$tmp/parleyd/data/parley.sqlite" --prosody-data "$tmp/prosody/data" > /dev/null
start_server parleyd
"$BENCH" login --port "$port" --users 200 --concurrency 100 --threads 2 --sources 8 --password "$PASSWORD" --timeout 60 > /dev/null
sleep 2
base=$(rss_kib)
mkfifo "$tmp/in"
t0=$(date +%s.%N)
"$BENCH" login --port "$port" --users "$N" --concurrency 100 --threads 2 --sources 8 --password "$PASSWORD" --timeout 900 --hold < "$tmp/in" > "$tmp/hold.out" 2>&1 &
client_pid=$!
exec 3> "$tmp/in"
until grep -q '^HELD' "$tmp/hold.out"; do kill -0 $client_pid || { cat "$tmp/hold.out"; exit 1; }; sleep 0.1; done
t1=$(date +%s.%N)
sleep 8
held=$(rss_kib)
n=$(awk '/^HELD/ {print $2}' "$tmp/hold.out")
echo "binary $PARLEYD: $n held, fill $(awk -v n=$n -v a=$t0 -v b=$t1 'BEGIN{printf "%.0f", n/(b-a)}')/s, RSS $base -> $held KiB = $(( (held - base) * 1024 / n )) B/session, load $(cut -d' ' -f1 /proc/loadavg)"
if [ "${GDB:-0}" = 1 ]; then
  gdb -p "$server_pid" -batch -ex 'call (int)malloc_trim(0)' -ex 'call (void)malloc_stats()' -ex 'call (long long)sqlite3_memory_used()' 2>&1 | grep -E '^\$' || true
  sleep 0.5; grep -A3 -E "^(Arena|Total)" "$tmp/parleyd/out.log" || tail -5 "$tmp/parleyd/out.log"
  echo "RSS after trim: $(rss_kib)"
fi
exec 3>&-
wait $client_pid || true
