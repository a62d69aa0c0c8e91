import Foundation
import ParleyCore
import ParleyStorage

/// XEP-0313 v1.1 `urn:xmpp:mam:2#extended` on the room JID, as the accounts' archives have
/// it: the `before-id`, `after-id` and `ids` fields (`MUCArchiveRequest`), and the archive's
/// metadata, its oldest and newest message, which a client reads to know where catching up
/// on a room starts.
extension MUCService {
    static let extendedArchiveFeature = "urn:xmpp:mam:2#extended"

    /// `<metadata/>` of room `key`'s archive, for whoever may read it; empty when there is
    /// nothing in it.
    func archiveMetadata(_ stanza: XMLElement, from sender: JID, room key: String, state: State, out: inout [XMLElement]) {
        // The same room, the same readers as a query (`archiveRequest`).
        guard let room = state.rooms[key], !room.locked || room.nick(of: sender) != nil else {
            return refuse(stanza, StanzaError(.itemNotFound, text: "There is no room \(key)@\(domain)."), out: &out)
        }
        guard let writer = state.archive else {
            return refuse(stanza, StanzaError(.serviceUnavailable, text: "This service keeps no archives."), out: &out)
        }
        do throws(StanzaError) {
            try room.mayReadArchive(sender)
        } catch {
            return refuse(stanza, error, out: &out)
        }
        let outlet = self.outlet.withLockedValue { $0 }
        let service = domain
        Task {
            await writer.flush()
            let reply: XMLElement?
            do {
                // Two one-row pages, each an index lookup.
                let oldest = try await writer.store.queryMUCArchive(service: service, room: key, MUCArchiveQuery(max: 1)).messages.first
                var last = MUCArchiveQuery(max: 1)
                last.before = ""
                let newest = try await writer.store.queryMUCArchive(service: service, room: key, last).messages.last
                var metadata = XMLElement("metadata", namespace: XMLNamespace.archive)
                if let oldest, let newest {
                    metadata.append(XMLElement("start", ["id": oldest.stanzaID, "timestamp": MUCHistory.stamp(oldest.archivedAt)]))
                    metadata.append(XMLElement("end", ["id": newest.stanzaID, "timestamp": MUCHistory.stamp(newest.archivedAt)]))
                }
                reply = stanza.iqResult(metadata)
            } catch {
                reply = stanza.errorReply(StanzaError(.internalServerError, text: "The room's archive cannot be read."))
            }
            if let reply { outlet?.send(reply) }
        }
    }
}
