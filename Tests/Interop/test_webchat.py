"""The web chat parleyd serves at /chat/, in a real browser (headless Chromium through
Selenium, started once per session by browser_support.py), against slixmpp peers: login with
SCRAM-SHA-256 over the WebSocket endpoint found through host-meta, a friend request accepted,
the contact's vCard name and avatar, messages both ways with a receipt, a room, a file through
XEP-0363, a dropped socket and the reconnection, history paged through MAM. Also the files'
headers, the switch that turns the chat off, and Debian's strophe.js on the same endpoint."""

from __future__ import annotations

import json
import socket
import threading
import urllib.parse
import urllib.request

import pytest
from slixmpp import JID

from browser_support import browser, copy_strophe  # noqa: F401 (browser: the session's Chromium)
from interop_support import TIMEOUT, event_queue, next_event, run, session
from webchat_support import CHAT_CONFIG, chat_url, http_base, png, request, static_server, trusting, websocket_url

pytestmark = pytest.mark.parleyd_config(CHAT_CONFIG)


def _q(text: str) -> str:
    """A string as a JavaScript literal."""
    return json.dumps(text)


def _contact(jid: str) -> str:
    return f"document.querySelector('#contacts li[data-jid={_q(jid)}]')"


def _message_shown(text: str, outgoing: bool | None = None) -> str:
    kind = "" if outgoing is None else (".outgoing" if outgoing else ":not(.outgoing)")
    return f"[...document.querySelectorAll('#messages li.message{kind} .body')].some(b => b.textContent === {_q(text)})"


async def _log_in(page, url: str, account) -> None:
    page.open(url)
    page.fill("#login-jid", account.jid)
    page.fill("#login-password", account.password)
    page.click("#login-button")
    outcome = await page.wait(
        "document.getElementById('login-error').textContent || (!document.getElementById('app').hidden"
        " && document.getElementById('status-line').dataset.status === 'online' && 'online')",
        f"{account.jid} logged in to the web chat")
    assert outcome == "online", f"the login of {account.jid} failed: {outcome}. {page.describe()}"


async def _next_with_body(client, what: str):
    """The next message with a body (receipts and the like are skipped)."""
    while True:
        message = await client.next_message()
        if message["body"]:
            return message


def test_the_chat_files_are_served_with_their_types_caching_and_csp(parleyd):
    redirect = request(parleyd, "/chat")
    assert redirect.status == 308 and redirect.getheader("Location") == "/chat/", (redirect.status, redirect.headers)

    page = request(parleyd, "/chat/")
    assert page.status == 200 and page.getheader("Content-Type") == "text/html; charset=utf-8", page.headers
    assert b'<script type="module" src="ui.js">' in page.body
    csp = page.getheader("Content-Security-Policy")
    port = http_base(parleyd).rstrip("/").rsplit(":", 1)[1]
    # Own scripts only; the network only to this server's WebSocket and upload origins.
    assert "default-src 'none'" in csp and "script-src 'self';" in csp and "'unsafe-inline'" not in csp, csp
    assert f"connect-src 'self' wss://localhost:{port} https://localhost:{port};" in csp, csp
    assert "frame-ancestors 'none'" in csp, csp
    assert page.getheader("Cache-Control") == "no-cache" and page.getheader("X-Content-Type-Options") == "nosniff"

    script = request(parleyd, "/chat/connection.js")
    assert script.status == 200 and script.getheader("Content-Type") == "text/javascript; charset=utf-8"
    assert b"urn:xmpp:alt-connections:websocket" in script.body
    assert request(parleyd, "/chat/chat.css").getheader("Content-Type") == "text/css; charset=utf-8"
    etag = script.getheader("ETag")
    again = request(parleyd, "/chat/connection.js", {"If-None-Match": etag})
    assert again.status == 304 and again.body == b"", again.status

    missing = request(parleyd, "/chat/nothing.js")
    assert missing.status == 404 and b"No such file" in missing.body


@pytest.mark.parleyd_config("webchat:\n  enabled: false\n")
def test_the_chat_can_be_switched_off(parleyd):
    assert request(parleyd, "/chat/").status == 404
    assert "web chat:" not in parleyd.stdout_path.read_text()
    # The WebSocket endpoint stays.
    assert request(parleyd, "/.well-known/host-meta.json").status == 200


