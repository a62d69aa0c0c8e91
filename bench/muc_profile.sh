#!/usr/bin/env bash
# bench/muc_profile.sh PARLEYD BENCH OCCUPANTS MODE SECONDS [more ParleyBench muc options]
# Where parleyd's time and memory go in a room (bench/README.md, "Third round"): starts PARLEYD
# as bench/muc.sh does, fills a room of OCCUPANTS, runs only the fixed-rate phase (20
# messages/s) for SECONDS, and with MODE
#   perf   attaches `perf record -g` (PERF_FREQ samples/s, 1999) for SECONDS-5 s of it;
#   strace attaches `strace -c -f` for SECONDS-5 s of it;
#   mem    reads glibc's malloc_stats() through gdb after the logins and after the fill;
#   none   only runs it.
# Output files go to OUT (/tmp). SETTLE: seconds of quiet before each RSS reading (2).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp}
PARLEYD=$1; BENCH=$2; N=$3; MODE=$4; SECS=$5; shift 5
. bench/lib.sh
bench_raise_file_limit profile $((N + 1000))
bench_tmp parley-muc-prof /dev/shm
parleyd_port=$(free_port)
prosody_port=$(free_port)
write_parleyd_config "$parleyd_port" "muc:
  max_occupants_per_room: $((N + 10))
  messages_per_minute: 100000000
  message_burst: 1000000"
write_prosody_config "$prosody_port" '{ "s2s", "offline" }'
seed_users "$N" > /dev/null
start_server parleyd
sleep 1
out=$OUT/prof-$MODE-$$.log
"$BENCH" muc --port "$port" --occupants "$N" --senders 4 --seconds "$SECS" --rate 20 --phases rate --threads 2 \
    --password "$PASSWORD" --server-pid "$server_pid" --label "prof-$N" --settle ${SETTLE:-2} "$@" > "$out" 2>&1 &
client_pid=$!
if [ "$MODE" = mem ]; then
    until [ "$(ss -Htn state established "( sport = :$port )" | wc -l)" -ge "$N" ]; do sleep 0.5; done
    sleep 4
    echo "--- logged in: rss $(awk '/VmRSS/ {print $2}' /proc/$server_pid/status) KiB"
    gdb -p "$server_pid" -batch -ex 'call (int)malloc_trim(0)' -ex 'call (void)malloc_stats()' > /dev/null 2>&1
    echo "--- rss after trim $(awk '/VmRSS/ {print $2}' /proc/$server_pid/status) KiB"
fi
until grep -q 'entered' "$out" 2>/dev/null; do sleep 0.5; done
if [ "$MODE" = mem ]; then
    echo "--- joined: rss $(awk '/VmRSS/ {print $2}' /proc/$server_pid/status) KiB"
    gdb -p "$server_pid" -batch -ex 'call (int)malloc_trim(0)' -ex 'call (void)malloc_stats()' > /dev/null 2>&1
    echo "--- rss after trim $(awk '/VmRSS/ {print $2}' /proc/$server_pid/status) KiB"
    sleep 1; grep -A3 '^Total' "$tmp/parleyd/out.log" || tail -30 "$tmp/parleyd/out.log"
fi
sleep 2
case $MODE in
perf) perf record -F ${PERF_FREQ:-1999} -g -p "$server_pid" -o $OUT/perf-$$.data -- sleep $((SECS - 5)) > /dev/null 2>&1; echo "perf data: $OUT/perf-$$.data";;
strace) timeout $((SECS - 5)) strace -c -f -p "$server_pid" -o $OUT/strace-$$.txt || true; echo "strace: $OUT/strace-$$.txt";;
esac
wait "$client_pid" || true
client_pid=""
cat "$out"
