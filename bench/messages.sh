#!/usr/bin/env bash
# Message delivery between online clients, and offline storage: parleyd against Prosody, in
# one run (the targets of the "Server IM" issue).
#
# For each server, on loopback only, plain TCP and SCRAM-SHA-256 (bench/lib.sh), one server
# instance at a time:
#   1. a warm-up of 20 logins, then `ParleyBench messages`: PAIRS pairs of clients log in and
#      message each other's full JID, every message numbered and timestamped:
#      - throughput: WINDOW messages in flight per direction for PHASE_SECONDS -> delivered
#        msg/s, latency, server CPU seconds per 10k delivered messages;
#      - rate: RATE msg/s in total, evenly paced, for PHASE_SECONDS -> p50/p99/max latency, CPU;
#      every message must arrive exactly once and in order; the server's RSS before the
#      logins and with the 2·PAIRS sessions connected after the phases -> bytes per session;
#   2. `ParleyBench offline` (servers in OFFLINE_SERVERS): OFFLINE_SENDERS senders send
#      OFFLINE_RECIPIENTS × OFFLINE_PER_RECIPIENT messages to offline accounts as fast as they
#      can -> stored msg/s (parleyd: until its offline_messages table holds them all, polled;
#      Prosody: until every sender's ping is answered, Prosody storing each message before it
#      handles the next stanza, without fsync), then each recipient logs in and gets them
#      all -> drained msg/s from its initial presence to the last message.
#
# MODE=bare (the default) runs both servers stripped to what the benchmark needs: parleyd
# without its archive (ARCHIVE=true turns it on), Prosody without mod_mam. MODE=defaults runs
# the configuration users meet: parleyd from conf/parleyd.yaml as shipped (archive and stream
# management on), overriding through the environment only what the load generator needs (port,
# data directory, plain TCP as it speaks no TLS, connections per address and the per-session
# stanza rate, which would otherwise cap 2·PAIRS sessions from one address, and the offline
# quota for the offline phase); Prosody with mod_mam (its default file store) and mod_smacks;
# and every client enables XEP-0198, answers the server's <r/> and sends <r/> after each
# message (ParleyBench messages --sm), so each message's acknowledgement waits for its storage.
# The summary gives p99/p50 at full speed (fairness: no stream should wait much longer than the
# others) and the load average, as the machine is shared.
#
# STORAGE=postgresql runs parleyd on a throwaway PostgreSQL cluster (fsync on, in the same
# temporary directory) instead of SQLite: the accounts are seeded into SQLite, then copied
# with `parleyd storage copy`, and the offline phase counts the stored rows with psql.
#
# Needs the release builds of parleyd and ParleyBench (make bench builds them) and prosody.
# Knobs: MODE STORAGE PAIRS PHASE_SECONDS WINDOW RATE THREADS SERVERS OFFLINE_SERVERS OFFLINE_SENDERS
#        OFFLINE_RECIPIENTS OFFLINE_PER_RECIPIENT ARCHIVE BENCH_TMP_PARENT (default /var/tmp) KEEP_TMP
#        LATENCY_LOG (a path: every delivery's latency goes to PATH.<server>, ParleyBench --latency-log)
set -euo pipefail
cd "$(dirname "$0")/.."

PAIRS=${PAIRS:-100}
PHASE_SECONDS=${PHASE_SECONDS:-10}
WINDOW=${WINDOW:-4}
RATE=${RATE:-2000}
THREADS=${THREADS:-2}
SERVERS=${SERVERS:-"parleyd prosody"}
OFFLINE_SERVERS=${OFFLINE_SERVERS-"parleyd prosody"}  # empty: no offline phase
OFFLINE_SENDERS=${OFFLINE_SENDERS:-20}
OFFLINE_RECIPIENTS=${OFFLINE_RECIPIENTS:-2}
OFFLINE_PER_RECIPIENT=${OFFLINE_PER_RECIPIENT:-20000}
MODE=${MODE:-bare}
STORAGE=${STORAGE:-sqlite}
. bench/lib.sh

