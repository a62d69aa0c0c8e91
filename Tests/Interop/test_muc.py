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


REGISTER_FORM = "http://jabber.org/protocol/muc#register"


def test_registration_with_a_room_reserves_the_nickname(parleyd):
    """XEP-0045 §7.10 through slixmpp's XEP-0077 plugin: the muc#register form, a submitted
    nickname making a member, and the nickname then refused to someone else (§7.12)."""
    alice, bob, carol = (parleyd.account(name) for name in ("alice", "bob", "carol"))
    room = JID(f"club@conference.{parleyd.domain}")
    plugins = MUC_PLUGINS + ("xep_0077",)

    async def scenario():
        async with session(parleyd, alice, plugins=plugins) as a, \
                session(parleyd, bob, plugins=plugins) as b, \
                session(parleyd, carol, plugins=plugins) as c:
            await a.plugin["xep_0045"].join_muc_wait(room, "Alice", timeout=TIMEOUT)
            form = await a.plugin["xep_0045"].get_room_config(room, timeout=TIMEOUT)
            await a.plugin["xep_0045"].set_room_config(room, form, timeout=TIMEOUT)

            asked = await b.plugin["xep_0077"].get_registration(jid=room, timeout=TIMEOUT)
            fields = asked["register"]["form"].get_fields()
            # slixmpp reads a hidden field's value as a list.
            assert fields["FORM_TYPE"]["value"] in (REGISTER_FORM, [REGISTER_FORM]), asked
            assert fields["muc#register_roomnick"]["required"], asked

            submit = b.make_iq_set(ito=room)
            submitted = submit["register"]["form"]
            submitted["type"] = "submit"
            submitted.add_field(var="FORM_TYPE", ftype="hidden", value=REGISTER_FORM)
            submitted.add_field(var="muc#register_roomnick", value="Bobby")
            await submit.send(timeout=TIMEOUT)

            again = await b.plugin["xep_0077"].get_registration(jid=room, timeout=TIMEOUT)
            assert again["register"]["registered"] and again["register"]["username"] == "Bobby", again
            members = await a.plugin["xep_0045"].get_affiliation_list(room, "member", timeout=TIMEOUT)
            assert [JID(j).bare for j in members] == [bob.jid], members

            nick = await c.plugin["xep_0030"].get_info(jid=room, node="x-roomuser-item", timeout=TIMEOUT)
            assert not nick["disco_info"]["identities"], nick
            try:
                await c.plugin["xep_0045"].join_muc_wait(room, "Bobby", timeout=TIMEOUT)
            except Exception as error:  # slixmpp raises PresenceError for the refusal
                assert "conflict" in str(getattr(error, "condition", error)), error
            else:
                raise AssertionError("Carol entered under Bob's reserved nickname")

    run(scenario())


def test_voice_request_in_a_moderated_room(parleyd):
    """XEP-0045 §7.13 with slixmpp's request_voice: the moderator gets the muc#request form,
    submits it with muc#request_allow, and the visitor becomes a participant."""
    alice, bob = parleyd.account("alice"), parleyd.account("bob")
    room = JID(f"stage@conference.{parleyd.domain}")

    async def scenario():
        async with session(parleyd, alice, plugins=MUC_PLUGINS) as a, \
                session(parleyd, bob, plugins=MUC_PLUGINS) as b:
            await a.plugin["xep_0045"].join_muc_wait(room, "Alice", timeout=TIMEOUT)
            form = await a.plugin["xep_0045"].get_room_config(room, timeout=TIMEOUT)
            form.set_values({"muc#roomconfig_moderatedroom": True})
            await a.plugin["xep_0045"].set_room_config(room, form, timeout=TIMEOUT)

            own, _subject, _occupants, _history = await b.plugin["xep_0045"].join_muc_wait(room, "Bob", timeout=TIMEOUT)
            assert own["muc"]["role"] == "visitor", own

            requests = event_queue(a, "message_xform")
            b.plugin["xep_0045"].request_voice(room, "participant")
            request = await next_event(requests, a, "the voice request")
            values = request["form"].get_values()
            assert values["muc#roomnick"] == "Bob" and request["from"] == room, request

            changes = event_queue(b, f"muc::{room}::presence")
            answer = a.make_message(mto=room)
            approval = answer["form"]
            approval["type"] = "submit"
            approval.add_field(var="FORM_TYPE", ftype="hidden", value="http://jabber.org/protocol/muc#request")
            approval.add_field(var="muc#roomnick", value="Bob")
            approval.add_field(var="muc#request_allow", ftype="boolean", value=True)
            answer.send()
            changed = await next_event(changes, b, "Bob's new role")
            assert changed["muc"]["role"] == "participant" and changed["muc"]["nick"] == "Bob", changed

            # §10.2.1: a later configuration change reaches the occupants as status 104.
            statuses = event_queue(b, f"muc::{room}::config_status")
            form = await a.plugin["xep_0045"].get_room_config(room, timeout=TIMEOUT)
            form.set_values({"muc#roomconfig_roomname": "The stage"})
            await a.plugin["xep_0045"].set_room_config(room, form, timeout=TIMEOUT)
            status = await next_event(statuses, b, "the configuration change")
            assert [str(code) for code in status["muc"]["status_codes"]] == ["104"], status

    run(scenario())
