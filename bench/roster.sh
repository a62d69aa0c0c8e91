#!/usr/bin/env bash
# Presence subscription handshakes (RFC 6121 §3): parleyd next to Prosody and ejabberd, in one
# run.
#
# For each server, on loopback only, plain TCP and SCRAM-SHA-256 (bench/lib.sh,
# bench/ejabberd.sh), one server instance at a time, each starting from accounts with empty
# rosters: a warm-up of 20 logins, then `ParleyBench roster`: 2 x PAIRS accounts log in, ask
# for their roster and send initial presence (not timed); then each pair (A, B) makes a mutual
# subscription: A sends subscribe, B approves and asks back, A approves; a handshake is done
# when both roster pushes say subscription='both' and each side got the other's presence.
# WINDOW handshakes run at any time until all PAIRS are done -> handshakes/s, p50/p99 of one
# handshake, and the server's CPU (user+system from /proc: parleyd's process, Prosody's Lua
# process, ejabberd's beam.smp) per handshake.
#
# With BASELINE_PARLEYD=path (another parleyd build), "parleyd-baseline" runs that binary on
# the same accounts and configuration, right before parleyd in every round: before/after in
# one run. ROUNDS > 1 repeats the servers in turn; the summary shows each round and the
# median CPU per handshake. Durability is the same for every server as configured: parleyd
# commits each roster change with synchronous=FULL in WAL mode before it answers or pushes.
# Data directories are on tmpfs (/dev/shm) unless BENCH_TMP_PARENT names a disk directory.
#
# Needs the release builds of parleyd and ParleyBench (make bench builds them), prosody, and
# ejabberd (installed from Debian here when missing, without starting its service; needs root).
# Knobs: PAIRS WINDOW THREADS ROUNDS SERVERS BASELINE_PARLEYD BENCH_TMP_PARENT KEEP_TMP
set -euo pipefail
cd "$(dirname "$0")/.."

PAIRS=${PAIRS:-1000}
WINDOW=${WINDOW:-50}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-1}
SERVERS=${SERVERS:-"parleyd prosody ejabberd"}
BASELINE_PARLEYD=${BASELINE_PARLEYD:-}
. bench/lib.sh
. bench/ejabberd.sh

USERS=$((2 * PAIRS))
bench_require roster.sh
bench_raise_file_limit roster.sh $((USERS + 1000))
if [ -n "$BASELINE_PARLEYD" ]; then
    [ -x "$BASELINE_PARLEYD" ] || { echo "roster.sh: $BASELINE_PARLEYD is not an executable" >&2; exit 1; }
    SERVERS=$(sed 's/\bparleyd\b/parleyd-baseline parleyd/' <<< "$SERVERS")
fi
if [[ " $SERVERS " == *" ejabberd "* ]] && ! ensure_ejabberd roster.sh; then
    echo "roster.sh: ejabberd is not available: measuring without it" >&2
    SERVERS=$(tr ' ' '\n' <<< "$SERVERS" | grep -vx ejabberd | tr '\n' ' ')
fi
bench_tmp parley-roster-bench "${BENCH_TMP_PARENT:-/dev/shm}"
parleyd_port=$(free_port)
prosody_port=$(free_port)
write_parleyd_config "$parleyd_port"
write_prosody_config "$prosody_port"
seed_users "$USERS"
# Every run starts from these copies: a roster made by one run would turn the next one's
# handshakes into automatic answers.
cp -a "$tmp/parleyd/data" "$tmp/parleyd/data.seed"
cp -a "$tmp/prosody/data" "$tmp/prosody/data.seed"

fresh_data() { # dir
    rm -rf "$1"
    cp -a "$1.seed" "$1"
}

failed=""
declare -A result
record() { # key RESULT-line
    local key
    for key in done rate p50_ms p99_ms cpu_us client_cpu_us errors unexpected; do
        result[$1.$key]=$(field "$2" "$key")
    done
}

