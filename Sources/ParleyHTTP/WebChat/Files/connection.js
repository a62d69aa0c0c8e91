// One XMPP session over WebSocket (RFC 7395): discovery (XEP-0156), SASL, bind, stream
// management (XEP-0198) with resumption, and reconnection with backoff and jitter when the
// socket drops. What the session carries is client.js's business.

import { NS, x, el, parse, child, children, childText, describeError, bare, domainOf, randomID } from "./xml.js";
import { ScramSHA256, utf8ToBase64 } from "./scram.js";

const STEP_TIMEOUT = 20000; // ms for any one negotiation step or iq
const MAX_BACKOFF = 30000;

/** A failure the user must act on (wrong password): no reconnection after it. */
export class FatalError extends Error {}

export class Connection {
  /** onStanza(element): every stanza that is not an iq answer; onStatus(status, detail):
   *  "connecting", "online" (detail: {resumed}), "reconnecting" (detail: seconds), "offline"
   *  (detail: reason or null). */
  constructor({ onStanza, onStatus }) {
    this.onStanza = onStanza;
    this.onStatus = onStatus;
    this.pending = new Map(); // iq id -> {resolve, reject, timer}
    this.queue = [];
    this.waiter = null;
    this.sm = null; // {id, inbound, outbound, unacked: [[n, xml]]} once <enabled/> with resume
    this.wanted = false;
  }

  /** Logs in (user@domain); throws a one-line Error when that fails. */
  async login(jid, password) {
    this.jid = bare(jid).toLowerCase();
    this.password = password;
    this.resource = "web-" + randomID().slice(0, 6);
    this.wanted = true;
    this.attempt = 0;
    try {
      return await this.establish();
    } catch (error) {
      this.wanted = false;
      this.drop();
      throw error;
    }
  }

  logout() {
    this.wanted = false;
    clearTimeout(this.retryTimer);
    if (this.ws && this.ws.readyState === WebSocket.OPEN) {
      if (this.online) this.ws.send(x("presence", { xmlns: NS.client, type: "unavailable" }));
      this.ws.send(x("close", { xmlns: NS.framing }));
    }
    this.sm = null;
    this.drop();
    this.onStatus("offline", null);
  }

  /** Sends a stanza (a string built with x(), with xmlns jabber:client). */
  send(stanza) {
    if (this.sm) {
      this.sm.outbound += 1;
      this.sm.unacked.push([this.sm.outbound, stanza]);
    }
    if (this.online) {
      this.ws.send(stanza);
      if (this.sm && this.sm.unacked.length >= 5) this.ws.send(x("r", { xmlns: NS.sm }));
    } else if (!this.sm) {
      throw new Error("Not connected: the message was not sent");
    }
  }

