#!/usr/bin/env bash
# bench/muc_profile.sh PARLEYD BENCH OCCUPANTS MODE SECONDS [more ParleyBench muc options]
# Where parleyd's time and memory go in a room (bench/README.md, "Third round"): starts PARLEYD
# as bench/muc.sh does, fills a room of OCCUPANTS, runs only the fixed-rate phase (20
# messages/s) for SECONDS, and with MODE
#   perf   attaches `perf record -g` (PERF_FREQ samples/s, 1999) for SECONDS-5 s of it;
#   strace attaches `strace -c -f` for SECONDS-5 s of it (STRACE_ARGS instead of -c: e.g.
#          "-k -e trace=openat" names who opens what, with the stack);
#   mem    reads glibc's malloc_stats() through gdb after the logins and after the fill;
#   smaps  saves /proc/PID/smaps after the logins and after the fill (OUT/smaps-*-PID), each
#          after 8 s of quiet, for a diff of which mappings grew (heap arenas, stacks, code);
#   fill   attaches `perf record -g` for the fill of the room only (from the end of the logins'
#          settle to the last self-presence), for where the N² presence stanzas' time goes;
#   writes counts the server's write/read system calls over the same stretch (`perf stat`)
#          and prints its peak RSS (VmHWM) after it: how many copies go out per write;
#   anon   prints the lowest RssAnon (heap and stacks, not code) over 5 s of quiet after the
#          logins and after the fill (SETTLE must be 11 or more), and the difference per occupant;
#   none   only runs it.
# Output files go to OUT (/tmp). SETTLE: seconds of quiet before each RSS reading (2).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp}
PARLEYD=$1; BENCH=$2; N=$3; MODE=$4; SECS=$5; shift 5
. bench/lib.sh
bench_raise_file_limit profile $((N + 1000))
bench_tmp parley-muc-prof /dev/shm
write_muc_configs "$N"
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
    grep -E '^(Rss|Pss_Anon|Pss_File)' /proc/$server_pid/smaps_rollup | tr '\n' ' '; echo
    gdb -p "$server_pid" -batch -ex 'call (int)malloc_trim(0)' -ex 'call (void)malloc_stats()' > /dev/null 2>&1
    echo "--- rss after trim $(awk '/VmRSS/ {print $2}' /proc/$server_pid/status) KiB"; grep -E '^(Rss|Pss_Anon|Pss_File)' /proc/$server_pid/smaps_rollup | tr '\n' ' '; echo
fi
if [ "$MODE" = smaps ]; then
    until [ "$(ss -Htn state established "( sport = :$port )" | wc -l)" -ge "$N" ]; do sleep 0.5; done
    sleep 8; cp /proc/$server_pid/smaps $OUT/smaps-login-$$
fi
if [ "$MODE" = anon ]; then
    until [ "$(ss -Htn state established "( sport = :$port )" | wc -l)" -ge "$N" ]; do sleep 0.2; done
    sleep 5; anon_login=$(lowest_status_kib RssAnon 5 0.25)
fi
if [ "$MODE" = fill ] || [ "$MODE" = writes ]; then
    until [ "$(ss -Htn state established "( sport = :$port )" | wc -l)" -ge "$N" ]; do sleep 0.2; done
    sleep $(( ${SETTLE:-2} - 1 ))
    if [ "$MODE" = fill ]; then
        perf record -F ${PERF_FREQ:-1999} -g -p "$server_pid" -o $OUT/perf-fill-$$.data > /dev/null 2>&1 &
    else
        perf stat -e syscalls:sys_enter_write,syscalls:sys_enter_writev,syscalls:sys_enter_read \
            -p "$server_pid" -o $OUT/writes-fill-$$.txt > /dev/null 2>&1 &
    fi
    perf_pid=$!
fi
until grep -q 'entered' "$out" 2>/dev/null; do sleep 0.2; done
if [ "$MODE" = fill ]; then kill -INT $perf_pid; wait $perf_pid || true; echo "perf data: $OUT/perf-fill-$$.data"; fi
if [ "$MODE" = writes ]; then
    kill -INT $perf_pid; wait $perf_pid || true
    echo "fill system calls: $(awk '$2 ~ /^syscalls:sys_enter_/ {sub("syscalls:sys_enter_", "", $2); printf "%s %s ", $2, $1}' $OUT/writes-fill-$$.txt)$(grep VmHWM /proc/$server_pid/status | tr -s ' \t' ' ')"
fi
if [ "$MODE" = anon ]; then
    sleep 5; anon_joined=$(lowest_status_kib RssAnon 5 0.25)
    echo "RssAnon: $anon_login KiB logged in, $anon_joined KiB in the room: $(( (anon_joined - anon_login) * 10 / N )) / 10 KiB per occupant"
fi
if [ "$MODE" = smaps ]; then sleep 8; cp /proc/$server_pid/smaps $OUT/smaps-joined-$$; echo "smaps: $OUT/smaps-{login,joined}-$$"; fi
if [ "$MODE" = mem ]; then
    echo "--- joined: rss $(awk '/VmRSS/ {print $2}' /proc/$server_pid/status) KiB"
    grep -E '^(Rss|Pss_Anon|Pss_File)' /proc/$server_pid/smaps_rollup | tr '\n' ' '; echo
    gdb -p "$server_pid" -batch -ex 'call (int)malloc_trim(0)' -ex 'call (void)malloc_stats()' > /dev/null 2>&1
    echo "--- rss after trim $(awk '/VmRSS/ {print $2}' /proc/$server_pid/status) KiB"; grep -E '^(Rss|Pss_Anon|Pss_File)' /proc/$server_pid/smaps_rollup | tr '\n' ' '; echo
    sleep 10; echo "--- 10 s later: rss $(awk '/VmRSS/ {print $2}' /proc/$server_pid/status) KiB"
    grep -E '^(Rss|Pss_Anon|Pss_File)' /proc/$server_pid/smaps_rollup | tr '\n' ' '; echo
    sleep 1; grep -A3 '^Total' "$tmp/parleyd/out.log" || tail -30 "$tmp/parleyd/out.log"
fi
sleep 2
case $MODE in
perf) perf record -F ${PERF_FREQ:-1999} -g -p "$server_pid" -o $OUT/perf-$$.data -- sleep $((SECS - 5)) > /dev/null 2>&1; echo "perf data: $OUT/perf-$$.data";;
strace) timeout $((SECS - 5)) strace ${STRACE_ARGS:--c} -f -p "$server_pid" -o $OUT/strace-$$.txt || true; echo "strace: $OUT/strace-$$.txt";;
esac
wait "$client_pid" || true
client_pid=""
cat "$out"
