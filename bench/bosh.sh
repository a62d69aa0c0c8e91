#!/usr/bin/env bash
# Memory per idle authenticated BOSH session (XEP-0124/0206): parleyd next to Prosody's
# mod_bosh, and next to a parleyd TCP session, in one run.
#
# For each case, on a fresh server on loopback (plain HTTP for BOSH, plain TCP for c2s, both
# with SCRAM-SHA-256): WARMUP sessions logged in and held, the RSS as the baseline, then
# SESSIONS more logged in (bind, initial presence) and left idle for SETTLE seconds, a BOSH
# one keeping one request held as browsers do (wait 60, hold 1) -> (RSS - baseline) /
# SESSIONS. The sessions are held by bench/bosh_sessions.py (Python, aiohttp).
#
# Needs the release builds of parleyd and ParleyBench (make bench builds them), prosody and
# python3-aiohttp. Knobs: SESSIONS WARMUP SETTLE CASES KEEP_TMP, and BASELINE=<another parleyd
# binary> for before/after runs: cases baseline-bosh and baseline-tcp run it on the same
# configuration (e.g. CASES="baseline-bosh parleyd-bosh baseline-tcp parleyd-tcp").
set -euo pipefail
cd "$(dirname "$0")/.."

SESSIONS=${SESSIONS:-2000}
WARMUP=${WARMUP:-100}
SETTLE=${SETTLE:-5}
CASES=${CASES:-"parleyd-bosh prosody-bosh parleyd-tcp"}
. bench/lib.sh

bench_require bosh.sh
bench_raise_file_limit bosh.sh $((2 * (SESSIONS + WARMUP) + 1000))
bench_tmp parley-bosh-bench
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
bosh:
  max_wait: 60
  inactivity: 600
  max_sessions: 100000"
# Prosody: mod_bosh on its own HTTP port (the later http_ports wins over lib.sh's empty one).
write_prosody_config "$prosody_port" "" "http_ports = { $prosody_http }
http_interfaces = { \"127.0.0.1\" }
bosh_max_inactivity = 600
consider_bosh_secure = true" '"bosh"'
seed_users $((SESSIONS + WARMUP))

hold() { # transport server first count -> starts $client_pid, waits for "ready"
    local transport=$1 server=$2 first=$3 count=$4 target
    if [ "$transport" = bosh ]; then
        local http=$parleyd_http
        [ "$server" = prosody ] && http=$prosody_http
        target=(--url "http://127.0.0.1:$http/http-bind")
    else
        target=(--port "$port")
    fi
    python3 bench/bosh_sessions.py "$transport" "${target[@]}" --users "$count" --start "$first" \
        --password "$PASSWORD" > "$tmp/hold.$first.log" 2>&1 &
    held_pids+=($!)
    for _ in $(seq 1800); do
        grep -q '^ready' "$tmp/hold.$first.log" && return 0
        kill -0 "${held_pids[-1]}" 2>/dev/null || break
        sleep 0.1
    done
    echo "bosh.sh: holding $count $transport sessions on $server failed:" >&2
    cat "$tmp/hold.$first.log" >&2
    exit 1
}

release_all() {
    for pid in "${held_pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    held_pids=()
}
trap 'release_all; bench_cleanup' EXIT

declare -A per_session fill
held_pids=()
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for case in $CASES; do
    server=${case%-*}
    transport=${case#*-}
    echo "== $case: $WARMUP warm-up sessions, then $SESSIONS idle ones"
    if [ "$server" = baseline ]; then
        current=$PARLEYD
        PARLEYD=${BASELINE:?BASELINE=<parleyd binary> is needed for the baseline cases}
        start_server parleyd
        PARLEYD=$current
        server=parleyd
    else
        start_server "$server"
    fi
    hold "$transport" "$server" 1 "$WARMUP"
    sleep "$SETTLE"
    base=$(rss_kib)
    start=$(date +%s.%N)
    hold "$transport" "$server" $((WARMUP + 1)) "$SESSIONS"
    fill[$case]=$(awk -v s="$start" -v e="$(date +%s.%N)" -v n="$SESSIONS" 'BEGIN { printf "%.0f", n / (e - s) }')
    sleep "$SETTLE"
    held=$(rss_kib)
    per_session[$case]=$(awk -v b="$base" -v h="$held" -v n="$SESSIONS" 'BEGIN { printf "%.1f", (h - b) / n }')
    echo "RESULT case=$case base_kib=$base held_kib=$held kib_per_session=${per_session[$case]} logins_per_s=${fill[$case]}"
    release_all
    stop_server
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

printf '\n%-14s %16s %14s\n' case "KiB/session" "logins/s"
for case in $CASES; do printf '%-14s %16s %14s\n' "$case" "${per_session[$case]}" "${fill[$case]}"; done
if [[ " $CASES " == *" parleyd-bosh "* ]]; then
    for other in prosody-bosh parleyd-tcp baseline-bosh; do
        [ -n "${per_session[$other]:-}" ] || continue
        awk -v a="${per_session[parleyd-bosh]}" -v b="${per_session[$other]}" -v o="$other" \
            'BEGIN { if (b > 0) printf "parleyd-bosh / %s: %.2f\n", o, a / b }'
    done
fi
if [[ " $CASES " == *" baseline-bosh "* ]] && [[ " $CASES " == *" baseline-tcp "* ]]; then
    awk -v a="${per_session[baseline-bosh]}" -v b="${per_session[baseline-tcp]}" \
        'BEGIN { if (b > 0) printf "baseline-bosh / baseline-tcp: %.2f\n", a / b }'
fi
