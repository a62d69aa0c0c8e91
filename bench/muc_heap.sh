#!/usr/bin/env bash
# bench/muc_heap.sh PARLEYD BENCH OCCUPANTS: what a room's occupants hold in parleyd's heap
# (bench/README.md, MUC memory, fifth round). Runs PARLEYD under heaptrack twice, as
# bench/muc.sh starts it: once killed 11 s after OCCUPANTS accounts logged in, once killed 11 s
# after they also filled one room; then prints the difference of the live heap at the kill,
# by the innermost ParleyMUC/ParleyServer/ParleyStream frame (FRAMES, a regular expression),
# and by the kind of thread that made it (an event loop, a concurrency thread: each has a
# malloc arena of its own). KILL_AFTER (11) seconds: how long after the read of RSS in the room
# the server is killed (muc.sh reads it after the fill's settling; at 0, before the benchmark's
# messages start). Output files go to OUT (/tmp).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp}
PARLEYD=$1; BENCH=$2; N=$3
FRAMES=${FRAMES:-'ParleyMUC|ParleyServer|ParleyStream'}
. bench/lib.sh
bench_raise_file_limit muc_heap $((N + 1000))
run() { # login|room
    bench_tmp parley-muc-heap /dev/shm
    write_muc_configs "$N"
    seed_users "$N" > /dev/null
    rm -f "$OUT/muc-heap-$1".*
    heaptrack -o "$OUT/muc-heap-$1" "$PARLEYD" run --config "$tmp/parleyd/parleyd.yaml" > "$tmp/parleyd/out.log" 2>&1 &
    local hpid=$! server_pid=""
    port=$parleyd_port
    for _ in $(seq 300); do (exec 9<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
    sleep 1
    server_pid=$(pgrep -P $hpid -f "run --config" | head -1)
    "$BENCH" muc --port "$port" --occupants "$N" --senders 4 --seconds 30 --rate 20 --phases rate --threads 2 \
        --password "$PASSWORD" --server-pid "$server_pid" --label "heap-$N" --settle 12 > "$OUT/muc-heap-$1.out" 2>&1 &
    local client_pid=$!
    until [ "$(ss -Htn state established "( sport = :$port )" | wc -l)" -ge "$N" ]; do sleep 0.2; done
    if [ "$1" = room ]; then until grep -q 'entered' "$OUT/muc-heap-$1.out" 2>/dev/null; do sleep 0.2; done; fi
    if [ "$1" = room ]; then sleep "${KILL_AFTER:-11}"; else sleep 11; fi
    kill -9 "$server_pid"
    wait $hpid || true
    kill $client_pid 2>/dev/null || true
    wait $client_pid || true
    heaptrack_print -f "$OUT/muc-heap-$1".*zst --flamegraph-cost-type leaked -F "$OUT/muc-heap-$1.folded" > /dev/null 2>&1
}
run login
run room
python3 - "$OUT/muc-heap-login.folded" "$OUT/muc-heap-room.folded" "$FRAMES" "$N" <<'PY'
import collections, re, sys
pattern = re.compile(sys.argv[3])
def thread(frames):
    stack = ';'.join(frames)
    if 'SelectableEventLoop' in stack or 'ThreadOpsPosix' in stack: return 'loop'
    if 'swift_job_run' in stack or '_dispatch_worker_thread' in stack: return 'task'
    return 'other'
def load(name):
    totals = collections.Counter()
    for line in open(name):
        stack, _, count = line.rstrip().rpartition(' ')
        frames = stack.split(';')
        key = next((f for f in reversed(frames) if pattern.search(f)), 'other: ' + frames[-1])
        totals[thread(frames) + ' ' + key[:140]] += int(count)
    return totals
before, after = load(sys.argv[1]), load(sys.argv[2])
n = int(sys.argv[4])
print(f"live heap: {sum(before.values())} bytes logged in, {sum(after.values())} in the room: "
      f"{(sum(after.values()) - sum(before.values())) / n:.0f} bytes per occupant")
for kind in ('loop', 'task', 'other'):
    grown = sum(v for k, v in after.items() if k.startswith(kind + ' ')) - sum(v for k, v in before.items() if k.startswith(kind + ' '))
    print(f"made on {kind} threads: {grown / n:.0f} bytes per occupant")
for grown, key in sorted(((after[k] - before[k], k) for k in set(before) | set(after)), reverse=True)[:40]:
    print(f"{grown / n:8.0f} B/occupant  {key}")
PY
