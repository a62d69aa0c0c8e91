#!/usr/bin/env bash
# Login throughput and idle memory per session: parleyd against Prosody, in one run.
#
# For each server, on loopback only, with plain TCP (no STARTTLS) and SCRAM-SHA-256:
#   1. login: LOGIN_USERS clients log in (bind, initial presence, ping) with CONCURRENCY in
#      flight, each closing after its pong -> logins/s, p50, p99, and the server's CPU time
#      per login (user + system), which other work on a shared machine disturbs far less;
#   2. hold: a fresh server, a warm-up of WARMUP_USERS logins, the idle RSS as the baseline,
#      then HOLD_USERS sessions logged in and held -> (RSS held - baseline) / HOLD_USERS, and
#      the login rate while filling. The held sessions are split over client processes of at
#      most HOLD_PER_CLIENT each (one process's file limit), 127.0.0.x source addresses
#      (SOURCES) keep ephemeral ports from running out; the server needs HOLD_USERS + 1000
#      descriptors under its file limit (the script says so and stops if the hard limit is
#      lower: 100,000 sessions need `ulimit -Hn` above 101,000).
# Both servers get the same accounts (user1..userN, one password, keys derived once) in
# temporary directories under /dev/shm, and every process the file limit's hard maximum.
#
# Needs the release builds of parleyd and ParleyBench (make bench builds them) and prosody.
# Knobs: LOGIN_USERS HOLD_USERS HOLD_PER_CLIENT CONCURRENCY THREADS SOURCES WARMUP_USERS SERVERS KEEP_TMP
set -euo pipefail
cd "$(dirname "$0")/.."

LOGIN_USERS=${LOGIN_USERS:-5000}
HOLD_USERS=${HOLD_USERS:-10000}
CONCURRENCY=${CONCURRENCY:-100}
THREADS=${THREADS:-2}
SOURCES=${SOURCES:-8}
WARMUP_USERS=${WARMUP_USERS:-200}
HOLD_PER_CLIENT=${HOLD_PER_CLIENT:-15000}
SERVERS=${SERVERS:-"parleyd prosody"}
. bench/lib.sh
USERS=$((LOGIN_USERS > HOLD_USERS ? LOGIN_USERS : HOLD_USERS))
USERS=$((USERS > WARMUP_USERS ? USERS : WARMUP_USERS))

bench_require login.sh
bench_raise_file_limit login.sh $((HOLD_USERS + 1000))
read -r port_low port_high < /proc/sys/net/ipv4/ip_local_port_range
echo "file limit $(ulimit -n), ephemeral ports $port_low-$port_high ($((port_high - port_low + 1)) per source address, $SOURCES sources)"
bench_tmp parley-login-bench
parleyd_port=$(free_port)
prosody_port=$(free_port)
write_parleyd_config "$parleyd_port"
write_prosody_config "$prosody_port"
seed_users "$USERS"

login() { # name users [extra options]
    local name=$1 users=$2
    shift 2
    "$BENCH" login --host 127.0.0.1 --port "$port" --users "$users" --concurrency "$CONCURRENCY" \
        --threads "$THREADS" --sources "$SOURCES" --password "$PASSWORD" --label "$name" "$@"
}

