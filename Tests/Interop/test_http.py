"""parleyd's HTTP service (issue 14, first step): HTTPS with the c2s certificate, /health, and
upload URLs refused with a reason when they carry no valid slot. Slot requests over XMPP come
with the upload.<domain> hosted service."""

from __future__ import annotations

import re
import ssl
import time
import urllib.error
import urllib.request

import pytest

_HTTPS_RE = re.compile(r"https: (https://\S+/) ")
_CERT_RE = re.compile(r"certificate: (\S+)")


def _base_url(parleyd) -> str:
    for _ in range(50):
        match = _HTTPS_RE.search(parleyd.stdout_path.read_text())
        if match:
            return match.group(1)
        time.sleep(0.1)
    pytest.fail("the banner does not say where the HTTP service listens")


def _unverified() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


@pytest.mark.parleyd_config("http:\n  enabled: true\n  port: 0\n")
def test_https_health_with_the_c2s_certificate(parleyd):
    base = _base_url(parleyd)
    with urllib.request.urlopen(base + "health", timeout=5, context=_unverified()) as response:
        assert response.status == 200
        assert response.read() == b"ok\n"

    host, port = base.removeprefix("https://").rstrip("/").rsplit(":", 1)
    served = ssl.get_server_certificate((host, int(port)))
    certificate_path = _CERT_RE.search(parleyd.stdout_path.read_text()).group(1)
    with open(certificate_path) as file:
        on_disk = file.read()
    assert ssl.PEM_cert_to_DER_cert(served) == ssl.PEM_cert_to_DER_cert(on_disk)


@pytest.mark.parleyd_config("http:\n  enabled: true\n  port: 0\n")
def test_upload_without_a_slot_is_refused_with_a_reason(parleyd):
    base = _base_url(parleyd)
    # A slot's PUT URL describes the slot and is signed by the server: one made up by the
    # client, complete but for a real token, is refused with the reason.
    forged = "upload/0123abcd/photo.png?owner=alice&size=10&type=image%2Fpng&expires=4102444800&token=00"
    request = urllib.request.Request(
        base + forged, data=b"x" * 10, method="PUT", headers={"Content-Type": "image/png"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=5, context=_unverified())
    assert refused.value.code == 403
    assert refused.value.read() == b"The upload token is not valid\n"
    assert refused.value.headers["Access-Control-Allow-Origin"] == "*"

    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(base + "upload/0123abcd/photo.png", timeout=5, context=_unverified())
    assert missing.value.code == 404
    assert missing.value.read() == b"No such file\n"
