"""A small slixmpp client for the interop tests, with every wait bounded.

The client trusts exactly the server's self-signed certificate (as its only CA) and checks
that it is valid for the XMPP domain, so TLS is verified, not merely switched on.
"""

from __future__ import annotations

import asyncio
import ssl
from contextlib import asynccontextmanager

import slixmpp

TIMEOUT = 10.0  # seconds for any one network step


class InteropClient(slixmpp.ClientXMPP):
    """A slixmpp client that records what happened, for assertions and failure messages."""

    def __init__(self, server, account, *, resource: str = "interop", direct_tls: bool = False,
                 mechanism: str | None = None, password: str | None = None,
                 plugins: tuple[str, ...] = (), auto_authorize: bool | None = True,
                 auto_subscribe: bool = True):
        """auto_authorize/auto_subscribe: slixmpp's answer to a subscription request (its
        defaults: approve and ask back; None leaves the decision to the test)."""
        super().__init__(f"{account.jid}/{resource}",
                         account.password if password is None else password,
                         sasl_mech=mechanism)
        self.auto_authorize = auto_authorize
        self.auto_subscribe = auto_subscribe
        self.parleyd = server
        self.direct_tls = direct_tls
        self.port = server.direct_tls_port if direct_tls else server.c2s_port

        context = ssl.create_default_context(cafile=str(server.cert_path))
        context.check_hostname = True  # against server_hostname = the domain, 'localhost'
        context.verify_mode = ssl.CERT_REQUIRED
        if direct_tls:
            context.set_alpn_protocols(["xmpp-client"])  # XEP-0368
        self.ssl_context = context
        # Only the one way in under test: no fallback to the other port kind or plaintext.
        self.enable_direct_tls = direct_tls
        self.enable_starttls = not direct_tls
        self.enable_plaintext = False

        self.register_plugin("xep_0030")  # service discovery
        self.register_plugin("xep_0199", {"keepalive": False})  # ping
        for plugin in plugins:
            self.register_plugin(plugin)

        self.events: list[str] = []  # what happened, in order, for failure messages
        self.auth_failures: list[str] = []  # SASL failure conditions
        self.messages: asyncio.Queue = asyncio.Queue()
        self.message_errors: asyncio.Queue = asyncio.Queue()
        self.session_started = asyncio.Event()
        self.auth_given_up = asyncio.Event()
        self.is_disconnected = asyncio.Event()
        self.disconnect_reasons: list[object] = []

        self.add_event_handler("session_start", self._on_session_start)
        self.add_event_handler("failed_auth", self._on_failed_auth)
        self.add_event_handler("failed_all_auth", self._on_failed_all_auth)
        self.add_event_handler("disconnected", self._on_disconnected)
        self.add_event_handler("message", self._on_message)
        self.add_event_handler("message_error", self._on_message_error)
        self.stream_errors: list[str] = []
        self.stream_error_texts: list[str] = []
        self.add_event_handler("stream_error", self._on_stream_error)
        self.presences: list = []  # every presence received, in order
        self._unclaimed_presences: list = []  # those no wait_presence() has returned yet
        self._presence_arrived = asyncio.Event()
        self.add_event_handler("presence", self._on_presence)
        self.roster_pushes: list = []  # roster pushes (iq type set) received, in order
        self.add_event_handler("roster_update", self._on_roster_update)
        for name in ("connected", "connection_failed", "tls_success", "auth_success",
                     "session_bind", "ssl_invalid_chain", "killed"):
            self.add_event_handler(name, self._recorder(name))

    # -- event recording

    def _recorder(self, name):
        def record(data=None):
            self.events.append(name if data is None else f"{name}: {data}")
        return record

    def _on_session_start(self, _event):
        self.events.append("session_start")
        self.session_started.set()

    def _on_failed_auth(self, stanza):
        condition = stanza["condition"] if stanza is not None else "?"
        self.auth_failures.append(condition)
        self.events.append(f"failed_auth: {condition}")

    def _on_failed_all_auth(self, _event=None):
        self.events.append("failed_all_auth")
        self.auth_given_up.set()

    def _on_disconnected(self, reason):
        self.events.append(f"disconnected: {reason}")
        self.disconnect_reasons.append(reason)
        self.is_disconnected.set()

    def _on_message(self, message):
        self.events.append(f"message from {message['from']}")
        self.messages.put_nowait(message)

    def _on_stream_error(self, error):
        self.stream_errors.append(error["condition"])
        self.stream_error_texts.append(error["text"])
        self.events.append(f"stream_error: {error['condition']}")

    def _on_message_error(self, message):
        self.events.append(f"message error from {message['from']}: {message['error']['condition']}")
        self.message_errors.put_nowait(message)

    def _on_presence(self, presence):
        self.events.append(f"presence {presence['type']} from {presence['from']}")
        self.presences.append(presence)
        self._unclaimed_presences.append(presence)
        self._presence_arrived.set()

    def _on_roster_update(self, iq):
        if iq["type"] == "set":
            self.events.append(f"roster push {dict(roster_items(iq))}")
            self.roster_pushes.append(iq)

    def describe(self) -> str:
        return f"{self.boundjid.full or self.requested_jid} via port {self.port}: events {self.events}"

    # -- facts about the connection

    @property
    def sasl_mechanism(self) -> str | None:
        mech = self.plugin["feature_mechanisms"].mech
        return mech.name if mech is not None else None

    @property
    def offered_mechanisms(self) -> set[str]:
        return set(self.plugin["feature_mechanisms"].mech_list)

    @property
    def tls_object(self) -> ssl.SSLObject | None:
        return self.transport.get_extra_info("ssl_object") if self.transport else None

    # -- bounded steps

    async def start_session(self, timeout: float = TIMEOUT) -> None:
        """Connects, negotiates TLS, authenticates and binds; fails with the event trail."""
        self.connect(self.parleyd.host, self.port)
        waits = [asyncio.ensure_future(e.wait()) for e in
                 (self.session_started, self.auth_given_up, self.is_disconnected)]
        try:
            await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()
        if not self.session_started.is_set():
            self.cancel_connection_attempt()  # no reconnect loop behind the test's back
            raise AssertionError(f"no session within {timeout}s: {self.describe()}")

    async def wait_auth_failure(self, timeout: float = TIMEOUT) -> None:
        """Connects expecting authentication to fail."""
        self.connect(self.parleyd.host, self.port)
        try:
            await asyncio.wait_for(self.auth_given_up.wait(), timeout)
        except asyncio.TimeoutError:
            raise AssertionError(f"authentication did not fail within {timeout}s: {self.describe()}") from None
        finally:
            self.cancel_connection_attempt()
        assert not self.session_started.is_set(), f"a session started with a wrong password: {self.describe()}"

    async def sync(self, timeout: float = TIMEOUT) -> None:
        """A ping round trip to the server: everything sent before it has been handled
        (the server processes one stream's stanzas in order)."""
        pong = await self.plugin["xep_0199"].send_ping(self.boundjid.domain, timeout=timeout)
        assert pong["type"] == "result", pong

    async def ping_error(self, jid: str, timeout: float = TIMEOUT) -> str:
        """Pings `jid` expecting an error; returns its condition. An iq to a full JID with no
        session is answered service-unavailable (RFC 6121 §8.5.3.2.1) — unlike a message,
        which goes to the account's other resources or offline storage."""
        from slixmpp.exceptions import IqError
        try:
            reply = await self.plugin["xep_0199"].send_ping(jid, timeout=timeout)
        except IqError as error:
            return error.iq["error"]["condition"]
        raise AssertionError(f"a ping to {jid} was answered {reply['type']}: {self.describe()}")

    async def online(self, timeout: float = TIMEOUT) -> None:
        """What an IM client does after login: fetches the roster (which also asks for roster
        pushes), sends initial presence, and makes sure the server has handled both."""
        await self.get_roster(timeout=timeout)
        self.send_presence()
        await self.sync(timeout)

    async def wait_presence(self, ptype: str, sender: str, timeout: float = TIMEOUT):
        """The first presence of this type from this JID (bare: any of its resources; full:
        that one) not returned before, waiting for it if need be."""
        def matches(presence) -> bool:
            if presence["type"] != ptype:
                return False
            return presence["from"].full == sender if "/" in sender else presence["from"].bare == sender
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            for presence in self._unclaimed_presences:
                if matches(presence):
                    self._unclaimed_presences.remove(presence)
                    return presence
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                raise AssertionError(f"no presence {ptype} from {sender} within {timeout}s: {self.describe()}")
            self._presence_arrived.clear()
            try:
                await asyncio.wait_for(self._presence_arrived.wait(), remaining)
            except asyncio.TimeoutError:
                pass

    def presences_from(self, sender_bare: str, *types: str) -> list:
        """Every presence received from any resource of this bare JID (of these types)."""
        return [p for p in self.presences if p["from"].bare == sender_bare and (not types or p["type"] in types)]

    async def fetch_roster(self, ver: str | None = None, timeout: float = TIMEOUT):
        """A roster get sent as is (slixmpp's get_roster() adds the cached 'ver' itself);
        returns the result iq, whose items slixmpp's roster does not see."""
        iq = self.Iq()
        iq["type"] = "get"
        iq.enable("roster")
        if ver is not None:
            iq["roster"]["ver"] = ver
        return await iq.send(timeout=timeout)

    async def next_message(self, timeout: float = TIMEOUT):
        try:
            return await asyncio.wait_for(self.messages.get(), timeout)
        except asyncio.TimeoutError:
            raise AssertionError(f"no message within {timeout}s: {self.describe()}") from None

    async def next_message_error(self, timeout: float = TIMEOUT):
        try:
            return await asyncio.wait_for(self.message_errors.get(), timeout)
        except asyncio.TimeoutError:
            raise AssertionError(f"no message error within {timeout}s: {self.describe()}") from None

    async def close(self, timeout: float = TIMEOUT) -> object:
        """Ends the stream and waits for the TCP connection to go; returns the reason, which
        is 'End of stream' when the server closed its stream in answer (a clean close)."""
        if self.is_disconnected.is_set() or not self.transport:
            self.cancel_connection_attempt()
            return self.disconnect_reasons[-1] if self.disconnect_reasons else None
        self.disconnect(wait=timeout / 2)
        try:
            await asyncio.wait_for(self.is_disconnected.wait(), timeout)
        except asyncio.TimeoutError:
            self.abort()
            raise AssertionError(f"not disconnected within {timeout}s: {self.describe()}") from None
        return self.disconnect_reasons[-1]


