"""XMPP over WebSocket (RFC 7395) on parleyd's HTTPS service, with a WebSocket client that is
not parleyd's own (aiohttp, which the upload tests already install): the endpoint found
through XEP-0156 host-meta, PLAIN over HTTPS, bind, and messages both ways with a slixmpp
client on the c2s port."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import ssl
import time
import urllib.request
import xml.etree.ElementTree as ET

import aiohttp
import pytest

from interop_support import TIMEOUT, run, session

_HTTPS_RE = re.compile(r"https: (https://\S+/) ")
FRAMING = "urn:ietf:params:xml:ns:xmpp-framing"
STREAMS = "http://etherx.jabber.org/streams"
CLIENT = "jabber:client"


def _base_url(parleyd) -> str:
    for _ in range(50):
        match = _HTTPS_RE.search(parleyd.stdout_path.read_text())
        if match:
            return match.group(1)
        time.sleep(0.1)
    pytest.fail("the banner does not say where the HTTP service listens")


def _endpoint(base: str) -> str:
    port = base.rstrip("/").rsplit(":", 1)[1]
    return f"wss://localhost:{port}/xmpp-websocket"


def _trusting(parleyd) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(parleyd.cert_path))


class WebSocketXMPP:
    """Just enough of an RFC 7395 client to log in and chat; every message is parsed alone."""

    def __init__(self, socket):
        self.socket = socket

    async def send(self, xml: str) -> None:
        await self.socket.send_str(xml)

    async def receive(self) -> ET.Element:
        message = await asyncio.wait_for(self.socket.receive(), TIMEOUT)
        assert message.type == aiohttp.WSMsgType.TEXT, message
        return ET.fromstring(message.data)

    async def open(self) -> ET.Element:
        await self.send(f"<open xmlns='{FRAMING}' to='localhost' version='1.0'/>")
        opened = await self.receive()
        assert opened.tag == f"{{{FRAMING}}}open" and opened.get("from") == "localhost", ET.tostring(opened)
        features = await self.receive()
        assert features.tag == f"{{{STREAMS}}}features", ET.tostring(features)
        return features


@pytest.mark.parleyd_config("http:\n  enabled: true\n  port: 0\n")
def test_a_websocket_client_finds_the_endpoint_logs_in_and_chats_with_slixmpp(parleyd):
    base = _base_url(parleyd)
    meta = base.replace("127.0.0.1", "localhost") + ".well-known/host-meta.json"
    with urllib.request.urlopen(meta, timeout=5, context=_trusting(parleyd)) as response:
        assert response.headers["Access-Control-Allow-Origin"] == "*"
        links = json.load(response)["links"]
    endpoint = next(link["href"] for link in links if link["rel"] == "urn:xmpp:alt-connections:websocket")
    # The certificate names the domain, so the announced URL does too.
    assert endpoint == _endpoint(base), links
    alice, bob = parleyd.account("alice"), parleyd.account("bob")

    async def scenario():
        async with aiohttp.ClientSession() as http, session(parleyd, bob) as slixmpp_bob:
            await slixmpp_bob.online()
            async with http.ws_connect(endpoint, protocols=("xmpp",), ssl=_trusting(parleyd)) as socket:
                assert socket.protocol == "xmpp"
                web = WebSocketXMPP(socket)
                features = await web.open()
                mechanisms = [m.text for m in features.iter("{urn:ietf:params:xml:ns:xmpp-sasl}mechanism")]
                # HTTPS is TLS: PLAIN is offered as on a TLS c2s stream, STARTTLS is not.
                assert "PLAIN" in mechanisms and features.find("{urn:ietf:params:xml:ns:xmpp-tls}starttls") is None
                plain = base64.b64encode(f"\0{alice.username}\0{alice.password}".encode()).decode()
                await web.send(f"<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>{plain}</auth>")
                success = await web.receive()
                assert success.tag == "{urn:ietf:params:xml:ns:xmpp-sasl}success", ET.tostring(success)
                features = await web.open()
                assert features.find("{urn:ietf:params:xml:ns:xmpp-bind}bind") is not None
                await web.send("<iq xmlns='jabber:client' type='set' id='b'>"
                               "<bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><resource>browser</resource></bind></iq>")
                bound = await web.receive()
                assert bound.get("type") == "result", ET.tostring(bound)

                await web.send(f"<message xmlns='jabber:client' to='{bob.jid}' type='chat'><body>from a browser</body></message>")
                received = await slixmpp_bob.next_message()
                assert received["body"] == "from a browser" and str(received["from"]) == f"{alice.jid}/browser", received

                reply = slixmpp_bob.make_message(mto=f"{alice.jid}/browser", mbody="hello tab", mtype="chat")
                reply.send()
                message = await web.receive()
                assert message.tag == f"{{{CLIENT}}}message", ET.tostring(message)
                assert message.findtext(f"{{{CLIENT}}}body") == "hello tab"

                await web.send(f"<close xmlns='{FRAMING}'/>")
                closed = await web.receive()
                assert closed.tag == f"{{{FRAMING}}}close"
                end = await asyncio.wait_for(socket.receive(), TIMEOUT)
                assert end.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING), end

    run(scenario())


@pytest.mark.parleyd_config("http:\n  enabled: true\n  port: 0\n")
def test_an_upgrade_without_the_xmpp_subprotocol_is_refused(parleyd):
    endpoint = _endpoint(_base_url(parleyd))

    async def scenario():
        async with aiohttp.ClientSession() as http:
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await http.ws_connect(endpoint, ssl=_trusting(parleyd))
            assert refused.value.status == 400

    run(scenario())
