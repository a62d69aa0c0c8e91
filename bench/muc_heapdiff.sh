#!/usr/bin/env bash
# bench/muc_heapdiff.sh PARLEYD BENCH N: which malloc arenas a room of N grows, counted where
# bench/muc.sh reads RSS (bench/README.md, MUC memory, sixth round). Starts PARLEYD as muc.sh
# does and runs `ParleyBench muc` with N occupants; at the end of each settle (logged in; in
# the room) calls malloc_trim(0) through gdb, stops the server, walks its heaps with
# bench/muc_heapwalk.py and names each thread's arena; then prints, per arena (with the
# threads using it), the resident pages holding chunks in use, those under 1 KiB in use, and
# the bytes in use, before and after. Output: OUT/muc-heapdiff-{login,room}.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp}
PARLEYD=$1; BENCH=$2; N=$3
. bench/lib.sh
start_muc_probe_server muc_heapdiff "$N"
log=$OUT/muc-heapdiff.out
start_muc_probe_client "$N" 20 1 "heapdiff-$N" "$log"
snapshot() { # label
    grep -E '^(RssAnon|VmRSS)' "/proc/$server_pid/status" | tr -s ' \n' ' ' > "$OUT/muc-heapdiff-$1.txt"
    echo >> "$OUT/muc-heapdiff-$1.txt"
    gdb -p "$server_pid" -batch -ex 'call (int)malloc_trim(0)' > /dev/null 2>&1
    kill -STOP "$server_pid"
    PER_HEAP=1 python3 bench/muc_heapwalk.py "$server_pid" 0 >> "$OUT/muc-heapdiff-$1.txt"
    kill -CONT "$server_pid"
    gdb -p "$server_pid" -batch -ex "thread apply all p/x (long)thread_arena" 2>/dev/null \
        | awk '/^Thread/ { name = $0; sub(/.*\(/, "", name); sub(/\)\):.*/, "", name); gsub(/[" ]/, "", name) } /^\$/ { print "ARENA", $3, name }' >> "$OUT/muc-heapdiff-$1.txt"
}
cpu() { awk '{ print $14 + $15 }' "/proc/$server_pid/stat"; }
until [ "$(ss -Htn state established "( sport = :$port )" | wc -l)" -ge "$N" ]; do sleep 0.2; done
# The logins are over when the server has been idle for a second (the join waits 11 s more).
previous=$(cpu); sleep 1
while [ "$(cpu)" -gt $((previous + 1)) ]; do previous=$(cpu); sleep 1; done
snapshot login
until grep -q 'occupants entered' "$log"; do sleep 0.2; done
snapshot room
# The run-time type metadata among the commonest chunks' first words, named in the server.
args=(); for m in $(awk '$1 == "KIND" && $5 >= 200 && $4 ~ /^0x(7f|5)/ { print $4 }' "$OUT/muc-heapdiff-room.txt" | sort -u | head -300); do
    args+=(-ex "echo META $m " -ex "p ((char*(*)(void*,int))swift_getTypeName)((void*)$m, 1)"); done
timeout 60 gdb -p "$server_pid" -batch "${args[@]}" 2>&1 | grep -E "META|^\\$" > "$OUT/muc-heapdiff-names.txt" || true
wait $client || true
grep -v '^RESULT' "$log" | head -3
stop_server
python3 - "$OUT/muc-heapdiff-login.txt" "$OUT/muc-heapdiff-room.txt" "$N" <<'PY'
import collections, sys
def load(name):
    heaps, threads = {}, collections.defaultdict(list)
    for line in open(name):
        f = line.split()
        if f and f[0] == 'HEAP': heaps[int(f[1], 16)] = tuple(int(x) for x in f[2:5])
        if f and f[0] == 'ARENA': threads[int(f[1], 16) & ~((64 << 20) - 1)].append(f[2])
    return heaps, threads, open(name).readline().strip()
(a, _, ra), (b, threads, rb), n = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3])
print('logged in:', ra); print('in the room:', rb)
print('heap            pages(in use) sparse  KB in use   -> after            per occupant: pages, sparse, bytes  threads')
for heap in sorted(set(a) | set(b), key=lambda h: -(b.get(h, (0,0,0))[0] - a.get(h, (0,0,0))[0])):
    x, y = a.get(heap, (0, 0, 0)), b.get(heap, (0, 0, 0))
    names = collections.Counter(threads.get(heap, ['main' if heap < (1 << 40) else '?']))
    print(f'{heap:#14x} {x[0]:7} {x[1]:7} {x[2]/1e3:9.0f}   -> {y[0]:7} {y[1]:7} {y[2]/1e3:9.0f}   '
          f'{(y[0]-x[0])/n:6.2f} {(y[1]-x[1])/n:6.2f} {(y[2]-x[2])/n:7.0f}  {dict(names)}')
def kinds(name):
    k = collections.Counter()
    for line in open(name):
        f = line.split()
        if f and f[0] == 'KIND': k[(int(f[1], 16), int(f[2]), f[3])] = int(f[4])
    return k
names = {}
try:
    meta = None
    for line in open(sys.argv[1].replace('login.txt', 'names.txt')):
        if line.startswith('META'): meta = line.split()[1].split('$')[0]
        if meta and '"' in line: names[meta] = line.split('"')[1]; meta = None
except OSError:
    pass
ka, kb = kinds(sys.argv[1]), kinds(sys.argv[2])
print('chunks in use that grew most in number, per occupant (heap, size, first word or its type):')
for grown, (heap, size, word) in sorted(((kb[k] - ka[k], k) for k in set(ka) | set(kb)), reverse=True)[:45]:
    print(f'{grown / n:7.3f} {heap:#14x} {size:6} {names.get(word, word)[:90]}')
def strings(name):
    k = collections.Counter()
    for line in open(name):
        if line.startswith('STRING '):
            _, count, text = line.rstrip('\n').split(' ', 2)
            k[text] = int(count)
    return k
sa, sb = strings(sys.argv[1]), strings(sys.argv[2])
print('Swift strings in use that grew most in number, per occupant (digits as #):')
for grown, text in sorted(((sb[k] - sa[k], k) for k in set(sa) | set(sb)), reverse=True)[:15]:
    print(f'{grown / n:7.3f} {text[:100]}')
tot = [sum(v[i] for v in b.values()) - sum(v[i] for v in a.values()) for i in range(3)]
print(f'all heaps per occupant: {tot[0]/n:.2f} pages ({tot[0]*4/n:.1f} KiB), {tot[1]/n:.2f} sparse, {tot[2]/n:.0f} bytes in use')
PY
