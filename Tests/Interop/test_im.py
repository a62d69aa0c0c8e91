"""Instant messaging with slixmpp against parleyd (issue "Server IM"): presence subscriptions
(RFC 6121 §3), presence, chat, offline messages (XEP-0160, XEP-0203), roster versioning
(XEP-0237), blocking (XEP-0191) and the single-device policy."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

import pytest

from interop_support import TIMEOUT, InteropClient, no_more, roster_items, run, session, wait_until

DELAY = "urn:xmpp:delay"


def _item(client, contact: str) -> dict:
    """slixmpp's view of one roster item (what its roster made of the pushes)."""
    item = client.client_roster[contact]
    return {"subscription": item["subscription"], "pending_out": item["pending_out"]}


def _last_push(client, contact: str) -> dict | None:
    for iq in reversed(client.roster_pushes):
        items = roster_items(iq)
        if contact in items:
            return items[contact]
    return None


async def _roster_item_is(client, contact: str, subscription: str, ask: str = "") -> None:
    """The last roster push for the contact says so, and so does slixmpp's roster."""
    def pushed():
        push = _last_push(client, contact)
        return push is not None and push["subscription"] == subscription and push["ask"] == ask
    await wait_until(pushed, f"{client.boundjid.bare}: push of {contact} with subscription "
                     f"{subscription!r}, ask {ask!r} (last push {_last_push(client, contact)})",
                     describe=client.describe)
    assert _item(client, contact) == {"subscription": subscription, "pending_out": ask == "subscribe"}, (
        _item(client, contact), client.describe())


async def _fresh_roster(client) -> dict[str, dict]:
    """The roster as the server has it, asked for without a version."""
    result = await client.fetch_roster()
    assert result["type"] == "result", result
    return roster_items(result)


def test_request_with_message_accepted(parleyd):
    """alice asks bob with a message; bob's app (no auto-answer) approves and asks back;
    alice's slixmpp approves automatically. Both rosters end with 'both' (pushes, slixmpp's
    roster and a fresh roster get), presence flows both ways, then chat does, and bob's
    disconnection reaches alice as unavailable presence."""
    alice, bob = parleyd.account("alice"), parleyd.account("bob")
    request_text = "Hi Bob, it's Alice from the conference — add me?"

    async def scenario():
        async with session(parleyd, alice, resource="laptop", auto_authorize=True, auto_subscribe=False) as a, \
                session(parleyd, bob, resource="phone", auto_authorize=None, auto_subscribe=False) as b:
            await a.online()
            await b.online()
            assert "rosterver" in a.features, f"XEP-0237 not advertised: {a.features}"

            a.send_presence(pto=bob.jid, ptype="subscribe", pstatus=request_text)
            request = await b.wait_presence("subscribe", alice.jid)
            assert request["status"] == request_text, request
            assert request["from"].full == alice.jid, f"a request comes from the bare JID: {request}"
            await _roster_item_is(a, bob.jid, "none", ask="subscribe")
            assert alice.jid not in await _fresh_roster(b), "a pending request is no roster item (yet)"

            # bob's application decides: approve, and ask back (raw presences, so that
            # slixmpp's roster only learns the outcome from the server's pushes).
            b.send_presence(pto=alice.jid, ptype="subscribed")
            b.send_presence(pto=alice.jid, ptype="subscribe")
            await a.wait_presence("subscribed", bob.jid)
            # §3.1.5: the new subscriber gets the contact's current presence.
            await a.wait_presence("available", f"{bob.jid}/phone")
            # alice's slixmpp approves bob's request by itself (auto_authorize).
            await a.wait_presence("subscribe", bob.jid)
            await b.wait_presence("subscribed", alice.jid)
            await b.wait_presence("available", f"{alice.jid}/laptop")

            await _roster_item_is(a, bob.jid, "both")
            await _roster_item_is(b, alice.jid, "both")
            for client, contact in ((a, bob.jid), (b, alice.jid)):
                items = await _fresh_roster(client)
                assert contact in items, (items, client.describe())
                assert items[contact]["subscription"] == "both", items
                assert items[contact]["ask"] == "", items

            # Chat both ways, bodies exact.
            a.send_message(mto=bob.jid, mbody="Glad we're connected! ✓ <b>&amp;</b>", mtype="chat")
            got = await b.next_message()
            assert (got["body"], got["type"], got["from"].full) == (
                "Glad we're connected! ✓ <b>&amp;</b>", "chat", f"{alice.jid}/laptop"), got
            b.send_message(mto=f"{alice.jid}/laptop", mbody="Me too.\nSecond line.", mtype="chat")
            got = await a.next_message()
            assert (got["body"], got["type"], got["from"].full) == (
                "Me too.\nSecond line.", "chat", f"{bob.jid}/phone"), got

            # bob goes: alice sees him unavailable.
            await b.close()
            await a.wait_presence("unavailable", f"{bob.jid}/phone")

    run(scenario())


