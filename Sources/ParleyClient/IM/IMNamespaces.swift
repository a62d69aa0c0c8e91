import Foundation
import ParleyCore

extension Contact {
    /// Reads a roster `<item/>` (RFC 6121 §2.1.2); nil for a malformed one, which is skipped.
    init?(rosterItem item: XMLElement) {
        guard let address = item[attribute: "jid"], let jid = try? JID(address) else { return nil }
        self.init(
            jid: jid.bare, name: item[attribute: "name"].flatMap { $0.isEmpty ? nil : $0 },
            groups: item.children("group").map(\.text),
            subscription: item[attribute: "subscription"].flatMap(Subscription.init(rawValue:)) ?? .none,
            awaitingApproval: item[attribute: "ask"] == "subscribe")
    }
}

/// What the client needs from an incoming `<message/>`.
struct IncomingMessage {
    var from: JID
    var id: String?
    var type: String
    var body: String?
    var thread: String?
    /// XEP-0359 origin id, set by the sending client.
    var originID: String?
    /// XEP-0359 stanza id, set by our own server (`by` is our bare JID); others could forge it.
    var stanzaID: String?
    var delayedUntil: Date?
    var receiptRequested: Bool
    /// The id of our message that this one acknowledges (XEP-0184 `<received/>`).
    var receiptFor: String?
    /// The id of our message the recipient displayed (XEP-0333 `<displayed/>`).
    var displayedMarker: String?
    /// The origin id of the message this one retracts (XEP-0424 `<retract/>`).
    var retracts: String?

    init?(_ stanza: XMLElement, ownBareJID: JID?) {
        guard let address = stanza.from, let from = try? JID(address) else { return nil }
        self.from = from
        id = stanza.id
        type = stanza.type ?? "normal"
        body = stanza.firstChild("body").map(\.text)
        thread = stanza.firstChild("thread").map(\.text)
        originID = stanza.firstChild("origin-id", namespace: XMLNamespace.stanzaID)?[attribute: "id"]
        stanzaID = stanza.children("stanza-id", namespace: XMLNamespace.stanzaID)
            .first { $0[attribute: "by"] == ownBareJID?.description }?[attribute: "id"]
        delayedUntil = stanza.firstChild("delay", namespace: XMLNamespace.delay)?[attribute: "stamp"].flatMap(Self.parseStamp)
        receiptRequested = stanza.firstChild("request", namespace: XMLNamespace.receipts) != nil
        receiptFor = stanza.firstChild("received", namespace: XMLNamespace.receipts).map { $0[attribute: "id"] ?? stanza.id ?? "" }
        displayedMarker = stanza.firstChild("displayed", namespace: XMLNamespace.chatMarkers)?[attribute: "id"]
        retracts = stanza.firstChild("retract", namespace: XMLNamespace.messageRetract)?[attribute: "id"]
    }

    /// XEP-0082 date-time, with or without fractional seconds.
    static func parseStamp(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}

extension PresenceUpdate {
    /// Availability presence (no type, or `unavailable`); nil for subscription and error types.
    init?(_ stanza: XMLElement) {
        guard let address = stanza.from, let from = try? JID(address) else { return nil }
        let show: Show
        switch stanza.type {
        case nil: show = stanza.firstChild("show").flatMap { Show(rawValue: $0.text) } ?? .available
        case "unavailable": show = .unavailable
        default: return nil
        }
        let priority = stanza.firstChild("priority").flatMap { Int8($0.text) } ?? 0
        self.init(from: from, show: show, status: stanza.firstChild("status")?.text, priority: priority)
    }
}
