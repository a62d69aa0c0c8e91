#!/usr/bin/env bash
# Multi-user chat (XEP-0045): parleyd's MUC service next to Prosody's MUC component and
# ejabberd's mod_muc, in one run, for rooms of ROOM_SIZES occupants (10, 100, 1,000).
#
# For each server and each room size, on loopback only, plain TCP and SCRAM-SHA-256
# (bench/lib.sh, bench/ejabberd.sh), a fresh server instance (so one size's leftovers do not
# weigh on the next), warmed up (up to 20 accounts log in and out; then, unless WARM_ROOM=0,
# enter a room of their own, chat and leave: the RSS that first room left is printed as
# 1st_room), then `ParleyBench muc`:
#   - N accounts log in (available presence); the server's RSS is read;
#   - join: o0 creates the room at conference.localhost and accepts an instant room; then the
#     other N-1 enter at once; the time to the last self-presence (status 110), then every
#     occupant must see all N; the server's RSS again -> KiB per occupant (the difference over
#     N: what the room costs beyond the sessions);
#   - throughput: SENDERS occupants each keep WINDOW groupchat messages that have not come
#     back to them from the room, for PHASE_SECONDS -> deliveries per second (a message to
#     N occupants is N deliveries), send-to-arrival latency, server CPU per delivery;
#   - rate: RATE messages/s in all, evenly paced, for RATE_SECONDS (30) in rooms of up to 100
#     and PHASE_SECONDS in larger ones -> p50/p99 latency, CPU. A message's copies arrive
#     together, so a p99 over the deliveries is about the slowest 1 % of messages: over 10 s
#     (200 messages) that was the second slowest, one stall of the machine; over 30 s it is
#     the sixth. In a room of 1,000 the rate is 20,000 deliveries/s, more than Prosody's one
#     thread keeps up with, and its backlog would grow with the phase;
#   every message must reach every occupant (its sender included) exactly once (lost, dup),
#   and no error may come back. Server CPU is user+system from /proc/PID/stat: parleyd's
#   process, Prosody's Lua process, ejabberd's beam.smp. The load generator's own CPU is
#   printed next to it.
#
# bench/README.md has the figures of the last runs and how to read them: on a shared machine,
# the load average printed for each run moves every figure.
#
# Needs the release builds of parleyd and ParleyBench (make bench builds them), prosody, and
# ejabberd (installed from Debian here when missing, without starting its service; needs root).
# Knobs: ROOM_SIZES WARM_ROOM SENDERS PHASE_SECONDS RATE_SECONDS WINDOW RATE BODY_BYTES THREADS
# SERVERS BENCH_TMP_PARENT KEEP_TMP, LATENCY_LOG (a directory: each rate phase's messages, when
# sent and their first and last copy's latency, to NAME-SIZE.txt), JOIN_TIMEOUT (seconds a
# room may take to fill; a server that needs longer is reported with what it reached),
# BEFORE_PARLEYD (a second parleyd binary, measured as server `parleyd_before` with its own
# data, seeded by BEFORE_BENCH if given: add it to SERVERS for a before/after run).
# The sizes are the outer loop: every server's part for one size runs before the next size,
# so a change in the machine's load weighs on all of them alike.
set -euo pipefail
cd "$(dirname "$0")/.."

ROOM_SIZES=${ROOM_SIZES:-"10 100 1000"}
WARM_ROOM=${WARM_ROOM:-1}
SENDERS=${SENDERS:-4}
PHASE_SECONDS=${PHASE_SECONDS:-10}
RATE_SECONDS=${RATE_SECONDS:-30}
LATENCY_LOG=${LATENCY_LOG:-}
WINDOW=${WINDOW:-2}
RATE=${RATE:-20}
BODY_BYTES=${BODY_BYTES:-100}
THREADS=${THREADS:-2}
SERVERS=${SERVERS:-"parleyd prosody ejabberd"}
JOIN_TIMEOUT=${JOIN_TIMEOUT:-600}
BEFORE_PARLEYD=${BEFORE_PARLEYD:-}
. bench/lib.sh
. bench/ejabberd.sh