for round in $(seq "$ROUNDS"); do
    for name in $SERVERS; do
        echo "== round $round, $name: $PAIRS subscription handshakes, $WINDOW at a time" \
            "(load average $(cut -d ' ' -f 1-3 /proc/loadavg))"
        case $name in
        ejabberd)
            rm -rf "$tmp/ejabberd"
            ejabberd_port=$(free_port)
            write_ejabberd_config "$ejabberd_port" "$(free_port)" "" "" ""
            start_ejabberd "$ejabberd_port" || { failed+=" ejabberd"; continue; }
            register_ejabberd_users "$port" "$USERS" || { failed+=" ejabberd"; stop_server; continue; }
            ;;
        parleyd-baseline)
            fresh_data "$tmp/parleyd/data"
            PARLEYD=$BASELINE_PARLEYD start_server parleyd
            ;;
        parleyd)
            fresh_data "$tmp/parleyd/data"
            start_server parleyd
            ;;
        prosody)
            fresh_data "$tmp/prosody/data"
            start_server prosody
            ;;
        esac
        "$BENCH" login --port "$port" --users 20 --concurrency 10 --password "$PASSWORD" --label "$name-warmup" \
            > /dev/null || echo "roster.sh: $name: warm-up logins failed" >&2
        status=0
        out=$("$BENCH" roster --port "$port" --pairs "$PAIRS" --window "$WINDOW" --threads "$THREADS" \
            --password "$PASSWORD" --server-pid "$server_pid" --label "$name") || status=$?
        grep -v '^RESULT' <<< "$out" || true
        line=$(grep '^RESULT' <<< "$out" || true)
        if [ "$status" != 0 ] || [ -z "$line" ]; then
            failed+=" $name"
            echo "roster.sh: $name: handshakes incomplete or refused (exit $status)" >&2
        else
            record "$name.$round" "$line"
        fi
        stop_server
    done
done

get() { echo "${result[$1]:--}"; }
median() { # values...
    printf '%s\n' "$@" | grep -v '^-$' | sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
echo
echo "Roster handshake benchmark: $PAIRS pairs, $WINDOW handshakes in flight; a handshake is subscribe," \
    "subscribed + subscribe, subscribed, with both rosters 'both' and presence both ways;" \
    "CPU = server user+system µs per handshake"
printf '%-16s %5s | %7s %12s %8s %8s %10s %10s | %6s %10s\n' server round done handshakes/s p50_ms p99_ms \
    'cpu_µs' 'client_µs' errors unexpected
declare -A med
for name in $SERVERS; do
    values=()
    for round in $(seq "$ROUNDS"); do
        k=$name.$round
        printf '%-16s %5s | %7s %12s %8s %8s %10s %10s | %6s %10s\n' "$name" "$round" "$(get "$k.done")" "$(get "$k.rate")" \
            "$(get "$k.p50_ms")" "$(get "$k.p99_ms")" "$(get "$k.cpu_us")" "$(get "$k.client_cpu_us")" \
            "$(get "$k.errors")" "$(get "$k.unexpected")"
        values+=("$(get "$k.cpu_us")")
    done
    med[$name]=$(median "${values[@]}")
done
verdict() { if awk "BEGIN { exit !($1) }"; then echo met; else echo "NOT met"; fi; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }'; }
for name in $SERVERS; do
    [ "$name" = ejabberd ] && continue
    if [ "${med[$name]:--}" != - ] && [ "${med[ejabberd]:--}" != - ]; then
        c=$(ratio "${med[$name]}" "${med[ejabberd]}")
        line="$name/ejabberd server CPU per handshake (median of $ROUNDS): $c"
        [[ $name == parleyd* ]] && line+=" (target <= 0.5: $(verdict "$c <= 0.5"))"
        echo "$line"
    fi
done
if [ "${med[parleyd-baseline]:--}" != - ] && [ "${med[parleyd]:--}" != - ]; then
    echo "parleyd/parleyd-baseline server CPU per handshake: $(ratio "${med[parleyd]}" "${med[parleyd-baseline]}")"
fi
echo "load average at the end: $(cut -d ' ' -f 1-3 /proc/loadavg)"
if [ -n "$failed" ]; then
    echo "roster.sh: failed:$failed" >&2
    exit 1
fi
