import Foundation
import Logging
import ParleyCore
import ParleyStorage

/// XEP-0313 message archive management (urn:xmpp:mam:2) with XEP-0359 stanza ids and
/// XEP-0424 retractions. Every archivable message between local accounts gets one row in
/// the sender's and one in the recipient's archive, in routing order, and carries the
/// stanza-id of the archive of whoever receives that copy.
public final class ArchiveModule: ServerModule, Sendable {
    public static let namespace = XMLNamespace.archive
    /// The largest page a query gets, whatever `max` it asks for (XEP-0059 §2.1 lets the
    /// responder return fewer).
    static let maxPageSize = 250
    static let defaultPageSize = 50

    let domain: JID
    let store: any ArchiveStore
    let writer: ArchiveWriter
    let logger: Logger

    public init(domain: JID, store: any ArchiveStore, maxMessagesPerUser: Int, logger: Logger) {
        self.domain = domain
        self.store = store
        self.logger = logger
        self.writer = ArchiveWriter(store: store, maxPerUser: maxMessagesPerUser > 0 ? maxMessagesPerUser : nil, logger: logger)
    }

    public func register(in registry: inout ModuleRegistry) throws(ModuleRegistry.Error) {
        try registry.handle(.set, "query", namespace: Self.namespace, for: .account) { [self] request, responder in
            query(request, responder)
        }
        try registry.handle(.get, "prefs", namespace: Self.namespace, for: .account, advertise: false) { [self] request, responder in
            preferences(request, responder, change: false)
        }
        try registry.handle(.set, "prefs", namespace: Self.namespace, for: .account, advertise: false) { [self] request, responder in
            preferences(request, responder, change: true)
        }
        try registry.handle(.get, "query", namespace: Self.namespace, for: .account, advertise: false) { [self] request, responder in
            fields(request, responder)
        }
        try registry.handle(.get, "metadata", namespace: Self.namespace, for: .account, advertise: false) { [self] request, responder in
            metadata(request, responder)
        }
        registry.advertise(Self.extendedFeature, for: .account)
        registry.advertise(XMLNamespace.stanzaID, for: .account)
        try registry.archiveMessages { [self] message, sender, recipient in
            stamp(message, from: sender, to: recipient)
        }
    }

    /// Waits until every message routed so far is in the archive.
    public func flush() async {
        await writer.flush()
    }

    // MARK: Archiving

    /// Which messages are archived (XEP-0313 §5.1.1, XEP-0334): chat and normal messages with
    /// a body, and those carrying a delivery receipt, a chat marker, a retraction or a
    /// `<store/>` hint; never one marked `<no-store/>` or `<no-permanent-store/>`. Chat states
    /// alone are not archived.
    static func isArchivable(_ message: XMLElement) -> Bool {
        let type = message.type ?? "normal"
        guard type == "chat" || type == "normal" else { return false }
        if message.firstChild("no-store", namespace: XMLNamespace.hints) != nil
            || message.firstChild("no-permanent-store", namespace: XMLNamespace.hints) != nil
        {
            return false
        }
        return message.firstChild("body") != nil
            || message.firstChild("store", namespace: XMLNamespace.hints) != nil
            || message.firstChild("received", namespace: XMLNamespace.receipts) != nil
            || message.firstChild("retract", namespace: XMLNamespace.messageRetract) != nil
            || message.elements.contains { $0.namespace == XMLNamespace.chatMarkers && $0.name != "markable" }
    }

    /// A delivery receipt (XEP-0184) or a chat marker (XEP-0333) tells a sender its message
    /// arrived; it must not arrive before that message is stored.
    static func acknowledgesDelivery(_ message: XMLElement) -> Bool {
        message.firstChild("received", namespace: XMLNamespace.receipts) != nil
            || message.elements.contains { $0.namespace == XMLNamespace.chatMarkers && $0.name != "markable" }
    }

