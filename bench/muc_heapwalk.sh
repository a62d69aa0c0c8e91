#!/usr/bin/env bash
# bench/muc_heapwalk.sh PARLEYD BENCH N: which heap pages a room of N keeps resident, and what
# keeps them (bench/README.md, MUC memory, sixth round). Starts PARLEYD as muc.sh does, fills a
# room of N with `ParleyBench muc`, and at the read of RSS after the fill stops the server and
# runs bench/muc_heapwalk.py on it; then maps each thread to its malloc arena and names the
# run-time type metadata of the commonest chunks on sparse pages (gdb, libc's debug symbols).
# Output: OUT/muc-heapwalk.txt (census), OUT/muc-heapwalk-arenas.txt, OUT/muc-heapwalk-names.txt.
# A diagnostic only: naming a first word that is no metadata can crash the server, at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp}
PARLEYD=$1; BENCH=$2; N=$3
. bench/lib.sh
bench_raise_file_limit muc_heapwalk $((N + 1000))
bench_tmp parley-heapwalk /dev/shm
write_muc_configs "$N"
seed_users "$N" > /dev/null
start_server parleyd
"$BENCH" login --port "$port" --users 20 --concurrency 10 --password "$PASSWORD" --label warmup > /dev/null
sleep 1
log=$OUT/muc-heapwalk.out
"$BENCH" muc --port "$port" --occupants "$N" --senders 4 --seconds 2 --rate 20 --phases rate --threads 2 \
    --password "$PASSWORD" --server-pid "$server_pid" --join-timeout 90 --label "heapwalk-$N" > "$log" 2>&1 &
client=$!
until grep -q 'occupants entered' "$log"; do sleep 0.2; done
kill -STOP $server_pid
grep RssAnon /proc/$server_pid/status
python3 bench/muc_heapwalk.py $server_pid 12 > $OUT/muc-heapwalk.txt; for t in /proc/$server_pid/task/*; do echo "$(cat $t/comm)"; done | sort | uniq -c > $OUT/muc-heapwalk-threads.txt
gdb -p $server_pid -batch -ex "thread apply all p/x (long)thread_arena" > $OUT/muc-heapwalk-arenas.txt 2>&1 || true
kill -CONT $server_pid
# Metadata made at run time (generic instances: 0x7f…) by swift_getTypeName, static ones
# (in the binary) by their symbol.
args=(); for m in $(awk 'NR>3 && $3 ~ /^0x/ {print $3}' $OUT/muc-heapwalk.txt | sort -u); do
    if [[ $m == 0x7f* ]]; then args+=(-ex "echo META $m " -ex "p ((char*(*)(void*,int))swift_getTypeName)((void*)$m, 1)")
    else args+=(-ex "echo META $m " -ex "info symbol $m"); fi
done
gdb -p $server_pid -batch "${args[@]}" 2>&1 | grep -E "META|^\\$| in section " > $OUT/muc-heapwalk-names.txt || true
wait $client || true
grep entered $log
stop_server
