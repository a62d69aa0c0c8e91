"""What the web chat tests need besides the browser: where parleyd serves the chat, HTTP(S)
requests that trust its certificate, a small PNG for avatars and uploads, and a local HTTP
server for pages the test writes itself (the strophe.js page)."""

from __future__ import annotations

import functools
import http.client
import http.server
import re
import ssl
import struct
import threading
import time
import zlib
from contextlib import contextmanager
from pathlib import Path

import pytest

CHAT_CONFIG = "http:\n  enabled: true\n  port: 0\n"
_CHAT_RE = re.compile(r"web chat: (https?://\S+)")
_HTTPS_RE = re.compile(r"https: (https://\S+/) ")


def _from_banner(parleyd, pattern: re.Pattern, what: str) -> str:
    for _ in range(100):
        match = pattern.search(parleyd.stdout_path.read_text())
        if match:
            return match.group(1)
        time.sleep(0.1)
    pytest.fail(f"the banner does not say where {what} is:\n{parleyd.stdout_path.read_text()}")


def chat_url(parleyd) -> str:
    """https://127.0.0.1:PORT/chat/, from the banner."""
    return _from_banner(parleyd, _CHAT_RE, "the web chat")


def http_base(parleyd) -> str:
    return _from_banner(parleyd, _HTTPS_RE, "the HTTP service")


def websocket_url(parleyd) -> str:
    """The endpoint host-meta announces: wss://localhost:PORT/xmpp-websocket."""
    port = http_base(parleyd).rstrip("/").rsplit(":", 1)[1]
    return f"wss://localhost:{port}/xmpp-websocket"


def trusting(parleyd) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(parleyd.cert_path))


def request(parleyd, path: str, headers: dict[str, str] | None = None, method: str = "GET"):
    """One HTTPS request to parleyd's HTTP service (redirects not followed); returns the
    response, read."""
    port = int(http_base(parleyd).rstrip("/").rsplit(":", 1)[1])
    connection = http.client.HTTPSConnection("localhost", port, context=trusting(parleyd), timeout=10)
    try:
        connection.request(method, path, headers=headers or {})
        response = connection.getresponse()
        response.body = response.read()
        return response
    finally:
        connection.close()


def png(size: int = 48, rgb: tuple[int, int, int] = (214, 92, 60)) -> bytes:
    """A small PNG (a disc on transparency), made without any imaging library."""
    rows = []
    middle = (size - 1) / 2
    for y in range(size):
        row = bytearray([0])
        for x in range(size):
            inside = (x - middle) ** 2 + (y - middle) ** 2 <= (size / 2) ** 2
            row += bytes([*rgb, 255 if inside else 0])
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"".join(rows)))
            + chunk(b"IEND", b""))


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *_args):
        pass


@contextmanager
def static_server(directory: Path):
    """Serves a directory at http://127.0.0.1:PORT/ (a page from a data: URL may not open a
    WebSocket to 127.0.0.1; one from http://127.0.0.1 may)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(directory)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