def event_queue(client, event: str) -> asyncio.Queue:
    """Every `event` the client raises from now on, in order."""
    queue: asyncio.Queue = asyncio.Queue()
    client.add_event_handler(event, queue.put_nowait)
    return queue


async def next_event(queue: asyncio.Queue, client, what: str, timeout: float = TIMEOUT):
    """The next item of an event_queue, failing with the client's event trail."""
    try:
        return await asyncio.wait_for(queue.get(), timeout)
    except asyncio.TimeoutError:
        raise AssertionError(f"no {what} within {timeout}s: {client.describe()}") from None


def roster_items(iq) -> dict[str, dict]:
    """The items of a roster result or push, by bare JID as a string."""
    return {str(jid): dict(item) for jid, item in iq["roster"]["items"].items()}


async def wait_until(condition, what: str, timeout: float = TIMEOUT, describe=lambda: ""):
    """Polls condition() until it is true; fails saying what was awaited."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() >= deadline:
            raise AssertionError(f"not within {timeout}s: {what}. {describe()}")
        await asyncio.sleep(0.02)


async def no_more(queue: asyncio.Queue, client, what: str, settle: float = 0.5):
    """After a server round trip and a short settle time, nothing more is in this queue."""
    await client.sync()
    await asyncio.sleep(settle)
    assert queue.empty(), f"unexpected {what}: {queue.get_nowait()}; {client.describe()}"


@asynccontextmanager
async def session(server, account, **options):
    """An InteropClient with a bound session, always disconnected afterwards."""
    client = InteropClient(server, account, **options)
    try:
        await client.start_session()
        yield client
    finally:
        if client.transport:
            try:
                await client.close()
            except AssertionError:
                pass


async def wait_for_log(server, *needles: str, timeout: float = TIMEOUT) -> str:
    """Waits until one parleyd log line contains every needle; returns that line."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        for line in server.log().splitlines():
            if all(needle in line for needle in needles):
                return line
        if asyncio.get_running_loop().time() >= deadline:
            raise AssertionError(f"no parleyd log line with {needles!r} within {timeout}s")
        await asyncio.sleep(0.05)


def run(coroutine, timeout: float = 45.0):
    """Runs one test's coroutine in a fresh event loop, bounded as a whole."""
    async def bounded():
        return await asyncio.wait_for(coroutine, timeout)
    return asyncio.run(bounded())
