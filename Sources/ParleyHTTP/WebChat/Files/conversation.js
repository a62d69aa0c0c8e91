// The messages of one chat or room as the page shows them: in time order, each once (a
// message can come live, as a carbon, in a room's join history and from the archive).

export class Conversation {
  constructor(jid, kind) {
    this.jid = jid;
    this.kind = kind; // "chat" or "room"
    this.messages = [];
    this.seen = new Set();
    this.complete = false; // the archive has nothing older
    this.loading = false;
    this.unread = 0;
  }

  /** Adds a message ({id, archiveID, from, outgoing, body, url, time}); false if already there. */
  add(message, history = false) {
    const keys = [message.archiveID && "a:" + message.archiveID, message.id && "i:" + message.id].filter(Boolean);
    if (keys.some((k) => this.seen.has(k))) {
      // The live copy had no archive id yet; the archive's copy brings it for paging.
      const known = this.messages.find((m) => (message.id && m.id === message.id));
      if (known && !known.archiveID && message.archiveID) {
        known.archiveID = message.archiveID;
        this.seen.add("a:" + message.archiveID);
      }
      return false;
    }
    for (const k of keys) this.seen.add(k);
    message.at = Date.parse(message.time) || Date.now();
    let i = this.messages.length;
    while (i > 0 && this.messages[i - 1].at > message.at) i -= 1;
    this.messages.splice(i, 0, message);
    if (!history && !message.outgoing) this.unread += 1;
    return true;
  }

  delivered(id) {
    const message = this.messages.find((m) => m.outgoing && m.id === id);
    if (message) message.delivered = true;
  }

  oldestArchiveID() {
    const oldest = this.messages.find((m) => m.archiveID);
    return oldest ? oldest.archiveID : null;
  }

  lastTime() {
    const last = this.messages[this.messages.length - 1];
    return last ? new Date(last.at + 1).toISOString() : null;
  }
}
