// The IM side of the web chat, on top of one Connection: roster and friend requests
// (RFC 6121), presence, vCard avatars and names (XEP-0054/0153, which the server keeps in step
// with XEP-0084/0172), 1:1 messages with receipts (XEP-0184) and carbons (XEP-0280), history
// (XEP-0313), rooms (XEP-0045) and files (XEP-0363 + XEP-0066). It keeps the state the page
// draws and calls onChange() after each change; failures go to onError(one line).

import { NS, x, el, child, children, childText, describeError, bare, resourceOf, localOf, domainOf, randomID } from "./xml.js";
import { Connection } from "./connection.js";
import { Conversation } from "./conversation.js";
import { RoomActions } from "./rooms.js";

const PAGE = 20; // messages per history page

export class Client {
  constructor({ onChange, onError, onStatus }) {
    this.onChange = onChange;
    this.onError = onError;
    this.connection = new Connection({
      onStanza: (stanza) => this.stanza(stanza),
      onStatus: (status, detail) => {
        onStatus(status, detail);
        if (status === "online") this.sessionStarted(detail.resumed).catch((e) => this.onError(e.message));
      },
    });
    this.contacts = new Map(); // bare JID -> {jid, name, subscription, ask, vcard: {name, avatar}, photo, resources: Map}
    this.requests = new Map(); // bare JID -> {jid, nick, status}
    this.rooms = new Map(); // room JID -> {jid, nick, joined, occupants: Map nick -> {role, affiliation, show}}
    this.conversations = new Map(); // JID -> Conversation
    this.vcards = new Map(); // bare JID -> {name, avatar} (own one too)
    this.services = { muc: null, upload: null, uploadMax: null };
    this.mamQueries = new Map(); // queryid -> [messages]
  }

  get me() { return this.connection.jid; }

  login(jid, password) { return this.connection.login(jid, password); }
  logout() { this.connection.logout(); }

  async sessionStarted(resumed) {
    if (resumed) return this.onChange();
    // A new session: what the server has is the truth again.
    const roster = await this.connection.iq("get", null, el("query", { xmlns: NS.roster }));
    this.contacts.clear();
    for (const item of children(child(roster, "query", NS.roster), "item")) this.rosterItem(item);
    this.connection.send(x("presence", { xmlns: NS.client }));
    this.connection.iq("set", null, el("enable", { xmlns: NS.carbons })).catch(() => {});
    this.onChange();
    this.fetchVCard(this.me);
    for (const jid of this.contacts.keys()) this.fetchVCard(jid);
    await this.discoverServices();
    for (const room of this.rooms.values()) this.sendJoin(room);
  }

  async discoverServices() {
    const items = await this.connection.iq("get", domainOf(this.me), el("query", { xmlns: NS.discoItems }));
    for (const item of children(child(items, "query", NS.discoItems), "item")) {
      const jid = item.getAttribute("jid");
      try {
        const info = child(await this.connection.iq("get", jid, el("query", { xmlns: NS.discoInfo })), "query", NS.discoInfo);
        const features = children(info, "feature").map((f) => f.getAttribute("var"));
        if (children(info, "identity").some((i) => i.getAttribute("category") === "conference") && features.includes(NS.muc)) this.services.muc = jid;
        if (features.includes(NS.upload)) {
          this.services.upload = jid;
          for (const form of children(info, "x", NS.data)) {
            const field = children(form, "field").find((f) => f.getAttribute("var") === "max-file-size");
            if (field) this.services.uploadMax = Number(childText(field, "value"));
          }
        }
      } catch { /* a service that does not answer is not offered */ }
    }
    this.onChange();
  }

  // -- incoming stanzas

  stanza(stanza) {
    switch (stanza.localName) {
      case "iq": return this.iqRequest(stanza);
      case "presence": return this.presence(stanza);
      case "message": return this.message(stanza);
    }
  }

