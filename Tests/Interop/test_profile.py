"""Profiles and per-account storage with slixmpp's own plugins against parleyd: vCards
(XEP-0054), vCard avatars (XEP-0153), last activity (XEP-0012), private XML storage
(XEP-0049) and bookmarks kept in it (XEP-0048)."""

from __future__ import annotations

import asyncio
import hashlib

from slixmpp.exceptions import IqError
from slixmpp.xmlstream import ElementBase

from interop_support import TIMEOUT, event_queue, next_event, run, session

# Not a real image, but every byte value, so a base64 or encoding slip shows.
PHOTO = bytes(range(256)) * 40


async def _befriend(a, b) -> None:
    """a asks b for a subscription; b's slixmpp approves and asks back, a's approves: both
    are then subscribed to each other's presence."""
    a.send_presence(pto=b.boundjid.bare, ptype="subscribe")
    await a.wait_presence("subscribed", b.boundjid.bare)
    await b.wait_presence("subscribed", a.boundjid.bare)


def test_vcard_set_by_one_client_is_read_by_another(parleyd):
    """alice publishes a vCard with a photo (xep_0054); bob fetches it from her bare JID and
    sees the same fields and the same photo bytes; alice reads hers back too."""
    alice, bob = parleyd.account("alice"), parleyd.account("bob")

    async def scenario():
        async with session(parleyd, alice, plugins=("xep_0054",)) as a, \
                session(parleyd, bob, plugins=("xep_0054",)) as b:
            info = await a.plugin["xep_0030"].get_info(jid=parleyd.domain, timeout=TIMEOUT)
            assert "vcard-temp" in info["disco_info"]["features"], info

            vcard = a.plugin["xep_0054"].make_vcard()
            vcard["FN"] = "Alice Liddell"
            vcard["NICKNAME"] = "alice"
            vcard["DESC"] = "Curiouser & curiouser — ünïcödé"
            vcard["PHOTO"]["TYPE"] = "image/png"
            vcard["PHOTO"]["BINVAL"] = PHOTO
            await a.plugin["xep_0054"].publish_vcard(vcard, timeout=TIMEOUT)

            for client in (b, a):
                result = await client.plugin["xep_0054"].get_vcard(alice.jid, cached=False, timeout=TIMEOUT)
                assert result["from"].bare == alice.jid, result
                fetched = result["vcard_temp"]
                for field in ("FN", "NICKNAME", "DESC"):
                    assert fetched[field] == vcard[field], (field, fetched[field], vcard[field])
                assert fetched["FN"] == "Alice Liddell" and fetched["DESC"] == "Curiouser & curiouser — ünïcödé"
                assert fetched["PHOTO"]["TYPE"] == "image/png", result
                assert fetched["PHOTO"]["BINVAL"] == PHOTO, "the photo bytes changed on the way"

            # Nobody writes another's vCard.
            other = b.plugin["xep_0054"].make_vcard()
            other["FN"] = "Mallory"
            try:
                await b.plugin["xep_0054"].publish_vcard(other, jid=alice.jid, timeout=TIMEOUT)
                raise AssertionError("bob replaced alice's vCard")
            except IqError as error:
                assert error.iq["error"]["condition"] == "forbidden", error.iq

    run(scenario())


def test_vcard_avatar_hash_reaches_a_contact(parleyd):
    """alice sets an avatar with xep_0153 (vCard photo, then its SHA-1 in her presence); bob,
    subscribed to her, sees the hash in her presence and the photo behind it in her vCard."""
    alice, bob = parleyd.account("alice"), parleyd.account("bob")
    expected = hashlib.sha1(PHOTO).hexdigest()

    async def scenario():
        async with session(parleyd, alice, plugins=("xep_0153",)) as a, \
                session(parleyd, bob, plugins=("xep_0153",)) as b:
            await a.online()
            await b.online()
            await _befriend(a, b)
            updates = event_queue(b, "vcard_avatar_update")

            await a.plugin["xep_0153"].set_avatar(avatar=PHOTO, mtype="image/png", timeout=TIMEOUT)
            while True:
                presence = await next_event(updates, b, "presence with alice's avatar hash")
                if presence["from"].bare == alice.jid and presence["vcard_temp_update"]["photo"] == expected:
                    break
            result = await b.plugin["xep_0054"].get_vcard(alice.jid, cached=False, timeout=TIMEOUT)
            assert hashlib.sha1(result["vcard_temp"]["PHOTO"]["BINVAL"]).hexdigest() == expected, result

    run(scenario())