def test_request_declined(parleyd):
    """carol asks bob; bob declines. carol learns it, her item for bob is 'none' without
    ask, bob keeps no pending request (not re-delivered at his next login), and no presence
    of bob reaches carol."""
    bob, carol = parleyd.account("bob"), parleyd.account("carol")

    async def scenario():
        async with session(parleyd, carol, auto_authorize=None, auto_subscribe=False) as c:
            await c.online()
            async with session(parleyd, bob, resource="phone", auto_authorize=None, auto_subscribe=False) as b:
                await b.online()
                c.send_presence(pto=bob.jid, ptype="subscribe", pstatus="carol here, let me in")
                request = await b.wait_presence("subscribe", carol.jid)
                assert request["status"] == "carol here, let me in", request
                await _roster_item_is(c, bob.jid, "none", ask="subscribe")

                b.send_presence(pto=carol.jid, ptype="unsubscribed")
                await c.wait_presence("unsubscribed", bob.jid)
                await _roster_item_is(c, bob.jid, "none", ask="")
                items = await _fresh_roster(c)
                assert items.get(bob.jid, {}).get("subscription") == "none", items
                assert items[bob.jid]["ask"] == "", items

                items = await _fresh_roster(b)
                assert carol.jid not in items or (items[carol.jid]["subscription"], items[carol.jid]["ask"]) == ("none", ""), items

                # bob changes his presence: carol is not subscribed, so it does not reach her.
                b.send_presence(pstatus="busy declining", pshow="dnd")
                await b.sync()

            # At bob's next login the declined request is not delivered again.
            async with session(parleyd, bob, resource="tablet", auto_authorize=None, auto_subscribe=False) as b2:
                await b2.online()
                await c.sync()
                await asyncio.sleep(0.5)
                assert not b2.presences_from(carol.jid, "subscribe"), b2.describe()
            await c.sync()
            assert not c.presences_from(bob.jid, "available", "dnd", "away", "chat", "xa", "unavailable"), (
                f"carol saw bob's presence: {c.describe()}")

    run(scenario())


@pytest.mark.parleyd_accounts("dave", "erin")
def test_request_to_offline_user_redelivered_until_answered(parleyd):
    """dave asks erin while she is offline: the request, with its message, reaches her at
    her next login, and at the one after while she has not answered; once she has, no more."""
    dave, erin = parleyd.account("dave"), parleyd.account("erin")
    text = "Dave from the book club — accept?"

    def login(resource: str):
        return session(parleyd, erin, resource=resource, auto_authorize=None, auto_subscribe=False)

    async def scenario():
        async with session(parleyd, dave, auto_authorize=None, auto_subscribe=False) as d:
            await d.online()
            d.send_presence(pto=erin.jid, ptype="subscribe", pstatus=text)
            await _roster_item_is(d, erin.jid, "none", ask="subscribe")

            for attempt in ("first", "second"):
                async with login(attempt) as e:
                    await e.online()
                    request = await e.wait_presence("subscribe", dave.jid)
                    assert request["status"] == text, (attempt, request)
                    await asyncio.sleep(0.3)
                    assert len(e.presences_from(dave.jid, "subscribe")) == 1, (attempt, e.describe())

            async with login("third") as e:
                await e.online()
                await e.wait_presence("subscribe", dave.jid)
                e.send_presence(pto=dave.jid, ptype="subscribed")
                await d.wait_presence("subscribed", erin.jid)
                await _roster_item_is(d, erin.jid, "to")
                await _roster_item_is(e, dave.jid, "from")

            async with login("fourth") as e:
                await e.online()
                await d.sync()
                await asyncio.sleep(0.5)
                assert not e.presences_from(dave.jid, "subscribe"), f"answered request re-delivered: {e.describe()}"
                # dave is subscribed to erin now: her presence reaches him.
                await d.wait_presence("available", f"{erin.jid}/fourth")

    run(scenario())


async def _send_numbered(client, to: str, count: int, prefix: str) -> list[str]:
    bodies = [f"{prefix} #{n} of {count}" for n in range(1, count + 1)]
    for body in bodies:
        client.send_message(mto=to, mbody=body, mtype="chat")
    await client.sync()
    return bodies


