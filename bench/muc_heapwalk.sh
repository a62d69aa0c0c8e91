#!/usr/bin/env bash
# bench/muc_heapwalk.sh PARLEYD BENCH N: which heap pages a room of N keeps resident, and what
# keeps them (bench/README.md, MUC memory, sixth round). Starts PARLEYD as muc.sh does, fills a
# room of N with `ParleyBench muc`, and at the read of RSS after the fill stops the server and
# runs bench/muc_heapwalk.py on it; then maps each thread to its malloc arena and names the
# run-time type metadata of the commonest chunks on sparse pages (gdb, libc's debug symbols).
# Output: OUT/muc-heapwalk.txt (census), OUT/muc-heapwalk-arenas.txt, OUT/muc-heapwalk-names.txt,
# OUT/muc-heapwalk-diff.txt (chunks in use in the room minus logged in, by kind: what the room added).
# A diagnostic only: naming a first word that is no metadata can crash the server, at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp}
PARLEYD=$1; BENCH=$2; N=$3
. bench/lib.sh
start_muc_probe_server muc_heapwalk "$N"
log=$OUT/muc-heapwalk.out
start_muc_probe_client "$N" 2 20 "heapwalk-$N" "$log"
# Logged in (muc.sh reads RSS 5.5-11 s after the logins): every chunk in use, for the diff below.
until [ "$(ss -Htn state established "( sport = :$port )" | wc -l)" -ge "$N" ]; do sleep 0.2; done
sleep 8
kill -STOP $server_pid
python3 bench/muc_heapwalk.py $server_pid 12 $OUT/muc-heapwalk-login-all.txt > $OUT/muc-heapwalk-login.txt
kill -CONT $server_pid
until grep -q 'occupants entered' "$log"; do sleep 0.2; done
kill -STOP $server_pid
grep RssAnon /proc/$server_pid/status
python3 bench/muc_heapwalk.py $server_pid 12 $OUT/muc-heapwalk-room-all.txt > $OUT/muc-heapwalk.txt
# What the room added: chunks in use on resident pages, in the room minus logged in, by kind.
python3 - $OUT/muc-heapwalk-login-all.txt $OUT/muc-heapwalk-room-all.txt $N > $OUT/muc-heapwalk-diff.txt <<'PY'
import collections, sys
def load(name):
    return collections.Counter({(int(size), word): int(count) for count, size, word in (l.split() for l in open(name))})
login, room, n = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3])
grown = {kind: room[kind] - login[kind] for kind in set(login) | set(room)}
print(f'chunks in use: {sum(login.values())} logged in, {sum(room.values())} in the room; bytes '
      f'{sum(s * c for (s, _), c in login.items())} -> {sum(s * c for (s, _), c in room.items())}; '
      f'the kinds that grew most (count per occupant, size, first word):')
for kind, count in sorted(grown.items(), key=lambda item: -item[1] * item[0][0])[:25]:
    print(f'{count / n:8.2f} {kind[0]:6} {kind[1]} ({count * kind[0] / n:.0f} B/occupant)')
PY
for t in /proc/$server_pid/task/*; do echo "$(cat $t/comm)"; done | sort | uniq -c > $OUT/muc-heapwalk-threads.txt
gdb -p $server_pid -batch -ex "thread apply all p/x (long)thread_arena" > $OUT/muc-heapwalk-arenas.txt 2>&1 || true
kill -CONT $server_pid
# Metadata made at run time (generic instances: 0x7f…) by swift_getTypeName, static ones
# (in the binary) by their symbol.
args=(); for m in $( (awk 'NR>3 && $3 ~ /^0x/ {print $3}' $OUT/muc-heapwalk.txt; awk 'NR>1 && $2 <= 512 && $3 ~ /^0x/ {print $3}' $OUT/muc-heapwalk-diff.txt) | sort -u); do
    if [[ $m == 0x7f* ]]; then args+=(-ex "echo META $m " -ex "p ((char*(*)(void*,int))swift_getTypeName)((void*)$m, 1)")
    else args+=(-ex "echo META $m " -ex "info symbol $m"); fi
done
gdb -p $server_pid -batch "${args[@]}" 2>&1 | grep -E "META|^\\$| in section " > $OUT/muc-heapwalk-names.txt || true
wait $client || true
grep entered $log
# gdb's naming may leave the server stopped (or crash it): let it take its SIGTERM.
kill -CONT $server_pid 2>/dev/null || true
stop_server
