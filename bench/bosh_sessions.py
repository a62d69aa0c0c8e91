#!/usr/bin/env python3
"""Holds idle authenticated XMPP sessions for bench/bosh.sh: over BOSH (XEP-0124/0206, as a
browser client does: one request always held, re-sent when answered) or over plain TCP.

Each session: SCRAM-SHA-256 (or SCRAM-SHA-1 when that is all the server offers), restart,
bind, initial presence. Prints "ready <sessions> <seconds>" once all are up, then keeps them
until killed. The accounts are user<start>..user<start+count-1> with one password, seeded by
ParleyBench seed-users (one salt, so PBKDF2 runs once here)."""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import hmac
import os
import random
import re
import sys
import time

import aiohttp

HTTPBIND = "http://jabber.org/protocol/httpbind"
SASL = "urn:ietf:params:xml:ns:xmpp-sasl"
_salted: dict[tuple[str, bytes, int], bytes] = {}


class SCRAM:
    def __init__(self, mechanisms: str, user: str, password: str):
        self.hash = "sha256" if "SCRAM-SHA-256" in mechanisms else "sha1"
        self.mechanism = "SCRAM-SHA-256" if self.hash == "sha256" else "SCRAM-SHA-1"
        self.password = password.encode()
        self.first_bare = f"n={user},r={base64.b64encode(os.urandom(18)).decode()}"

    def initial(self) -> str:
        return base64.b64encode(("n,," + self.first_bare).encode()).decode()

    def final(self, challenge_b64: str) -> str:
        challenge = base64.b64decode(challenge_b64).decode()
        fields = dict(part.split("=", 1) for part in challenge.split(","))
        salt, iterations = base64.b64decode(fields["s"]), int(fields["i"])
        key = (self.hash, salt, iterations)
        if key not in _salted:
            _salted[key] = hashlib.pbkdf2_hmac(self.hash, self.password, salt, iterations)
        client_key = hmac.new(_salted[key], b"Client Key", self.hash).digest()
        stored = hashlib.new(self.hash, client_key).digest()
        without_proof = f"c=biws,r={fields['r']}"
        message = f"{self.first_bare},{challenge},{without_proof}".encode()
        signature = hmac.new(stored, message, self.hash).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        return base64.b64encode(f"{without_proof},p={base64.b64encode(proof).decode()}".encode()).decode()


def _find(pattern: str, text: str) -> re.Match | None:
    return re.search(pattern, text, re.S)


class BOSHSession:
    def __init__(self, http: aiohttp.ClientSession, url: str, domain: str):
        self.http, self.url, self.domain = http, url, domain
        self.rid = random.randrange(1 << 20, 1 << 40)
        self.sid: str | None = None
        self.received = ""

    async def post(self, payload: str = "", attributes: str = "") -> str:
        rid, self.rid = self.rid, self.rid + 1
        sid = f" sid='{self.sid}'" if self.sid else ""
        body = f"<body xmlns='{HTTPBIND}' rid='{rid}'{sid} {attributes}>{payload}</body>"
        async with self.http.post(url=self.url, data=body, headers={"Content-Type": "text/xml; charset=utf-8"}) as response:
            text = await response.text()
        if "type='terminate'" in text or 'type="terminate"' in text:
            raise RuntimeError(f"session ended: {text[:300]}")
        self.received += text
        return text

    async def wait_for(self, pattern: str) -> re.Match:
        while True:
            match = _find(pattern, self.received)
            if match:
                self.received = self.received[match.end():]
                return match
            await self.post()

    async def login(self, user: str, password: str) -> None:
        created = await self.post(attributes=(
            f"to='{self.domain}' xml:lang='en' wait='60' hold='1' content='text/xml; charset=utf-8' "
            "ver='1.6' xmpp:version='1.0' xmlns:xmpp='urn:xmpp:xbosh'"))
        self.sid = _find(r"sid=['\"]([^'\"]+)", created).group(1)
        features = (await self.wait_for(r"<(?:stream:)?features.*?</(?:stream:)?features>")).group(0)
        scram = SCRAM(features, user, password)
        await self.post(f"<auth xmlns='{SASL}' mechanism='{scram.mechanism}'>{scram.initial()}</auth>")
        challenge = (await self.wait_for(r"<challenge[^>]*>([^<]*)</challenge>")).group(1)
        await self.post(f"<response xmlns='{SASL}'>{scram.final(challenge)}</response>")
        await self.wait_for(r"<success")
        await self.post(attributes=f"to='{self.domain}' xml:lang='en' xmpp:restart='true' xmlns:xmpp='urn:xmpp:xbosh'")
        await self.wait_for(r"<(?:stream:)?features")
        await self.post("<iq xmlns='jabber:client' type='set' id='b'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></iq>")
        await self.wait_for(r"<jid>")
        await self.post("<presence xmlns='jabber:client'/>")

    async def idle(self) -> None:
        """One request always held, as a browser client keeps it."""
        while True:
            await self.post()
            self.received = ""


