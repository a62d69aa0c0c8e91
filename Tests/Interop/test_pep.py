"""PEP (XEP-0163) with slixmpp's own plugins against parleyd: avatars (XEP-0084), nicknames
(XEP-0172), bookmarks (XEP-0402 node rules with XEP-0060 publish-options) and the generic
XEP-0163 publish. slixmpp announces its +notify interests through entity capabilities
(XEP-0115); parleyd asks for them, verifies the hash and notifies accordingly."""

from __future__ import annotations

import asyncio

from interop_support import TIMEOUT, event_queue, next_event, run, session, wait_until

PEP_PLUGINS = ("xep_0115", "xep_0163", "xep_0060", "xep_0084", "xep_0172", "xep_0402")
BOOKMARKS = "urn:xmpp:bookmarks:1"


async def _online(client) -> None:
    """Roster, then initial presence carrying caps that already list the +notify features
    the plugins registered at bind (slixmpp updates its caps asynchronously)."""
    await client.get_roster(timeout=TIMEOUT)
    await client.plugin["xep_0115"].update_caps(broadcast=False)
    client.send_presence()
    await client.sync()


async def _friends(a, b) -> None:
    """a asks b; both slixmpps approve and ask back on their own, so both end with 'both'."""
    a.send_presence(pto=b.boundjid.bare, ptype="subscribe")
    for client, other in ((a, b), (b, a)):
        await wait_until(lambda c=client, o=other: c.client_roster[o.boundjid.bare]["subscription"] == "both",
                         f"{client.boundjid.bare} and {other.boundjid.bare} are friends", describe=client.describe)


def test_avatar_published_and_fetched_by_a_contact(parleyd):
    """XEP-0084: alice publishes avatar data and metadata; bob, her contact, gets the
    metadata notification and retrieves the data by its id."""
    alice, bob = parleyd.account("alice"), parleyd.account("bob")
    image = bytes(range(256)) * 4

    async def scenario():
        async with session(parleyd, alice, plugins=PEP_PLUGINS) as a, \
                session(parleyd, bob, plugins=PEP_PLUGINS) as b:
            metadata = event_queue(b, "avatar_metadata_publish")
            await _online(a)
            await _online(b)
            await _friends(a, b)

            avatar_id = a.plugin["xep_0084"].generate_id(image)
            result = await a.plugin["xep_0084"].publish_avatar(image, timeout=TIMEOUT)
            assert result["type"] == "result", result
            result = await a.plugin["xep_0084"].publish_avatar_metadata(
                {"id": avatar_id, "type": "image/png", "bytes": len(image)}, timeout=TIMEOUT)
            assert result["type"] == "result", result

            event = await next_event(metadata, b, "avatar metadata notification")
            assert event["from"].bare == alice.jid, event
            info = event["pubsub_event"]["items"]["item"]["avatar_metadata"]["items"]
            assert [i["id"] for i in info] == [avatar_id], info

            fetched = await b.plugin["xep_0084"].retrieve_avatar(alice.jid, avatar_id, timeout=TIMEOUT)
            data = fetched["pubsub"]["items"]["item"]["avatar_data"]["value"]
            assert data == image, "the avatar comes back byte for byte"

    run(scenario())


def test_nick_reaches_a_contact_and_the_last_one_comes_at_login(parleyd):
    """XEP-0172: bob sees alice's new nick at once, and a new session of bob gets the last
    nick published when it becomes available (send_last_published_item on presence)."""
    alice, bob = parleyd.account("alice"), parleyd.account("bob")

    async def scenario():
        async with session(parleyd, alice, plugins=PEP_PLUGINS) as a:
            async with session(parleyd, bob, plugins=PEP_PLUGINS) as b:
                nicks = event_queue(b, "user_nick_publish")
                await _online(a)
                await _online(b)
                await _friends(a, b)
                result = await a.plugin["xep_0172"].publish_nick("Alice in Wonderland", timeout=TIMEOUT)
                assert result["type"] == "result", result
                event = await next_event(nicks, b, "nick notification")
                assert event["pubsub_event"]["items"]["item"]["nick"]["nick"] == "Alice in Wonderland", event
                assert event["from"].bare == alice.jid

            async with session(parleyd, bob, resource="later", plugins=PEP_PLUGINS) as b2:
                later = event_queue(b2, "user_nick_publish")
                await _online(b2)
                event = await next_event(later, b2, "last nick at login")
                assert event["pubsub_event"]["items"]["item"]["nick"]["nick"] == "Alice in Wonderland", event

    run(scenario())


