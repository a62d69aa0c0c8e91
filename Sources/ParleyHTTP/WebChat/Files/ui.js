// The page: draws the Client's state and turns clicks and forms into its actions. All text
// goes in through textContent, never as HTML.

import { Client } from "./client.js";
import { bare, localOf } from "./xml.js";

const $ = (id) => document.getElementById(id);
let current = null; // the JID of the open conversation
let renderQueued = false;
let errorTimer = null;

const client = new Client({
  onChange: () => scheduleRender(),
  onError: (text) => showError(text),
  onStatus: (status, detail) => showStatus(status, detail),
});
// The console's (and the browser tests') handle on the running client.
window.parleyChat = client;

function showError(text) {
  const bar = $("error");
  bar.textContent = text;
  bar.hidden = false;
  clearTimeout(errorTimer);
  errorTimer = setTimeout(() => { bar.hidden = true; }, 10000);
}
$("error").addEventListener("click", () => { $("error").hidden = true; });

function showStatus(status, detail) {
  const line = $("status-line");
  line.dataset.status = status;
  line.textContent = {
    connecting: "Connecting…",
    online: "Online",
    reconnecting: `Connection lost; reconnecting in ${detail && detail.seconds}s…`,
    offline: detail ? `Offline: ${detail}` : "Offline",
  }[status];
  if (status === "offline" && detail) showError(detail);
}

/** Failures of actions become one-line messages at the top. */
function guard(action) {
  return async (event) => {
    if (event) event.preventDefault();
    try { await action(event); } catch (error) { showError(error.message); }
  };
}

// -- login

$("login-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const button = $("login-button");
  button.disabled = true;
  $("login-error").textContent = "";
  try {
    await client.login($("login-jid").value.trim(), $("login-password").value);
    $("login-password").value = "";
    $("login").hidden = true;
    $("app").hidden = false;
    scheduleRender();
  } catch (error) {
    $("login-error").textContent = error.message;
  } finally {
    button.disabled = false;
  }
});

$("logout").addEventListener("click", () => {
  client.logout();
  location.reload();
});

$("me-show").addEventListener("change", guard(() => client.setShow($("me-show").value)));

// -- contacts and rooms

$("add-contact").addEventListener("submit", guard(() => {
  client.addContact($("add-contact-jid").value);
  $("add-contact-jid").value = "";
}));

$("join-room").addEventListener("submit", guard(() => {
  const jid = client.joinRoom($("join-room-name").value);
  $("join-room-name").value = "";
  if (jid) open(jid);
}));

$("leave-room").addEventListener("click", guard(() => {
  client.leaveRoom(current);
  current = null;
  scheduleRender();
}));

function open(jid) {
  current = jid;
  const conversation = client.conversation(jid, client.rooms.has(jid) ? "room" : "chat");
  conversation.unread = 0;
  scheduleRender(true);
  // The latest page of history, the first time a chat is opened.
  if (!conversation.opened) {
    conversation.opened = true;
    client.loadOlder(jid).catch((e) => showError(`History of ${jid}: ${e.message}`));
  }
  $("text").focus();
}

// -- sending

$("composer").addEventListener("submit", guard(() => {
  const text = $("text").value;
  if (!current || !text.trim()) return;
  client.sendMessage(current, text);
  $("text").value = "";
  scheduleRender(true);
}));

$("attach").addEventListener("click", () => $("file").click());
$("file").addEventListener("change", guard(async () => {
  const file = $("file").files[0];
  $("file").value = "";
  if (!file || !current) return;
  $("attach").disabled = true;
  try { await client.sendFile(current, file); } finally { $("attach").disabled = false; }
}));

$("older").addEventListener("click", guard(() => client.loadOlder(current)));

// -- drawing

function scheduleRender(toBottom = false) {
  if (toBottom) stickToBottom = true;
  if (renderQueued) return;
  renderQueued = true;
  setTimeout(() => { renderQueued = false; render(); }, 0);
}
let stickToBottom = false;

function node(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}

function hue(jid) {
  let h = 0;
  for (const c of jid) h = (h * 31 + c.charCodeAt(0)) % 360;
  return h;
}

function avatar(jid, show, element = node("span", "avatar")) {
  element.replaceChildren();
  element.className = "avatar";
  const picture = client.avatar(jid);
  if (picture) {
    const img = node("img");
    img.src = picture;
    img.alt = "";
    element.append(img);
    element.style.background = "none";
  } else {
    element.textContent = (client.displayName(jid) || "?").slice(0, 1).toUpperCase();
    element.style.background = `hsl(${hue(jid)} 55% 48%)`;
  }
  if (show) element.dataset.show = show; else delete element.dataset.show;
  return element;
}

const showNames = { available: "online", chat: "online", away: "away", xa: "away", dnd: "busy", offline: "offline" };

