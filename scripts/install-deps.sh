#!/usr/bin/env bash
# Installs what building and testing Parley needs, and only what is missing, so `make test`
# works on a fresh Debian machine. Needs root for apt (CI and the dev machines run as root).
set -euo pipefail

debian_packages=(pkg-config libxml2-dev libssl-dev libsqlite3-dev libxml2-utils prosody go-sendxmpp procps)
# The client media tests make their HTTPS certificate with the openssl command, and measure
# the CLI's peak memory with GNU time.
debian_packages+=(openssl time)
# The PostgreSQL storage tests start a throwaway cluster of their own (the packaged one must
# not start: policy-rc.d below), as the postgres user.
debian_packages+=(postgresql)
# The web chat tests drive a real browser (headless Chromium through chromedriver) and load
# Debian's strophe.js in a page of their own.
debian_packages+=(chromium chromium-driver libjs-strophe)
# The cluster test puts three parleyd nodes behind HAProxy (conf/haproxy-cluster.cfg).
debian_packages+=(haproxy)
python_packages=("slixmpp==1.17.0" "pytest")

missing=()
for package in "${debian_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing Debian packages: ${missing[*]}"
    # Packaged servers (prosody) must not start on install: they would take port 5222.
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# If the packaged prosody service (user prosody) did start at some point, it must not hold
# the ports tests use. The Prosody instances tests start themselves (ProsodyInteropTests) run
# as the test user and are left alone: another checkout's `make deps` must not end them.
if pgrep -u prosody -f "/usr/bin/prosody" >/dev/null 2>&1; then
    pkill -u prosody -f "/usr/bin/prosody" 2>/dev/null || true
fi

python_missing=()
python3 -c "import slixmpp; assert slixmpp.__version__ == '1.17.0'" 2>/dev/null || python_missing+=("slixmpp==1.17.0")
python3 -c "import pytest" 2>/dev/null || python_missing+=("pytest")
# slixmpp's XEP-0363 plugin uploads with aiohttp (test_upload.py).
python3 -c "import aiohttp" 2>/dev/null || python_missing+=("aiohttp")
# The web chat tests' browser driver (test_webchat.py, browser_support.py).
python3 -c "import selenium" 2>/dev/null || python_missing+=("selenium")
if [ ${#python_missing[@]} -gt 0 ]; then
    echo "installing Python packages: ${python_missing[*]}"
    python3 -m pip install --quiet --disable-pip-version-check "${python_missing[@]}"
fi
