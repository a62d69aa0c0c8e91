# ejabberd (Debian's 23.01) for the benchmarks that compare with it (bench/pep.sh): source it
# after bench/lib.sh. Like the other servers there: loopback only, plain TCP, SCRAM-SHA-256,
# a temporary configuration and Mnesia directory under $tmp, one server at a time.
#
# ejabberdctl refuses to run ejabberd as any user but root or `ejabberd`, and as root it
# switches to `ejabberd` itself (su), so everything under $tmp/ejabberd belongs to that user.
# Its Erlang distribution (which nothing here uses) listens on a free loopback port of its own
# instead of going through epmd, so no daemon outlives the run.

EJABBERDCTL=${EJABBERDCTL:-/usr/sbin/ejabberdctl}

# Installs Debian's ejabberd if it is missing (only the benchmarks need it, so it is not in
# scripts/install-deps.sh). The packaged service must not start: it would take port 5222.
ensure_ejabberd() { # script-name
    # Root also hands ejabberd its directory and lets ejabberdctl switch to its user.
    if [ "$(id -u)" != 0 ]; then
        echo "$1: running ejabberd (and installing it if missing) needs root" >&2
        return 1
    fi
    [ -x "$EJABBERDCTL" ] && return 0
    echo "$1: installing ejabberd (Debian package, service not started)"
    local made_policy=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
        chmod +x /usr/sbin/policy-rc.d
        made_policy=1
    fi
    local status=0
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ejabberd \
        > /dev/null; } || status=$?
    [ -n "$made_policy" ] && rm -f /usr/sbin/policy-rc.d
    return $status
}

# Registration is open to loopback only and has no per-address delay, so the accounts can be
# made through XEP-0077 in-band registration (ejabberdctl register starts an Erlang VM per
# account: minutes for a few hundred). The shaper is off, as the other servers have none.
# $3: more listeners (YAML list items, indented by two); $4: more YAML at the end (module
# entries indented by two, then top-level keys if any); $5 replaces the modules after the
# common ones (default when absent: PEP's, for bench/pep.sh; "" for none), as YAML lines
# indented by two spaces.
ejabberd_pep_modules='  mod_caps: {}
  mod_pubsub:
    access_createnode: pubsub_createnode
    plugins: [flat, pep]'
write_ejabberd_config() { # port distribution-port [extra-listeners] [extra-yaml] [modules-yaml]
    local dir=$tmp/ejabberd
    mkdir -p "$dir/db" "$dir/logs"
    cat > "$dir/ejabberd.yml" <<EOF
loglevel: warning
hosts: [localhost]
auth_method: internal
auth_password_format: scram
auth_scram_hash: sha256
disable_sasl_mechanisms: [PLAIN, DIGEST-MD5, X-OAUTH2]
registration_timeout: infinity
listen:
  -
    port: $1
    ip: "127.0.0.1"
    module: ejabberd_c2s
    max_stanza_size: 262144
    backlog: 1024
    shaper: none
    access: c2s
    starttls: false
${3:-}
acl:
  loopback:
    ip: [127.0.0.0/8]
access_rules:
  c2s:
    allow: all
  register:
    allow: all
  trusted_network:
    allow: loopback
  pubsub_createnode:
    allow: all
shaper_rules:
  max_user_sessions: 10
  max_user_offline_messages: 100
  c2s_shaper: none
modules:
  mod_disco: {}
  mod_ping: {}
  mod_roster: {}
  mod_register:
    access: register
    ip_access: trusted_network
    password_strength: 0
${5-$ejabberd_pep_modules}
${4:-}
EOF
    cat > "$dir/ejabberdctl.cfg" <<EOF
ERL_DIST_PORT=$2
INET_DIST_INTERFACE=127.0.0.1
EOF
    cp /etc/ejabberd/inetrc "$dir/inetrc"
    # mktemp made $tmp private; ejabberd's user must reach its own directory.
    chmod 755 "$tmp"
    chown -R ejabberd: "$dir"
}

# Starts ejabberd; $server_pid is then its beam.smp process (the VM doing the work; the
# scripts that started it only wait), $port the c2s port.
start_ejabberd() { # port
    local node="parleybench$$@localhost"
    # As root, ejabberdctl switches to ejabberd's user with su, whose pam_limits drops the
    # descriptor limit to 1,024; the Erlang VM sizes its table of pollable descriptors from
    # that limit when it starts, and raising it afterwards (prlimit) does not grow the table:
    # past about 1,000 sockets ejabberd closed or reset new connections, so a room of 1,000
    # never filled. setpriv switches user without PAM, keeping this shell's raised limit.
    local as_ejabberd=()
    if [ "$(id -u)" = 0 ]; then
        as_ejabberd=(setpriv --reuid=ejabberd --regid=ejabberd --init-groups env HOME="$(getent passwd ejabberd | cut -d: -f6)")
    fi
    "${as_ejabberd[@]}" "$EJABBERDCTL" --config-dir "$tmp/ejabberd" --config "$tmp/ejabberd/ejabberd.yml" \
        --ctl-config "$tmp/ejabberd/ejabberdctl.cfg" --logs "$tmp/ejabberd/logs" --spool "$tmp/ejabberd/db" \
        --node "$node" foreground > "$tmp/ejabberd/out.log" 2>&1 &
    local script_pid=$!
    port=$1
    server_pid=""
    for _ in $(seq 1200); do # 2 minutes: its start takes 30 s and more on a busy machine
        [ -n "$server_pid" ] || server_pid=$(pgrep -f "beam.smp.*$node" | head -n 1 || true)
        if [ -n "$server_pid" ] && (exec 9<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            return 0
        fi
        kill -0 "$script_pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "ejabberd did not start; its output:" >&2
    cat "$tmp/ejabberd/out.log" "$tmp/ejabberd/logs"/*.log >&2 2>/dev/null || true
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
    kill "$script_pid" 2>/dev/null || true
    server_pid=""
    return 1
}

# Registers user1..userN (XEP-0077, one stream per account, a few at a time) with $PASSWORD.
register_ejabberd_users() { # port count
    python3 - "$1" "$2" "$PASSWORD" <<'PY'
import concurrent.futures, re, socket, sys

port, count, password = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
header = ("<?xml version='1.0'?><stream:stream xmlns='jabber:client' "
          "xmlns:stream='http://etherx.jabber.org/streams' to='localhost' version='1.0'>")

def read_until(sock, data, pattern):
    while True:
        match = re.search(pattern, data, re.S)
        if match:
            return match, data
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("connection closed; got: " + data.decode(errors="replace")[-300:])
        data += chunk

def register(number):
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(header.encode())
        _, data = read_until(sock, b"", rb"</stream:features>")
        sock.sendall(("<iq type='set' id='reg'><query xmlns='jabber:iq:register'><username>user%d</username>"
                      "<password>%s</password></query></iq>" % (number, password)).encode())
        match, _ = read_until(sock, data, rb"<iq[^>]*id=['\"]reg['\"][^>]*?(/>|>.*?</iq>)")
        answer = match.group(0).decode()
        if "type='result'" not in answer and 'type="result"' not in answer and "<conflict" not in answer:
            raise RuntimeError("user%d: %s" % (number, answer))
        sock.sendall(b"</stream:stream>")

with concurrent.futures.ThreadPoolExecutor(8) as pool:
    list(pool.map(register, range(1, count + 1)))
print("registered %d ejabberd accounts" % count)
PY
}