def test_a_spare_browser_connection_does_not_hold_the_shutdown(parleyd):
    """Browsers open HTTPS connections ahead of need and may never send a request on them;
    one such connection must not keep parleyd from stopping (it did, for ever)."""
    port = int(http_base(parleyd).rstrip("/").rsplit(":", 1)[1])
    spare = trusting(parleyd).wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname="localhost")

    def answer_close_notify():
        try:
            if spare.recv(1) == b"":
                spare.unwrap()
        except OSError:
            pass

    closer = threading.Thread(target=answer_close_notify, daemon=True)
    closer.start()
    parleyd.stop()
    closer.join(5)
    spare.close()
    assert parleyd.exit_status == 0 and parleyd.stop_seconds < 3, (parleyd.exit_status, parleyd.stop_seconds)


def test_the_web_chat_in_chromium_with_slixmpp_peers(parleyd, browser, tmp_path):  # noqa: F811
    page = browser
    alice, bob, carol = (parleyd.account(name) for name in ("alice", "bob", "carol"))
    url = chat_url(parleyd)
    room = f"lobby@conference.{parleyd.domain}"
    avatar = png()
    picture = tmp_path / "sunset.png"
    picture.write_bytes(png(64, (40, 120, 220)))

    page.console()  # what earlier tests left

    async def scenario():
        async with session(parleyd, bob, plugins=("xep_0054", "xep_0184", "xep_0066"), auto_authorize=True,
                           auto_subscribe=False) as b, \
                session(parleyd, carol, plugins=("xep_0045", "xep_0004")) as c:
            vcard = b.plugin["xep_0054"].make_vcard()
            vcard["NICKNAME"] = "Bobby"
            vcard["PHOTO"]["TYPE"] = "image/png"
            vcard["PHOTO"]["BINVAL"] = avatar
            await b.plugin["xep_0054"].publish_vcard(vcard, timeout=TIMEOUT)
            await b.online()
            await c.online()
            await _log_in(page, url, alice)

            # A friend request from slixmpp, accepted in the page; the page asks back.
            b.send_presence(pto=alice.jid, ptype="subscribe")
            pending = f"document.querySelector('#requests li[data-jid={_q(bob.jid)}]')"
            await page.wait(pending, "bob's friend request in the page")
            await page.wait(f"{pending}.querySelector('button.accept') && {pending}.querySelector('button.decline')",
                            "accept and decline buttons on the request")
            page.screenshot("webchat-request.png")
            page.click(f"#requests li[data-jid='{bob.jid}'] button.accept")
            await b.wait_presence("subscribed", alice.jid)
            await b.wait_presence("subscribe", alice.jid)
            await page.wait(f"{_contact(bob.jid)} && {_contact(bob.jid)}.dataset.show === 'available'",
                            "bob in the roster, online")
            await page.wait(f"!{pending}", "the request gone once accepted")
            # A request declined: carol hears no; then the page sends one, which she approves.
            c.auto_authorize = None
            c.send_presence(pto=alice.jid, ptype="subscribe")
            await page.wait(f"document.querySelector('#requests li[data-jid={_q(carol.jid)}]')", "carol's friend request")
            page.click(f"#requests li[data-jid='{carol.jid}'] button.decline")
            await c.wait_presence("unsubscribed", alice.jid)
            await page.wait(f"!document.querySelector('#requests li[data-jid={_q(carol.jid)}]')", "carol's request gone")
            assert not page.js(f"return {_contact(carol.jid)};"), "a declined request became a contact"
            c.auto_authorize = True
            page.fill("#add-contact-jid", carol.jid)
            page.click("#add-contact button")
            await c.wait_presence("subscribe", alice.jid)
            await page.wait(f"{_contact(carol.jid)} && {_contact(carol.jid)}.dataset.show === 'available'",
                            "carol in the roster, online, once she approved")

            # His vCard: the nickname as display name, the photo as avatar.
            await page.wait(f"{_contact(bob.jid)}.querySelector('.name').textContent === 'Bobby'", "bob's vCard nickname")
            src = await page.wait(f"{_contact(bob.jid)}.querySelector('.avatar img')?.src", "bob's vCard photo")
            assert src.startswith("data:image/png;base64,"), src

            # 1:1 messages both ways; slixmpp's receipt shown on the browser's message.
            page.click(f"#contacts li[data-jid='{bob.jid}']")
            page.fill("#text", "hello from the browser")
            page.click("#send")
            message = await _next_with_body(b, "the browser's message")
            assert message["body"] == "hello from the browser" and message["from"].bare == alice.jid, message
            assert message["type"] == "chat", message
            await page.wait(f"document.querySelector('#messages li.outgoing .receipt')", "the delivery receipt shown")
            b.send_message(mto=alice.jid, mbody="hi browser, from slixmpp", mtype="chat")
            await page.wait(_message_shown("hi browser, from slixmpp", outgoing=False), "slixmpp's message in the page")
            page.screenshot("webchat-chat.png")

            # A room: the page creates it; carol (slixmpp) enters, and they talk.
            page.fill("#join-room-name", "lobby")
            page.click("#join-room button")
            await page.wait(f"window.parleyChat.rooms.get({_q(room)})?.unlocked", "the room created and unlocked")
            groupchat = event_queue(c, "groupchat_message")
            await c.plugin["xep_0045"].join_muc_wait(JID(room), "carol", timeout=TIMEOUT)
            await page.wait("document.querySelector('#occupant-list li[data-nick=\"carol\"]')", "carol in the occupant list")
            page.fill("#text", "hello room")
            page.click("#send")
            while True:
                said = await next_event(groupchat, c, "the browser's groupchat message")
                if said["body"] == "hello room":
                    break
            assert said["from"] == JID(f"{room}/alice"), said
            c.send_message(mto=room, mbody="hi alice, from carol", mtype="groupchat")
            await page.wait(_message_shown("hi alice, from carol", outgoing=False), "carol's groupchat message in the page")
            await page.wait(_message_shown("hello room", outgoing=True), "the page's own message echoed by the room")
            page.screenshot("webchat-room.png")

            # A file to bob: XEP-0363 slot, PUT from the page, then the URL with XEP-0066.
            page.click(f"#contacts li[data-jid='{bob.jid}']")
            page.choose_file("#file", picture)
            message = await _next_with_body(b, "the file message")
            link = message["body"]
            assert link.startswith("https://localhost:") and link.endswith("/sunset.png"), message
            assert message["oob"]["url"] == link, message
            with urllib.request.urlopen(link, timeout=10, context=trusting(parleyd)) as response:
                assert response.read() == picture.read_bytes()
            await page.wait(f"[...document.querySelectorAll('#messages li.outgoing a')].some(a => a.href === {_q(link)})",
                            "the sent file's link in the page")

            # The socket drops: the page reconnects by itself and goes on receiving.
            page.js("window.parleyChat.connection.ws.close()")
            await page.wait("document.getElementById('status-line').dataset.status !== 'online'", "the page noticing the drop")
            await page.wait("document.getElementById('status-line').dataset.status === 'online'", "the page back online")
            # Stream management resumed the session (no new login): the server kept it.
            assert page.js("return window.parleyChat.connection.resumptions;") == 1, page.describe()
            b.send_message(mto=alice.jid, mbody="after the reconnect", mtype="chat")
            await page.wait(_message_shown("after the reconnect", outgoing=False), "a message after the reconnect")

            # History: a new login shows the latest page from the archive, and older on demand.
            for i in range(21):
                b.send_message(mto=alice.jid, mbody=f"older {i:02}", mtype="chat")
            await b.sync()
            await page.wait(_message_shown("older 20"), "the last of bob's burst")
            await _log_in(page, url, alice)
            page.click(f"#contacts li[data-jid='{bob.jid}']")
            await page.wait(_message_shown("older 20"), "the latest message from the archive")
            assert not page.js(f"return {_message_shown('hello from the browser')};"), "more than one page loaded at once"
            await page.wait("!document.getElementById('older').hidden", "the load-older button")
            page.click("#older")
            await page.wait(_message_shown("hello from the browser", outgoing=True), "the first message, from an older page")
            await page.wait(_message_shown("hi browser, from slixmpp", outgoing=False), "slixmpp's first message, from an older page")
            # Errors are one line at the top: the page's own checks and the server's stanza errors.
            page.fill("#join-room-name", "no spaces allowed")
            page.click("#join-room button")
            shown = await page.wait("!document.getElementById('error').hidden && document.getElementById('error').textContent",
                                    "the error line for a bad room name")
            assert shown == '"no spaces allowed@conference.localhost" is not a room name', shown
            page.click("#error")  # dismissed by a click
            page.fill("#add-contact-jid", "someone@nowhere.invalid")
            page.click("#add-contact button")
            shown = await page.wait("!document.getElementById('error').hidden && document.getElementById('error').textContent",
                                    "the error line for a request the server could not deliver")
            assert shown.startswith("Presence to someone@nowhere.invalid failed: remote-server-not-found"), shown

            # Everything above ran under the page's CSP without tripping it.
            refused = [entry for entry in page.console() if "Content Security Policy" in entry]
            assert not refused, refused

    run(scenario(), timeout=120)