async def _receive_offline(parleyd, account, sender_full: str, bodies: list[str], sent_between):
    """Logs in, becomes available and checks that exactly these messages arrive, in order,
    each with a server delay stamp in the sending interval (second precision)."""
    earliest, latest = sent_between
    async with session(parleyd, account, resource="back", plugins=("xep_0203",)) as b:
        await b.online()
        for n, body in enumerate(bodies, start=1):
            got = await b.next_message()
            assert got["body"] == body, f"message {n}: {got['body']!r}, expected {body!r}"
            assert got["type"] == "chat" and got["from"].full == sender_full, got
            assert got.xml.find(f"{{{DELAY}}}delay") is not None, f"no XEP-0203 delay: {got}"
            assert got["delay"]["from"] == parleyd.domain, got
            stamp = got["delay"]["stamp"]
            assert stamp is not None and stamp.tzinfo is not None, got
            assert earliest - timedelta(seconds=1) <= stamp <= latest + timedelta(seconds=1), (
                f"stamp {stamp} not within {earliest}..{latest}: {got}")
        await no_more(b.messages, b, "message after the stored ones")


def test_offline_messages_in_order_with_delay(parleyd):
    """Five chat messages to offline bob arrive in order at his next available presence,
    each with a delay stamp from the server; they are not delivered again after that."""
    alice, bob = parleyd.account("alice"), parleyd.account("bob")

    async def scenario():
        async with session(parleyd, alice, resource="laptop") as a:
            await a.online()
            earliest = datetime.now(timezone.utc)
            bodies = await _send_numbered(a, bob.jid, 5, "while you were out")
            latest = datetime.now(timezone.utc)
            assert a.message_errors.empty(), a.describe()
            await _receive_offline(parleyd, bob, f"{alice.jid}/laptop", bodies, (earliest, latest))

        async with session(parleyd, bob, resource="again") as b:
            await b.online()
            await no_more(b.messages, b, "message delivered a second time")

    run(scenario())


def test_offline_messages_survive_restart(parleyd):
    """Messages stored for offline bob are delivered after a restart of parleyd, in order."""
    alice, bob = parleyd.account("alice"), parleyd.account("bob")

    async def scenario():
        async with session(parleyd, alice, resource="laptop") as a:
            await a.online()
            earliest = datetime.now(timezone.utc)
            bodies = await _send_numbered(a, bob.jid, 3, "before the restart")
            latest = datetime.now(timezone.utc)
            await a.close()
        await asyncio.get_running_loop().run_in_executor(None, parleyd.restart)
        await _receive_offline(parleyd, bob, f"{alice.jid}/laptop", bodies, (earliest, latest))

    run(scenario())


def test_message_while_coming_online_is_not_stranded(parleyd):
    """A message to bob's bare JID sent just as a session of his becomes available reaches
    that session, whether it was routed live or via offline storage; none stays stored until
    a later login (a write to the store finishing after the session's initial delivery had
    read it used to strand the message there)."""
    alice, bob = parleyd.account("alice"), parleyd.account("bob")

    async def scenario():
        async with session(parleyd, alice, resource="laptop") as a:
            await a.online()
            for n in range(12):
                b = InteropClient(parleyd, bob, resource=f"r{n}")
                try:
                    await b.start_session()
                    b.send_presence()
                    a.send_message(mto=bob.jid, mbody=f"race {n}", mtype="chat")
                    got = await b.next_message(timeout=5)
                    assert got["body"] == f"race {n}", got
                finally:
                    await b.close()
            async with session(parleyd, bob, resource="last") as b:
                await b.online()
                await no_more(b.messages, b, "message left in offline storage")

    run(scenario())


def test_roster_versioning(parleyd):
    """XEP-0237: the roster result carries 'ver'; asked with the current version the server
    answers with an empty result; asked with an older one, with an empty result plus the
    changes as pushes, or with the whole roster. slixmpp's own get_roster() uses the
    version it cached."""
    alice, carol = parleyd.account("alice"), parleyd.account("carol")

    async def scenario():
        async with session(parleyd, alice) as a:
            await a.online()
            assert "rosterver" in a.features, a.features
            first = await a.fetch_roster()
            v1 = first["roster"]["ver"]
            assert v1, f"no version in the roster result: {first}"

            # A roster set: a push with a new version.
            iq = a.Iq()
            iq["type"] = "set"
            iq["roster"]["items"] = {carol.jid: {"name": "Carol", "subscription": "none", "groups": ["Friends"]}}
            await iq.send(timeout=TIMEOUT)
            await wait_until(lambda: carol.jid in a.client_roster and a.client_roster[carol.jid]["name"] == "Carol",
                             "roster push for carol", describe=a.describe)
            push = a.roster_pushes[-1]
            v2 = push["roster"]["ver"]
            assert v2 and v2 != v1, push
            assert a.client_roster.version == v2, (a.client_roster.version, v2)

            current = await a.fetch_roster(ver=v2)
            assert current["type"] == "result", current
            assert not roster_items(current), f"items sent although the client is up to date: {current}"

            # slixmpp's own get_roster() with its cached version: nothing new either.
            cached = await a.get_roster(timeout=TIMEOUT)
            assert not roster_items(cached), cached

            pushes_before = len(a.roster_pushes)
            older = await a.fetch_roster(ver=v1)
            items = roster_items(older)
            if items:  # the whole roster, with the current version
                assert older["roster"]["ver"] == v2, older
                assert items[carol.jid]["name"] == "Carol", items
            else:  # the change as a push
                await wait_until(lambda: len(a.roster_pushes) > pushes_before, "push of the change since v1",
                                 describe=a.describe)
                change = a.roster_pushes[pushes_before]
                assert carol.jid in roster_items(change) and change["roster"]["ver"] == v2, change

        # A later login that kept the version: no items.
        async with session(parleyd, alice, resource="later") as a2:
            result = await a2.fetch_roster(ver=v2)
            assert result["type"] == "result" and not roster_items(result), result

    run(scenario())


