#!/usr/bin/env bash
# HTTP File Upload (XEP-0363): parleyd next to Prosody (mod_http_file_share) and ejabberd
# (mod_http_upload), in one run.
#
# For each server, on loopback only, one server instance at a time, XMPP over plain TCP with
# SCRAM-SHA-256 (bench/lib.sh, bench/ejabberd.sh), the upload service at upload.localhost and
# its HTTP listener on 127.0.0.1 as each ships it: HTTPS with a self-signed certificate
# (MODES="https http" measures plain HTTP too, for all three), the largest file raised to
# 200 MiB everywhere, the quotas as shipped (parleyd 1 GiB a day and 2 GiB stored, Prosody
# ten largest files a day, ejabberd none), files in $tmp (tmpfs by default, so that the disk
# does not set the pace), one account, `ParleyBench upload`:
#   - slots: WINDOW slot requests unanswered at any time for SLOT_SECONDS -> slots/s, latency,
#     server CPU per slot;
#   - for each of SIZES (MiB per file) with FILES files: the slots are asked for first (not
#     timed), then every file is PUT, one after another on one keep-alive connection, then
#     downloaded (GET), every byte counted -> MB/s, server CPU (user+system from /proc: parleyd,
#     Prosody's Lua process, ejabberd's beam.smp) per MB, and the server's RSS before, at its
#     peak (VmHWM, reset before the phase) and after. A phase starts no new file after
#     PHASE_LIMIT seconds (Prosody is slow), so its file count can be lower.
# A server without an upload service gets "no upload" in its row; the others still run.
#
# bench/README.md has the figures of the last runs and how to read them.
#
# Needs the release builds of parleyd and ParleyBench (make bench builds them), prosody,
# openssl, and ejabberd (installed from Debian here when missing; needs root).
# Knobs: MODES SIZES FILES WINDOW SLOT_SECONDS PHASE_LIMIT SERVERS BENCH_TMP_PARENT KEEP_TMP
set -euo pipefail
cd "$(dirname "$0")/.."

MODES=${MODES:-https}
SIZES=${SIZES:-1,100}
FILES=${FILES:-50,2}
WINDOW=${WINDOW:-16}
SLOT_SECONDS=${SLOT_SECONDS:-5}
PHASE_LIMIT=${PHASE_LIMIT:-60}
SERVERS=${SERVERS:-"parleyd prosody ejabberd"}
MAX_BYTES=$((200 * 1024 * 1024))
. bench/lib.sh
. bench/ejabberd.sh

bench_require upload.sh
if [[ " $SERVERS " == *" ejabberd "* ]] && ! ensure_ejabberd upload.sh; then
    echo "upload.sh: ejabberd is not available: measuring without it" >&2
    SERVERS=$(tr ' ' '\n' <<< "$SERVERS" | grep -vx ejabberd | tr '\n' ' ')
fi
bench_tmp parley-upload-bench "${BENCH_TMP_PARENT:-/dev/shm}"
# Prosody's and ejabberd's certificate (parleyd makes its own self-signed one, as it ships).
openssl req -x509 -newkey rsa:2048 -nodes -days 7 -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
    -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2> /dev/null