def test_last_activity_of_a_contact_after_logout(parleyd):
    """bob leaves with a status; alice, subscribed to his presence, asks xep_0012 for his last
    activity and gets the seconds since and the status. carol, not subscribed, is refused;
    the server answers its uptime."""
    alice, bob, carol = parleyd.account("alice"), parleyd.account("bob"), parleyd.account("carol")

    async def scenario():
        async with session(parleyd, alice, plugins=("xep_0012",)) as a:
            await a.online()
            async with session(parleyd, bob, plugins=("xep_0012",)) as b:
                await b.online()
                await _befriend(a, b)
                online = await a.plugin["xep_0012"].get_last_activity(bob.jid, timeout=TIMEOUT)
                assert online["last_activity"]["seconds"] == 0, online
                b.send_presence(ptype="unavailable", pstatus="Heading home")
                await b.sync()
            await a.wait_presence("unavailable", bob.jid)

            # The logout is written just after the session ends: ask until it is there.
            deadline = asyncio.get_running_loop().time() + TIMEOUT
            while True:
                try:
                    last = await a.plugin["xep_0012"].get_last_activity(bob.jid, timeout=TIMEOUT)
                    if last["last_activity"]["status"] == "Heading home":
                        break
                except IqError as error:
                    assert error.iq["error"]["condition"] == "item-not-found", error.iq
                assert asyncio.get_running_loop().time() < deadline, "no last activity for bob"
                await asyncio.sleep(0.05)
            assert 0 <= last["last_activity"]["seconds"] <= 5, last

            uptime = await a.plugin["xep_0012"].get_last_activity(parleyd.domain, timeout=TIMEOUT)
            assert uptime["last_activity"]["seconds"] >= 0, uptime

            async with session(parleyd, carol, plugins=("xep_0012",)) as c:
                try:
                    await c.plugin["xep_0012"].get_last_activity(bob.jid, timeout=TIMEOUT)
                    raise AssertionError("carol learnt bob's last activity without a subscription")
                except IqError as error:
                    assert error.iq["error"]["condition"] == "forbidden", error.iq

    run(scenario())


class Prefs(ElementBase):
    """A client's own settings, in a namespace of its own (XEP-0049 §2.1)."""
    name = "prefs"
    namespace = "urn:example:parley-interop:prefs"
    plugin_attrib = "parley_prefs"
    interfaces = {"theme", "font"}
    sub_interfaces = interfaces


def test_private_storage_and_bookmarks_round_trip(parleyd):
    """alice stores settings with xep_0049 and bookmarks with xep_0048 (private storage);
    another of her clients reads both back after a server restart; bob cannot read them."""
    alice, bob = parleyd.account("alice"), parleyd.account("bob")

    async def scenario():
        async with session(parleyd, alice, resource="desktop", plugins=("xep_0049", "xep_0048")) as a:
            a.plugin["xep_0049"].register(Prefs)
            prefs = Prefs()
            prefs["theme"] = "dark"
            prefs["font"] = "Fira Sans 12"
            await a.plugin["xep_0049"].store(prefs, timeout=TIMEOUT)

            bookmarks = a.plugin["xep_0048"].stanza.Bookmarks()
            bookmarks.add_conference("tea@conference.localhost", "alice", name="Tea party", autojoin=True)
            bookmarks.add_url("https://example.org/wonderland", name="Wonderland")
            await a.plugin["xep_0048"].set_bookmarks(bookmarks, timeout=TIMEOUT)

        parleyd.restart()

        async with session(parleyd, alice, resource="phone", plugins=("xep_0049", "xep_0048")) as a2:
            a2.plugin["xep_0049"].register(Prefs)
            result = await a2.plugin["xep_0049"].retrieve("parley_prefs", timeout=TIMEOUT)
            assert result["private"]["parley_prefs"]["theme"] == "dark", result
            assert result["private"]["parley_prefs"]["font"] == "Fira Sans 12", result

            result = await a2.plugin["xep_0048"].get_bookmarks(timeout=TIMEOUT)
            stored = result["private"]["bookmarks"]
            conferences = list(stored["conferences"])
            assert [(c["jid"], c["nick"], c["name"], c["autojoin"]) for c in conferences] == [
                ("tea@conference.localhost", "alice", "Tea party", True)], result
            assert [(u["url"], u["name"]) for u in stored["urls"]] == [
                ("https://example.org/wonderland", "Wonderland")], result

        async with session(parleyd, bob, plugins=("xep_0049", "xep_0048")) as b:
            iq = b.make_iq_get(ito=alice.jid)
            iq["private"].enable("bookmarks")
            try:
                await iq.send(timeout=TIMEOUT)
                raise AssertionError("bob read alice's bookmarks")
            except IqError as error:
                assert error.iq["error"]["condition"] == "forbidden", error.iq
            # His own storage is empty: the bookmarks element comes back as asked.
            mine = await b.plugin["xep_0048"].get_bookmarks(timeout=TIMEOUT)
            assert list(mine["private"]["bookmarks"]["conferences"]) == [], mine

    run(scenario())
