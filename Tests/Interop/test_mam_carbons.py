"""MAM and carbons interop with slixmpp (issue "No message lost"): XEP-0313 queries with
XEP-0059 paging through slixmpp's xep_0313 plugin, XEP-0359 stanza ids, and XEP-0280 carbons
through its xep_0280 plugin."""

from __future__ import annotations

from interop_support import TIMEOUT, event_queue, next_event, no_more, run, session

MAM = "urn:xmpp:mam:2"
CARBONS = "urn:xmpp:carbons:2"
SID = "urn:xmpp:sid:0"


def _body(result) -> str:
    return result["mam_result"]["forwarded"]["stanza"]["body"]


def test_mam_pages_through_the_archive_with_stanza_ids(parleyd):
    """Alice sends bob five messages while he is offline; bob reads them from the offline
    store with a stanza-id each, then pages through his archive with xep_0313, both ways."""
    alice_account, bob_account = parleyd.account("alice"), parleyd.account("bob")

    async def scenario():
        async with session(parleyd, alice_account, plugins=("xep_0313",)) as alice:
            info = await alice.plugin["xep_0030"].get_info(jid=alice_account.jid, timeout=TIMEOUT)
            assert MAM in set(info["disco_info"]["features"]), info
            for index in range(1, 6):
                alice.send_message(mto=bob_account.jid, mbody=f"m{index}", mtype="chat")
            await alice.sync()

            async with session(parleyd, bob_account, plugins=("xep_0313",)) as bob:
                await bob.online()
                offline = [await bob.next_message() for _ in range(5)]
                assert [m["body"] for m in offline] == [f"m{i}" for i in range(1, 6)]
                stanza_ids = []
                for message in offline:
                    sid = message.xml.find(f"{{{SID}}}stanza-id")
                    assert sid is not None and sid.get("by") == bob_account.jid, message
                    stanza_ids.append(sid.get("id"))
                assert len(set(stanza_ids)) == 5

                # One page of three, with RSM, from the start.
                page = await bob.plugin["xep_0313"].retrieve(with_jid=alice_account.jid, rsm={"max": 3}, timeout=TIMEOUT)
                results = page["mam"]["results"]
                assert [_body(r) for r in results] == ["m1", "m2", "m3"], page
                assert [r["mam_result"]["id"] for r in results] == stanza_ids[:3]
                assert page["mam_fin"]["complete"] in (False, "false"), page
                assert int(page["mam_fin"]["rsm"]["count"]) == 5, page

                # Iterating pages of two with slixmpp's RSM iterator.
                forwards = [_body(m) async for m in bob.plugin["xep_0313"].iterate(
                    with_jid=alice_account.jid, rsm={"max": 2})]
                assert forwards == [f"m{i}" for i in range(1, 6)], forwards

                # Backwards, page by page (test_discovery.py pages backwards with the iterator).
                page = await bob.plugin["xep_0313"].retrieve(rsm={"max": 2, "before": stanza_ids[4]}, timeout=TIMEOUT)
                assert [_body(r) for r in page["mam"]["results"]] == ["m3", "m4"], page
                assert page["mam_fin"]["complete"] in (False, "false"), page
                first = page["mam_fin"]["rsm"]["first"]
                # No index, as Prosody sends it (slixmpp's iterator would stop on one).
                assert first == stanza_ids[2] and not page["mam_fin"]["rsm"]["first_index"], page
                page = await bob.plugin["xep_0313"].retrieve(rsm={"max": 5, "before": first}, timeout=TIMEOUT)
                assert [_body(r) for r in page["mam"]["results"]] == ["m1", "m2"], page
                assert page["mam_fin"]["complete"] in (True, "true"), page

            # Alice's archive has her side of the conversation too.
            mine = await alice.plugin["xep_0313"].retrieve(rsm={"max": 10}, timeout=TIMEOUT)
            assert [_body(r) for r in mine["mam"]["results"]] == [f"m{i}" for i in range(1, 6)]

    run(scenario())


def test_carbons_copy_received_and_sent_messages(parleyd):
    """Bob on two devices with carbons enabled: a message to one is copied to the other as
    <received/>, one sent from one is copied to the other as <sent/>; <private/> is not."""
    alice_account, bob_account = parleyd.account("alice"), parleyd.account("bob")

    async def scenario():
        async with session(parleyd, alice_account) as alice, \
                session(parleyd, bob_account, resource="phone", plugins=("xep_0280",)) as phone, \
                session(parleyd, bob_account, resource="laptop", plugins=("xep_0280",)) as laptop:
            info = await alice.plugin["xep_0030"].get_info(jid=parleyd.domain, timeout=TIMEOUT)
            assert CARBONS in set(info["disco_info"]["features"]), info
            received = event_queue(phone, "carbon_received")
            sent = event_queue(laptop, "carbon_sent")
            for client in (alice, phone, laptop):
                await client.online()
            await phone.plugin["xep_0280"].enable(timeout=TIMEOUT)
            await laptop.plugin["xep_0280"].enable(timeout=TIMEOUT)

            alice.send_message(mto=f"{bob_account.jid}/laptop", mbody="to the laptop", mtype="chat")
            direct = await laptop.next_message()
            assert direct["body"] == "to the laptop"
            carbon = await next_event(received, phone, "received carbon")
            assert carbon["from"] == bob_account.jid, carbon
            copy = carbon["carbon_received"]
            assert copy["body"] == "to the laptop" and copy["from"] == f"{alice_account.jid}/interop", carbon

            phone.send_message(mto=alice_account.jid, mbody="from the phone", mtype="chat")
            assert (await alice.next_message())["body"] == "from the phone"
            carbon = await next_event(sent, laptop, "sent carbon")
            copy = carbon["carbon_sent"]
            assert copy["body"] == "from the phone" and copy["to"] == alice_account.jid, carbon

            private = alice.make_message(mto=f"{bob_account.jid}/laptop", mbody="just the laptop", mtype="chat")
            private.enable("carbon_private")
            private.send()
            assert (await laptop.next_message())["body"] == "just the laptop"
            await no_more(received, phone, "carbon of a private message")

    run(scenario())
