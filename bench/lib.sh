# Shared by the benchmark scripts (bench/login.sh, bench/messages.sh, bench/pep.sh): source it
# from the repository root after `set -euo pipefail`.
#
# Servers run on loopback with plain TCP (STARTTLS offered but not required, no PLAIN in the
# clear) and SCRAM-SHA-256, from temporary configurations under $tmp (in /dev/shm), with
# accounts user1..userN seeded with one password. One server runs at a time: $server_pid,
# listening on $port.

BENCH=${BENCH:-.build/release/ParleyBench}
PARLEYD=${PARLEYD:-.build/release/parleyd}
PROSODY=${PROSODY:-/usr/bin/prosody}
PASSWORD=${PASSWORD:-benchpass}

bench_require() { # script-name
    local program
    for program in "$BENCH" "$PARLEYD" "$PROSODY"; do
        [ -x "$program" ] || { echo "$1: $program is missing (run make bench)" >&2; exit 1; }
    done
}

# Every process gets the file limit's hard maximum; fails if that is below $2.
bench_raise_file_limit() { # script-name needed
    ulimit -n "$(ulimit -Hn)"
    if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$2" ]; then
        echo "$1: the file limit ($(ulimit -n)) is too low: $2 descriptors needed" >&2
        exit 1
    fi
}

# Makes $tmp (in /dev/shm unless a directory is given) and installs the EXIT trap that stops
# $client_pid and $server_pid and removes $tmp (kept with KEEP_TMP=1).
bench_tmp() { # prefix [parent-directory]
    tmp=$(mktemp -d -p "${2:-/dev/shm}" "$1.XXXXXX")
    server_pid=""
    client_pid=""
    trap bench_cleanup EXIT
}

