"""slixmpp (a real, independent XMPP client library) against parleyd."""

from __future__ import annotations

import asyncio
import socket
import struct

import pytest

from interop_support import TIMEOUT, InteropClient, run, session, wait_for_log

PING = "urn:xmpp:ping"
DISCO_INFO = "http://jabber.org/protocol/disco#info"


@pytest.mark.parametrize("direct_tls", [False, True], ids=["starttls", "direct-tls"])
def test_login_ping_disco(parleyd, direct_tls):
    """SCRAM-SHA-256 login over STARTTLS (port c2s) or direct TLS (XEP-0368), then ping and
    disco#info of the server, then a clean close of the stream."""
    alice = parleyd.account("alice")

    async def scenario():
        client = InteropClient(parleyd, alice, direct_tls=direct_tls, mechanism="SCRAM-SHA-256")
        try:
            await client.start_session()
            where = client.describe()

            # TLS: verified against the server's certificate; the right way in.
            tls = client.tls_object
            assert tls is not None, f"session is not encrypted: {where}"
            assert tls.version() in ("TLSv1.2", "TLSv1.3"), tls.version()
            if direct_tls:
                assert tls.selected_alpn_protocol() == "xmpp-client", (
                    f"ALPN: {tls.selected_alpn_protocol()!r}, expected 'xmpp-client' (XEP-0368)")
                assert "starttls" not in client.features, client.features
            else:
                assert "starttls" in client.features, f"STARTTLS was not negotiated: {client.features}"

            # SASL: the forced mechanism was offered and is the one that succeeded (slixmpp
            # checks the server signature of SCRAM, so success means mutual authentication).
            assert "SCRAM-SHA-256" in client.offered_mechanisms, client.offered_mechanisms
            assert client.sasl_mechanism == "SCRAM-SHA-256", client.sasl_mechanism

            # Binding: our requested resource on our account.
            assert client.boundjid.bare == alice.jid, client.boundjid
            assert client.boundjid.resource == "interop", client.boundjid

            # XEP-0199 ping of the server: a result, not an error (slixmpp's ping() would
            # accept an error from one's own server as a pong, so send it by hand).
            pong = await client.plugin["xep_0199"].send_ping(parleyd.domain, timeout=TIMEOUT)
            assert pong["type"] == "result", pong
            assert pong["from"] == parleyd.domain, pong

            # XEP-0030 disco#info of the server.
            info = await client.plugin["xep_0030"].get_info(jid=parleyd.domain, timeout=TIMEOUT)
            features = set(info["disco_info"]["features"])
            assert PING in features, f"{PING} missing from {sorted(features)}"
            assert DISCO_INFO in features, f"{DISCO_INFO} missing from {sorted(features)}"
            identities = {(category, kind) for category, kind, *_ in info["disco_info"]["identities"]}
            assert ("server", "im") in identities, identities

            # Our </stream:stream> is answered by the server's own before the socket closes.
            reason = await client.close()
            assert reason == "End of stream", f"unclean close ({reason!r}): {client.describe()}"
        finally:
            if client.transport:
                client.abort()

    run(scenario())


def test_chat_both_ways(parleyd):
    """Two clients exchange chat messages; each arrives with the sender's full JID."""
    alice, bob = parleyd.account("alice"), parleyd.account("bob")

    async def scenario():
        async with session(parleyd, alice, resource="laptop") as a, \
                session(parleyd, bob, resource="phone", direct_tls=True) as b:
            a.send_presence()
            b.send_presence()
            await a.sync()
            await b.sync()

            a.send_message(mto=b.boundjid.full, mbody="hello bob, from alice", mtype="chat")
            got = await b.next_message()
            assert got["body"] == "hello bob, from alice", got
            assert got["type"] == "chat", got
            assert got["from"].full == f"{alice.jid}/laptop", got
            assert got["to"].full == f"{bob.jid}/phone", got

            # To the bare JID this time: routed to bob's available resource.
            b.send_message(mto=alice.jid, mbody="hi alice <&> ünïcödé", mtype="chat")
            got = await a.next_message()
            assert got["body"] == "hi alice <&> ünïcödé", got
            assert got["from"].full == f"{bob.jid}/phone", got

            assert a.messages.empty() and b.messages.empty(), "unexpected extra messages"

    run(scenario())


def test_wrong_password(parleyd):
    """A wrong password is refused with a SASL failure, and no session starts."""
    alice = parleyd.account("alice")

    async def scenario():
        client = InteropClient(parleyd, alice, password="not-" + alice.password, mechanism="SCRAM-SHA-256")
        try:
            await client.wait_auth_failure()
            assert client.auth_failures == ["not-authorized"], client.describe()
        finally:
            await client.close()

    run(scenario())


@pytest.mark.parametrize("drop", ["fin", "reset"])
def test_dropped_connection_ends_session(parleyd, drop):
    """A client whose connection just drops is taken out of routing: "fin" closes TCP with
    no TLS close_notify and no </stream:stream> (what go-sendxmpp does on exit), "reset"
    aborts it with a TCP RST (a client losing its network). An iq to its full JID then
    bounces with service-unavailable, as there is no such resource (RFC 6121 §8.5.3.2.1),
    and a message to it is kept for the account's next session (offline storage) instead
    of vanishing into a dead one."""
    alice, bob = parleyd.account("alice"), parleyd.account("bob")

    async def scenario():
        async with session(parleyd, alice, resource="desk") as a:
            b = InteropClient(parleyd, bob, resource="gone")
            try:
                await b.start_session()
                b.send_presence()
                await b.sync()
                raw = b.transport.get_extra_info("socket")
                if drop == "fin":
                    raw.shutdown(socket.SHUT_WR)  # FIN under the TLS layer: no close_notify
                else:
                    raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    b.abort()  # close with linger 0: RST
                try:
                    await wait_for_log(parleyd, "session ended", f"{bob.jid}/gone", timeout=5)
                except AssertionError as error:
                    raise AssertionError(f"parleyd did not end the session of a dropped connection: {error}") from None
            finally:
                b.abort()
            await asyncio.wait_for(b.is_disconnected.wait(), TIMEOUT)

            assert await a.ping_error(f"{bob.jid}/gone") == "service-unavailable"
            a.send_message(mto=f"{bob.jid}/gone", mbody="anyone there?", mtype="chat")
            await a.sync()

        async with session(parleyd, bob, resource="back") as b:
            b.send_presence()
            message = await b.next_message()
            assert message["body"] == "anyone there?", message
            assert message.xml.find("{urn:xmpp:delay}delay") is not None, message

    run(scenario())


def test_shutdown_with_client_online(parleyd):
    """SIGTERM while a client is online: the client gets <system-shutdown/> and the server
    exits with status 0 within its grace period (the fixture checks the exit)."""
    alice = parleyd.account("alice")

    async def scenario():
        async with session(parleyd, alice) as a:
            a.send_presence()
            await a.sync()
            stopping = asyncio.get_running_loop().run_in_executor(None, parleyd.stop)
            await asyncio.wait_for(a.is_disconnected.wait(), TIMEOUT)
            assert a.stream_errors == ["system-shutdown"], a.describe()
            await stopping

    run(scenario())