first_offline_user=$((2 * PAIRS + 1))
USERS=$((2 * PAIRS + OFFLINE_SENDERS + OFFLINE_RECIPIENTS))
quota=$((OFFLINE_PER_RECIPIENT * 2))

bench_require messages.sh
bench_raise_file_limit messages.sh $((2 * PAIRS + OFFLINE_SENDERS + 1000))
# On disk, not tmpfs: offline storage is meant to be durable, and fsync on tmpfs costs nothing.
bench_tmp parley-messages-bench "${BENCH_TMP_PARENT:-/var/tmp}"
parleyd_port=$(free_port)
prosody_port=$(free_port)
sm=()
case $MODE in
bare)
    # Like for like: Prosody runs without mod_mam here, so parleyd runs without its archive
    # (ARCHIVE=true measures parleyd with it: every message then also costs two durable rows).
    write_parleyd_config "$parleyd_port" "offline:
  quota: $quota
archive:
  enabled: ${ARCHIVE:-false}"
    # Offline messages on (mod_offline, internal storage), with the archive limit raised likewise.
    write_prosody_config "$prosody_port" '{ "s2s" }' "storage_archive_item_limit = $quota"
    ;;
defaults)
    mkdir -p "$tmp/parleyd"
    cp conf/parleyd.yaml "$tmp/parleyd/parleyd.yaml"
    export PARLEYD_DATA_DIR="$tmp/parleyd/data" PARLEYD_C2S_PORT="$parleyd_port" PARLEYD_C2S_DIRECT_TLS_PORT=0 \
        PARLEYD_TLS_REQUIRED=false PARLEYD_LIMITS_CONNECTIONS_PER_IP=100000 \
        PARLEYD_LIMITS_STANZAS_PER_SECOND=100000 PARLEYD_LIMITS_STANZA_BURST=100000 PARLEYD_OFFLINE_QUOTA="$quota"
    write_prosody_config "$prosody_port" '{ "s2s" }' "storage_archive_item_limit = $quota" '"mam", "smacks"'
    sm=(--sm)
    ;;
*)
    echo "messages.sh: MODE is bare or defaults, not '$MODE'" >&2
    exit 1
    ;;
esac
seed_users "$USERS"
case $STORAGE in
sqlite) ;;
postgresql)
    postgres_start
    export PARLEYD_STORAGE_BACKEND=postgresql PARLEYD_STORAGE_URL="$postgres_url"
    "$PARLEYD" storage copy --config "$tmp/parleyd/parleyd.yaml" --from-sqlite "$tmp/parleyd/data" > /dev/null
    echo "parleyd on PostgreSQL ($("$postgres_bin/postgres" --version)), accounts copied from the seeded SQLite file"
    ;;
*)
    echo "messages.sh: STORAGE is sqlite or postgresql, not '$STORAGE'" >&2
    exit 1
    ;;
esac

failed=""
declare -A result
record() { # name RESULT-lines
    local line phase key
    while read -r line; do
        phase=$(field "$line" phase)
        for key in rate p50_ms p99_ms max_ms cpu_s_per_10k lost disorder errors bytes_per_session stored_s accepted_s; do
            result[$1.$phase.$key]=$(field "$line" "$key")
        done
    done <<< "$(grep '^RESULT' <<< "$2")"
}