declare -A rate p50 p99 cpu per_session base held count fill_rate
for name in $SERVERS; do
    echo "== $name: login, $LOGIN_USERS users, concurrency $CONCURRENCY"
    start_server "$name"
    ticks_before=$(cpu_ticks)
    out=$(login "$name" "$LOGIN_USERS" --timeout 150) || { echo "$out"; echo "login.sh: $name login run failed" >&2; exit 1; }
    ticks_after=$(cpu_ticks)
    cpu[$name]=$(awk -v t=$((ticks_after - ticks_before)) -v hz="$ticks_per_second" -v n="$LOGIN_USERS" \
        'BEGIN { printf "%.0f", t * 1e6 / hz / n }')
    echo "$out" | grep -v '^RESULT'
    echo "   server CPU ${cpu[$name]} us/login"
    result=$(grep '^RESULT' <<< "$out")
    rate[$name]=$(field "$result" rate)
    p50[$name]=$(field "$result" p50_ms)
    p99[$name]=$(field "$result" p99_ms)
    stop_server

    echo "== $name: hold $HOLD_USERS sessions"
    start_server "$name"
    login "$name-warmup" "$WARMUP_USERS" --timeout 60 > /dev/null
    sleep 2
    base[$name]=$(rss_kib)
    # Several client processes, each holding at most HOLD_PER_CLIENT (its own file limit),
    # all released when the script closes their common stdin.
    mkfifo "$tmp/hold-stdin"
    clients=$(((HOLD_USERS + HOLD_PER_CLIENT - 1) / HOLD_PER_CLIENT))
    client_pids=()
    fill_start=$(date +%s.%N)
    for ((c = 0; c < clients; c++)); do
        first=$((1 + c * HOLD_PER_CLIENT))
        n=$((HOLD_USERS - c * HOLD_PER_CLIENT < HOLD_PER_CLIENT ? HOLD_USERS - c * HOLD_PER_CLIENT : HOLD_PER_CLIENT))
        login "$name-hold$c" "$n" --first-user "$first" --timeout 900 --hold < "$tmp/hold-stdin" > "$tmp/hold$c.out" 2>&1 &
        client_pids+=($!)
    done
    client_pid=${client_pids[0]}  # the others end with it: the cleanup closes their stdin
    exec 3> "$tmp/hold-stdin"
    for _ in $(seq 9000); do
        ready=0
        for ((c = 0; c < clients; c++)); do grep -q '^HELD' "$tmp/hold$c.out" && ready=$((ready + 1)); done
        [ "$ready" -eq "$clients" ] && break
        alive=0
        for pid in "${client_pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
        [ "$alive" -eq 1 ] || break
        sleep 0.1
    done
    fill_seconds=$(awk -v s="$fill_start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
    if [ "$ready" -ne "$clients" ]; then cat "$tmp"/hold*.out; echo "login.sh: $name hold failed" >&2; exit 1; fi
    sleep 8  # settled: idle connections released their buffers (both servers get the same wait)
    held[$name]=$(rss_kib)
    count[$name]=$(cat "$tmp"/hold*.out | awk '/^HELD/ { n += $2 } END { print n + 0 }')
    fill_rate[$name]=$(awk -v n="${count[$name]}" -v s="$fill_seconds" 'BEGIN { printf "%.0f", n / s }')
    [ "${count[$name]}" -gt 0 ] || { echo "login.sh: $name holds no sessions" >&2; exit 1; }
    cat "$tmp"/hold*.out | grep -v '^RESULT'
    echo "   ${count[$name]} sessions held, filled in $fill_seconds s (${fill_rate[$name]} logins/s)"
    exec 3>&-
    for pid in "${client_pids[@]}"; do wait "$pid" || true; done
    client_pid=""
    rm -f "$tmp/hold-stdin" "$tmp"/hold*.out
    per_session[$name]=$(awk -v h="${held[$name]}" -v b="${base[$name]}" -v n="${count[$name]}" \
        'BEGIN { printf "%.0f", (h - b) * 1024 / n }')
    echo "   RSS idle ${base[$name]} KiB, with ${count[$name]} sessions ${held[$name]} KiB -> ${per_session[$name]} bytes/session"
    stop_server
done

echo
echo "login benchmark: $LOGIN_USERS logins, concurrency $CONCURRENCY; $HOLD_USERS sessions held"
printf '%-10s %10s %9s %9s %13s %8s %10s %13s %13s %14s\n' server logins/s p50_ms p99_ms cpu_us/login held \
    fill/s rss_idle_KiB rss_held_KiB rss_B/session
for name in $SERVERS; do
    printf '%-10s %10s %9s %9s %13s %8s %10s %13s %13s %14s\n' "$name" "${rate[$name]}" "${p50[$name]}" "${p99[$name]}" \
        "${cpu[$name]}" "${count[$name]}" "${fill_rate[$name]}" "${base[$name]}" "${held[$name]}" "${per_session[$name]}"
done
if [ -n "${rate[parleyd]:-}" ] && [ -n "${rate[prosody]:-}" ]; then
    awk -v r1="${rate[parleyd]}" -v r2="${rate[prosody]}" -v m1="${per_session[parleyd]}" -v m2="${per_session[prosody]}" \
        -v c1="${cpu[parleyd]}" -v c2="${cpu[prosody]}" 'BEGIN {
        printf "parleyd/prosody logins/s:       %.2fx (target >= 3x: %s)\n", r1 / r2, (r1 / r2 >= 3 ? "met" : "NOT met")
        printf "prosody/parleyd CPU per login:  %.2fx\n", c2 / c1
        printf "parleyd/prosody RSS per session: %.2f (target <= 0.33: %s)\n", m1 / m2, (m1 / m2 <= 1 / 3 ? "met" : "NOT met")
    }'
fi
