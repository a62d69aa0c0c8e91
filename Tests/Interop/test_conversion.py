"""Old and new clients of one account see the same profile data with slixmpp's own
plugins against parleyd: an XEP-0084 avatar read back as a vCard photo (XEP-0398), and
XEP-0048 bookmarks in private storage read back as XEP-0402 PEP bookmarks (XEP-0411)."""

from __future__ import annotations

import asyncio
import hashlib

from slixmpp.exceptions import IqError

from interop_support import TIMEOUT, run, session

# Every byte value, so a base64 or encoding slip shows.
IMAGE = bytes(range(256)) * 8
BOOKMARKS = "urn:xmpp:bookmarks:1"


async def _eventually(check, what: str):
    """The server mirrors behind its reply: poll until check() (a coroutine) is truthy."""
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while True:
        result = await check()
        if result:
            return result
        if asyncio.get_running_loop().time() >= deadline:
            raise AssertionError(f"not within {TIMEOUT}s: {what}")
        await asyncio.sleep(0.1)


def test_pep_avatar_is_read_as_a_vcard_photo(parleyd):
    """alice publishes an avatar with xep_0084 (data, then metadata); bob, with xep_0054
    only, fetches her vCard and gets the same bytes and type."""
    alice, bob = parleyd.account("alice"), parleyd.account("bob")
    digest = hashlib.sha1(IMAGE).hexdigest()

    async def scenario():
        async with session(parleyd, alice, plugins=("xep_0084", "xep_0030")) as a, \
                session(parleyd, bob, plugins=("xep_0054", "xep_0030")) as b:
            info = await a.plugin["xep_0030"].get_info(jid=alice.jid, timeout=TIMEOUT)
            assert "urn:xmpp:pep-vcard-conversion:0" in info["disco_info"]["features"], info

            await a.plugin["xep_0084"].publish_avatar(IMAGE, timeout=TIMEOUT)
            await a.plugin["xep_0084"].publish_avatar_metadata(
                [{"id": digest, "type": "image/png", "bytes": len(IMAGE)}], timeout=TIMEOUT)

            async def photo():
                try:
                    result = await b.plugin["xep_0054"].get_vcard(alice.jid, cached=False, timeout=TIMEOUT)
                except IqError:
                    return None
                binval = result["vcard_temp"]["PHOTO"]["BINVAL"]
                return result if binval else None

            result = await _eventually(photo, "alice's vCard shows her avatar")
            assert result["vcard_temp"]["PHOTO"]["BINVAL"] == IMAGE, "the photo bytes changed on the way"
            assert result["vcard_temp"]["PHOTO"]["TYPE"] == "image/png", result

    run(scenario())


def test_private_bookmarks_are_read_as_pep_bookmarks(parleyd):
    """alice stores bookmarks with xep_0048 (private storage); her other client reads them
    with xep_0402 from her PEP service, fields intact."""
    alice = parleyd.account("alice")

    async def scenario():
        async with session(parleyd, alice, resource="old", plugins=("xep_0048", "xep_0030")) as old, \
                session(parleyd, alice, resource="new", plugins=("xep_0402", "xep_0060")) as new:
            info = await old.plugin["xep_0030"].get_info(jid=alice.jid, timeout=TIMEOUT)
            assert "urn:xmpp:bookmarks:1#compat" in info["disco_info"]["features"], info

            bookmarks = old.plugin["xep_0048"].stanza.Bookmarks()
            bookmarks.add_conference("tea@conference.localhost", "alice", name="Tea party", autojoin=True)
            bookmarks.add_conference("chess@conference.localhost", "al", name="Chess", autojoin=False, password="pawn")
            await old.plugin["xep_0048"].set_bookmarks(bookmarks, timeout=TIMEOUT)

            async def items():
                try:
                    result = await new.plugin["xep_0060"].get_items(alice.jid, BOOKMARKS, timeout=TIMEOUT)
                except IqError:
                    return None
                found = list(result["pubsub"]["items"])
                return found if len(found) == 2 else None

            found = await _eventually(items, "both bookmarks in PEP")
            rooms = {str(item["id"]): item["conference"] for item in found}
            assert set(rooms) == {"tea@conference.localhost", "chess@conference.localhost"}, rooms
            tea, chess = rooms["tea@conference.localhost"], rooms["chess@conference.localhost"]
            assert (tea["name"], tea["nick"], tea["autojoin"]) == ("Tea party", "alice", True), tea
            assert (chess["name"], chess["nick"], chess["autojoin"], chess["password"]) == ("Chess", "al", False, "pawn"), chess

    run(scenario())
