"""The Prometheus endpoint (issue "Server core"): off by default, and when enabled it counts
what a real client did."""

from __future__ import annotations

import re
import urllib.error
import urllib.request

import pytest

from interop_support import run, session

_METRICS_RE = re.compile(r"metrics: (http://\S+/metrics)")


def _scrape(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url, timeout=5) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode()
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


@pytest.mark.parleyd_config("metrics:\n  enabled: true\n  address: 127.0.0.1\n  port: 0\n")
def test_metrics_count_a_real_session(parleyd):
    match = _METRICS_RE.search(parleyd.stdout_path.read_text())
    assert match, "the banner does not say where the metrics are"
    url = match.group(1)
    alice = parleyd.account("alice")

    async def scenario():
        async with session(parleyd, alice, resource="metrics") as client:
            client.send_presence()
            await client.sync()
            during = _scrape(url)
            assert during["parley_sessions_authenticated"] == 1, during
            assert during["parley_connections_open"] >= 1, during
            assert during["parley_auth_successes_total"] >= 1, during
            assert during['parley_stanzas_in_total{kind="presence"}'] >= 1, during
            assert during['parley_stanzas_in_total{kind="iq"}'] >= 1, during

    run(scenario())
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(url.replace("/metrics", "/elsewhere"), timeout=5)
    assert error.value.code == 404


def test_metrics_are_off_by_default(parleyd):
    assert "metrics:" not in parleyd.stdout_path.read_text()