# Writes every server's configuration for one mode; sets $http_port.
configure() { # mode
    local mode=$1 scheme=$1
    http_port=$(free_port)
    parleyd_port=$(free_port)
    prosody_port=$(free_port)
    rm -rf "$tmp/parleyd" "$tmp/prosody" "$tmp/ejabberd"
    write_parleyd_config "$parleyd_port" "http:
  enabled: true
  interfaces: [127.0.0.1]
  port: $http_port
  tls: $([ "$mode" = https ] && echo true || echo false)
  public_url: $scheme://127.0.0.1:$http_port
upload:
  enabled: true
  max_file_size: $MAX_BYTES"
    local ports="https_ports = { $http_port }"
    [ "$mode" = http ] && ports="http_ports = { $http_port }"
    write_prosody_config "$prosody_port" '{ "s2s", "offline" }' "$ports
http_interfaces = { \"127.0.0.1\" }
https_interfaces = { \"127.0.0.1\" }
https_ssl = { certificate = \"$tmp/cert.pem\", key = \"$tmp/key.pem\" }
http_external_url = \"$scheme://127.0.0.1:$http_port/\"
http_default_host = \"upload.localhost\"
http_file_share_size_limit = $MAX_BYTES"
    echo 'Component "upload.localhost" "http_file_share"' >> "$tmp/prosody/prosody.cfg.lua"
    seed_users 1
}

configure_ejabberd() { # mode
    local mode=$1
    ejabberd_port=$(free_port)
    write_ejabberd_config "$ejabberd_port" "$(free_port)" "  -
    port: $http_port
    ip: \"127.0.0.1\"
    module: ejabberd_http
    tls: $([ "$mode" = https ] && echo true || echo false)
    request_handlers:
      /upload: mod_http_upload" "  mod_http_upload:
    put_url: \"$mode://127.0.0.1:$http_port/upload\"
    docroot: \"$tmp/ejabberd/upload\"
    max_size: $MAX_BYTES
    access: all
    thumbnail: false
certfiles:
  - \"$tmp/ejabberd/cert.pem\"
  - \"$tmp/ejabberd/key.pem\""
    cp "$tmp/cert.pem" "$tmp/key.pem" "$tmp/ejabberd/"
    chown -R ejabberd: "$tmp/ejabberd"
}

failed=""
declare -A result
declare -A unsupported
record() { # label RESULT-lines
    local line phase key
    while read -r line; do
        [ -n "$line" ] || continue
        phase=$(field "$line" phase)
        [ "$phase" = slots ] || [ "$phase" = unsupported ] || phase="$phase$(field "$line" size_mib)"
        for key in rate p50_ms cpu_us mb_s cpu_ms_per_mb files rss_before_kib rss_peak_kib rss_after_kib errors error; do
            result[$1.$phase.$key]=$(field "$line" "$key")
        done
    done <<< "$(grep '^RESULT' <<< "$2" || true)"
}

for mode in $MODES; do
    configure "$mode"
    for name in $SERVERS; do
        label=$name-$mode
        echo "== $label: slots for $SLOT_SECONDS s with $WINDOW in flight; files of $SIZES MiB ($FILES of each)" \
            "(load average $(cut -d ' ' -f 1-3 /proc/loadavg))"
        if [ "$name" = ejabberd ]; then
            configure_ejabberd "$mode"
            start_ejabberd "$ejabberd_port" || { failed+=" $label"; continue; }
            register_ejabberd_users "$port" 1 || { failed+=" $label"; stop_server; continue; }
        else
            start_server "$name"
        fi
        # The HTTP listener may come up after the XMPP one.
        for _ in $(seq 100); do (exec 9<>"/dev/tcp/127.0.0.1/$http_port") 2>/dev/null && break; sleep 0.1; done
        status=0
        out=$("$BENCH" upload --port "$port" --service upload.localhost --password "$PASSWORD" --window "$WINDOW" \
            --slot-seconds "$SLOT_SECONDS" --sizes "$SIZES" --files "$FILES" --phase-limit "$PHASE_LIMIT" \
            --server-pid "$server_pid" --label "$label") || status=$?
        grep -v '^RESULT' <<< "$out" || true
        record "$label" "$out"
        case $status in
        0) ;;
        3)
            unsupported[$label]=${result[$label.unsupported.error]:-refused}
            echo "upload.sh: $name has no upload service: <${unsupported[$label]}/>; going on" >&2
            ;;
        *)
            failed+=" $label"
            echo "upload.sh: $label: a slot request or a transfer failed (exit $status)" >&2
            ;;
        esac
        stop_server
    done
done

get() { echo "${result[$1]:--}"; }
mib() { [ -n "${result[$1]:-}" ] && echo $(( ${result[$1]} / 1024 )) || echo -; }
IFS=, read -r -a sizes <<< "$SIZES"
echo
echo "Upload benchmark: slots with $WINDOW requests in flight for $SLOT_SECONDS s; files of ${SIZES//,/ and } MiB" \
    "PUT then GET one at a time; MB/s in MiB/s; CPU = server user+system per slot (µs) or per MiB (ms);" \
    "RSS in MiB before/peak/after the largest files' PUT"
