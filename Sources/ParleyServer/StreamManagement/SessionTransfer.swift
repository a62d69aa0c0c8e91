import ParleyCore

/// A resumable session (XEP-0198) handed from the node that held it to the node its client
/// reconnected to, so the client resumes there as it would have on the first: the bound JID,
/// both counters, every stanza it has not acknowledged, and the presence bookkeeping the
/// router and presence module keep for it. It travels as one XML element through the
/// cluster's inbox (never to a client), in a namespace of Parley's own.
public struct SessionTransfer: Sendable, Equatable {
    public static let namespace = "urn:parley:cluster:session"

    public var jid: JID
    public var resumptionID: String
    /// Stanzas handled from the client (the `h` the server reports).
    public var inbound: UInt32
    /// The client's last acknowledged `h`: the queue's first stanza is number `acknowledged + 1`.
    public var acknowledged: UInt32
    /// Stanzas sent and not yet acknowledged, oldest first.
    public var queue: [XMLElement]
    public var resumeTimeoutSeconds: Int64
    public var maxUnacked: Int
    public var presence: SessionPresence

    public init(
        jid: JID, resumptionID: String, inbound: UInt32, acknowledged: UInt32, queue: [XMLElement], resumeTimeoutSeconds: Int64,
        maxUnacked: Int, presence: SessionPresence
    ) {
        self.jid = jid
        self.resumptionID = resumptionID
        self.inbound = inbound
        self.acknowledged = acknowledged
        self.queue = queue
        self.resumeTimeoutSeconds = resumeTimeoutSeconds
        self.maxUnacked = maxUnacked
        self.presence = presence
    }

    public var element: XMLElement {
        var root = XMLElement(
            "session", namespace: Self.namespace,
            [
                "jid": jid.description, "id": resumptionID, "h": String(inbound), "acknowledged": String(acknowledged),
                "timeout": String(resumeTimeoutSeconds), "max-unacked": String(maxUnacked),
            ])
        var state = XMLElement(
            "presence-state", namespace: Self.namespace,
            [
                "available": presence.isAvailable ? "1" : "0", "priority": String(presence.priority),
                "roster": presence.wantsRosterPushes ? "1" : "0", "blocklist": presence.wantsBlocklistPushes ? "1" : "0",
                "carbons": presence.wantsCarbons ? "1" : "0",
            ])
        if let status = presence.unavailableStatus { state.append(XMLElement("unavailable-status", namespace: Self.namespace, text: status)) }
        if let last = presence.lastPresence {
            var holder = XMLElement("last", namespace: Self.namespace)
            holder.append(last)
            state.append(holder)
        }
        for recipient in presence.directedPresence.map(\.description).sorted() {
            state.append(XMLElement("directed", namespace: Self.namespace, ["jid": recipient]))
        }
        for node in presence.notifyNodes.sorted() { state.append(XMLElement("notify", namespace: Self.namespace, ["node": node])) }
        root.append(state)
        var queued = XMLElement("queue", namespace: Self.namespace)
        for stanza in queue { queued.append(stanza) }
        root.append(queued)
        return root
    }

    /// Reads a transfer back; nil for anything that is not a whole one.
    public init?(_ element: XMLElement) {
        guard element.name == "session", element.namespace == Self.namespace,
            let jid = element[attribute: "jid"].flatMap({ try? JID($0) }), jid.isFull,
            let id = element[attribute: "id"], !id.isEmpty,
            let inbound = element[attribute: "h"].flatMap({ UInt32($0) }),
            let acknowledged = element[attribute: "acknowledged"].flatMap({ UInt32($0) }),
            let timeout = element[attribute: "timeout"].flatMap({ Int64($0) }),
            let maxUnacked = element[attribute: "max-unacked"].flatMap({ Int($0) }),
            let state = element.firstChild("presence-state", namespace: Self.namespace),
            let queue = element.firstChild("queue", namespace: Self.namespace)
        else { return nil }
        var presence = SessionPresence()
        presence.isAvailable = state[attribute: "available"] == "1"
        presence.priority = state[attribute: "priority"].flatMap({ Int8($0) }) ?? 0
        presence.wantsRosterPushes = state[attribute: "roster"] == "1"
        presence.wantsBlocklistPushes = state[attribute: "blocklist"] == "1"
        presence.wantsCarbons = state[attribute: "carbons"] == "1"
        presence.unavailableStatus = state.firstChild("unavailable-status", namespace: Self.namespace)?.text
        presence.lastPresence = state.firstChild("last", namespace: Self.namespace)?.elements.first
        presence.directedPresence = DirectedPresenceRecipients(
            state.elements.filter { $0.name == "directed" }.compactMap { $0[attribute: "jid"].flatMap { try? JID($0) } })
        presence.notifyNodes = Set(state.elements.filter { $0.name == "notify" }.compactMap { $0[attribute: "node"] })
        self.init(
            jid: jid, resumptionID: id, inbound: inbound, acknowledged: acknowledged, queue: queue.elements,
            resumeTimeoutSeconds: timeout, maxUnacked: maxUnacked, presence: presence)
    }
}

extension SessionPresence: Equatable {
    public static func == (lhs: SessionPresence, rhs: SessionPresence) -> Bool {
        lhs.isAvailable == rhs.isAvailable && lhs.priority == rhs.priority && lhs.lastPresence == rhs.lastPresence
            && lhs.unavailableStatus == rhs.unavailableStatus && lhs.wantsRosterPushes == rhs.wantsRosterPushes
            && lhs.wantsBlocklistPushes == rhs.wantsBlocklistPushes && lhs.wantsCarbons == rhs.wantsCarbons
            && lhs.directedPresence == rhs.directedPresence && lhs.notifyNodes == rhs.notifyNodes
    }
}