USERS=0
for size in $ROOM_SIZES; do [ "$size" -gt "$USERS" ] && USERS=$size; done
bench_require muc.sh
bench_raise_file_limit muc.sh $((USERS + 1000))
if [[ " $SERVERS " == *" ejabberd "* ]] && ! ensure_ejabberd muc.sh; then
    echo "muc.sh: ejabberd is not available: measuring without it" >&2
    SERVERS=$(tr ' ' '\n' <<< "$SERVERS" | grep -vx ejabberd | tr '\n' ' ')
fi
bench_tmp parley-muc-bench "${BENCH_TMP_PARENT:-/dev/shm}"
write_muc_configs "$USERS"
echo 'Component "conference.localhost" "muc"' >> "$tmp/prosody/prosody.cfg.lua"
seed_users "$USERS"
if [[ " $SERVERS " == *" parleyd_before "* ]]; then
    [ -x "$BEFORE_PARLEYD" ] || { echo "muc.sh: BEFORE_PARLEYD ($BEFORE_PARLEYD) is not an executable" >&2; exit 1; }
    # Its own accounts, seeded by a load generator of its own version (BEFORE_BENCH): a
    # database migrated by a newer ParleyBench is refused by an older parleyd.
    mkdir -p "$tmp/before/parleyd/data" "$tmp/before/prosody-unused"
    sed "s|^data_dir: .*|data_dir: $tmp/before/parleyd/data|" "$tmp/parleyd/parleyd.yaml" > "$tmp/before/parleyd/parleyd.yaml"
    "${BEFORE_BENCH:-$BENCH}" seed-users --users "$USERS" --password "$PASSWORD" \
        --sqlite "$tmp/before/parleyd/data/parley.sqlite" --prosody-data "$tmp/before/prosody-unused"
fi
# parleyd_before: the same configuration and accounts, another binary and data directory.
start_before() {
    local saved_tmp=$tmp saved_parleyd=$PARLEYD
    tmp=$tmp/before
    PARLEYD=$BEFORE_PARLEYD
    start_server parleyd
    tmp=$saved_tmp
    PARLEYD=$saved_parleyd
}
# mod_muc's defaults cap a room at 200 occupants and stop presence broadcast above 1,000.
ejabberd_muc_modules="  mod_muc:
    access_create: all
    max_users: $((USERS + 10))
    max_users_presence: $((USERS + 10))
    default_room_options:
      max_users: $((USERS + 10))"
ejabberd_registered=""

failed=""
declare -A result
record() { # name.size RESULT-lines
    local line phase key
    while read -r line; do
        phase=$(field "$line" phase)
        for key in seconds joined complete errors rss_login_kib rss_joined_kib kib_per_occupant anon_kib_per_occupant rate message_rate \
            p50_ms p99_ms max_ms cpu_us client_cpu_us lost dup stray cpu_s client_cpu_s; do
            result[$1.$phase.$key]=$(field "$line" "$key")
        done
    done <<< "$(grep '^RESULT' <<< "$2")"
}

