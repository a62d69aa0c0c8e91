// Rooms (XEP-0045) for the Client: joining by name at the server's MUC service, a new room
// created as an instant room, occupants from the room's presence, leaving. Mixed into
// Client's prototype, so `this` is the Client.

import { NS, x, el, child, children, childText, describeError, bare, resourceOf, localOf } from "./xml.js";

const HISTORY = 20; // messages a room sends on joining, the first time

export const RoomActions = {
  joinRoom(name) {
    name = name.trim().toLowerCase();
    if (!name) return;
    if (!name.includes("@")) {
      if (!this.services.muc) throw new Error("This server offers no rooms");
      name = `${name}@${this.services.muc}`;
    }
    if (!/^[^@\s/]+@[^@\s/]+$/.test(name)) throw new Error(`"${name}" is not a room name`);
    const room = this.rooms.get(name) || { jid: name, nick: localOf(this.me), joined: false, occupants: new Map() };
    this.rooms.set(name, room);
    this.conversation(name, "room");
    this.sendJoin(room);
    this.onChange();
    return name;
  },

  sendJoin(room) {
    room.joined = false;
    room.occupants.clear();
    const conversation = this.conversations.get(room.jid);
    const since = conversation && conversation.lastTime();
    this.connection.send(x("presence", { xmlns: NS.client, to: `${room.jid}/${room.nick}` },
      el("x", { xmlns: NS.muc }, el("history", since ? { since } : { maxstanzas: HISTORY }))));
  },

  leaveRoom(jid) {
    const room = this.rooms.get(jid);
    if (!room) return;
    this.connection.send(x("presence", { xmlns: NS.client, to: `${jid}/${room.nick}`, type: "unavailable" }));
    this.rooms.delete(jid);
    this.conversations.delete(jid);
    this.onChange();
  },

  roomPresence(presence) {
    const from = presence.getAttribute("from");
    const room = this.rooms.get(bare(from));
    if (!room) return;
    const nick = resourceOf(from);
    const type = presence.getAttribute("type");
    if (type === "error") {
      if (!room.joined) this.rooms.delete(room.jid);
      this.onError(`Joining ${room.jid} failed: ${describeError(presence)}`);
      return this.onChange();
    }
    const user = child(presence, "x", NS.mucUser);
    const codes = children(user, "status").map((s) => s.getAttribute("code"));
    const item = child(user, "item");
    if (type === "unavailable") {
      room.occupants.delete(nick);
      if (codes.includes("110")) { room.joined = false; this.onError(`You left ${room.jid}`); }
    } else {
      room.occupants.set(nick, {
        nick, role: item && item.getAttribute("role"), affiliation: item && item.getAttribute("affiliation"),
        show: childText(presence, "show") || "available", jid: item && item.getAttribute("jid"),
      });
      if (codes.includes("110")) {
        room.joined = true;
        room.nick = nick;
        // A new room stays locked until configured: take the defaults (an instant room).
        if (codes.includes("201")) {
          this.connection.iq("set", room.jid, el("query", { xmlns: NS.mucOwner }, el("x", { xmlns: NS.data, type: "submit" })))
            .then(() => { room.unlocked = true; this.onChange(); })
            .catch((e) => this.onError(`Creating ${room.jid} failed: ${e.message}`));
        } else {
          room.unlocked = true;
        }
      }
    }
    this.onChange();
  },
};
