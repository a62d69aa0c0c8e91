"""XMPP over BOSH (XEP-0124/0206) on parleyd's HTTPS service, driven with raw HTTP from Python's
http.client (no BOSH library): the endpoint found through XEP-0156 host-meta, the session
creation terms, PLAIN over HTTPS, the restart, bind, messages both ways with a slixmpp client
on the c2s port, a held request answered when a message comes, a repeated rid answered from
the cache, and the terminate."""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import re
import ssl
import time
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

import pytest

from interop_support import run, session

_HTTPS_RE = re.compile(r"https: (https://\S+/) ")
HTTPBIND = "http://jabber.org/protocol/httpbind"
XBOSH = "urn:xmpp:xbosh"
CLIENT = "jabber:client"
SASL = "urn:ietf:params:xml:ns:xmpp-sasl"


def _base_url(parleyd) -> str:
    for _ in range(50):
        match = _HTTPS_RE.search(parleyd.stdout_path.read_text())
        if match:
            return match.group(1)
        time.sleep(0.1)
    pytest.fail("the banner does not say where the HTTP service listens")


def _trusting(parleyd) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(parleyd.cert_path))


class BOSH:
    """Just enough of a XEP-0124 client: every request a fresh http.client POST."""

    def __init__(self, endpoint: str, context: ssl.SSLContext):
        self.url = urllib.parse.urlsplit(endpoint)
        self.context = context
        self.rid = 7_000_000
        self.sid: str | None = None

    def post_text(self, text: str) -> tuple[int, str, ET.Element]:
        connection = http.client.HTTPSConnection(self.url.hostname, self.url.port, context=self.context, timeout=30)
        try:
            connection.request("POST", self.url.path, body=text.encode(), headers={"Content-Type": "text/xml; charset=utf-8"})
            response = connection.getresponse()
            body = response.read().decode()
            return response.status, body, ET.fromstring(body)
        finally:
            connection.close()

    def body(self, payload: str = "", attributes: str = "", rid: int | None = None) -> str:
        if rid is None:
            rid, self.rid = self.rid, self.rid + 1
        sid = f" sid='{self.sid}'" if self.sid else ""
        return f"<body xmlns='{HTTPBIND}' rid='{rid}'{sid} {attributes}>{payload}</body>"

    async def post(self, payload: str = "", attributes: str = "", rid: int | None = None) -> ET.Element:
        status, _, body = await asyncio.to_thread(self.post_text, self.body(payload, attributes, rid))
        assert status == 200
        return body


@pytest.mark.parleyd_config("http:\n  enabled: true\n  port: 0\n")
def test_a_raw_bosh_client_finds_the_endpoint_logs_in_and_chats_with_slixmpp(parleyd):
    base = _base_url(parleyd)
    meta = base.replace("127.0.0.1", "localhost") + ".well-known/host-meta.json"
    with urllib.request.urlopen(meta, timeout=5, context=_trusting(parleyd)) as response:
        links = json.load(response)["links"]
    endpoint = next(link["href"] for link in links if link["rel"] == "urn:xmpp:alt-connections:xbosh")
    assert endpoint == base.replace("127.0.0.1", "localhost") + "http-bind", links
    alice, bob = parleyd.account("alice"), parleyd.account("bob")
    web = BOSH(endpoint, _trusting(parleyd))

    async def scenario():
        async with session(parleyd, bob) as slixmpp_bob:
            await slixmpp_bob.online()
            created = await web.post(attributes=(
                "to='localhost' xml:lang='en' wait='10' hold='1' content='text/xml; charset=utf-8' "
                f"ver='1.6' xmpp:version='1.0' xmlns:xmpp='{XBOSH}'"))
            web.sid = created.get("sid")
            assert web.sid and created.get("hold") == "1" and created.get("requests") == "2", ET.tostring(created)
            assert created.get(f"{{{XBOSH}}}version") == "1.0"
            mechanisms = [m.text for m in created.iter(f"{{{SASL}}}mechanism")]
            # HTTPS is TLS: PLAIN is offered, STARTTLS is not (XEP-0206 §5).
            assert "PLAIN" in mechanisms and created.find(".//{urn:ietf:params:xml:ns:xmpp-tls}starttls") is None
            plain = base64.b64encode(f"\0{alice.username}\0{alice.password}".encode()).decode()
            success = await web.post(f"<auth xmlns='{SASL}' mechanism='PLAIN'>{plain}</auth>")
            assert success.find(f"{{{SASL}}}success") is not None, ET.tostring(success)
            restarted = await web.post(attributes=f"to='localhost' xmpp:restart='true' xmlns:xmpp='{XBOSH}'")
            assert restarted.find(".//{urn:ietf:params:xml:ns:xmpp-bind}bind") is not None, ET.tostring(restarted)
            bound = await web.post(
                "<iq xmlns='jabber:client' type='set' id='b'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'>"
                "<resource>bosh</resource></bind></iq>")
            assert bound.find(f"{{{CLIENT}}}iq").get("type") == "result", ET.tostring(bound)

            # A request held open is answered as soon as bob's message arrives.
            held = asyncio.create_task(web.post())
            await asyncio.sleep(0.3)
            reply = slixmpp_bob.make_message(mto=f"{alice.jid}/bosh", mbody="hello bosh", mtype="chat")
            reply.send()
            answer = await asyncio.wait_for(held, 5)
            assert answer.findtext(f"{{{CLIENT}}}message/{{{CLIENT}}}body") == "hello bosh", ET.tostring(answer)

            # Alice's message, whose answer is lost: the same rid again gets the same answer
            # and the message is not sent twice.
            rid = web.rid
            sent = web.body(f"<message xmlns='jabber:client' to='{bob.jid}' type='chat'><body>from bosh</body></message>"
                            "<iq xmlns='jabber:client' type='get' id='p'><ping xmlns='urn:xmpp:ping'/></iq>")
            first = await asyncio.to_thread(web.post_text, sent)
            received = await slixmpp_bob.next_message()
            assert received["body"] == "from bosh" and str(received["from"]) == f"{alice.jid}/bosh", received
            again = await asyncio.to_thread(web.post_text, sent.replace(f"rid='{rid}'", f"rid='{rid}'"))
            assert again[1] == first[1]

            ended = await web.post("<presence xmlns='jabber:client' type='unavailable'/>", attributes="type='terminate'")
            assert ended.get("type") == "terminate", ET.tostring(ended)
            late = await web.post()
            assert late.get("type") == "terminate"

    run(scenario())