bench_cleanup() {
    exec 3>&- 2>/dev/null || true
    postgres_stop
    [ -n "$client_pid" ] && kill "$client_pid" 2>/dev/null || true
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
    [ -n "$server_pid" ] && wait "$server_pid" 2>/dev/null || true
    if [ -n "${KEEP_TMP:-}" ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}

# A free port below the ephemeral range, which no outgoing connection's source port can take
# between this probe and the server binding it (the benchmarks open thousands).
free_port() {
    python3 - <<'PY'
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
while True:
    port = random.randrange(10000, max(10001, low))
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
        print(port)
        break
PY
}

# parleyd: STARTTLS offered but not required, SCRAM only, limits out of the way, no keepalive
# traffic. Extra YAML (top-level sections not written here) goes at the end.
write_parleyd_config() { # port [extra-yaml]
    mkdir -p "$tmp/parleyd"
    cat > "$tmp/parleyd/parleyd.yaml" <<EOF
domain: localhost
data_dir: $tmp/parleyd/data
log_level: warning
c2s:
  interfaces: [127.0.0.1]
  port: $1
  direct_tls_port: 0
tls:
  required: false
auth:
  mechanisms: [SCRAM-SHA-256, SCRAM-SHA-1]
  allow_plain_without_tls: false
  scram_iterations: 4096
registration:
  enabled: false
limits:
  connections_per_ip: 100000
  max_connections: 100000
  unauthenticated_timeout: 120
  stanzas_per_second: 100000
  stanza_burst: 100000
keepalive:
  whitespace_interval: 0
  ping_after: 0
  idle_timeout: 3600
shutdown:
  grace_period: 1
metrics:
  enabled: false
${2:-}
EOF
}

# Prosody 0.12: internal_hashed with SCRAM-SHA-256 keys, no TLS (no certificates), no s2s,
# no HTTP, the default epoll backend, logging warnings to a file. $2 is the Lua list of
# disabled modules, $3 extra global options, $4 more modules to enable (a Lua list's items).
write_prosody_config() { # port [modules-disabled] [extra-lua] [extra-modules]
    local disabled=${2:-}
    [ -n "$disabled" ] || disabled='{ "s2s", "offline" }'
    mkdir -p "$tmp/prosody/data" "$tmp/prosody/certs"
    cat > "$tmp/prosody/prosody.cfg.lua" <<EOF
pidfile = "$tmp/prosody/prosody.pid"
data_path = "$tmp/prosody/data"
run_as_root = true
log = { warn = "$tmp/prosody/prosody.log" }
interfaces = { "127.0.0.1" }
c2s_ports = { $1 }
c2s_direct_tls_ports = {}
s2s_ports = {}
http_ports = {}
https_ports = {}
network_settings = { tcp_backlog = 1024 }
authentication = "internal_hashed"
password_hash = "SHA-256"
c2s_require_encryption = false
s2s_require_encryption = false
allow_unencrypted_plain_auth = false
allow_registration = false
storage = "internal"
modules_enabled = { "roster", "saslauth", "disco", "ping"${4:+, $4} }
modules_disabled = $disabled
${3:-}
VirtualHost "localhost"
EOF
}

# The MUC benchmarks' servers: ports, room limits above the largest room (so every server
# admits every occupant) and no per-occupant rate limit (the other servers have none here, or
# a full-speed phase is refused with policy-violation); the accounts are seeded apart.
write_muc_configs() { # occupants
    parleyd_port=$(free_port)
    prosody_port=$(free_port)
    write_parleyd_config "$parleyd_port" "muc:
  max_occupants_per_room: $(($1 + 10))
  messages_per_minute: 100000000
  message_burst: 1000000"
    write_prosody_config "$prosody_port" '{ "s2s", "offline" }'
}

# A lone parleyd set up as bench/muc.sh sets it up, for the MUC diagnostics (muc_heapdiff.sh,
# muc_heapwalk.sh, muc_mallstats.sh): NAME names its temporary directory, OCCUPANTS accounts
# are seeded, and up to 20 of them log in and out once so the login path is warm.
start_muc_probe_server() { # name occupants
    bench_raise_file_limit "$1" $(($2 + 1000))
    bench_tmp "parley-$1" /dev/shm
    write_muc_configs "$2"
    seed_users "$2" > /dev/null
    start_server parleyd
    "$BENCH" login --port "$port" --users $(($2 < 20 ? $2 : 20)) --concurrency 10 --password "$PASSWORD" --label warmup > /dev/null
    sleep 1
}

# The MUC diagnostics' load: OCCUPANTS enter one room, then a rate phase of SECONDS at RATE
# messages/s, in the background (its pid in `client`), output to LOG.
start_muc_probe_client() { # occupants seconds rate label log
    "$BENCH" muc --port "$port" --occupants "$1" --senders 4 --seconds "$2" --rate "$3" --phases rate --threads 2 \
        --password "$PASSWORD" --server-pid "$server_pid" --join-timeout 90 --label "$4" > "$5" 2>&1 &
    client=$!
}

seed_users() { # count
    echo "seeding $1 accounts in each server"
    "$BENCH" seed-users --users "$1" --password "$PASSWORD" \
        --sqlite "$tmp/parleyd/data/parley.sqlite" --prosody-data "$tmp/prosody/data"
}

start_server() { # name (parleyd_port and prosody_port set)
    case $1 in
    parleyd)
        "$PARLEYD" run --config "$tmp/parleyd/parleyd.yaml" > "$tmp/parleyd/out.log" 2>&1 &
        server_pid=$!
        port=$parleyd_port
        ;;
    prosody)
        "$PROSODY" -F --config "$tmp/prosody/prosody.cfg.lua" > "$tmp/prosody/out.log" 2>&1 &
        server_pid=$!
        port=$prosody_port
        ;;
    esac
    for _ in $(seq 100); do
        if (exec 9<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "$1 did not start; its output:" >&2
    cat "$tmp/$1/out.log" "$tmp/$1"/*.log >&2 2>/dev/null || true
    exit 1
}

stop_server() {
    kill "$server_pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
}

# A throwaway PostgreSQL cluster under $tmp/postgres for parleyd's `storage.backend:
# postgresql` (as the tests' PostgresCluster makes one): initdb, then pg_ctl on a free port of
# 127.0.0.1, as the postgres user when run as root (PostgreSQL refuses root). fsync stays on:
# the benchmark measures durable commits. Sets postgres_url; postgres_stop (called by the
# cleanup) stops it.
postgres_dir=""
postgres_start() {
    local bin
    bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
    [ -x "$bin/initdb" ] || { echo "PostgreSQL is not installed (scripts/install-deps.sh)" >&2; exit 1; }
    postgres_bin=$bin
    postgres_dir=$tmp/postgres
    postgres_port=$(free_port)
    mkdir -p "$postgres_dir"
    postgres_as=()
    if [ "$(id -u)" = 0 ]; then
        chmod o+x "$tmp"  # mktemp's 0700 would keep the postgres user out
        chown postgres "$postgres_dir"
        postgres_as=(runuser -u postgres --)
    fi
    "${postgres_as[@]}" "$bin/initdb" -D "$postgres_dir/data" -A trust -U parley -E UTF8 --locale=C > "$postgres_dir/initdb.log" 2>&1
    "${postgres_as[@]}" "$bin/pg_ctl" -D "$postgres_dir/data" -l "$postgres_dir/log" -w -t 60 \
        -o "-p $postgres_port -k $postgres_dir -c listen_addresses=127.0.0.1 -c max_connections=100 ${POSTGRES_OPTIONS:-}" start > /dev/null
    "$bin/createdb" -h 127.0.0.1 -p "$postgres_port" -U parley parley
    postgres_url="postgres://parley@127.0.0.1:$postgres_port/parley?sslmode=disable"
}

postgres_stop() {
    [ -n "$postgres_dir" ] && [ -d "$postgres_dir/data" ] || return 0
    "${postgres_as[@]}" "$postgres_bin/pg_ctl" -D "$postgres_dir/data" -m immediate stop > /dev/null 2>&1 || true
    postgres_dir=""
}

postgres_psql() { # sql
    psql -h 127.0.0.1 -p "$postgres_port" -U parley -d parley -tAc "$1"
}

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$server_pid/status"; }
# The server's lowest reading of a /proc status field (VmRSS, RssAnon) over SECONDS, read
# every INTERVAL seconds (0.5): the trims and collectors move a single reading.
lowest_status_kib() { # field seconds [interval]
    local interval=${3:-0.5} lowest='' value i
    for ((i = 0; i < $(awk -v s="$2" -v i="$interval" 'BEGIN { print int(s / i) }'); i++)); do
        value=$(awk -v f="$1:" '$1 == f { print $2 }' "/proc/$server_pid/status")
        if [ -z "$lowest" ] || [ "$value" -lt "$lowest" ]; then lowest=$value; fi
        sleep "$interval"
    done
    echo "$lowest"
}
# utime + stime in clock ticks (the command name has no spaces for either server).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$server_pid/stat"; }
ticks_per_second=$(getconf CLK_TCK)

field() { # RESULT-line key
    tr ' ' '\n' <<< "$1" | awk -F= -v key="$2" '$1 == key { print $2 }'
}
