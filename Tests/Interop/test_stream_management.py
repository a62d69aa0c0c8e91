"""XEP-0198 interop with slixmpp's xep_0198 plugin (issue "No message lost"): another
implementation's stream management enables, acknowledges and resumes against parleyd."""

from __future__ import annotations

import asyncio
import socket
import struct

import pytest

from interop_support import TIMEOUT, InteropClient, event_queue, next_event, no_more, run, session, wait_for_log

def test_slixmpp_resumes_after_its_connection_drops(parleyd):
    """Bob's slixmpp enables stream management with resumption. His connection is reset (a
    phone losing its network); the messages Alice sends meanwhile, to his full and to his
    bare JID, wait in his detached session. Bob reconnects and resumes with previd and h: he
    gets each of them exactly once, on the same full JID, with no new session; and his
    resumed stream carries his reply to Alice."""
    alice_account, bob_account = parleyd.account("alice"), parleyd.account("bob")
    phone = f"{bob_account.jid}/phone"

    async def scenario():
        async with session(parleyd, alice_account) as alice:
            bob = InteropClient(parleyd, bob_account, resource="phone", plugins=("xep_0198",))
            enabled = event_queue(bob, "sm_enabled")
            resumed = event_queue(bob, "session_resumed")
            failed = event_queue(bob, "sm_failed")
            try:
                await bob.start_session()
                answer = await next_event(enabled, bob, "<enabled/>")
                assert answer["resume"] in (True, "true", "1") and answer["id"], answer
                await bob.online()
                await alice.online()
                await wait_until_acknowledged(bob)

                await reset_connection(bob)
                await wait_for_log(parleyd, "session detached", "user=bob")

                alice.send_message(mto=phone, mbody="r1 to the phone", mtype="chat")
                alice.send_message(mto=bob_account.jid, mbody="r2 to bob", mtype="chat")
                alice.send_message(mto=bob_account.jid, mbody="r3 to bob", mtype="chat")
                await alice.sync()

                bob.is_disconnected.clear()
                bob.connect(parleyd.host, bob.port)
                await next_event(resumed, bob, "<resumed/>")
                assert failed.empty(), f"resumption failed: {failed.get_nowait()}; {bob.describe()}"
                assert bob.boundjid.full == phone, bob.describe()
                assert bob.events.count("session_start") == 1, f"a new session instead of a resumed one: {bob.describe()}"
                await wait_for_log(parleyd, "session resumed", "user=bob")

                bodies = [(await bob.next_message())["body"] for _ in range(3)]
                assert bodies == ["r1 to the phone", "r2 to bob", "r3 to bob"], bodies
                await no_more(bob.messages, bob, "message after resumption")

                bob.send_message(mto=alice_account.jid, mbody="back online", mtype="chat")
                reply = await alice.next_message()
                assert reply["body"] == "back online" and reply["from"] == phone, reply
                await wait_until_acknowledged(bob)
            finally:
                await close_or_cancel(bob)

    run(scenario())


@pytest.mark.parleyd_config("stream_management:\n  resume_timeout: 1\n")
def test_slixmpp_after_the_resumption_window_gets_what_was_waiting_from_offline_storage(parleyd):
    """With a resumption window of 1 s: Bob's connection is reset, Alice's messages wait in
    his detached session, and the window closes. His resumption then fails with
    item-not-found, slixmpp binds a new session, and the messages that were waiting come from
    offline storage, each once, with their delay stamps."""
    alice_account, bob_account = parleyd.account("alice"), parleyd.account("bob")

    async def scenario():
        async with session(parleyd, alice_account) as alice:
            bob = InteropClient(parleyd, bob_account, resource="phone", plugins=("xep_0198",))
            enabled = event_queue(bob, "sm_enabled")
            failed = event_queue(bob, "sm_failed")
            try:
                await bob.start_session()
                await next_event(enabled, bob, "<enabled/>")
                await bob.online()
                await alice.online()
                await wait_until_acknowledged(bob)

                await reset_connection(bob)
                await wait_for_log(parleyd, "session detached", "user=bob")
                alice.send_message(mto=bob_account.jid, mbody="w1", mtype="chat")
                alice.send_message(mto=bob_account.jid, mbody="w2", mtype="chat")
                await alice.sync()
                await wait_for_log(parleyd, "session ended", "jid=bob@localhost/phone")

                bob.is_disconnected.clear()
                bob.session_started.clear()
                bob.connect(parleyd.host, bob.port)
                refusal = await next_event(failed, bob, "<failed/>")
                assert refusal.xml.find("{urn:ietf:params:xml:ns:xmpp-stanzas}item-not-found") is not None, refusal
                await asyncio.wait_for(bob.session_started.wait(), TIMEOUT)
                await bob.online()
                delivered = [await bob.next_message() for _ in range(2)]
                assert [m["body"] for m in delivered] == ["w1", "w2"], delivered
                for message in delivered:
                    assert message.xml.find("{urn:xmpp:delay}delay") is not None, message
                await no_more(bob.messages, bob, "message after the new session")
            finally:
                await close_or_cancel(bob)

    run(scenario())

async def wait_until_acknowledged(client, timeout: float = TIMEOUT) -> None:
    """Asks for an <a/> and waits until it covers everything the client sent."""
    sm = client.plugin["xep_0198"]
    sm.request_ack()
    deadline = asyncio.get_running_loop().time() + timeout
    while sm.unacked_queue:
        if asyncio.get_running_loop().time() >= deadline:
            raise AssertionError(f"{len(sm.unacked_queue)} stanzas not acknowledged within {timeout}s: {client.describe()}")
        await asyncio.sleep(0.02)


async def reset_connection(client) -> None:
    """A TCP RST with no </stream:stream> (a phone losing its network): the server must keep
    the session for resumption."""
    raw = client.transport.get_extra_info("socket")
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.abort()
    await asyncio.wait_for(client.is_disconnected.wait(), TIMEOUT)


async def close_or_cancel(client) -> None:
    """Ends the client's stream if it has one, or its pending connection attempt."""
    if client.transport:
        await client.close()
    else:
        client.cancel_connection_attempt()