    func stamp(_ message: XMLElement, from sender: JID, to recipient: JID) -> RoutedMessage {
        let senderArchive = sender.bare.description
        let recipientArchive = recipient.bare.description
        var clean = message
        // XEP-0359 §3.3: a stanza-id claiming to come from one of these archives was forged.
        func forged(_ child: XMLElement) -> Bool {
            child.name == "stanza-id" && child.namespace == XMLNamespace.stanzaID
                && (child[attribute: "by"] == senderArchive || child[attribute: "by"] == recipientArchive)
        }
        if clean.elements.contains(where: forged) { clean.removeChildren(where: forged) }
        // Only local accounts have archives here: a private message through a hosted
        // service (a room's occupant JID on the other side) is kept on the account's side.
        let senderUser = sender.domainpart == domain.domainpart ? sender.localpart : nil
        let recipientUser = recipient.domainpart == domain.domainpart ? recipient.localpart : nil
        guard Self.isArchivable(clean), senderUser != nil || recipientUser != nil else {
            return RoutedMessage(forRecipient: clean, forSender: clean)
        }
        let id = TimeOrderedUUID.make()
        // One serialization serves the archive's text and the recipient's copy (which the
        // recipient's stream then writes as bytes): the stanza-id goes into the kept bytes.
        let serialized = clean.serializedOnce(in: .clientStream)
        let recipientStanzaID = XMLElement("stanza-id", namespace: XMLNamespace.stanzaID, ["id": id, "by": recipientArchive])
        let forRecipient = serialized.appendingKeepingSerialization(recipientStanzaID)
        let senderStanzaID = XMLElement("stanza-id", namespace: XMLNamespace.stanzaID, ["id": id, "by": senderArchive])
        var forSender = clean
        forSender.append(senderStanzaID)

        let originID = clean.firstChild("origin-id", namespace: XMLNamespace.stanzaID)?[attribute: "id"]
        let retracts = clean.firstChild("retract", namespace: XMLNamespace.messageRetract)?[attribute: "id"]
        let messageID = clean.id
        let messageType = clean.type
        let from = message.from ?? sender.description
        let to = message.to ?? recipient.description
        let now = Date()
        // Both archive copies store the message once serialized, without their stanza-ids
        // (the only difference between them, added back when a query reads them): one
        // serialization on the event loop, and one shared row in the store (v20_perf_archive).
        let text = StoredStanza.serialize(serialized)
        let body = ArchiveEntry.Body(
            from: from, to: to, stanzaID: id, originID: originID, messageID: messageID, messageType: messageType, stanza: text,
            archivedAt: now, retracts: retracts)
        var entries: [ArchiveEntry] = []
        entries.reserveCapacity(2)
        if let senderUser { entries.append(ArchiveEntry(owner: senderUser, with: recipientArchive, body: body)) }
        if let recipientUser, recipientArchive != senderArchive {
            entries.append(ArchiveEntry(owner: recipientUser, with: senderArchive, body: body))
        }
        var routed = RoutedMessage(forRecipient: forRecipient, forSender: forSender, archived: writer.enqueue(entries))
        if let sequences = routed.archived, Self.acknowledgesDelivery(clean) {
            routed.deliverAfter = Task { [writer] in await writer.waitUntilWritten(sequences.upperBound) }
        }
        return routed
    }

    // MARK: Preferences

    private func preferences(_ request: IQRequest, _ responder: IQResponder, change: Bool) {
        guard request.isToOwnAccount, let username = request.from.localpart else {
            return responder.error(StanzaError(.forbidden))
        }
        var wanted: ArchivePreferences?
        if change {
            let payload = request.payload
            guard let mode = payload[attribute: "default"].flatMap(ArchivePreferences.Default.init(rawValue:)) else {
                return responder.error(StanzaError(.badRequest, text: "'default' is one of always, never, roster."))
            }
            func jids(_ list: String) -> [String]? {
                var result: [String] = []
                for item in payload.firstChild(list, namespace: Self.namespace)?.children("jid", namespace: Self.namespace) ?? [] {
                    guard let jid = try? JID(item.text) else { return nil }
                    result.append(jid.bare.description)
                }
                return result
            }
            guard let always = jids("always"), let never = jids("never") else {
                return responder.error(StanzaError(.jidMalformed, text: "A preference names an invalid JID."))
            }
            wanted = ArchivePreferences(defaultMode: mode, always: always, never: never)
        }
        responder.answer { [store, wanted] in
            if let wanted { try await store.setArchivePreferences(wanted, of: username) }
            let current = try await store.archivePreferences(of: username)
            var prefs = XMLElement("prefs", namespace: Self.namespace, ["default": current.defaultMode.rawValue])
            prefs.append(XMLElement("always", children: current.always.map { .element(XMLElement("jid", text: $0)) }))
            prefs.append(XMLElement("never", children: current.never.map { .element(XMLElement("jid", text: $0)) }))
            return prefs
        }
    }
}