for name in $SERVERS; do
    echo "== $name: $PAIRS pairs, $PHASE_SECONDS s at full speed (window $WINDOW per direction), $PHASE_SECONDS s at $RATE msg/s"
    start_server "$name"
    latency_log=()
    [ -n "${LATENCY_LOG:-}" ] && latency_log=(--latency-log "$LATENCY_LOG.$name")
    "$BENCH" login --port "$port" --users 20 --concurrency 10 --password "$PASSWORD" --label "$name-warmup" > /dev/null
    sleep 1
    out=$("$BENCH" messages --port "$port" --pairs "$PAIRS" --seconds "$PHASE_SECONDS" --window "$WINDOW" \
        --rate "$RATE" --threads "$THREADS" --password "$PASSWORD" --server-pid "$server_pid" --label "$name" "${sm[@]}" "${latency_log[@]}") \
        || { failed+=" $name-messages"; echo "messages.sh: $name: messages lost, out of order or refused" >&2; }
    grep -v '^RESULT' <<< "$out"
    record "$name" "$out"
    if [[ " $OFFLINE_SERVERS " == *" $name "* ]]; then
        echo "== $name: offline, $OFFLINE_SENDERS senders -> $OFFLINE_RECIPIENTS × $OFFLINE_PER_RECIPIENT messages"
        sqlite=()
        if [ "$name" = parleyd ] && [ "$STORAGE" = postgresql ]; then
            # One psql session for the whole phase, not a psql and a connection per poll.
            sqlite=(--count-session "psql -h 127.0.0.1 -p $postgres_port -U parley -d parley -tAq")
        elif [ "$name" = parleyd ]; then
            sqlite=(--sqlite "$tmp/parleyd/data/parley.sqlite")
        fi
        out=$("$BENCH" offline --port "$port" --first-user "$first_offline_user" --senders "$OFFLINE_SENDERS" \
            --recipients "$OFFLINE_RECIPIENTS" --per-recipient "$OFFLINE_PER_RECIPIENT" --threads "$THREADS" \
            --password "$PASSWORD" --server-pid "$server_pid" --label "$name" "${sqlite[@]}") \
            || { failed+=" $name-offline"; echo "messages.sh: $name: offline messages lost or refused" >&2; }
        grep -v '^RESULT' <<< "$out"
        record "$name" "$out"
    fi
    stop_server
done

get() { echo "${result[$1]:--}"; }
sum() { awk 'BEGIN { for (i = 1; i < ARGC; i++) { if (ARGV[i] == "-") { print "-"; exit } s += ARGV[i] } print s + 0 }' "$@"; }
echo
echo "mode $MODE, parleyd storage $STORAGE; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "message benchmark: $PAIRS pairs ($((2 * PAIRS)) sessions), $PHASE_SECONDS s per phase; full speed with" \
    "$WINDOW in flight per direction; fixed rate $RATE msg/s; CPU = server user+system s per 10k delivered"
printf '%-8s | %9s %8s %8s %9s | %8s %8s %8s %9s | %5s %6s | %9s | %9s %9s\n' server 'msg/s' p50_ms p99_ms cpu/10k \
    '@rate p50' p99_ms max_ms cpu/10k lost disord 'B/session' offl_st/s offl_dr/s
for name in $SERVERS; do
    lost=$(sum "$(get "$name.throughput.lost")" "$(get "$name.rate.lost")")
    disorder=$(sum "$(get "$name.throughput.disorder")" "$(get "$name.rate.disorder")" \
        "$(get "$name.throughput.errors")" "$(get "$name.rate.errors")")
    printf '%-8s | %9s %8s %8s %9s | %8s %8s %8s %9s | %5s %6s | %9s | %9s %9s\n' "$name" \
        "$(get "$name.throughput.rate")" "$(get "$name.throughput.p50_ms")" "$(get "$name.throughput.p99_ms")" \
        "$(get "$name.throughput.cpu_s_per_10k")" "$(get "$name.rate.p50_ms")" "$(get "$name.rate.p99_ms")" \
        "$(get "$name.rate.max_ms")" "$(get "$name.rate.cpu_s_per_10k")" "$lost" "$disorder" \
        "$(get "$name.memory.bytes_per_session")" "$(get "$name.store.rate")" "$(get "$name.drain.rate")"
