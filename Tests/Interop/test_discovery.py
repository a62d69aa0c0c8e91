"""Server discovery, CSI and MAM paging interop with slixmpp 1.17: the XEP-0157 serverinfo
form read through xep_0030/xep_0128, the server's XEP-0115 caps verified by slixmpp's own
xep_0115 (it fetches node#ver and recomputes the hash), XEP-0215 services (slixmpp has no
plugin for it, so a raw iq) with the TURN password recomputed here, XEP-0352 through its
xep_0352 plugin, and xep_0313's backward iteration over more than one page."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import time
import xml.etree.ElementTree as ET

import pytest
from slixmpp.xmlstream.handler import Callback
from slixmpp.xmlstream.matcher import MatchXPath

from interop_support import TIMEOUT, run, session

EXTDISCO = "urn:xmpp:extdisco:2"
SERVERINFO = "http://jabber.org/network/serverinfo"
TURN_SECRET = "interop-turn-secret"

DISCOVERY_CONFIG = f"""
contact_info:
  abuse: [mailto:abuse@localhost, xmpp:abuse@localhost]
  support: [https://localhost/support]
turn:
  host: turn.localhost
  secret: {TURN_SECRET}
  ttl: 3600
  tcp: true
"""


@pytest.mark.parleyd_config(DISCOVERY_CONFIG)
def test_serverinfo_form_and_the_servers_own_caps(parleyd):
    alice_account = parleyd.account("alice")

    async def scenario():
        async with session(parleyd, alice_account, plugins=("xep_0128", "xep_0115")) as alice:
            info = await alice.plugin["xep_0030"].get_info(jid=parleyd.domain, timeout=TIMEOUT)
            form = info["disco_info"]["form"]
            values = form.get_values()
            assert values["FORM_TYPE"] in (SERVERINFO, [SERVERINFO]), values
            assert values["abuse-addresses"] == ["mailto:abuse@localhost", "xmpp:abuse@localhost"], values
            assert values["support-addresses"] == ["https://localhost/support"], values
            assert "admin-addresses" not in values, values

            # slixmpp saw <c/> in the stream features, asked for node#ver and checked the
            # hash itself; it only records a verstring that matched.
            caps = alice.plugin["xep_0115"]

            async def verified():
                return await caps.get_verstring(parleyd.domain)

            ver = None
            deadline = time.monotonic() + TIMEOUT
            while ver is None and time.monotonic() < deadline:
                ver = await verified()
                if ver is None:
                    await asyncio.sleep(0.05)
            assert ver, f"slixmpp did not verify the server's caps: {alice.describe()}"
            assert caps.generate_verstring(info["disco_info"], "sha-1") == ver

    run(scenario())


@pytest.mark.parleyd_config(DISCOVERY_CONFIG)
def test_external_services_with_turn_credentials(parleyd):
    alice_account = parleyd.account("alice")

    async def scenario():
        async with session(parleyd, alice_account) as alice:
            iq = alice.make_iq_get(ito=parleyd.domain)
            iq.append(ET.fromstring(f"<services xmlns='{EXTDISCO}'/>"))
            reply = await iq.send(timeout=TIMEOUT)
            services = reply.xml.findall(f"{{{EXTDISCO}}}services/{{{EXTDISCO}}}service")
            kinds = [(s.get("type"), s.get("transport"), s.get("port")) for s in services]
            assert kinds == [("stun", "udp", "3478"), ("turn", "udp", "3478"), ("turn", "tcp", "3478")], kinds
            for service in services[1:]:
                assert service.get("restricted") == "true"
                username = service.get("username")
                expiry, user = username.split(":", 1)
                assert user == "alice"
                assert abs(int(expiry) - time.time() - 3600) < 60
                expected = base64.b64encode(
                    hmac.new(TURN_SECRET.encode(), username.encode(), hashlib.sha1).digest()).decode()
                assert service.get("password") == expected
    run(scenario())


def test_mam_iterates_backwards_through_every_page(parleyd):
    """slixmpp's RSM iterator, paging backwards, stopped after the first page while result
    sets carried <first index=…/>; without it, it walks to the oldest message."""
    alice_account, bob_account = parleyd.account("alice"), parleyd.account("bob")

    async def scenario():
        async with session(parleyd, alice_account, plugins=("xep_0313",)) as alice:
            for index in range(1, 6):
                alice.send_message(mto=bob_account.jid, mbody=f"m{index}", mtype="chat")
            await alice.sync()
            bodies = [m["mam_result"]["forwarded"]["stanza"]["body"]
                      async for m in alice.plugin["xep_0313"].iterate(reverse=True, rsm={"max": 2})]
            assert bodies == [f"m{i}" for i in range(5, 0, -1)], bodies

    run(scenario())


def test_csi_holds_chat_states_until_active(parleyd):
    alice_account, bob_account = parleyd.account("alice"), parleyd.account("bob")

    async def scenario():
        async with session(parleyd, bob_account, plugins=("xep_0352",)) as bob, \
                session(parleyd, alice_account) as alice:
            assert bob.plugin["xep_0352"].enabled, "the <csi/> stream feature was not offered"
            # slixmpp's "message" event skips messages without a body: watch the stream itself.
            received: asyncio.Queue = asyncio.Queue()
            bob.register_handler(Callback("every message", MatchXPath("{jabber:client}message"), received.put_nowait))

            async def next_message():
                return await asyncio.wait_for(received.get(), TIMEOUT)

            bob.plugin["xep_0352"].send_inactive()
            await bob.sync()

            composing = alice.make_message(mto=bob.boundjid.full, mtype="chat")
            composing.append(ET.fromstring("<composing xmlns='http://jabber.org/protocol/chatstates'/>"))
            composing.send()
            await alice.sync()
            await asyncio.sleep(0.5)
            assert received.empty(), f"a chat state reached an inactive client: {bob.describe()}"

            alice.send_message(mto=bob.boundjid.full, mbody="hello", mtype="chat")
            first = await next_message()
            second = await next_message()
            assert first.xml.find("{http://jabber.org/protocol/chatstates}composing") is not None, first
            # It says when it arrived, from the server on bob's behalf (as Prosody stamps it).
            assert first.xml.find("{urn:xmpp:delay}delay").get("from") == bob_account.jid, first
            assert second["body"] == "hello", second
            assert second.xml.find("{urn:xmpp:delay}delay") is None, second

            composing.send()
            await alice.sync()
            await asyncio.sleep(0.3)
            assert received.empty()
            bob.plugin["xep_0352"].send_active()
            held = await next_message()
            assert held.xml.find("{http://jabber.org/protocol/chatstates}composing") is not None, held

    run(scenario())