def test_blocking(parleyd):
    """XEP-0191: bob blocks carol; her message to him bounces with service-unavailable,
    his to her with not-acceptable; unblocking restores both ways."""
    bob, carol = parleyd.account("bob"), parleyd.account("carol")

    async def scenario():
        async with session(parleyd, bob, resource="phone", plugins=("xep_0191",)) as b, \
                session(parleyd, carol, resource="desk") as c:
            await b.online()
            await c.online()

            await b.plugin["xep_0191"].block(carol.jid, timeout=TIMEOUT)
            blocked = await b.plugin["xep_0191"].get_blocked_jids(timeout=TIMEOUT)
            assert {j.bare for j in blocked} == {carol.jid}, blocked

            c.send_message(mto=bob.jid, mbody="can you hear me?", mtype="chat")
            error = await c.next_message_error()
            assert error["error"]["condition"] == "service-unavailable", error
            c.send_message(mto=f"{bob.jid}/phone", mbody="and now?", mtype="chat")
            error = await c.next_message_error()
            assert error["error"]["condition"] == "service-unavailable", error

            b.send_message(mto=f"{carol.jid}/desk", mbody="you are blocked", mtype="chat")
            error = await b.next_message_error()
            assert error["error"]["condition"] == "not-acceptable", error
            # XEP-0191 §3.6: the error says why, with the blocking application condition.
            assert error.xml.find(".//{urn:xmpp:blocking:errors}blocked") is not None, error
            await no_more(b.messages, b, "message from the blocked contact", settle=0.2)
            await no_more(c.messages, c, "message from the blocking user", settle=0.2)

            await b.plugin["xep_0191"].unblock(carol.jid, timeout=TIMEOUT)
            assert not await b.plugin["xep_0191"].get_blocked_jids(timeout=TIMEOUT)
            c.send_message(mto=bob.jid, mbody="hello again", mtype="chat")
            got = await b.next_message()
            assert (got["body"], got["from"].full) == ("hello again", f"{carol.jid}/desk"), got
            b.send_message(mto=carol.jid, mbody="welcome back", mtype="chat")
            got = await c.next_message()
            assert (got["body"], got["from"].full) == ("welcome back", f"{bob.jid}/phone"), got
            assert b.message_errors.empty() and c.message_errors.empty(), (b.describe(), c.describe())

    run(scenario())


@pytest.mark.parleyd_config("sessions:\n  single_device: true\n")
def test_single_device_replaces_first_login(parleyd):
    """With sessions.single_device, a second login of alice ends the first with <conflict/>
    saying another device logged in; a message to her bare JID right after reaches the new
    session only."""
    alice, bob = parleyd.account("alice"), parleyd.account("bob")

    async def scenario():
        async with session(parleyd, bob) as b, session(parleyd, alice, resource="laptop") as first:
            await b.online()
            await first.online()
            second = InteropClient(parleyd, alice, resource="phone")
            try:
                await second.start_session()
                second.send_presence()
                b.send_message(mto=alice.jid, mbody="which device are you on?", mtype="chat")

                await asyncio.wait_for(first.is_disconnected.wait(), TIMEOUT)
                assert first.stream_errors == ["conflict"], first.describe()
                assert "another device" in first.stream_error_texts[0], first.stream_error_texts

                got = await second.next_message()
                assert (got["body"], got["from"].bare) == ("which device are you on?", bob.jid), got
                assert first.messages.empty(), f"the replaced session got a message: {first.describe()}"
                assert not second.stream_errors and not second.is_disconnected.is_set(), second.describe()
            finally:
                await second.close()

    run(scenario())