done
verdict() { if awk "BEGIN { exit !($1) }"; then echo met; else echo "NOT met"; fi; }
if [ -n "${result[parleyd.throughput.rate]:-}" ] && [ -n "${result[prosody.throughput.rate]:-}" ]; then
    r=$(awk -v a="${result[parleyd.throughput.rate]}" -v b="${result[prosody.throughput.rate]}" 'BEGIN { printf "%.2f", a / b }')
    c1=$(awk -v a="${result[parleyd.throughput.cpu_s_per_10k]}" -v b="${result[prosody.throughput.cpu_s_per_10k]}" 'BEGIN { printf "%.3f", a / b }')
    c2=$(awk -v a="${result[parleyd.rate.cpu_s_per_10k]}" -v b="${result[prosody.rate.cpu_s_per_10k]}" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')
    m=$(awk -v a="${result[parleyd.memory.bytes_per_session]:-0}" -v b="${result[prosody.memory.bytes_per_session]:-0}" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
    echo "parleyd/prosody delivered msg/s at full speed: ${r}x"
    echo "parleyd/prosody server CPU per message, full speed: $c1 (target <= 0.25: $(verdict "$c1 <= 0.25"))"
    echo "parleyd/prosody server CPU per message, $RATE msg/s: $c2 (target <= 0.25: $(verdict "$c2 <= 0.25"))"
    echo "parleyd/prosody RSS per connected session: $m"
fi
for name in $SERVERS; do
    p50=$(get "$name.throughput.p50_ms")
    p99=$(get "$name.throughput.p99_ms")
    if [ "$p50" != - ] && [ "$p99" != - ]; then
        ratio=$(awk -v a="$p99" -v b="$p50" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }')
        echo "$name p99/p50 latency at full speed: $ratio (target <= 5: $(verdict "$ratio <= 5"))"
    fi
done
if [ -n "${result[parleyd.rate.p99_ms]:-}" ]; then
    echo "parleyd p99 latency at $RATE msg/s: ${result[parleyd.rate.p99_ms]} ms (target <= 1 ms: $(verdict "${result[parleyd.rate.p99_ms]} <= 1"))"
    lost=$(sum "$(get parleyd.throughput.lost)" "$(get parleyd.rate.lost)")
    echo "parleyd messages lost: $lost (target 0: $(verdict "\"$lost\" == \"0\""))"
fi
if [ -n "${result[parleyd.store.rate]:-}" ]; then
    echo "parleyd offline stored (durably): ${result[parleyd.store.rate]} msg/s (target >= 10000: $(verdict "${result[parleyd.store.rate]} >= 10000"))"
    echo "parleyd offline drained: ${result[parleyd.drain.rate]} msg/s (target >= 50000: $(verdict "${result[parleyd.drain.rate]} >= 50000"))"
fi
if [ "$MODE" = defaults ] && [ -n "${result[parleyd.throughput.rate]:-}" ]; then
    # Issue 17's targets for the shipped configuration. The CPU per message is the figure
    # that holds on a loaded machine; the rates are only comparable within one run.
    us=$(awk -v c="${result[parleyd.throughput.cpu_s_per_10k]}" 'BEGIN { printf "%.1f", c * 100 }')
    echo "defaults, parleyd delivered msg/s at full speed: ${result[parleyd.throughput.rate]} (target >= 25000:" \
        "$(verdict "${result[parleyd.throughput.rate]} >= 25000"))"
    echo "defaults, parleyd server CPU per message at full speed: $us us (target <= 35: $(verdict "$us <= 35"))"
    [ -n "${result[parleyd.rate.p99_ms]:-}" ] && echo "defaults, parleyd p99 at $RATE msg/s:" \
        "${result[parleyd.rate.p99_ms]} ms (target <= 2 ms: $(verdict "${result[parleyd.rate.p99_ms]} <= 2"))"
    [ -n "${result[parleyd.store.rate]:-}" ] && echo "defaults, parleyd offline stored: ${result[parleyd.store.rate]}" \
        "msg/s (target >= 20000: $(verdict "${result[parleyd.store.rate]} >= 20000"))"
fi
if [ -n "$failed" ]; then
    echo "messages.sh: failed:$failed" >&2
    exit 1
fi