class TCPSession:
    def __init__(self, host: str, port: int, domain: str):
        self.host, self.port, self.domain = host, port, domain
        self.buffer = ""

    async def open_stream(self) -> None:
        self.writer.write(
            f"<?xml version='1.0'?><stream:stream to='{self.domain}' xmlns='jabber:client' "
            "xmlns:stream='http://etherx.jabber.org/streams' version='1.0'>".encode())
        await self.writer.drain()

    async def wait_for(self, pattern: str) -> re.Match:
        while True:
            match = _find(pattern, self.buffer)
            if match:
                self.buffer = self.buffer[match.end():]
                return match
            data = await self.reader.read(65536)
            if not data:
                raise RuntimeError("connection closed")
            self.buffer += data.decode()

    async def send(self, xml: str) -> None:
        self.writer.write(xml.encode())
        await self.writer.drain()

    async def login(self, user: str, password: str) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        await self.open_stream()
        features = (await self.wait_for(r"<stream:features.*?</stream:features>")).group(0)
        scram = SCRAM(features, user, password)
        await self.send(f"<auth xmlns='{SASL}' mechanism='{scram.mechanism}'>{scram.initial()}</auth>")
        challenge = (await self.wait_for(r"<challenge[^>]*>([^<]*)</challenge>")).group(1)
        await self.send(f"<response xmlns='{SASL}'>{scram.final(challenge)}</response>")
        await self.wait_for(r"<success")
        await self.open_stream()
        await self.wait_for(r"</stream:features>")
        await self.send("<iq type='set' id='b'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></iq>")
        await self.wait_for(r"<jid>")
        await self.send("<presence/>")

    async def idle(self) -> None:
        while await self.reader.read(65536):
            pass


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["bosh", "tcp"])
    parser.add_argument("--url", default="http://127.0.0.1:5280/http-bind")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5222)
    parser.add_argument("--domain", default="localhost")
    parser.add_argument("--users", type=int, required=True)
    parser.add_argument("--start", type=int, default=1)
    parser.add_argument("--password", required=True)
    parser.add_argument("--concurrency", type=int, default=50)
    options = parser.parse_args()

    http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, force_close=False),
                                 timeout=aiohttp.ClientTimeout(total=None, sock_read=150))
    gate = asyncio.Semaphore(options.concurrency)
    idlers: list[asyncio.Task] = []
    started = time.monotonic()

    async def one(index: int) -> None:
        if options.transport == "bosh":
            session = BOSHSession(http, options.url, options.domain)
        else:
            session = TCPSession(options.host, options.port, options.domain)
        async with gate:
            await session.login(f"user{index}", options.password)
        idlers.append(asyncio.create_task(session.idle()))

    await asyncio.gather(*(one(options.start + i) for i in range(options.users)))
    print(f"ready {options.users} {time.monotonic() - started:.1f}", flush=True)
    done, _ = await asyncio.wait(idlers, return_when=asyncio.FIRST_EXCEPTION)
    for task in done:
        if task.exception():
            print(f"a session failed: {task.exception()}", file=sys.stderr, flush=True)
            sys.exit(1)


if __name__ == "__main__":
    asyncio.run(main())