function render() {
  if ($("app").hidden) return;
  const me = client.me;
  avatar(me, null, $("me-avatar"));
  $("me-name").textContent = client.displayName(me);
  $("me-name").title = me;

  const requests = [...client.requests.values()].map((request) => {
    const li = node("li", "entry request");
    li.dataset.jid = request.jid;
    li.append(avatar(request.jid), node("span", "name", client.displayName(request.jid)));
    li.title = request.jid + (request.status ? ` — “${request.status}”` : "");
    const actions = node("span", "actions");
    const accept = node("button", "accept", "Accept");
    accept.type = "button";
    accept.addEventListener("click", guard(() => client.accept(request.jid)));
    const decline = node("button", "decline", "Decline");
    decline.type = "button";
    decline.addEventListener("click", guard(() => client.decline(request.jid)));
    actions.append(accept, decline);
    li.append(actions);
    return li;
  });
  $("requests").replaceChildren(...requests);
  $("requests-title").hidden = requests.length === 0;

  const contacts = [...client.contacts.values()].sort((a, b) => client.displayName(a.jid).localeCompare(client.displayName(b.jid)));
  $("contacts").replaceChildren(...contacts.map((contact) => {
    const show = client.presenceOf(contact.jid);
    const li = node("li", "entry contact" + (contact.jid === current ? " selected" : ""));
    li.dataset.jid = contact.jid;
    li.dataset.show = show;
    li.title = contact.jid;
    li.append(avatar(contact.jid, show), node("span", "name", client.displayName(contact.jid)));
    if (contact.ask === "subscribe" && !["to", "both"].includes(contact.subscription)) li.append(node("span", "note", "asked"));
    const unread = client.conversations.get(contact.jid)?.unread;
    if (unread && contact.jid !== current) li.append(node("span", "unread", String(unread)));
    li.addEventListener("click", () => open(contact.jid));
    return li;
  }));

  $("rooms").replaceChildren(...[...client.rooms.values()].map((room) => {
    const li = node("li", "entry room" + (room.jid === current ? " selected" : ""));
    li.dataset.jid = room.jid;
    li.append(avatar(room.jid), node("span", "name", localOf(room.jid)));
    li.append(node("span", "note", room.joined ? String(room.occupants.size) : "joining…"));
    li.addEventListener("click", () => open(room.jid));
    return li;
  }));

  renderConversation();
}

function renderConversation() {
  const conversation = current && client.conversations.get(current);
  const room = current && client.rooms.get(current);
  $("composer").hidden = !conversation;
  $("leave-room").hidden = !room;
  $("occupants").hidden = !room;
  $("peer-avatar").hidden = !conversation;
  if (!conversation) {
    $("peer-name").textContent = "No conversation open";
    $("peer-detail").textContent = "Pick a contact or a room.";
    $("messages").replaceChildren();
    $("older").hidden = true;
    return;
  }
  conversation.unread = 0;
  avatar(current, room ? null : client.presenceOf(current), $("peer-avatar"));
  $("peer-name").textContent = room ? localOf(current) : client.displayName(current);
  $("peer-detail").textContent = room
    ? `${current} · ${room.joined ? room.occupants.size + " in the room" : "joining…"}`
    : `${current} · ${showNames[client.presenceOf(current)] || client.presenceOf(current)}`;
  $("older").hidden = conversation.complete;
  $("older").disabled = conversation.loading;
  $("older").textContent = conversation.loading ? "Loading…" : "Load older messages";

  const scroller = $("messages-scroller");
  const fromBottom = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight;
  $("messages").replaceChildren(...conversation.messages.map(renderMessage));
  if (stickToBottom || fromBottom < 40) scroller.scrollTop = scroller.scrollHeight;
  else scroller.scrollTop = scroller.scrollHeight - scroller.clientHeight - fromBottom;
  stickToBottom = false;

  if (room) {
    const occupants = [...room.occupants.values()].sort((a, b) => a.nick.localeCompare(b.nick));
    $("occupant-list").replaceChildren(...occupants.map((occupant) => {
      const li = node("li", "entry occupant");
      li.dataset.nick = occupant.nick;
      const jid = occupant.jid ? bare(occupant.jid) : `${current}/${occupant.nick}`;
      li.append(avatar(jid, occupant.show), node("span", "name", occupant.nick));
      if (occupant.affiliation && occupant.affiliation !== "none") li.append(node("span", "role", occupant.affiliation));
      return li;
    }));
  }
}

function renderMessage(message) {
  const li = node("li", "message" + (message.outgoing ? " outgoing" : ""));
  if (message.id) li.dataset.id = message.id;
  if (client.rooms.has(current) && !message.outgoing) li.append(node("div", "author", message.from));
  const body = node("div", "body");
  if (message.url) {
    let name = message.url;
    try { name = decodeURIComponent(new URL(message.url).pathname.split("/").pop()) || message.url; } catch { /* as is */ }
    const link = node("a", null, name);
    link.href = message.url;
    link.target = "_blank";
    link.rel = "noopener noreferrer";
    body.append(link);
    if (/\.(png|jpe?g|gif|webp)$/i.test(name) && isUploadURL(message.url)) {
      const img = node("img", "preview");
      img.src = message.url;
      img.alt = "";
      body.append(img);
    }
  } else {
    body.textContent = message.body;
  }
  const meta = node("div", "meta", new Date(message.at).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }));
  if (message.outgoing && message.delivered) {
    const receipt = node("span", "receipt", "✓ delivered");
    meta.append(receipt);
  }
  li.append(body, meta);
  return li;
}

/** Pictures are shown only from this server's upload service (the page's CSP allows no other). */
function isUploadURL(url) {
  try {
    const server = client.connection.url ? new URL(client.connection.url.replace(/^ws/, "http")).origin : location.origin;
    return [server, location.origin].includes(new URL(url).origin);
  } catch {
    return false;
  }
}