  iqRequest(iq) {
    const type = iq.getAttribute("type");
    if (type !== "get" && type !== "set") return;
    const from = iq.getAttribute("from"), id = iq.getAttribute("id");
    const payload = iq.firstElementChild;
    const answer = (...content) => this.connection.send(x("iq", { xmlns: NS.client, type: "result", to: from, id }, ...content));
    if (type === "set" && payload && payload.namespaceURI === NS.roster && (!from || bare(from) === this.me)) {
      for (const item of children(payload, "item")) this.rosterItem(item);
      this.onChange();
      return answer();
    }
    if (type === "get" && payload && payload.localName === "ping") return answer();
    if (type === "get" && payload && payload.namespaceURI === NS.discoInfo && !payload.getAttribute("node")) {
      return answer(el("query", { xmlns: NS.discoInfo },
        el("identity", { category: "client", type: "web", name: "Parley web chat" }),
        [NS.discoInfo, NS.receipts, NS.oob, "urn:xmpp:ping"].map((f) => el("feature", { var: f }))));
    }
    this.connection.send(x("iq", { xmlns: NS.client, type: "error", to: from, id },
      el("error", { type: "cancel" }, el("service-unavailable", { xmlns: NS.stanzas }))));
  }

  rosterItem(item) {
    const jid = item.getAttribute("jid");
    if (item.getAttribute("subscription") === "remove") { this.contacts.delete(jid); return; }
    const known = this.contacts.get(jid);
    this.contacts.set(jid, {
      jid, name: item.getAttribute("name"), subscription: item.getAttribute("subscription") || "none",
      ask: item.getAttribute("ask"), resources: known ? known.resources : new Map(), photo: known ? known.photo : null,
    });
    if (!known) this.fetchVCard(jid);
    // Accepted elsewhere (another device): no longer a request here.
    if (["from", "both"].includes(item.getAttribute("subscription"))) this.requests.delete(jid);
  }

  presence(presence) {
    const from = presence.getAttribute("from") || "";
    const jid = bare(from), type = presence.getAttribute("type");
    if (child(presence, "x", NS.mucUser) || (this.rooms.has(jid) && type === "error")) return this.roomPresence(presence);
    switch (type) {
      case "subscribe": {
        const contact = this.contacts.get(jid);
        if (contact && ["from", "both"].includes(contact.subscription)) break;
        this.requests.set(jid, { jid, nick: childText(presence, "nick", NS.nick), status: childText(presence, "status") });
        break;
      }
      case "unsubscribe": case "unsubscribed": case "subscribed": case "probe": break;
      case "error":
        this.onError(`Presence to ${jid} failed: ${describeError(presence)}`);
        break;
      default: {
        const contact = this.contacts.get(jid);
        if (!contact) break;
        if (type === "unavailable") contact.resources.delete(resourceOf(from));
        else contact.resources.set(resourceOf(from), { show: childText(presence, "show") || "available", status: childText(presence, "status") });
        const update = child(presence, "x", NS.vcardUpdate);
        const photo = update ? childText(update, "photo") : null;
        if (photo !== null && photo !== contact.photo) {
          contact.photo = photo;
          this.fetchVCard(jid);
        }
      }
    }
    this.onChange();
  }

  message(message) {
    const from = message.getAttribute("from") || this.me;
    const carbon = child(message, "received", NS.carbons) || child(message, "sent", NS.carbons);
    if (carbon) {
      if (bare(from) !== this.me) return; // only our own server may hand us copies
      const inner = child(child(carbon, "forwarded", NS.forward), "message");
      return inner && this.chatMessage(inner, { outgoing: carbon.localName === "sent" });
    }
    const result = child(message, "result", NS.mam);
    if (result) {
      const collected = this.mamQueries.get(result.getAttribute("queryid"));
      if (!collected) return;
      const forwarded = child(result, "forwarded", NS.forward);
      const inner = child(forwarded, "message");
      const delay = child(forwarded, "delay", NS.delay);
      if (inner) collected.push({ inner, archiveID: result.getAttribute("id"), time: delay && delay.getAttribute("stamp") });
      return;
    }
    if (message.getAttribute("type") === "error") {
      return this.onError(`Message to ${bare(from)} failed: ${describeError(message)}`);
    }
    this.chatMessage(message, {});
  }

