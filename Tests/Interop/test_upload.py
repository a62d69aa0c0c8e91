"""XEP-0363 HTTP File Upload with slixmpp's own xep_0363 plugin: it finds upload.localhost
through the server's disco#items, reads max-file-size from the service's form, requests a
slot and PUTs the file over HTTPS; another client then downloads the same bytes."""

from __future__ import annotations

import io
import secrets
import ssl
import urllib.request

import aiohttp
import pytest
from slixmpp.exceptions import IqError
from slixmpp.plugins.xep_0363 import http_upload

from interop_support import TIMEOUT, run, session

UPLOADS = "http:\n  enabled: true\n  port: 0\nupload:\n  max_file_size: 4096\n"


def _trusting(server) -> ssl.SSLContext:
    """Trusts exactly the test server's self-signed certificate, checked against 'localhost'."""
    return ssl.create_default_context(cafile=str(server.cert_path))


@pytest.fixture
def trusted_uploads(parleyd, monkeypatch):
    """slixmpp's plugin opens its own aiohttp session with the system's CAs; give it one that
    trusts the test certificate instead (verification stays on)."""
    context = _trusting(parleyd)
    original = http_upload.ClientSession
    monkeypatch.setattr(
        http_upload, "ClientSession",
        lambda **options: original(connector=aiohttp.TCPConnector(ssl=context), **options))
    return context


@pytest.mark.parleyd_config(UPLOADS)
def test_slixmpp_uploads_a_file_that_another_client_downloads(parleyd, trusted_uploads):
    data = secrets.token_bytes(1500)

    async def scenario():
        async with session(parleyd, parleyd.account("alice"), plugins=("xep_0363",)) as alice:
            plugin = alice.plugin["xep_0363"]
            url = await plugin.upload_file(
                "notes.bin", input_file=io.BytesIO(data), content_type="application/octet-stream", timeout=TIMEOUT)
            assert str(plugin.upload_service) == "upload.localhost"
            assert plugin.max_file_size == 4096
            return url

    url = run(scenario())
    assert url.startswith("https://localhost:") and url.endswith("/notes.bin"), url
    with urllib.request.urlopen(url, context=trusted_uploads, timeout=10) as response:
        assert response.status == 200
        assert response.read() == data


@pytest.mark.parleyd_config(UPLOADS)
def test_a_slot_over_the_limit_is_refused_with_the_limit(parleyd, trusted_uploads):
    async def scenario():
        async with session(parleyd, parleyd.account("bob"), plugins=("xep_0363",)) as bob:
            with pytest.raises(http_upload.FileTooBig):
                # The plugin refuses by itself once it has read max-file-size from disco.
                await bob.plugin["xep_0363"].upload_file(
                    "big.bin", size=5000, input_file=io.BytesIO(b""), timeout=TIMEOUT)
            with pytest.raises(IqError) as refused:
                await bob.plugin["xep_0363"].request_slot("upload.localhost", "big.bin", 5000, timeout=TIMEOUT)
            error = refused.value.iq["error"]
            assert error["condition"] == "not-acceptable", error
            too_large = error.xml.find("{urn:xmpp:http:upload:0}file-too-large")
            assert too_large is not None, error
            assert too_large.findtext("{urn:xmpp:http:upload:0}max-file-size") == "4096"

    run(scenario())