def test_bookmarks_are_private_and_kept(parleyd):
    """XEP-0402 §3: a bookmark is published with publish-options whitelist and max items;
    it comes back to its owner, and a contact may not read it."""
    alice, bob = parleyd.account("alice"), parleyd.account("bob")
    from slixmpp.exceptions import IqError
    from slixmpp.plugins.xep_0060.stanza import Item

    async def scenario():
        async with session(parleyd, alice, plugins=PEP_PLUGINS) as a, \
                session(parleyd, bob, plugins=PEP_PLUGINS) as b:
            await _online(a)
            await _online(b)
            await _friends(a, b)
            options = a.plugin["xep_0004"].make_form(ftype="submit")
            options.add_field(var="FORM_TYPE", ftype="hidden", value="http://jabber.org/protocol/pubsub#publish-options")
            options.add_field(var="pubsub#persist_items", value="true")
            options.add_field(var="pubsub#max_items", value="max")
            options.add_field(var="pubsub#send_last_published_item", value="never")
            options.add_field(var="pubsub#access_model", value="whitelist")
            item = Item()
            item["conference"]["name"] = "The Coven"
            item["conference"]["autojoin"] = True
            item["conference"]["nick"] = "alice"
            result = await a.plugin["xep_0060"].publish(
                None, BOOKMARKS, id="coven@conference.localhost", payload=item["conference"].xml,
                options=options, timeout=TIMEOUT)
            assert result["type"] == "result", result

            items = await a.plugin["xep_0060"].get_items(alice.jid, BOOKMARKS, timeout=TIMEOUT)
            got = list(items["pubsub"]["items"])
            assert [i["id"] for i in got] == ["coven@conference.localhost"], items
            assert got[0]["conference"]["name"] == "The Coven" and got[0]["conference"]["autojoin"] is True

            try:
                await b.plugin["xep_0060"].get_items(alice.jid, BOOKMARKS, timeout=TIMEOUT)
            except IqError as error:
                assert error.iq["error"]["condition"] == "not-allowed", error.iq
            else:
                raise AssertionError("a contact read alice's bookmarks")

    run(scenario())


def test_generic_pep_publish_and_disco(parleyd):
    """XEP-0163 through slixmpp's generic plugin: the account advertises pubsub/pep to its
    contact, an item published with the 'current' id reaches the contact."""
    alice, bob = parleyd.account("alice"), parleyd.account("bob")

    async def scenario():
        async with session(parleyd, alice, plugins=PEP_PLUGINS) as a, \
                session(parleyd, bob, plugins=PEP_PLUGINS) as b:
            nicks = event_queue(b, "user_nick_publish")
            await _online(a)
            await _online(b)
            await _friends(a, b)
            info = await b.plugin["xep_0030"].get_info(jid=alice.jid, timeout=TIMEOUT)
            identities = {(category, kind) for category, kind, *_ in info["disco_info"]["identities"]}
            assert ("pubsub", "pep") in identities, identities
            assert "http://jabber.org/protocol/pubsub#publish" in info["disco_info"]["features"]

            nick = b.plugin["xep_0172"].stanza.UserNick()
            nick["nick"] = "generic"
            result = await a.plugin["xep_0163"].publish(nick, timeout=TIMEOUT)
            assert result["type"] == "result", result
            event = await next_event(nicks, b, "nick notification")
            assert event["pubsub_event"]["items"]["item"]["id"] == "current"

    run(scenario())