  /** A chat, normal or groupchat message, live or from the archive. */
  chatMessage(message, { outgoing, archiveID, time, history }) {
    const from = message.getAttribute("from") || this.connection.fullJID;
    const to = message.getAttribute("to") || this.me;
    const type = message.getAttribute("type") || "normal";
    const room = type === "groupchat" || this.rooms.has(bare(from)) && type !== "chat" ? bare(from) : null;
    if (outgoing === undefined) outgoing = bare(from) === this.me;
    const peer = room || (outgoing ? bare(to) : bare(from));
    const receipt = child(message, "received", NS.receipts);
    if (receipt) {
      const conversation = this.conversations.get(peer);
      if (conversation && !outgoing) conversation.delivered(receipt.getAttribute("id"));
      return this.onChange();
    }
    const body = childText(message, "body");
    // Links are http(s) only: a javascript: or data: URL from a peer never becomes one.
    const oob = [childText(child(message, "x", NS.oob), "url")].find((u) => u && /^https?:\/\/\S+$/i.test(u)) || null;
    if (body === null && !oob) return;
    const stanzaIDs = children(message, "stanza-id", NS.sid);
    const by = room || this.me;
    const sid = stanzaIDs.find((s) => s.getAttribute("by") === by);
    const delay = child(message, "delay", NS.delay);
    const conversation = this.conversation(peer, room ? "room" : "chat");
    const added = conversation.add({
      id: message.getAttribute("id"), archiveID: archiveID || (sid && sid.getAttribute("id")),
      from: room ? resourceOf(from) : bare(from), outgoing: room ? resourceOf(from) === this.rooms.get(room)?.nick : outgoing,
      body: body || oob, url: oob || (body && /^https:\/\/\S+$/.test(body) ? body : null),
      time: time || (delay && delay.getAttribute("stamp")) || new Date().toISOString(),
    }, history);
    // XEP-0184: acknowledge a live message that asks for it (never archived ones).
    if (added && !history && !outgoing && !room && child(message, "request", NS.receipts) && message.getAttribute("id")) {
      this.connection.send(x("message", { xmlns: NS.client, to: from, id: randomID() },
        el("received", { xmlns: NS.receipts, id: message.getAttribute("id") })));
    }
    this.onChange();
  }

  conversation(jid, kind) {
    if (!this.conversations.has(jid)) this.conversations.set(jid, new Conversation(jid, kind));
    return this.conversations.get(jid);
  }

  // -- actions

  sendMessage(jid, text, oobURL) {
    const room = this.rooms.get(jid);
    const id = randomID();
    this.connection.send(x("message", { xmlns: NS.client, to: jid, type: room ? "groupchat" : "chat", id },
      el("body", {}, text),
      oobURL && el("x", { xmlns: NS.oob }, el("url", {}, oobURL)),
      !room && el("request", { xmlns: NS.receipts }),
      el("origin-id", { xmlns: NS.sid, id })));
    // A room echoes our own message back; a chat message is shown at once.
    if (!room) {
      this.conversation(jid, "chat").add({ id, from: this.me, outgoing: true, body: text, url: oobURL, time: new Date().toISOString() });
      this.onChange();
    }
  }

  async sendFile(jid, file) {
    if (!this.services.upload) throw new Error("This server offers no file upload");
    if (this.services.uploadMax && file.size > this.services.uploadMax) {
      throw new Error(`${file.name} is ${file.size} bytes; the server takes files up to ${this.services.uploadMax} bytes`);
    }
    const type = file.type || "application/octet-stream";
    const answer = await this.connection.iq("get", this.services.upload,
      el("request", { xmlns: NS.upload, filename: file.name, size: file.size, "content-type": type }));
    const slot = child(answer, "slot", NS.upload);
    const put = child(slot, "put"), get = child(slot, "get");
    if (!put || !get) throw new Error("The upload service gave no upload slot");
    const headers = { "Content-Type": type };
    // XEP-0363 §5: only these headers of the slot may be sent.
    for (const header of children(put, "header")) {
      const name = header.getAttribute("name");
      if (["authorization", "cookie", "expires"].includes((name || "").toLowerCase())) headers[name] = header.textContent;
    }
    const response = await fetch(put.getAttribute("url"), { method: "PUT", body: file, headers });
    if (!response.ok) throw new Error(`Upload of ${file.name} refused (${response.status}): ${(await response.text()).trim()}`);
    const url = get.getAttribute("url");
    this.sendMessage(jid, url, url);
  }

  addContact(jid) {
    jid = bare(jid.trim()).toLowerCase();
    if (!/^[^@\s/]+@[^@\s/]+$/.test(jid)) throw new Error(`"${jid}" is not an address like friend@example.org`);
    this.connection.iq("set", null, el("query", { xmlns: NS.roster }, el("item", { jid })))
      .then(() => this.connection.send(x("presence", { xmlns: NS.client, to: jid, type: "subscribe" },
        this.vcards.get(this.me)?.name && el("nick", { xmlns: NS.nick }, this.vcards.get(this.me).name))))
      .catch((e) => this.onError(`Adding ${jid} failed: ${e.message}`));
  }

