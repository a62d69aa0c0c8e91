import Foundation
import ParleyCore
import ParleyStorage

/// XEP-0313 on the room JID: each room with archiving on keeps its groupchat messages under
/// their room stanza-ids, in its own store (not the accounts' archives), persistently; a
/// persistent room's join history comes from it after a restart; it goes with the room.
extension MUCService {
    /// At start-up: the archives of rooms a stopped process did not close go; each stored
    /// room that archives gets its newest messages back as the history newcomers see.
    func loadArchives(into rooms: inout [String: MUCRoom], from store: any MUCArchiveStore) async throws {
        try await store.deleteUnstoredMUCArchives(service: domain)
        let limit = rooms.values.map(\.historyLimit).max() ?? 0
        for (key, tail) in try await store.mucArchiveTails(service: domain, limit: limit) {
            guard var room = rooms[key], room.configuration.archiving else { continue }
            let messages = MUCStoredStanza.parseAll(tail.map(\.stanza))
            for (entry, message) in zip(tail, messages) {
                guard let message else { continue }
                room.history.append(message, limit: room.historyLimit, at: entry.archivedAt)
            }
            rooms[key] = room
        }
    }

    /// Starts the writer, and the hourly expiry when messages expire.
    func startArchive(_ store: any MUCArchiveStore, state: inout State) {
        let writer = MUCArchiveWriter(
            store: store, service: domain, maxPerRoom: settings.archiveMaxMessagesPerRoom > 0 ? settings.archiveMaxMessagesPerRoom : nil,
            logger: logger)
        state.archive = writer
        state.archiveExpiry?.cancel()
        guard settings.archiveRetentionDays > 0 else { return }
        let retention = Double(settings.archiveRetentionDays) * 86_400
        state.archiveExpiry = Task {
            while !Task.isCancelled {
                writer.enqueue(.prune(before: Date().addingTimeInterval(-retention)))
                try? await Task.sleep(for: .seconds(3600))
            }
        }
    }

    func stopArchive() async {
        let (writer, expiry) = withLockedState { ($0.archive, $0.archiveExpiry) }
        expiry?.cancel()
        await writer?.flush()
    }

    /// Waits until every room message sent so far is in its archive.
    public func waitUntilArchived() async {
        await withLockedState { $0.archive }?.flush()
    }

    /// Keeps `message`, which room `key` just sent to its occupants from `sender`, if the
    /// room archives.
    func archive(_ message: XMLElement, in key: String, from sender: JID, state: inout State) {
        guard let room = state.rooms[key], room.configuration.archiving, MUCRoom.isHistoric(message),
            let entry = room.archiveEntry(message, from: sender, service: domain, serverDomain: settings.serverDomain)
        else { return }
        state.archive?.enqueue(.append([entry]))
    }

    /// Room `key` is gone (destroyed, or temporary and empty): so is its archive.
    func forgetArchive(of key: String, state: inout State) {
        state.archive?.enqueue(.delete(room: key))
    }

    // MARK: Queries

    /// An iq to the room in `urn:xmpp:mam:2`: the query form (get) or a query (set). Results
    /// are read off the lock and sent as they come, then the iq result with the page's bounds.
    func archiveRequest(_ stanza: XMLElement, _ payload: XMLElement, from sender: JID, room key: String, state: State, out: inout [XMLElement]) {
        guard let room = state.rooms[key], !room.locked || room.nick(of: sender) != nil else {
            return refuse(stanza, StanzaError(.itemNotFound, text: "There is no room \(key)@\(domain)."), out: &out)
        }
        guard let writer = state.archive else {
            return refuse(stanza, StanzaError(.serviceUnavailable, text: "This service keeps no archives."), out: &out)
        }
        let request: MUCArchiveRequest
        let showRealJIDs = room.mayReadRealJIDs(sender)
        do throws(StanzaError) {
            try room.mayReadArchive(sender)
            if stanza.type == "get" { return out.append(stanza.iqResult(MUCArchiveRequest.fields)) }
            request = try MUCArchiveRequest(payload, room: room.jid, serverDomain: settings.serverDomain, mayReadRealJIDs: showRealJIDs)
        } catch {
            return refuse(stanza, error, out: &out)
        }
        let outlet = self.outlet.withLockedValue { $0 }
        let service = domain
        let serverDomain = settings.serverDomain
        let roomJID = room.jid
        Task {
            await writer.flush()
            let page: MUCArchivePage
            do {
                page = try await writer.store.queryMUCArchive(service: service, room: key, request.query)
            } catch StorageError.itemNotFound {
                if let reply = stanza.errorReply(StanzaError(.itemNotFound, text: "No message in this room's archive has that id.")) {
                    outlet?.send(reply)
                }
                return
            } catch {
                if let reply = stanza.errorReply(StanzaError(.internalServerError, text: "The room's archive cannot be read.")) {
                    outlet?.send(reply)
                }
                return
            }
            let stanzas = MUCStoredStanza.parseAll(page.messages.map(\.stanza))
            var results: [XMLElement] = []
            for (message, archived) in zip(page.messages, stanzas) {
                guard let archived else { continue }
                var realJID: String? = nil
                if showRealJIDs { realJID = message.senderUsername.map { "\($0)@\(serverDomain)" } ?? message.senderJID }
                results.append(
                    Self.result(archived, message, realJID: realJID, queryID: request.queryID, room: roomJID, to: sender))
            }
            for result in request.flipped ? results.reversed() : results { outlet?.send(result) }
            outlet?.send(stanza.iqResult(Self.fin(page)))
        }
    }

    /// One archived message for `requester` (XEP-0313 §4.2), from the room's JID, the
    /// sender's real JID in a muc#user item only for those allowed to see it.
    static func result(
        _ archived: XMLElement, _ message: MUCArchivedMessage, realJID: String?, queryID: String?, room: JID, to requester: JID
    ) -> XMLElement {
        var inner = archived
        inner.to = nil
        inner.removeChildren { $0.name == "x" && $0.namespace == MUCNamespace.user }
        if let realJID {
            inner.append(XMLElement("x", namespace: MUCNamespace.user, [:], [XMLElement("item", namespace: MUCNamespace.user, ["jid": realJID])]))
        }
        var forwarded = XMLElement("forwarded", namespace: XMLNamespace.forward)
        forwarded.append(XMLElement("delay", namespace: XMLNamespace.delay, ["stamp": MUCHistory.stamp(message.archivedAt)]))
        forwarded.append(inner)
        var result = XMLElement("result", namespace: XMLNamespace.archive, ["id": message.stanzaID])
        if let queryID { result[attribute: "queryid"] = queryID }
        result.append(forwarded)
        return XMLElement(
            "message", namespace: XMLNamespace.client, ["from": room.description, "to": requester.description, "id": message.stanzaID],
            [result])
    }

    /// The end of a query (XEP-0313 §4.3): complete or not, and the page's first and last
    /// ids (oldest and newest, whichever way it was asked for) with the total count.
    static func fin(_ page: MUCArchivePage) -> XMLElement {
        var set = XMLElement("set", namespace: XMLNamespace.resultSetManagement)
        if let first = page.messages.first, let last = page.messages.last {
            set.append(XMLElement("first", text: first.stanzaID))
            set.append(XMLElement("last", text: last.stanzaID))
        }
        set.append(XMLElement("count", text: String(page.count)))
        return XMLElement("fin", namespace: XMLNamespace.archive, ["complete": page.complete ? "true" : "false"], [set])
    }
}
