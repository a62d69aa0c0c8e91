"""XEP-0424 message retraction interop with slixmpp's xep_0424 plugin (issue "No message
lost"): a retraction passes through to the recipient, and the server's archive (XEP-0313)
keeps a tombstone in place of the retracted message for both parties."""

from __future__ import annotations

from interop_support import TIMEOUT, event_queue, next_event, run, session

RETRACT = "urn:xmpp:message-retract:1"


def _forwarded(result):
    return result["mam_result"]["forwarded"]["stanza"]


def test_a_retraction_reaches_the_recipient_and_tombstones_both_archives(parleyd):
    """Alice sends Bob a message with an origin-id, then retracts it with slixmpp's
    send_retraction. Bob receives the retraction from Alice. In both archives the original is
    now a tombstone: its ids remain, its body is gone, <retracted/> says when; the message
    after it is untouched."""
    alice_account, bob_account = parleyd.account("alice"), parleyd.account("bob")

    async def scenario():
        async with session(parleyd, alice_account, plugins=("xep_0359", "xep_0424", "xep_0313")) as alice, \
                session(parleyd, bob_account, plugins=("xep_0359", "xep_0424", "xep_0313")) as bob:
            retractions = event_queue(bob, "message_retract")
            for client in (alice, bob):
                await client.online()

            oops = alice.make_message(mto=bob_account.jid, mbody="sent to the wrong person", mtype="chat")
            oops["id"] = "oops-1"
            oops["origin_id"]["id"] = "oops-origin-1"
            oops.send()
            assert (await bob.next_message())["body"] == "sent to the wrong person"
            alice.send_message(mto=bob_account.jid, mbody="this one stays", mtype="chat")
            assert (await bob.next_message())["body"] == "this one stays"

            alice.plugin["xep_0424"].send_retraction(mto=bob_account.jid, id="oops-origin-1")
            retraction = await next_event(retractions, bob, "retraction")
            assert retraction["retract"]["id"] == "oops-origin-1", retraction
            assert retraction["from"].bare == alice_account.jid, retraction
            await alice.sync()

            for owner, client in ((bob_account, bob), (alice_account, alice)):
                page = await client.plugin["xep_0313"].retrieve(rsm={"max": 10}, timeout=TIMEOUT)
                stanzas = [_forwarded(r) for r in page["mam"]["results"]]
                assert len(stanzas) == 3, f"{owner.jid}'s archive: {page}"
                tombstone, kept, retraction_copy = stanzas
                assert tombstone["id"] == "oops-1" and tombstone["origin_id"]["id"] == "oops-origin-1", tombstone
                assert tombstone["body"] == "", f"{owner.jid}'s archive still has the retracted body: {tombstone}"
                retracted = tombstone.xml.find(f"{{{RETRACT}}}retracted")
                assert retracted is not None and retracted.get("stamp"), tombstone
                assert kept["body"] == "this one stays", kept
                assert retraction_copy["retract"]["id"] == "oops-origin-1", retraction_copy

    run(scenario())
