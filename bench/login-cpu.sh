#!/usr/bin/env bash
# bench/login-cpu.sh PARLEYD BENCH USERS [PERF=1] [STARTTLS=1]: fresh parleyd, warm-up, USERS logins
# (concurrency 100) with server CPU. Plain TCP unless STARTTLS=1: then every client upgrades its
# stream with STARTTLS before SCRAM, as against parleyd as shipped (tls.required: true), trusting
# the self-signed certificate (ECDSA P-256) parleyd made at start. Prints the server's CPU per
# login (from /proc) and the load generator's (user + system, from /usr/bin/time).
set -euo pipefail
cd "$(dirname "$0")/.."
PARLEYD=$1 BENCH=$2 N=$3
. bench/lib.sh
ulimit -n "$(ulimit -Hn)"
bench_tmp parley-lperf
parleyd_port=$(free_port); prosody_port=$(free_port)
write_parleyd_config "$parleyd_port"
mkdir -p "$tmp/prosody/data"
"$BENCH" seed-users --users "$N" --password "$PASSWORD" --sqlite "$tmp/parleyd/data/parley.sqlite" --prosody-data "$tmp/prosody/data" > /dev/null
start_server parleyd
tls=()
[ "${STARTTLS:-0}" = 1 ] && tls=(--starttls "$tmp/parleyd/data/tls/localhost.crt")
"$BENCH" login --port "$port" --users 200 --concurrency 100 --threads 2 --sources 8 --password "$PASSWORD" --timeout 60 "${tls[@]}" > /dev/null
sleep 1
if [ "${PERF:-0}" = 1 ]; then perf record -F 999 -g -p "$server_pid" -o "${PERF_DATA:-/tmp/perf-login.data}" > "$tmp/perf.log" 2>&1 & perf_pid=$!; sleep 0.5; fi
t0=$(cpu_ticks)
start=$(date +%s.%N)
out=$(/usr/bin/time -f '%U %S' -o "$tmp/client-time" "$BENCH" login --port "$port" --users "$N" --concurrency 100 --threads 2 --sources 8 --password "$PASSWORD" --timeout 150 --label x "${tls[@]}")
t1=$(cpu_ticks)
client_us=$(awk -v n="$N" '{ printf "%.0f", ($1 + $2) * 1e6 / n }' "$tmp/client-time")
[ "${PERF:-0}" = 1 ] && { kill -INT $perf_pid 2>/dev/null || cat "$tmp/perf.log"; wait $perf_pid || true; }
echo "$out" | grep -v RESULT
echo "binary $PARLEYD${tls:+ (STARTTLS)}: server CPU $(( (t1 - t0) * 1000000 / ticks_per_second / N )) us/login, client ($BENCH) CPU $client_us us/login, load $(cut -d' ' -f1 /proc/loadavg)"
