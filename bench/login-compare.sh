#!/usr/bin/env bash
# bench/login-compare.sh OLD_PARLEYD OLD_BENCH NEW_PARLEYD NEW_BENCH: before/after logins, the
# two pairs of release binaries interleaved in one run (bench/login-cpu.sh, N logins each, on a
# fresh server): plain TCP ROUNDS times each, STARTTLS TLS_ROUNDS times each, then each server
# once with the other's load generator (unless CROSS=0). One line per run: logins/s, the
# server's CPU per login, the generator's, and the load average.
set -euo pipefail
cd "$(dirname "$0")/.."
OLD_D=$1 OLD_B=$2 NEW_D=$3 NEW_B=$4
N=${N:-5000}
run() { # label parleyd bench starttls
    local out
    out=$(STARTTLS=$4 bench/login-cpu.sh "$2" "$3" "$N" 2>&1) || { echo "$out"; exit 1; }
    echo "$1 | $(grep -o '[0-9]* logins/s' <<< "$out" | head -1) | $(grep -o 'server CPU .*' <<< "$out" | sed 's/client ([^)]*)/client/')"
}
echo "start $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "${ROUNDS:-3}"); do
    run "plain    old/old" "$OLD_D" "$OLD_B" 0
    run "plain    new/new" "$NEW_D" "$NEW_B" 0
done
for _ in $(seq "${TLS_ROUNDS:-2}"); do
    run "starttls old/old" "$OLD_D" "$OLD_B" 1
    run "starttls new/new" "$NEW_D" "$NEW_B" 1
done
if [ "${CROSS:-1}" = 1 ]; then
    run "plain    new/old" "$NEW_D" "$OLD_B" 0
    run "plain    old/new" "$OLD_D" "$NEW_B" 0
fi
echo "end $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
