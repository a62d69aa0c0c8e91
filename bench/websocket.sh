#!/usr/bin/env bash
# XMPP over WebSocket (RFC 7395) next to TCP, parleyd against Prosody's mod_websocket, in one
# run (the WebSocket targets of the web clients issue).
#
# On loopback, SCRAM-SHA-256, no TLS on either transport (plain TCP; ws:// on plain HTTP),
# one server instance at a time (bench/lib.sh):
#   1. messages: for each server, `ParleyBench messages` with PAIRS pairs over TCP, then the
#      same over the server's WebSocket endpoint (`--websocket /xmpp-websocket`), each for
#      PHASE_SECONDS at full speed (WINDOW in flight per direction) -> delivered msg/s and the
#      server's CPU seconds per 10k delivered messages; every message must arrive exactly
#      once and in order. Target: parleyd's messages per CPU-second over WebSocket >= 3x
#      Prosody's over its mod_websocket.
#   2. idle memory, parleyd only: a fresh parleyd per transport; warm-up logins on both
#      transports, RSS, then HOLD_USERS authenticated sessions held idle (`ParleyBench login
#      --hold-seconds`), 8 s to settle, RSS again -> bytes per idle session over TCP and over
#      WebSocket. Target: WebSocket <= 2x TCP.
# Prints the ratios and the load average (the machine is shared: compare ratios, not figures).
#
# Needs the release builds of parleyd and ParleyBench (make bench builds them) and prosody.
# Knobs: PAIRS PHASE_SECONDS WINDOW THREADS HOLD_USERS SERVERS KEEP_TMP
set -euo pipefail
cd "$(dirname "$0")/.."

PAIRS=${PAIRS:-50}
PHASE_SECONDS=${PHASE_SECONDS:-10}
WINDOW=${WINDOW:-4}
THREADS=${THREADS:-2}
HOLD_USERS=${HOLD_USERS:-2000}
SERVERS=${SERVERS:-"parleyd prosody"}
. bench/lib.sh

USERS=$((2 * PAIRS > HOLD_USERS + 20 ? 2 * PAIRS : HOLD_USERS + 20))
bench_require websocket.sh
bench_raise_file_limit websocket.sh $((HOLD_USERS + 2 * PAIRS + 1000))
bench_tmp parley-websocket-bench
parleyd_port=$(free_port)
prosody_port=$(free_port)
parleyd_http=$(free_port)
prosody_http=$(free_port)
write_parleyd_config "$parleyd_port" "http:
  enabled: true
  interfaces: [127.0.0.1]
  port: $parleyd_http
  tls: false
upload:
  enabled: false
archive:
  enabled: false"
write_prosody_config "$prosody_port" '{ "s2s", "offline" }' "consider_websocket_secure = true
cross_domain_websocket = true" '"websocket"'
# Prosody refuses an option set twice: its HTTP port replaces lib.sh's empty list.
sed -i "s/^http_ports = {}\$/http_ports = { $prosody_http }/" "$tmp/prosody/prosody.cfg.lua"
seed_users "$USERS"

declare -A result
failed=""
http_port() { if [ "$1" = parleyd ]; then echo "$parleyd_http"; else echo "$prosody_http"; fi; }

for name in $SERVERS; do
    start_server "$name"
    for transport in tcp websocket; do
        args=(--port "$port")
        [ "$transport" = websocket ] && args=(--port "$(http_port "$name")" --websocket /xmpp-websocket)
        echo "== $name over $transport: $PAIRS pairs, $PHASE_SECONDS s at full speed (window $WINDOW per direction)"
        "$BENCH" login "${args[@]}" --users 20 --concurrency 10 --password "$PASSWORD" --label "$name-$transport-warmup" > /dev/null
        out=$("$BENCH" messages "${args[@]}" --pairs "$PAIRS" --seconds "$PHASE_SECONDS" --window "$WINDOW" \
            --phases throughput --threads "$THREADS" --password "$PASSWORD" --server-pid "$server_pid" \
            --label "$name-$transport") || { failed+=" $name-$transport"; echo "websocket.sh: $name over $transport failed" >&2; }
        grep -v '^RESULT' <<< "$out"
        line=$(grep '^RESULT' <<< "$out" | head -1 || true)
        result[$name.$transport.rate]=$(field "$line" rate)
        result[$name.$transport.cpu]=$(field "$line" cpu_s_per_10k)
        result[$name.$transport.lost]=$(field "$line" lost)
    done
    stop_server
done

