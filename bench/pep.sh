#!/usr/bin/env bash
# PEP notifications (XEP-0163 over XEP-0060, with XEP-0115 `+notify` filtering): parleyd next
# to Prosody (mod_pep) and ejabberd (mod_pubsub's pep plugin), in one run.
#
# For each server, on loopback only, plain TCP and SCRAM-SHA-256 (bench/lib.sh,
# bench/ejabberd.sh), one server instance at a time:
#   a warm-up of 20 logins, then `ParleyBench pep`: user1 (the publisher), CONTACTS contacts and
#   STRANGERS strangers log in; the rosters are made through the protocol (subscribe and
#   subscribed both ways, subscription both), every contact advertises caps with
#   `http://jabber.org/protocol/tune+notify` (correct sha-1 ver, disco#info answered), the
#   strangers send the publisher directed presence with the same caps. After a warm-up of
#   publishes, user1 publishes user tunes of about 400 bytes:
#   - throughput: WINDOW publishes unanswered at any time, for PHASE_SECONDS -> notifications
#     delivered per second, publish-to-notification latency, server CPU per notification;
#   - rate: RATE publishes/s, evenly paced, for PHASE_SECONDS -> p50/p99 latency and CPU;
#   every item must arrive exactly once at every contact (lost, dup) and never at a stranger
#   (leaked). Server CPU is user+system from /proc/PID/stat: parleyd's process, Prosody's Lua
#   process, ejabberd's beam.smp (its Erlang VM; the shell scripts that start it only wait).
# A server that refuses the publish (parleyd until PEP is merged: service-unavailable) gets
# "no PEP" in its row; the others still run, and that alone does not fail the script.
#
# bench/README.md has the figures of the last runs and how to read them: on a shared machine,
# the load average printed for each server moves every figure.
#
# Needs the release builds of parleyd and ParleyBench (make bench builds them), prosody, and
# ejabberd (installed from Debian here when missing, without starting its service; needs root).
# Knobs: CONTACTS STRANGERS PHASE_SECONDS WINDOW RATE ITEM_BYTES THREADS SERVERS BENCH_TMP_PARENT KEEP_TMP
set -euo pipefail
cd "$(dirname "$0")/.."

CONTACTS=${CONTACTS:-200}
STRANGERS=${STRANGERS:-2}
PHASE_SECONDS=${PHASE_SECONDS:-10}
WINDOW=${WINDOW:-4}
RATE=${RATE:-20}
ITEM_BYTES=${ITEM_BYTES:-400}
THREADS=${THREADS:-2}
SERVERS=${SERVERS:-"parleyd prosody ejabberd"}
. bench/lib.sh
. bench/ejabberd.sh

USERS=$((1 + CONTACTS + STRANGERS))
bench_require pep.sh
bench_raise_file_limit pep.sh $((USERS + 1000))
if [[ " $SERVERS " == *" ejabberd "* ]] && ! ensure_ejabberd pep.sh; then
    echo "pep.sh: ejabberd is not available: measuring without it" >&2
    SERVERS=$(tr ' ' '\n' <<< "$SERVERS" | grep -vx ejabberd | tr '\n' ' ')
fi
bench_tmp parley-pep-bench "${BENCH_TMP_PARENT:-/dev/shm}"
parleyd_port=$(free_port)
prosody_port=$(free_port)
write_parleyd_config "$parleyd_port"
# mod_pep with its defaults (items kept with internal storage, in $tmp on tmpfs).
write_prosody_config "$prosody_port" '{ "s2s", "offline" }' "" '"pep"'
seed_users "$USERS"

failed=""
declare -A result
declare -A unsupported
record() { # name RESULT-lines
    local line phase key
    while read -r line; do
        phase=$(field "$line" phase)
        for key in rate publish_rate p50_ms p99_ms max_ms cpu_us lost dup leaked stray errors error; do
            result[$1.$phase.$key]=$(field "$line" "$key")
        done
    done <<< "$(grep '^RESULT' <<< "$2")"
}

for name in $SERVERS; do
    echo "== $name: user1 publishes to $CONTACTS contacts ($STRANGERS strangers): $PHASE_SECONDS s with" \
        "$WINDOW publishes in flight, $PHASE_SECONDS s at $RATE publishes/s (load average $(cut -d ' ' -f 1-3 /proc/loadavg))"
    if [ "$name" = ejabberd ]; then
        ejabberd_port=$(free_port)
        write_ejabberd_config "$ejabberd_port" "$(free_port)"
        start_ejabberd "$ejabberd_port" || { failed+=" ejabberd-start"; continue; }
        register_ejabberd_users "$port" "$USERS" || { failed+=" ejabberd-start"; stop_server; continue; }
    else
        start_server "$name"
    fi
    "$BENCH" login --port "$port" --users $((USERS < 20 ? USERS : 20)) --concurrency 10 --password "$PASSWORD" \
        --label "$name-warmup" > /dev/null || echo "pep.sh: $name: warm-up logins failed" >&2
    sleep 1
    status=0
    out=$("$BENCH" pep --port "$port" --contacts "$CONTACTS" --strangers "$STRANGERS" --seconds "$PHASE_SECONDS" \
        --window "$WINDOW" --rate "$RATE" --item-bytes "$ITEM_BYTES" --threads "$THREADS" --password "$PASSWORD" \
        --server-pid "$server_pid" --label "$name") || status=$?
    grep -v '^RESULT' <<< "$out" || true
    record "$name" "$out"
    case $status in
    0) ;;
    3)
        unsupported[$name]=${result[$name.unsupported.error]:-refused}
        echo "pep.sh: $name has no PEP: its answer to the first publish was <${unsupported[$name]}/>; going on" >&2
        ;;
    *)
        failed+=" $name"
        echo "pep.sh: $name: notifications lost, duplicated, leaked or refused (exit $status)" >&2
        ;;
    esac
    stop_server