for size in $ROOM_SIZES; do
    rate_seconds=$([ "$size" -le 100 ] && echo "$RATE_SECONDS" || echo "$PHASE_SECONDS")
    for name in $SERVERS; do
        echo "== $name: a room of $size occupants: $PHASE_SECONDS s with $SENDERS senders × $WINDOW messages in" \
            "flight, $rate_seconds s at $RATE messages/s (load average $(cut -d ' ' -f 1-3 /proc/loadavg))"
        if [ "$name" = ejabberd ]; then
            if [ -z "$ejabberd_registered" ]; then
                ejabberd_port=$(free_port)
                write_ejabberd_config "$ejabberd_port" "$(free_port)" "" "" "$ejabberd_muc_modules"
            fi
            start_ejabberd "$ejabberd_port" || { failed+=" ejabberd-start"; continue; }
            if [ -z "$ejabberd_registered" ]; then
                register_ejabberd_users "$port" "$USERS" || { failed+=" ejabberd-start"; stop_server; continue; }
                ejabberd_registered=1
            fi
        elif [ "$name" = parleyd_before ]; then
            start_before
        else
            start_server "$name"
        fi
        "$BENCH" login --port "$port" --users $((size < 20 ? size : 20)) --concurrency 10 --password "$PASSWORD" \
            --label "$name-warmup" > /dev/null || echo "muc.sh: $name: warm-up logins failed" >&2
        # A warm-up room, as the logins above: up to 20 accounts enter a room of their own, chat
        # a second and leave, so that the measured room's figures are what a room of N adds to
        # a server that has had rooms, not the first room's code pages and heap growth. That
        # first-room cost is read too (lowest RSS over 6 s before and after) and printed.
        if [ "$WARM_ROOM" = 1 ]; then
            cold_rss=$(lowest_status_kib VmRSS 6)
            "$BENCH" muc --port "$port" --occupants $((size < 20 ? size : 20)) --room warmup --senders 2 --seconds 1 \
                --rate 10 --phases rate --threads 1 --password "$PASSWORD" --join-timeout 60 --label "$name-warmup" \
                > /dev/null || echo "muc.sh: $name: warm-up room failed" >&2
            result[$name.$size.first_room_kib]=$(( $(lowest_status_kib VmRSS 6) - cold_rss ))
            echo "$name: the warm-up room (since left) changed the server's RSS by ${result[$name.$size.first_room_kib]} KiB"
        fi
        sleep 1
        status=0
        log=()
        if [ -n "$LATENCY_LOG" ]; then mkdir -p "$LATENCY_LOG"; log=(--latency-log "$LATENCY_LOG/$name-$size.txt"); fi
        out=$("$BENCH" muc --port "$port" --occupants "$size" --senders "$SENDERS" --seconds "$PHASE_SECONDS" \
            --rate-seconds "$rate_seconds" --window "$WINDOW" --rate "$RATE" --body-bytes "$BODY_BYTES" \
            --threads "$THREADS" --password "$PASSWORD" --server-pid "$server_pid" --join-timeout "$JOIN_TIMEOUT" \
            --label "$name-$size" "${log[@]}") || status=$?
        grep -v '^RESULT' <<< "$out" || true
        record "$name.$size" "$out"
        if [ "$status" != 0 ]; then
            failed+=" $name.$size"
            echo "muc.sh: $name, $size occupants: messages lost, duplicated or refused, or the room incomplete (exit $status)" >&2
        fi
        stop_server
    done
done

get() { echo "${result[$1]:--}"; }
ok() { [[ " $failed " != *" $1 "* && " $failed " != *" ${1%%.*}-start "* ]]; }
echo
echo "MUC benchmark: one room per size; $SENDERS senders; full speed with $WINDOW messages in flight" \
    "per sender for $PHASE_SECONDS s; fixed rate $RATE messages/s for $RATE_SECONDS s (rooms over 100:" \
    "$PHASE_SECONDS s); CPU = server user+system µs per delivery" \
    "(a message to N occupants is N deliveries); KiB/occ = server RSS in the room minus logged in, per occupant;" \
    "anon = the same for anonymous memory only (RssAnon: heap and stacks, not the executable's pages);" \
    "1st_room = what the warm-up room of up to 20, entered and left before, left resident (KiB, whole server)"
printf '%-8s %5s | %8s %8s %6s %8s | %9s %8s %8s | %8s %8s %8s | %5s %4s | %s\n' server occ 'join_s' 'KiB/occ' anon 1st_room 'deliv/s' \
    p99_ms 'cpu_µs' '@rate p50' p99_ms 'cpu_µs' lost dup status
for name in $SERVERS; do
    for size in $ROOM_SIZES; do
        k=$name.$size
        lost=$(( ${result[$k.throughput.lost]:-0} + ${result[$k.rate.lost]:-0} ))
        dup=$(( ${result[$k.throughput.dup]:-0} + ${result[$k.rate.dup]:-0} ))
        status=ok
        ok "$k" || status=FAILED
        printf '%-8s %5s | %8s %8s %6s %8s | %9s %8s %8s | %8s %8s %8s | %5s %4s | %s\n' "$name" "$size" \
            "$(get "$k.join.seconds")" "$(get "$k.join.kib_per_occupant")" "$(get "$k.join.anon_kib_per_occupant")" \
            "$(get "$k.first_room_kib")" "$(get "$k.throughput.rate")" \
            "$(get "$k.throughput.p99_ms")" "$(get "$k.throughput.cpu_us")" "$(get "$k.rate.p50_ms")" \
            "$(get "$k.rate.p99_ms")" "$(get "$k.rate.cpu_us")" "$lost" "$dup" "$status"
    done
