"""A room's archive (XEP-0313 on the room JID) read with slixmpp's xep_0313 plugin: a room
archives by default, advertises urn:xmpp:mam:2, stamps each message with its stanza-id, and
a client that is not in the room pages through it forwards and backwards. And the room's
avatar (vcard-temp on the room JID) with slixmpp's xep_0054."""

from __future__ import annotations

import asyncio
import hashlib

from slixmpp import JID
from slixmpp.exceptions import IqError
from slixmpp.xmlstream.handler import Callback
from slixmpp.xmlstream.matcher import MatchXPath

from interop_support import TIMEOUT, event_queue, next_event, run, session

MAM = "urn:xmpp:mam:2"
SID = "urn:xmpp:sid:0"
PLUGINS = ("xep_0045", "xep_0004", "xep_0313")


def test_slixmpp_pages_through_a_room_archive(parleyd):
    alice, bob = parleyd.account("alice"), parleyd.account("bob")
    room = JID(f"archive@conference.{parleyd.domain}")

    async def scenario():
        async with session(parleyd, alice, plugins=PLUGINS) as a, session(parleyd, bob, plugins=PLUGINS) as b:
            own, _subject, _occupants, _history = await a.plugin["xep_0045"].join_muc_wait(room, "Alice", timeout=TIMEOUT)
            assert {"110", "170", "201"} <= {str(code) for code in own["muc"]["status_codes"]}, own
            form = await a.plugin["xep_0045"].get_room_config(room, timeout=TIMEOUT)
            assert "muc#roomconfig_enablearchiving" in form.get_fields(), form
            await a.plugin["xep_0045"].set_room_config(room, form, timeout=TIMEOUT)

            echoes = event_queue(a, "groupchat_message")
            stanza_ids = []
            for index in range(1, 8):
                a.send_message(mto=room, mbody=f"r{index}", mtype="groupchat")
                echo = await next_event(echoes, a, f"the echo of r{index}")
                sid = echo.xml.find(f"{{{SID}}}stanza-id")
                assert sid is not None and sid.get("by") == str(room), echo
                stanza_ids.append(sid.get("id"))

            info = await b.plugin["xep_0030"].get_info(jid=room, timeout=TIMEOUT)
            assert MAM in set(info["disco_info"]["features"]), info

            page = await b.plugin["xep_0313"].retrieve(jid=room, rsm={"max": 3}, timeout=TIMEOUT)
            results = page["mam"]["results"]
            assert [r["mam_result"]["forwarded"]["stanza"]["body"] for r in results] == ["r1", "r2", "r3"], page
            assert [r["mam_result"]["id"] for r in results] == stanza_ids[:3]
            assert results[0]["mam_result"]["forwarded"]["stanza"]["from"] == JID(f"{room}/Alice")
            assert int(page["mam_fin"]["rsm"]["count"]) == 7, page

            forwards = [m["mam_result"]["forwarded"]["stanza"]["body"]
                        async for m in b.plugin["xep_0313"].iterate(jid=room, rsm={"max": 2})]
            assert forwards == [f"r{i}" for i in range(1, 8)], forwards
            backwards = await b.plugin["xep_0313"].retrieve(jid=room, rsm={"max": 2, "before": stanza_ids[6]}, timeout=TIMEOUT)
            assert [r["mam_result"]["forwarded"]["stanza"]["body"] for r in backwards["mam"]["results"]] == ["r5", "r6"]

    run(scenario())


def test_slixmpp_sets_and_reads_a_room_avatar(parleyd):
    """The owner publishes the room's vCard with xep_0054; an occupant gets the room's
    presence with the photo hash (XEP-0153) and reads the vCard back; a non-owner may not set it."""
    alice, bob = parleyd.account("alice"), parleyd.account("bob")
    room = JID(f"avatar@conference.{parleyd.domain}")
    image = b"an interop avatar"

    async def scenario():
        plugins = ("xep_0045", "xep_0004", "xep_0054")
        async with session(parleyd, alice, plugins=plugins) as a, session(parleyd, bob, plugins=plugins) as b:
            await a.plugin["xep_0045"].join_muc_wait(room, "Alice", timeout=TIMEOUT)
            form = await a.plugin["xep_0045"].get_room_config(room, timeout=TIMEOUT)
            await a.plugin["xep_0045"].set_room_config(room, form, timeout=TIMEOUT)
            await b.plugin["xep_0045"].join_muc_wait(room, "Bob", timeout=TIMEOUT)
            # Every presence carrying a photo hash, as it arrives (slixmpp raises no
            # presence event for one from the room's bare JID).
            presences: asyncio.Queue = asyncio.Queue()
            b.register_handler(Callback(
                "room photo", MatchXPath("{jabber:client}presence/{vcard-temp:x:update}x"), presences.put_nowait))

            vcard = a.plugin["xep_0054"].make_vcard()
            vcard["FN"] = "Avatar room"
            vcard["PHOTO"]["TYPE"] = "image/png"
            vcard["PHOTO"]["BINVAL"] = image
            await a.plugin["xep_0054"].publish_vcard(vcard, jid=room, timeout=TIMEOUT)

            expected = hashlib.sha1(image).hexdigest()
            while True:
                presence = await next_event(presences, b, "the room's avatar presence")
                photo = presence.xml.find("{vcard-temp:x:update}x/{vcard-temp:x:update}photo")
                if presence["from"] == room and photo is not None:
                    break
            assert photo.text == expected, presence

            got = await b.plugin["xep_0054"].get_vcard(jid=room, timeout=TIMEOUT)
            assert got["vcard_temp"]["FN"] == "Avatar room" and got["vcard_temp"]["PHOTO"]["BINVAL"] == image, got
            try:
                await b.plugin["xep_0054"].publish_vcard(vcard, jid=room, timeout=TIMEOUT)
                raise AssertionError("a participant changed the room's vCard")
            except IqError as error:
                assert error.iq["error"]["condition"] == "forbidden", error.iq

    run(scenario())