done

get() { echo "${result[$1]:--}"; }
echo
echo "PEP benchmark: 1 publisher, $CONTACTS contacts (subscription both, caps +notify), $STRANGERS strangers;" \
    "$PHASE_SECONDS s per phase; full speed with $WINDOW publishes in flight; fixed rate $RATE publishes/s;" \
    "CPU = server user+system µs per delivered notification"
printf '%-8s | %9s %9s %8s %8s %8s | %8s %8s %8s | %5s %4s %6s | %s\n' server 'notif/s' 'publish/s' p50_ms p99_ms \
    'cpu_µs' '@rate p50' p99_ms 'cpu_µs' lost dup leaked status
for name in $SERVERS; do
    if [ -n "${unsupported[$name]:-}" ]; then
        printf '%-8s | %s\n' "$name" "no PEP: the publish was refused with <${unsupported[$name]}/>"
        continue
    fi
    lost=$(( ${result[$name.throughput.lost]:-0} + ${result[$name.rate.lost]:-0} ))
    dup=$(( ${result[$name.throughput.dup]:-0} + ${result[$name.rate.dup]:-0} ))
    leaked=$(( ${result[$name.throughput.leaked]:-0} + ${result[$name.rate.leaked]:-0} ))
    status=ok
    [[ " $failed " == *" $name "* || " $failed " == *" $name-start "* ]] && status=FAILED
    printf '%-8s | %9s %9s %8s %8s %8s | %8s %8s %8s | %5s %4s %6s | %s\n' "$name" \
        "$(get "$name.throughput.rate")" "$(get "$name.throughput.publish_rate")" "$(get "$name.throughput.p50_ms")" \
        "$(get "$name.throughput.p99_ms")" "$(get "$name.throughput.cpu_us")" "$(get "$name.rate.p50_ms")" \
        "$(get "$name.rate.p99_ms")" "$(get "$name.rate.cpu_us")" "$lost" "$dup" "$leaked" "$status"
done
verdict() { if awk "BEGIN { exit !($1) }"; then echo met; else echo "NOT met"; fi; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }'; }
# A server's CPU per notification counts only if every contact got every item exactly once.
for name in $SERVERS; do
    if [[ " $failed " == *" $name "* || " $failed " == *" $name-start "* ]]; then
        unset "result[$name.throughput.cpu_us]" "result[$name.rate.cpu_us]"
    fi
done
if [ -n "${result[parleyd.throughput.cpu_us]:-}" ] && [ -n "${result[ejabberd.throughput.cpu_us]:-}" ]; then
    c=$(ratio "${result[parleyd.throughput.cpu_us]}" "${result[ejabberd.throughput.cpu_us]}")
    echo "parleyd/ejabberd server CPU per notification, full speed: $c" \
        "(target <= 0.5, at most half of ejabberd's: $(verdict "$c <= 0.5"))"
    if [ -n "${result[parleyd.rate.cpu_us]:-}" ] && [ -n "${result[ejabberd.rate.cpu_us]:-}" ]; then
        c=$(ratio "${result[parleyd.rate.cpu_us]}" "${result[ejabberd.rate.cpu_us]}")
        echo "parleyd/ejabberd server CPU per notification, $RATE publishes/s: $c (target <= 0.5: $(verdict "$c <= 0.5"))"
    fi
elif [[ " $SERVERS " == *" parleyd "* ]]; then
    why="no valid ejabberd figure"
    [ -z "${result[parleyd.throughput.cpu_us]:-}" ] && why="no valid parleyd figure"
    [ -n "${unsupported[parleyd]:-}" ] && why="parleyd has no PEP yet (<${unsupported[parleyd]}/>)"
    echo "parleyd/ejabberd server CPU per notification: not measured, $why (target <= 0.5: NOT met)"
fi
if [ -n "${result[prosody.throughput.cpu_us]:-}" ] && [ -n "${result[ejabberd.throughput.cpu_us]:-}" ]; then
    echo "prosody/ejabberd server CPU per notification, full speed:" \
        "$(ratio "${result[prosody.throughput.cpu_us]}" "${result[ejabberd.throughput.cpu_us]}")"
fi
if [ -n "$failed" ]; then
    echo "pep.sh: failed:$failed" >&2
    exit 1
fi