  /** An iq request; resolves with the result, rejects with the error as one line. */
  iq(type, to, payload) {
    const id = randomID();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error("The server did not answer in time"));
      }, STEP_TIMEOUT);
      this.pending.set(id, { resolve, reject, timer });
      try {
        this.send(x("iq", { xmlns: NS.client, type, to, id }, payload));
      } catch (error) {
        clearTimeout(timer);
        this.pending.delete(id);
        reject(error);
      }
    });
  }

  get fullJID() { return `${this.jid}/${this.resource}`; }

  // -- establishing a session

  async establish() {
    this.onStatus("connecting", null);
    const url = await this.discover();
    this.url = url;
    await this.openSocket(url);
    let features = await this.openStream();
    await this.authenticate(features);
    features = await this.openStream();
    if (this.sm && child(features, "sm", NS.sm)) {
      this.ws.send(x("resume", { xmlns: NS.sm, previd: this.sm.id, h: this.sm.inbound }));
      const answer = await this.next();
      if (answer.localName === "resumed") {
        this.goOnline();
        this.acknowledged(Number(answer.getAttribute("h")));
        const unacked = this.sm.unacked;
        this.sm.unacked = [];
        this.sm.outbound = Number(answer.getAttribute("h"));
        for (const [, stanza] of unacked) this.send(stanza);
        this.resumptions = (this.resumptions || 0) + 1;
        this.onStatus("online", { resumed: true });
        return true;
      }
      // Expired: a new session, whose owner must fetch everything again; the messages the
      // old one may not have delivered are sent again on it.
      this.unsent = this.sm.unacked.map(([, stanza]) => stanza).filter((s) => s.startsWith("<message"));
      this.sm = null;
    }
    this.failPending("The connection was lost before the server answered");
    const bound = await this.request(x("iq", { xmlns: NS.client, type: "set", id: "bind" },
      el("bind", { xmlns: NS.bind }, el("resource", {}, this.resource))));
    const jid = childText(child(bound, "bind", NS.bind), "jid", NS.bind);
    if (bound.getAttribute("type") !== "result" || !jid) throw new Error("Binding a resource failed: " + describeError(bound));
    this.resource = jid.slice(jid.indexOf("/") + 1);
    if (child(features, "sm", NS.sm)) {
      this.smRequested = { inbound: 0, outbound: 0, unacked: [] };
      this.ws.send(x("enable", { xmlns: NS.sm, resume: "true" }));
    }
    this.goOnline();
    for (const stanza of this.unsent || []) this.send(stanza);
    this.unsent = [];
    this.onStatus("online", { resumed: false });
    return false;
  }

  /** XEP-0156: the page's own server first (it served this page), then the JID's domain. */
  async discover() {
    const domain = domainOf(this.jid);
    for (const base of [location.origin, `https://${domain}`]) {
      try {
        const response = await fetch(`${base}/.well-known/host-meta.json`, { cache: "no-cache" });
        if (!response.ok) continue;
        const links = (await response.json()).links || [];
        const link = links.find((l) => l.rel === "urn:xmpp:alt-connections:websocket");
        if (link) return link.href;
      } catch { /* try the next */ }
    }
    throw new Error(`No WebSocket endpoint found for ${domain} (/.well-known/host-meta.json)`);
  }

  openSocket(url) {
    this.drop();
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, "xmpp");
      this.ws = ws;
      ws.onopen = () => {
        if (ws.protocol !== "xmpp") reject(new Error("The server did not accept the xmpp subprotocol"));
        else resolve();
      };
      ws.onmessage = (event) => this.received(ws, event.data);
      ws.onerror = () => reject(new Error(`Could not connect to ${url}`));
      ws.onclose = (event) => {
        reject(new Error(`Could not connect to ${url}`));
        this.socketClosed(ws, event);
      };
    });
  }

  async openStream() {
    this.ws.send(x("open", { xmlns: NS.framing, to: domainOf(this.jid), version: "1.0" }));
    const opened = await this.next();
    if (opened.localName !== "open") throw new Error("The server did not open a stream");
    const features = await this.next();
    if (features.localName !== "features") throw new Error("The server sent no stream features");
    return features;
  }

  async authenticate(features) {
    const mechanisms = children(child(features, "mechanisms", NS.sasl), "mechanism").map((m) => m.textContent);
    const username = this.jid.slice(0, this.jid.indexOf("@"));
    let answer;
    if (mechanisms.includes("SCRAM-SHA-256")) {
      const scram = new ScramSHA256(username, this.password);
      answer = await this.request(x("auth", { xmlns: NS.sasl, mechanism: "SCRAM-SHA-256" }, scram.first()));
      while (answer.localName === "challenge") {
        answer = await this.request(x("response", { xmlns: NS.sasl }, await scram.respond(answer.textContent)));
      }
      if (answer.localName === "success" && !scram.verify(answer.textContent)) {
        throw new FatalError("The server could not prove it knows the password (SCRAM signature mismatch)");
      }
    } else if (mechanisms.includes("PLAIN") && location.protocol === "https:") {
      answer = await this.request(x("auth", { xmlns: NS.sasl, mechanism: "PLAIN" }, utf8ToBase64(`\0${username}\0${this.password}`)));
    } else {
      throw new FatalError(`No login method this page can use (the server offers ${mechanisms.join(", ") || "none"})`);
    }
    if (answer.localName !== "success") {
      const condition = [...answer.children].find((c) => c.localName !== "text");
      const text = childText(answer, "text", NS.sasl);
      if (condition && condition.localName === "not-authorized") throw new FatalError("Wrong user name or password");
      throw new FatalError(`Login refused: ${condition ? condition.localName : "failure"}${text ? " (" + text + ")" : ""}`);
    }
  }

  // -- reading

  received(ws, data) {
    if (ws !== this.ws) return;
    const element = parse(data);
    if (!element) return this.streamFailed("The server sent XML this page cannot read");
    if (element.namespaceURI === NS.streams && element.localName === "error") {
      const condition = [...element.children].find((c) => c.localName !== "text");
      const text = [...element.children].find((c) => c.localName === "text");
      const reason = (condition ? condition.localName : "error") + (text ? `: ${text.textContent}` : "");
      // Another login took this resource, or the account is gone: reconnecting would fight it.
      if (condition && ["conflict", "not-authorized", "policy-violation"].includes(condition.localName)) this.wanted = false;
      return this.streamFailed(`The server ended the session (${reason})`);
    }
    if (element.namespaceURI === NS.framing && element.localName === "close") {
      return this.streamFailed(this.wanted ? "The server closed the session" : null);
    }
    if (!this.online) {
      if (this.waiter) { const w = this.waiter; this.waiter = null; w.resolve(element); } else this.queue.push(element);
      return;
    }
    if (element.namespaceURI === NS.sm) return this.streamManagement(element);
    if (this.sm) this.sm.inbound += 1;
    if (element.localName === "iq" && ["result", "error"].includes(element.getAttribute("type"))) {
      const waiting = this.pending.get(element.getAttribute("id"));
      if (waiting) {
        this.pending.delete(element.getAttribute("id"));
        clearTimeout(waiting.timer);
        if (element.getAttribute("type") === "result") waiting.resolve(element);
        else waiting.reject(new Error(describeError(element)));
        return;
      }
    }
    try { this.onStanza(element); } catch (error) { console.error(error); }
  }

  streamManagement(element) {
    switch (element.localName) {
      case "enabled":
        if (this.smRequested && element.getAttribute("resume") === "true" && element.getAttribute("id")) {
          this.sm = { ...this.smRequested, id: element.getAttribute("id") };
        }
        break;
      case "r":
        this.ws.send(x("a", { xmlns: NS.sm, h: this.sm ? this.sm.inbound : 0 }));
        break;
      case "a":
        this.acknowledged(Number(element.getAttribute("h")));
        break;
    }
  }

  acknowledged(h) {
    if (this.sm) this.sm.unacked = this.sm.unacked.filter(([n]) => n > h);
  }

  next() {
    if (this.queue.length) return Promise.resolve(this.queue.shift());
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => { this.waiter = null; reject(new Error("The server did not answer in time")); }, STEP_TIMEOUT);
      this.waiter = {
        resolve: (e) => { clearTimeout(timer); resolve(e); },
        reject: (e) => { clearTimeout(timer); reject(e); },
      };
    });
  }

  request(xml) { this.ws.send(xml); return this.next(); }

  goOnline() {
    this.online = true;
    this.attempt = 0;
  }

  // -- losing the socket

  socketClosed(ws, event) {
    if (ws !== this.ws) return;
    this.streamFailed(this.wanted ? `Connection lost${event.code && event.code !== 1000 ? " (" + event.code + ")" : ""}` : null);
  }

  streamFailed(reason) {
    const wasOnline = this.online;
    this.drop();
    if (this.waiter) { const w = this.waiter; this.waiter = null; w.reject(new Error(reason || "Connection closed")); }
    if (!wasOnline) return; // login() reports it
    if (!this.wanted) {
      this.failPending("Not connected");
      this.onStatus("offline", reason);
      return;
    }
    this.scheduleReconnect(reason);
  }

  scheduleReconnect(reason) {
    this.attempt += 1;
    // Exponential with jitter, so that a restarted server is not hit by every tab at once.
    const delay = Math.min(MAX_BACKOFF, 1000 * 2 ** (this.attempt - 1)) * (0.5 + Math.random() / 2);
    this.onStatus("reconnecting", { seconds: Math.ceil(delay / 1000), reason });
    this.retryTimer = setTimeout(async () => {
      try {
        await this.establish();
      } catch (error) {
        this.drop();
        if (error instanceof FatalError) {
          this.wanted = false;
          this.onStatus("offline", error.message);
        } else if (this.wanted) {
          this.scheduleReconnect(error.message);
        }
      }
    }, delay);
  }

  failPending(reason) {
    for (const [, waiting] of this.pending) { clearTimeout(waiting.timer); waiting.reject(new Error(reason)); }
    this.pending.clear();
  }

  drop() {
    this.online = false;
    this.queue = [];
    if (this.ws) {
      const ws = this.ws;
      this.ws = null;
      ws.onopen = ws.onmessage = ws.onerror = ws.onclose = null;
      if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.close();
    }
  }
}