  accept(jid) {
    this.connection.send(x("presence", { xmlns: NS.client, to: jid, type: "subscribed" }));
    const contact = this.contacts.get(jid);
    // A friend request is mutual: ask back unless we already see them.
    if (!contact || !["to", "both"].includes(contact.subscription) && !contact.ask) {
      this.connection.send(x("presence", { xmlns: NS.client, to: jid, type: "subscribe" }));
    }
    this.requests.delete(jid);
    this.onChange();
  }

  decline(jid) {
    this.connection.send(x("presence", { xmlns: NS.client, to: jid, type: "unsubscribed" }));
    this.requests.delete(jid);
    this.onChange();
  }

  setShow(show) {
    this.connection.send(x("presence", { xmlns: NS.client }, show !== "available" && el("show", {}, show)));
  }

  /** One page of older messages (XEP-0313 with RSM before), from the account's archive for a
   *  chat, from the room's for a room. */
  async loadOlder(jid) {
    const conversation = this.conversations.get(jid);
    if (!conversation || conversation.complete || conversation.loading) return;
    conversation.loading = true;
    const queryid = randomID();
    const collected = [];
    this.mamQueries.set(queryid, collected);
    const room = conversation.kind === "room";
    const fields = [el("field", { var: "FORM_TYPE", type: "hidden" }, el("value", {}, NS.mam))];
    if (!room) fields.push(el("field", { var: "with" }, el("value", {}, jid)));
    try {
      const result = await this.connection.iq("set", room ? jid : null, el("query", { xmlns: NS.mam, queryid },
        el("x", { xmlns: NS.data, type: "submit" }, fields),
        el("set", { xmlns: NS.rsm }, el("max", {}, String(PAGE)), el("before", {}, conversation.oldestArchiveID() || ""))));
      const fin = child(result, "fin", NS.mam);
      for (const { inner, archiveID, time } of collected) {
        this.chatMessage(inner, { archiveID, time, history: true, outgoing: room ? undefined : bare(inner.getAttribute("from") || "") === this.me });
      }
      conversation.complete = fin && fin.getAttribute("complete") === "true" || collected.length === 0;
    } catch (error) {
      // A room whose owners switched its archive off has no history to page: not a failure.
      if (room && /^(feature-not-implemented|service-unavailable)/.test(error.message)) conversation.complete = true;
      else throw error;
    } finally {
      conversation.loading = false;
      this.mamQueries.delete(queryid);
      this.onChange();
    }
  }

  async fetchVCard(jid) {
    try {
      const result = await this.connection.iq("get", jid === this.me ? null : jid, el("vCard", { xmlns: NS.vcard }));
      const card = child(result, "vCard", NS.vcard);
      if (!card) return;
      const photo = child(card, "PHOTO");
      const binval = photo && childText(photo, "BINVAL");
      const type = photo && childText(photo, "TYPE") || "image/png";
      this.vcards.set(jid, {
        name: childText(card, "NICKNAME") || childText(card, "FN"),
        // Only image types a browser draws safely: no SVG from other people.
        avatar: binval && /^image\/(png|jpeg|gif|webp)$/.test(type) ? `data:${type};base64,${binval.replace(/\s+/g, "")}` : null,
      });
      this.onChange();
    } catch { /* no vCard: initials */ }
  }

  displayName(jid) {
    const contact = this.contacts.get(jid);
    return contact && contact.name || this.vcards.get(jid)?.name || this.requests.get(jid)?.nick || localOf(jid);
  }

  avatar(jid) { return this.vcards.get(jid)?.avatar || null; }

  presenceOf(jid) {
    const contact = this.contacts.get(jid);
    if (!contact || contact.resources.size === 0) return "offline";
    const order = ["chat", "available", "away", "xa", "dnd"];
    return [...contact.resources.values()].map((r) => r.show).sort((a, b) => order.indexOf(a) - order.indexOf(b))[0];
  }
}

// Rooms (XEP-0045) live in rooms.js.
Object.assign(Client.prototype, RoomActions);
