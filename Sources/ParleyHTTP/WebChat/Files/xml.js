// XML for the web chat: stanzas are built as strings with every value escaped, and each
// WebSocket message (one element, RFC 7395) is parsed on its own with DOMParser.

export const NS = {
  framing: "urn:ietf:params:xml:ns:xmpp-framing",
  client: "jabber:client",
  streams: "http://etherx.jabber.org/streams",
  sasl: "urn:ietf:params:xml:ns:xmpp-sasl",
  bind: "urn:ietf:params:xml:ns:xmpp-bind",
  sm: "urn:xmpp:sm:3",
  stanzas: "urn:ietf:params:xml:ns:xmpp-stanzas",
  roster: "jabber:iq:roster",
  vcard: "vcard-temp",
  vcardUpdate: "vcard-temp:x:update",
  nick: "http://jabber.org/protocol/nick",
  receipts: "urn:xmpp:receipts",
  carbons: "urn:xmpp:carbons:2",
  forward: "urn:xmpp:forward:0",
  delay: "urn:xmpp:delay",
  mam: "urn:xmpp:mam:2",
  rsm: "http://jabber.org/protocol/rsm",
  data: "jabber:x:data",
  discoInfo: "http://jabber.org/protocol/disco#info",
  discoItems: "http://jabber.org/protocol/disco#items",
  muc: "http://jabber.org/protocol/muc",
  mucUser: "http://jabber.org/protocol/muc#user",
  mucOwner: "http://jabber.org/protocol/muc#owner",
  upload: "urn:xmpp:http:upload:0",
  oob: "jabber:x:oob",
  sid: "urn:xmpp:sid:0",
};

export function escape(value) {
  return String(value).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" })[c]);
}

/** x("message", {to, type}, el("body", {}, text)): attributes that are null or undefined are left out;
 *  string children are text (escaped), arrays are flattened, falsy children skipped. */
export function x(name, attributes = {}, ...children) {
  let out = "<" + name;
  for (const [key, value] of Object.entries(attributes)) {
    if (value !== null && value !== undefined) out += ` ${key}="${escape(value)}"`;
  }
  const inner = children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false)
    .map((c) => (c instanceof Raw ? c.xml : escape(c))).join("");
  return inner ? `${out}>${inner}</${name}>` : out + "/>";
}

/** An element already built by x(), so that it is not escaped again when nested. */
class Raw { constructor(xml) { this.xml = xml; } }
export function raw(xml) { return new Raw(xml); }
export function el(name, attributes, ...children) { return raw(x(name, attributes, ...children)); }

const parser = new DOMParser();

/** The one element of a WebSocket message, or null when it is not well-formed. */
export function parse(text) {
  const doc = parser.parseFromString(text, "text/xml");
  if (doc.getElementsByTagName("parsererror").length) return null;
  return doc.documentElement;
}

/** The first child element with this local name (and namespace, when given). */
export function child(element, name, ns) {
  if (!element) return null;
  for (const c of element.children) {
    if (c.localName === name && (!ns || c.namespaceURI === ns)) return c;
  }
  return null;
}

export function children(element, name, ns) {
  if (!element) return [];
  return [...element.children].filter((c) => c.localName === name && (!ns || c.namespaceURI === ns));
}

export function childText(element, name, ns) {
  const c = child(element, name, ns);
  return c ? c.textContent : null;
}

/** The error of an error stanza as one line: "item-not-found: No such room". */
export function describeError(stanza) {
  const error = child(stanza, "error");
  if (!error) return "unknown error";
  const condition = [...error.children].find((c) => c.namespaceURI === NS.stanzas && c.localName !== "text");
  const text = childText(error, "text", NS.stanzas);
  return (condition ? condition.localName : "error") + (text ? `: ${text}` : "");
}

export function bare(jid) { return jid ? jid.split("/")[0] : jid; }
export function resourceOf(jid) { const i = jid.indexOf("/"); return i < 0 ? "" : jid.slice(i + 1); }
export function localOf(jid) { const b = bare(jid); const i = b.indexOf("@"); return i < 0 ? b : b.slice(0, i); }
export function domainOf(jid) { const b = bare(jid); return b.slice(b.indexOf("@") + 1); }

export function randomID() {
  const bytes = crypto.getRandomValues(new Uint8Array(9));
  return btoa(String.fromCharCode(...bytes)).replace(/[+/]/g, "x");
}