header=$(printf '%-16s | %8s %7s %7s' server 'slots/s' p50_ms 'cpu_µs')
for size in "${sizes[@]}"; do header+=$(printf ' | %4s MiB PUT MB/s ms/MB GET MB/s ms/MB' "$size"); done
echo "$header | RSS (MiB)         | status"
largest=${sizes[${#sizes[@]}-1]}
for mode in $MODES; do
    for name in $SERVERS; do
        label=$name-$mode
        if [ -n "${unsupported[$label]:-}" ]; then
            printf '%-16s | %s\n' "$label" "no upload: the slot request was refused with <${unsupported[$label]}/>"
            continue
        fi
        row=$(printf '%-16s | %8s %7s %7s' "$label" "$(get "$label.slots.rate")" "$(get "$label.slots.p50_ms")" \
            "$(get "$label.slots.cpu_us")")
        for size in "${sizes[@]}"; do
            row+=$(printf ' | %8s %8s %5s %8s %5s' "" "$(get "$label.put$size.mb_s")" "$(get "$label.put$size.cpu_ms_per_mb")" \
                "$(get "$label.get$size.mb_s")" "$(get "$label.get$size.cpu_ms_per_mb")")
        done
        status=ok
        [[ " $failed " == *" $label "* ]] && status=FAILED
        printf '%s | %5s/%5s/%5s | %s\n' "$row" "$(mib "$label.put$largest.rss_before_kib")" \
            "$(mib "$label.put$largest.rss_peak_kib")" "$(mib "$label.put$largest.rss_after_kib")" "$status"
    done
done
verdict() { if awk "BEGIN { exit !($1) }"; then echo met; else echo "NOT met"; fi; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
for mode in $MODES; do
    p=parleyd-$mode e=ejabberd-$mode
    [[ " $failed " == *" $p "* || -n "${unsupported[$p]:-}" ]] && continue
    if [ -n "${result[$p.put$largest.mb_s]:-}" ] && [ -n "${result[$e.put$largest.mb_s]:-}" ]; then
        echo "$mode, PUT of $largest MiB files: parleyd/ejabberd MB/s $(ratio "${result[$p.put$largest.mb_s]}" "${result[$e.put$largest.mb_s]}")" \
            "(target >= 1: $(verdict "${result[$p.put$largest.mb_s]} >= ${result[$e.put$largest.mb_s]}")), CPU per MB" \
            "$(ratio "${result[$p.put$largest.cpu_ms_per_mb]}" "${result[$e.put$largest.cpu_ms_per_mb]}")" \
            "(target <= 1: $(verdict "${result[$p.put$largest.cpu_ms_per_mb]} <= ${result[$e.put$largest.cpu_ms_per_mb]}"))"
    fi
    if [ -n "${result[$p.slots.rate]:-}" ] && [ -n "${result[$e.slots.rate]:-}" ]; then
        echo "$mode, slot requests: parleyd/ejabberd slots/s $(ratio "${result[$p.slots.rate]}" "${result[$e.slots.rate]}")" \
            "(target >= 2: $(verdict "${result[$p.slots.rate]} >= 2 * ${result[$e.slots.rate]}")), server CPU per slot" \
            "$(ratio "${result[$p.slots.cpu_us]}" "${result[$e.slots.cpu_us]}")" \
            "(<= 0.5 makes the rate hold on a fair share of the CPU: $(verdict "${result[$p.slots.cpu_us]} <= 0.5 * ${result[$e.slots.cpu_us]}"))"
    fi
    if [ -n "${result[$p.put$largest.rss_peak_kib]:-}" ]; then
        growth=$(( (${result[$p.put$largest.rss_peak_kib]} - ${result[$p.put$largest.rss_before_kib]}) / 1024 ))
        echo "$mode, parleyd's RSS grew by $growth MiB at its peak during the $largest MiB PUTs" \
            "(target: flat with file size, within 16 MiB: $(verdict "$growth <= 16"))"
    fi
done
if [ -n "$failed" ]; then
    echo "upload.sh: failed:$failed" >&2
    exit 1
fi