def test_a_wrong_password_is_one_clear_line(parleyd, browser):  # noqa: F811
    page = browser
    alice = parleyd.account("alice")

    async def scenario():
        page.open(chat_url(parleyd))
        page.fill("#login-jid", alice.jid)
        page.fill("#login-password", "not the password")
        page.click("#login-button")
        shown = await page.wait("document.getElementById('login-error').textContent", "the login error")
        assert shown == "Wrong user name or password", shown
        assert page.js("return document.getElementById('app').hidden;")

    run(scenario())


def test_the_pages_scram_computes_the_rfc_7677_example(parleyd, browser):  # noqa: F811
    """scram.js in the browser's WebCrypto against RFC 7677's SCRAM-SHA-256 example: the
    client's final message and the server signature it accepts."""
    page = browser
    page.open(chat_url(parleyd))
    result = page.driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        import("./scram.js").then(async ({ ScramSHA256, base64ToUTF8, utf8ToBase64 }) => {
          const scram = new ScramSHA256("user", "pencil");
          scram.nonce = "rOprNGfwEbeRWgbNEkqO";
          scram.clientFirstBare = "n=user,r=" + scram.nonce;
          const first = base64ToUTF8(scram.first());
          const final = base64ToUTF8(await scram.respond(utf8ToBase64(
            "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")));
          done({ first, final,
                 good: scram.verify(utf8ToBase64("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")),
                 forged: scram.verify(utf8ToBase64("v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")) });
        }).catch((error) => done({ error: String(error) }));
    """)
    assert result == {
        "first": "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
        "final": "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
        "good": True, "forged": False}, result


# Transports strophe.js is tested over; BOSH joins when parleyd serves it.
STROPHE_TRANSPORTS = {"websocket": websocket_url, "bosh": lambda parleyd: http_base(parleyd) + "http-bind"}

STROPHE_PAGE = """<!doctype html>
<meta charset="utf-8">
<title>strophe.js against parleyd</title>
<script src="strophe.js"></script>
<script src="strophe-page.js"></script>
<ul id="received"></ul>
"""

STROPHE_SCRIPT = """
const params = new URLSearchParams(location.search);
const connection = new Strophe.Connection(params.get("service"));
connection.connect(params.get("jid"), params.get("password"), (status, condition) => {
  document.body.dataset.status = status + (condition ? " " + condition : "");
  if (status !== Strophe.Status.CONNECTED) return;
  connection.addHandler((message) => {
    const body = message.getElementsByTagName("body")[0];
    if (body) {
      const item = document.createElement("li");
      item.textContent = body.textContent;
      document.getElementById("received").append(item);
    }
    return true;
  }, null, "message");
  connection.send($pres());
  connection.send($msg({ to: params.get("peer"), type: "chat" }).c("body").t("hello from strophe.js"));
  document.body.dataset.connected = "yes";
});
"""


@pytest.mark.parametrize("transport", sorted(STROPHE_TRANSPORTS))
def test_strophe_js_logs_in_and_chats_with_slixmpp(parleyd, browser, tmp_path, transport):  # noqa: F811
    page = browser
    alice, bob = parleyd.account("alice"), parleyd.account("bob")
    copy_strophe(tmp_path)
    (tmp_path / "strophe.html").write_text(STROPHE_PAGE)
    (tmp_path / "strophe-page.js").write_text(STROPHE_SCRIPT)
    service = STROPHE_TRANSPORTS[transport](parleyd)

    async def scenario():
        async with session(parleyd, bob) as b:
            await b.online()
            with static_server(tmp_path) as base:
                query = urllib.parse.urlencode({"service": service, "jid": f"{alice.jid}/strophe",
                                                "password": alice.password, "peer": bob.jid})
                page.open(f"{base}strophe.html?{query}")
                await page.wait("document.body.dataset.connected === 'yes'", f"strophe.js logged in over {transport} ({service})")
                message = await _next_with_body(b, "strophe.js's message")
                assert message["body"] == "hello from strophe.js" and message["from"] == JID(f"{alice.jid}/strophe"), message
                b.send_message(mto=f"{alice.jid}/strophe", mbody="hello strophe", mtype="chat")
                await page.wait("[...document.querySelectorAll('#received li')].some(li => li.textContent === 'hello strophe')",
                                "slixmpp's message received by strophe.js")
                page.open("about:blank")  # strophe's socket closes before the server stops

    run(scenario())