# Idle memory per authenticated session, a fresh parleyd for each transport.
for transport in tcp websocket; do
    start_server parleyd
    "$BENCH" login --port "$port" --users 20 --first-user $((HOLD_USERS + 1)) --concurrency 10 --password "$PASSWORD" > /dev/null
    "$BENCH" login --port "$parleyd_http" --websocket /xmpp-websocket --users 20 --first-user $((HOLD_USERS + 1)) \
        --concurrency 10 --password "$PASSWORD" > /dev/null
    sleep 3
    base=$(rss_kib)
    args=(--port "$port")
    [ "$transport" = websocket ] && args=(--port "$parleyd_http" --websocket /xmpp-websocket)
    "$BENCH" login "${args[@]}" --users "$HOLD_USERS" --concurrency 100 --threads "$THREADS" --password "$PASSWORD" \
        --hold-seconds 30 --label "parleyd-$transport-hold" > "$tmp/hold.out" 2>&1 &
    client_pid=$!
    for _ in $(seq 600); do grep -q '^HELD' "$tmp/hold.out" && break; sleep 0.1; done
    grep -q '^HELD' "$tmp/hold.out" || { cat "$tmp/hold.out"; echo "websocket.sh: hold over $transport failed" >&2; exit 1; }
    sleep 8  # settled: idle connections gave their parser buffers back
    held=$(rss_kib)
    count=$(awk '/^HELD/ { print $2 }' "$tmp/hold.out")
    grep -v '^RESULT' "$tmp/hold.out" | grep -v '^HELD' || true
    result[memory.$transport]=$(awk -v h="$held" -v b="$base" -v n="$count" 'BEGIN { printf "%.0f", (h - b) * 1024 / n }')
    echo "== parleyd idle over $transport: RSS $base KiB -> $held KiB with $count sessions = ${result[memory.$transport]} bytes/session"
    kill "$client_pid" 2>/dev/null || true
    wait "$client_pid" 2>/dev/null || true
    client_pid=""
    stop_server
done

get() { echo "${result[$1]:--}"; }
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "WebSocket benchmark: $PAIRS pairs, $PHASE_SECONDS s at full speed, window $WINDOW; CPU = server user+system s per 10k delivered"
printf '%-8s | %10s %9s %5s | %10s %9s %5s\n' server 'tcp msg/s' cpu/10k lost 'ws msg/s' cpu/10k lost
for name in $SERVERS; do
    printf '%-8s | %10s %9s %5s | %10s %9s %5s\n' "$name" "$(get "$name.tcp.rate")" "$(get "$name.tcp.cpu")" \
        "$(get "$name.tcp.lost")" "$(get "$name.websocket.rate")" "$(get "$name.websocket.cpu")" "$(get "$name.websocket.lost")"
done
echo "parleyd idle session: $(get memory.tcp) B over TCP, $(get memory.websocket) B over WebSocket"
verdict() { if awk "BEGIN { exit !($1) }"; then echo met; else echo "NOT met"; fi; }
if [ -n "${result[parleyd.websocket.cpu]:-}" ] && [ -n "${result[prosody.websocket.cpu]:-}" ]; then
    r=$(awk -v a="${result[parleyd.websocket.rate]}" -v b="${result[prosody.websocket.rate]}" 'BEGIN { printf "%.2f", a / b }')
    c=$(awk -v a="${result[parleyd.websocket.cpu]}" -v b="${result[prosody.websocket.cpu]}" 'BEGIN { printf "%.2f", b / a }')
    echo "parleyd/prosody over WebSocket, delivered msg/s: ${r}x"
    echo "parleyd/prosody over WebSocket, messages per server CPU-second: ${c}x (target >= 3: $(verdict "$c >= 3"))"
fi
if [ -n "${result[parleyd.tcp.cpu]:-}" ] && [ -n "${result[parleyd.websocket.cpu]:-}" ]; then
    w=$(awk -v a="${result[parleyd.websocket.cpu]}" -v b="${result[parleyd.tcp.cpu]}" 'BEGIN { printf "%.2f", a / b }')
    echo "parleyd WebSocket/TCP server CPU per message: $w"
fi
if [ -n "${result[memory.tcp]:-}" ] && [ -n "${result[memory.websocket]:-}" ]; then
    m=$(awk -v a="${result[memory.websocket]}" -v b="${result[memory.tcp]}" 'BEGIN { printf "%.2f", a / b }')
    echo "parleyd WebSocket/TCP memory per idle session: $m (target <= 2: $(verdict "$m <= 2"))"
fi
if [ -n "$failed" ]; then
    echo "websocket.sh: failed:$failed" >&2
    exit 1
fi
