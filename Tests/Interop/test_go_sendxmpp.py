"""go-sendxmpp (Go, a different XMPP stack) sends a message through parleyd to slixmpp."""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil

import pytest

from interop_support import run, session, wait_for_log

GO_SENDXMPP = shutil.which("go-sendxmpp")


async def _go_sendxmpp(parleyd, workdir, account, recipient: str, body: str, *, direct_tls: bool):
    """Runs go-sendxmpp once; returns (status, stdout, stderr).

    The Debian go-sendxmpp (mattn/go-xmpp of 2022) knows only PLAIN, DIGEST-MD5 and
    X-OAUTH2, so it logs in with PLAIN, which parleyd offers only after TLS."""
    port = parleyd.direct_tls_port if direct_tls else parleyd.c2s_port
    # A config file rather than -p keeps the password out of the process list.
    config = workdir / "go-sendxmpp.conf"
    config.write_text(
        f"username: {account.jid}\njserver: {parleyd.host}\nport: {port}\npassword: {account.password}\n")
    config.chmod(0o600)
    arguments = [GO_SENDXMPP, "--file", str(config), "--timeout", "10", "--debug"]
    if direct_tls:
        arguments.append("--tls")
    arguments.append(recipient)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PARLEYD_")}
    environment["HOME"] = str(workdir)  # nothing from the real ~/.config
    environment["XDG_CONFIG_HOME"] = str(workdir / "config")
    environment["XDG_DATA_HOME"] = str(workdir / "data")
    # Go's crypto/x509 trusts exactly this file: the server's self-signed certificate.
    environment["SSL_CERT_FILE"] = str(parleyd.cert_path)
    environment["SSL_CERT_DIR"] = str(workdir / "no-ca-dir")
    process = await asyncio.create_subprocess_exec(
        *arguments, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=environment, cwd=workdir)
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(body.encode()), 30)
    except asyncio.TimeoutError:
        process.kill()
        stdout, stderr = await process.communicate()
        raise AssertionError(
            f"go-sendxmpp still running after 30s\nstdout:\n{stdout.decode(errors='replace')}\n"
            f"stderr:\n{stderr.decode(errors='replace')}") from None
    return process.returncode, stdout.decode(errors="replace"), stderr.decode(errors="replace")


@pytest.mark.parametrize("direct_tls", [False, True], ids=["starttls", "direct-tls"])
def test_go_sendxmpp_to_slixmpp(parleyd, tmp_path, direct_tls):
    if GO_SENDXMPP is None:
        pytest.fail("go-sendxmpp is not installed (scripts/install-deps.sh installs it)", pytrace=False)
    alice, carol = parleyd.account("alice"), parleyd.account("carol")
    body = f"go-sendxmpp says hi {secrets.token_hex(4)}"

    async def scenario():
        async with session(parleyd, alice, resource="listener") as listener:
            listener.send_presence()  # a message to the bare JID goes to available resources
            await listener.sync()
            status, stdout, stderr = await _go_sendxmpp(
                parleyd, tmp_path, carol, alice.jid, body, direct_tls=direct_tls)
            assert status == 0, (
                f"go-sendxmpp failed with status {status}\nstdout:\n{stdout}\nstderr:\n{stderr}")
            try:
                message = await listener.next_message()
            except AssertionError as error:
                raise AssertionError(f"{error}\ngo-sendxmpp stdout:\n{stdout}\nstderr:\n{stderr}") from None
            assert message["body"] == body, message
            assert message["from"].bare == carol.jid, message
            assert message["from"].resource, f"'from' is not a full JID: {message['from']}"
            assert message["type"] in ("chat", "normal"), message

            # go-sendxmpp has exited: its session must be gone from routing, so an iq to it
            # bounces (RFC 6121 §8.5.3.2.1) rather than vanishing into a dead session.
            gone = message["from"].full
            try:
                await wait_for_log(parleyd, "session ended", gone, timeout=5)
            except AssertionError as error:
                raise AssertionError(f"parleyd did not end go-sendxmpp's session after it left: {error}") from None
            assert await listener.ping_error(gone) == "service-unavailable"

    run(scenario())