done
verdict() { if awk "BEGIN { exit !($1) }"; then echo met; else echo "NOT met"; fi; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }'; }
# The targets, for the sizes this run measured; a figure counts only if nothing was lost.
for size in $ROOM_SIZES; do
    p=parleyd.$size
    e=ejabberd.$size
    [[ " $SERVERS " == *" parleyd "* ]] && ok "$p" || continue
    if [[ " $SERVERS " == *" ejabberd "* ]] && ok "$e" && [ -n "${result[$e.throughput.cpu_us]:-}" ]; then
        c=$(ratio "${result[$p.throughput.cpu_us]}" "${result[$e.throughput.cpu_us]}")
        echo "$size occupants: parleyd/ejabberd server CPU per delivery, full speed: $c (target <= 0.5: $(verdict "$c <= 0.5"))"
        c=$(ratio "${result[$p.rate.cpu_us]}" "${result[$e.rate.cpu_us]}")
        echo "$size occupants: parleyd/ejabberd server CPU per delivery, $RATE messages/s: $c (target <= 0.5: $(verdict "$c <= 0.5"))"
    fi
    if [ "$size" = 100 ]; then
        v=${result[$p.rate.p99_ms]}
        echo "100 occupants: parleyd p99 at $RATE messages/s: $v ms (target <= 5 ms: $(verdict "$v <= 5"))"
        v=${result[$p.join.kib_per_occupant]}
        echo "100 occupants: parleyd memory per occupant: $v KiB (target <= 4 KiB: $(verdict "$v <= 4"))"
        v=${result[$p.join.anon_kib_per_occupant]}
        echo "100 occupants: parleyd anonymous memory per occupant: $v KiB (target <= 4 KiB: $(verdict "$v <= 4"))"
    fi
    if [ "$size" = 1000 ]; then
        v=${result[$p.join.seconds]}
        echo "1000 occupants: parleyd join of the whole room: $v s (target < 5 s: $(verdict "$v < 5"))"
        v=${result[$p.join.kib_per_occupant]}
        echo "1000 occupants: parleyd memory per occupant: $v KiB (target <= 4 KiB: $(verdict "$v <= 4"))"
        v=${result[$p.join.anon_kib_per_occupant]}
        echo "1000 occupants: parleyd anonymous memory per occupant: $v KiB (target <= 4 KiB: $(verdict "$v <= 4"))"
    fi
done
# Before and after, measured in the same run.
for size in $ROOM_SIZES; do
    p=parleyd.$size
    b=parleyd_before.$size
    [[ " $SERVERS " == *" parleyd_before "* && " $SERVERS " == *" parleyd "* ]] && ok "$p" && ok "$b" || continue
    for phase in throughput rate; do
        echo "$size occupants: parleyd/parleyd_before server CPU per delivery, $phase: $(ratio "${result[$p.$phase.cpu_us]}" "${result[$b.$phase.cpu_us]}")"
        e=ejabberd.$size
        if [[ " $SERVERS " == *" ejabberd "* ]] && ok "$e" && [ -n "${result[$e.$phase.cpu_us]:-}" ]; then
            echo "$size occupants: parleyd_before/ejabberd server CPU per delivery, $phase: $(ratio "${result[$b.$phase.cpu_us]}" "${result[$e.$phase.cpu_us]}")"
        fi
    done
    echo "$size occupants: KiB per occupant, parleyd ${result[$p.join.kib_per_occupant]}, parleyd_before ${result[$b.join.kib_per_occupant]};" \
        "anonymous only, parleyd ${result[$p.join.anon_kib_per_occupant]}, parleyd_before ${result[$b.join.anon_kib_per_occupant]}"
done
if [ -n "$failed" ]; then
    echo "muc.sh: failed:$failed" >&2
    exit 1
fi
