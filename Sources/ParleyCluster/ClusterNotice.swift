import ParleyCore
import ParleyServer

/// What nodes tell each other on the one NOTIFY channel, `parley_cluster`. Payloads are text:
/// fields separated by `|` (node ids may not contain one), the JID after the last of them,
/// and for a session's entry its presence after a newline (JIDs hold no control characters).
/// NOTIFYs reach listeners in commit order, which is all the ordering the directory needs.
enum ClusterNotice: Equatable {
    /// A session's directory entry, as written (bind or change).
    case session(SessionEntry)
    /// A session left the directory. `moved`: it was handed over to another node (XEP-0198
    /// resumption there), so it goes on: hosted services must not see it leave.
    case ended(node: String, sessionID: Int64, jid: String, moved: Bool = false)
    /// A node left the cluster (stopped, or taken for dead): all its sessions are gone.
    case nodeGone(String)
    /// Stanzas wait in this node's inbox.
    case inbox(node: String)
    /// Messages for this user were moved to offline storage (a departed node's inbox).
    case offline(user: String)
    /// `node` stored a change of this user's block list.
    case blockList(node: String, user: String)

    static let channel = "parley_cluster"
    /// PostgreSQL refuses NOTIFY payloads of 8000 bytes or more; a presence that would not
    /// fit is read from the table instead.
    static let maxPayload = 7900

    /// What the writer sends for an entry: everything but the version, which the database
    /// assigns and prepends (`s|<version>|` + this).
    static func sessionPayloadTail(_ entry: SessionEntry) -> String {
        let head = [
            entry.node, String(entry.sessionID), entry.accountID.map(String.init) ?? "", entry.view.isAvailable ? "1" : "0",
            String(entry.view.priority), String(entry.view.flags.rawValue),
        ].joined(separator: "|")
        let presence = entry.presenceText ?? ""
        let full = head + "|" + entry.jid + "\n" + entry.notifyText + "\n" + presence
        if full.utf8.count <= maxPayload { return full }
        return head + "|" + entry.jid + "\n\n\u{1}"  // too large: read the row
    }

    static func parse(_ payload: String) -> ClusterNotice? {
        guard let kind = payload.first, payload.dropFirst().first == "|" else { return nil }
        let rest = payload.dropFirst(2)
        switch kind {
        case "s":
            let lines = rest.split(separator: "\n", maxSplits: 2, omittingEmptySubsequences: false)
            let fields = lines[0].split(separator: "|", maxSplits: 7, omittingEmptySubsequences: false)
            guard fields.count == 8, let version = Int64(fields[0]), let sessionID = Int64(fields[2]),
                let priority = Int8(fields[5]), let flags = Int32(fields[6])
            else { return nil }
            guard lines.count == 3 else { return nil }
            let presence = String(lines[2])
            return .session(
                SessionEntry(
                    jid: String(fields[7]), node: String(fields[1]), sessionID: sessionID, accountID: Int64(fields[3]),
                    version: version, available: fields[4] == "1", priority: priority, flags: flags, notify: String(lines[1]),
                    presenceText: presence.isEmpty ? nil : presence, presenceOmitted: presence == "\u{1}"))
        case "e", "m":
            let fields = rest.split(separator: "|", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3, let sessionID = Int64(fields[1]) else { return nil }
            return .ended(node: String(fields[0]), sessionID: sessionID, jid: String(fields[2]), moved: kind == "m")
        case "x":
            return .nodeGone(String(rest))
        case "i":
            return .inbox(node: String(rest))
        case "o":
            return .offline(user: String(rest))
        case "b":
            let fields = rest.split(separator: "|", maxSplits: 1, omittingEmptySubsequences: false)
            guard fields.count == 2 else { return nil }
            return .blockList(node: String(fields[0]), user: String(fields[1]))
        default:
            return nil
        }
    }
}

/// One row of the session directory.
struct SessionEntry: Equatable, Sendable {
    var jid: String
    var node: String
    var sessionID: Int64
    var accountID: Int64?
    var version: Int64
    var view: SessionPresence.ClusterView
    /// The last available presence as stored (XML text), nil when unavailable.
    var presenceText: String?
    /// The notice left the presence out (too large for NOTIFY): read the row.
    var presenceOmitted = false

    /// The PEP nodes it wants notifications of, as stored (the `notify` column and the
    /// notice's second line): separated by U+0002, which no node name holds; then, after a
    /// U+0003 if there are any, the recipients of its directed presence, separated the same
    /// way (JIDs hold no control characters). One field for both keeps the table and the
    /// notices of nodes that know nothing of directed presence as they were.
    var notifyText: String {
        let nodes = view.notifyNodes.sorted().joined(separator: "\u{2}")
        guard !view.directedPresence.isEmpty else { return nodes }
        return nodes + "\u{3}" + view.directedPresence.map(\.description).sorted().joined(separator: "\u{2}")
    }

    init(
        jid: String, node: String, sessionID: Int64, accountID: Int64?, version: Int64, available: Bool, priority: Int8,
        flags: Int32, notify: String, presenceText: String?, presenceOmitted: Bool = false
    ) {
        self.jid = jid
        self.node = node
        self.sessionID = sessionID
        self.accountID = accountID
        self.version = version
        self.presenceText = presenceOmitted ? nil : presenceText
        self.presenceOmitted = presenceOmitted
        let presence = self.presenceText.flatMap(StoredStanza.parse)
        let parts = notify.split(separator: "\u{3}", maxSplits: 1, omittingEmptySubsequences: false)
        let directed = parts.count > 1 ? parts[1].split(separator: "\u{2}").compactMap { try? JID(String($0)) } : []
        view = SessionPresence.ClusterView(
            isAvailable: available, priority: priority, lastPresence: presence,
            flags: SessionPresence.ClusterView.Flags(rawValue: flags),
            notifyNodes: Set(parts[0].split(separator: "\u{2}").map(String.init)), directedPresence: Set(directed))
    }

    /// A local session's entry as it is now.
    init(local session: SessionHandle, node: String) {
        let view = session.withPresence { $0.clusterView }
        jid = session.jidString
        self.node = node
        sessionID = Int64(bitPattern: session.id)
        accountID = session.accountID
        version = 0
        self.view = view
        presenceText = view.lastPresence.map(StoredStanza.serialize)
    }
}
