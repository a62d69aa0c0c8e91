#!/usr/bin/env bash
# bench/muc_mallstats.sh PARLEYD BENCH N: glibc's view of parleyd's heap where bench/muc.sh
# reads RSS (bench/README.md, MUC memory, sixth round). Starts PARLEYD as muc.sh does, runs
# `ParleyBench muc` with N occupants, and at the end of each settle (logged in; in the room)
# calls malloc_trim(0) then malloc_stats() in the server through gdb; prints, for both, the
# RSS and RssAnon muc.sh would see and glibc's bytes in use and held, and the differences per
# occupant. The server's stderr (malloc_stats' output, per arena) is in OUT/muc-mallstats.log.
# gdb's call disturbs the RSS read just after it, so the figures before it are the ones shown.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp}
PARLEYD=$1; BENCH=$2; N=$3
. bench/lib.sh
start_muc_probe_server muc_mallstats "$N"
log=$OUT/muc-mallstats.out
start_muc_probe_client "$N" 3 20 "mallstats-$N" "$log"
snapshot() { # label: RSS and RssAnon as muc.sh reads them, then malloc_trim and malloc_stats
    local rss anon
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$server_pid/status")
    anon=$(awk '/^RssAnon:/ { print $2 }' "/proc/$server_pid/status")
    gdb -p "$server_pid" -batch -ex 'call (int)malloc_trim(0)' -ex 'call (void)malloc_stats()' > /dev/null 2>&1
    sleep 0.3
    # malloc_stats writes to the server's stderr: the last "Total" block is this call's.
    local totals
    totals=$(awk '/^Total/ { on = 1; next } on && /^system bytes/ { s = $4 } on && /^in use bytes/ { u = $5; on = 0 } END { print s, u }' "$tmp/parleyd/out.log")
    echo "$1 rss_kib=$rss anon_kib=$anon malloc_system=${totals% *} malloc_in_use=${totals#* } threads=$(ls /proc/$server_pid/task | wc -l)"
}
# Logged in: muc.sh's settle reads RSS over seconds 5.5-11 after the last login.
until [ "$(ss -Htn state established "( sport = :$port )" | wc -l)" -ge "$N" ]; do sleep 0.2; done
sleep 9
a=$(snapshot login); echo "$a"
# In the room: the join ends, then 11 s of settle, then the line 'entered' is printed.
until grep -q 'occupants entered' "$log"; do sleep 0.2; done
b=$(snapshot room); echo "$b"
wait $client || true
grep -v '^RESULT' "$log" | head -3
cp "$tmp/parleyd/out.log" "$OUT/muc-mallstats.log"
stop_server
python3 - "$a" "$b" "$N" <<'PY'
import sys
def kv(s): return {k: int(v) for k, v in (x.split('=') for x in s.split()[1:])}
a, b, n = kv(sys.argv[1]), kv(sys.argv[2]), int(sys.argv[3])
for key, unit in (('rss_kib', 1), ('anon_kib', 1), ('malloc_in_use', 1 / 1024), ('malloc_system', 1 / 1024)):
    print(f"{key}: {(b[key] - a[key]) * unit / n:.2f} KiB per occupant")
PY
