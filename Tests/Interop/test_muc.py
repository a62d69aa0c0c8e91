"""Multi-user chat (XEP-0045) with slixmpp's own plugin against parleyd's MUC service at
conference.<domain>: create and configure a room, enter it, groupchat, a private message,
and an occupant whose connection drops leaving the room."""

from __future__ import annotations

from slixmpp import JID

from interop_support import TIMEOUT, event_queue, next_event, run, session

MUC_PLUGINS = ("xep_0045", "xep_0004")


def test_room_created_entered_and_used(parleyd):
    alice, bob = parleyd.account("alice"), parleyd.account("bob")
    room = JID(f"lounge@conference.{parleyd.domain}")

    async def scenario():
        async with session(parleyd, alice, plugins=MUC_PLUGINS) as a, \
                session(parleyd, bob, plugins=MUC_PLUGINS) as b:
            info = await a.plugin["xep_0030"].get_info(jid=f"conference.{parleyd.domain}", timeout=TIMEOUT)
            assert "http://jabber.org/protocol/muc" in info["disco_info"]["features"], info

            own, _subject, occupants, _history = await a.plugin["xep_0045"].join_muc_wait(room, "Alice", timeout=TIMEOUT)
            assert {"110", "201"} <= {str(code) for code in own["muc"]["status_codes"]}, own
            # slixmpp lists its own presence among the occupants.
            assert [o["from"].resource for o in occupants] == ["Alice"], occupants
            form = await a.plugin["xep_0045"].get_room_config(room, timeout=TIMEOUT)
            form.set_values({"muc#roomconfig_roomname": "Lounge"})
            await a.plugin["xep_0045"].set_room_config(room, form, timeout=TIMEOUT)

            arrivals = event_queue(a, f"muc::{room}::got_online")
            departures = event_queue(a, f"muc::{room}::got_offline")
            groupchat = event_queue(b, "groupchat_message")
            own, _subject, occupants, _history = await b.plugin["xep_0045"].join_muc_wait(room, "Bob", timeout=TIMEOUT)
            assert sorted(o["from"].resource for o in occupants) == ["Alice", "Bob"], occupants
            arrived = await next_event(arrivals, a, "Bob's arrival")
            assert arrived["from"] == JID(f"{room}/Bob"), arrived
            assert arrived["muc"]["jid"] == JID(f"{bob.jid}/interop"), "the owner (a moderator) sees real JIDs"

            a.send_message(mto=room, mbody="welcome", mtype="groupchat")
            message = await next_event(groupchat, b, "the groupchat message")
            assert message["from"] == JID(f"{room}/Alice") and message["body"] == "welcome", message

            private = event_queue(a, "message")
            b.send_message(mto=JID(f"{room}/Alice"), mbody="thanks", mtype="chat")
            pm = await next_event(private, a, "the private message")
            while pm["body"] != "thanks":
                pm = await next_event(private, a, "the private message")
            assert pm["from"] == JID(f"{room}/Bob"), pm

            b.transport.abort()  # the connection drops, no goodbye
            gone = await next_event(departures, a, "Bob leaving when his connection drops")
            assert gone["from"] == JID(f"{room}/Bob") and gone["type"] == "unavailable", gone

    run(scenario())
