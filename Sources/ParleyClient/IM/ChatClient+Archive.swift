import Foundation
import ParleyCore

/// Catching up from the server's archive (XEP-0313 MAM v2, XEP-0059 paging): after every
/// (re)connect the cache asks for everything archived after the last message it saw, so it
/// ends up with every message exactly once, in the archive's order — the server's order,
/// the same on every device.
extension ChatClient {
    static let archivePageSize = 100

    /// Fetches what the archive has that the cache has not confirmed yet, page by page, and
    /// returns once the cache holds all of it. Calls are serialized; one made while a
    /// catch-up runs waits for it and then looks again. Does nothing without a cache or when
    /// the server has no archive.
    public func synchronize() async throws {
        let previous = catchUp
        let task = Task {
            _ = await previous?.result
            try await self.catchUpWithArchive()
        }
        catchUp = task
        try await task.value
    }

    private func catchUpWithArchive() async throws {
        guard let cache, archiveAvailable else { return }
        var cursor = try await cache.archiveCursor()
        while true {
            let queryID = UUID().uuidString
            var set = XMLElement("set", namespace: XMLNamespace.resultSetManagement)
            set.append(XMLElement("max", text: String(Self.archivePageSize)))
            if cursor.caughtUp, let last = cursor.lastID { set.append(XMLElement("after", text: last)) }
            var query = XMLElement("query", namespace: XMLNamespace.archive, ["queryid": queryID])
            query.append(set)
            archivePages[queryID] = []
            defer { archivePages[queryID] = nil }
            let answer: XMLElement
            do {
                answer = try await xmpp.request(XMLElement("iq", namespace: XMLNamespace.client, ["type": "set"], [query]))
            } catch let error as StanzaError {
                switch error.condition {
                case .itemNotFound where cursor.lastID != nil:
                    // The archive dropped the message we stopped at (retention): start over from
                    // what it still has; the cache drops what it already holds.
                    try await cache.resetArchiveCursor()
                    cursor = (false, nil)
                    continue
                case .serviceUnavailable, .featureNotImplemented, .forbidden, .notAllowed:
                    archiveAvailable = false
                    logger.info("the server keeps no message archive for us", metadata: ["error": "\(error)"])
                    return
                default:
                    throw error
                }
            }
            // The results came before the answer; wait until the inbox has collected them.
            await drainInbox()
            let fin = answer.firstChild("fin", namespace: XMLNamespace.archive)
            let resultSet = fin?.firstChild("set", namespace: XMLNamespace.resultSetManagement)
            let items = archivePages[queryID] ?? []
            let lastID = resultSet?.firstChild("last", namespace: XMLNamespace.resultSetManagement)?.text ?? items.last?.archiveID
            for event in try await cache.applyArchivePage(items, lastID: lastID) { await emit(event) }
            if let lastID { cursor = (true, lastID) } else { cursor.caughtUp = true }
            let complete = fin?[attribute: "complete"] == "true" || fin?[attribute: "complete"] == "1"
            if complete || items.isEmpty { return }
        }
    }

    /// A `<result/>` of one of our queries (XEP-0313 §4.2): kept for its page. Returns false
    /// for anything else; results of queries we did not make, or from anyone but our own
    /// account, are dropped.
    func collectArchiveResult(_ stanza: XMLElement) -> Bool {
        guard let result = stanza.firstChild("result", namespace: XMLNamespace.archive) else { return false }
        let from = stanza.from.flatMap { try? JID($0) }
        guard from == nil || from == ownBareJID, let queryID = result[attribute: "queryid"], archivePages[queryID] != nil,
            let item = ArchiveItem(result: result, ownBareJID: ownBareJID)
        else { return true }
        archivePages[queryID]?.append(item)
        return true
    }
}

extension ArchiveItem {
    init?(result: XMLElement, ownBareJID: JID) {
        guard let archiveID = result[attribute: "id"],
            let forwarded = result.firstChild("forwarded", namespace: XMLNamespace.forward),
            let message = forwarded.firstChild("message", namespace: XMLNamespace.client),
            let from = message.from.flatMap({ try? JID($0) }),
            // Private messages in rooms and invitations to them are not one-to-one chats.
            message.firstChild("x", namespace: RoomNamespace.user) == nil, message.firstChild("x", namespace: RoomNamespace.conference) == nil
        else { return nil }
        let outgoing = from.bare == ownBareJID
        guard let peer = outgoing ? message.to.flatMap({ try? JID($0) })?.bare : from.bare, peer != ownBareJID else { return nil }
        let stamp = forwarded.firstChild("delay", namespace: XMLNamespace.delay)?[attribute: "stamp"].flatMap(IncomingMessage.parseStamp)
        self.init(
            archiveID: archiveID, outgoing: outgoing, peer: peer, id: message.id,
            originID: message.firstChild("origin-id", namespace: XMLNamespace.stanzaID)?[attribute: "id"],
            body: message.firstChild("body").map(\.text), timestamp: stamp ?? Date())
        isTombstone = message.firstChild("retracted", namespace: XMLNamespace.messageRetract) != nil
        retracts = message.firstChild("retract", namespace: XMLNamespace.messageRetract)?[attribute: "id"]
        receiptFor = message.firstChild("received", namespace: XMLNamespace.receipts)?[attribute: "id"]
        displayed = message.firstChild("displayed", namespace: XMLNamespace.chatMarkers)?[attribute: "id"]
        if retracts != nil || isTombstone { body = nil }
    }
}
