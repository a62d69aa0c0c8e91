"""XEP-0184 delivery receipts and XEP-0333 chat markers with slixmpp's xep_0184 and xep_0333
plugins (issue "No message lost"): they pass through parleyd unchanged and are archived
(XEP-0313) next to the message they refer to, so a device that catches up from the archive
learns what was delivered and read."""

from __future__ import annotations

from interop_support import TIMEOUT, event_queue, next_event, run, session

RECEIPTS = "urn:xmpp:receipts"
MARKERS = "urn:xmpp:chat-markers:0"


def test_receipt_and_displayed_marker_pass_through_and_are_archived(parleyd):
    """Alice asks for a receipt and marks her message markable; Bob's slixmpp acknowledges it
    by itself (auto_ack) and then sends a displayed marker. Alice gets both, naming her
    message's id; both archives hold the message, the receipt and the marker, in that order."""
    alice_account, bob_account = parleyd.account("alice"), parleyd.account("bob")
    plugins = ("xep_0184", "xep_0333", "xep_0313")

    async def scenario():
        async with session(parleyd, alice_account, plugins=plugins) as alice, \
                session(parleyd, bob_account, plugins=plugins) as bob:
            receipts = event_queue(alice, "receipt_received")
            displayed = event_queue(alice, "marker_displayed")
            for client in (alice, bob):
                await client.online()

            hello = alice.make_message(mto=bob_account.jid, mbody="did you get this?", mtype="chat")
            hello["id"] = "hello-1"
            hello["request_receipt"] = True
            hello.enable("markable")
            hello.send()
            received = await bob.next_message()
            assert received["body"] == "did you get this?" and received["id"] == "hello-1", received
            assert received.xml.find(f"{{{RECEIPTS}}}request") is not None, received
            assert received.xml.find(f"{{{MARKERS}}}markable") is not None, received

            receipt = await next_event(receipts, alice, "receipt")
            assert receipt["receipt"] == "hello-1" and receipt["from"].bare == bob_account.jid, receipt

            bob.plugin["xep_0333"].send_marker(mto=alice_account.jid, id="hello-1", marker="displayed", mtype="chat")
            marker = await next_event(displayed, alice, "displayed marker")
            assert marker["displayed"]["id"] == "hello-1" and marker["from"].bare == bob_account.jid, marker
            await bob.sync()

            for owner, client in ((alice_account, alice), (bob_account, bob)):
                page = await client.plugin["xep_0313"].retrieve(rsm={"max": 10}, timeout=TIMEOUT)
                stanzas = [r["mam_result"]["forwarded"]["stanza"] for r in page["mam"]["results"]]
                assert len(stanzas) == 3, f"{owner.jid}'s archive: {page}"
                message, archived_receipt, archived_marker = stanzas
                assert message["body"] == "did you get this?", message
                assert archived_receipt.xml.find(f"{{{RECEIPTS}}}received") is not None, archived_receipt
                assert archived_receipt["receipt"] == "hello-1", archived_receipt
                assert archived_marker["displayed"]["id"] == "hello-1", archived_marker

    run(scenario())
