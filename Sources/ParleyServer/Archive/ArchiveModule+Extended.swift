import Foundation
import ParleyCore
import ParleyStorage

/// XEP-0313 v1.1 `urn:xmpp:mam:2#extended`: the `ids` filter, the form that lists every
/// field a query may use, and the archive's metadata (its first and last message), which a
/// client reads to know where its catch-up has to start.
extension ArchiveModule {
    static let extendedFeature = "urn:xmpp:mam:2#extended"
    /// More than one page's worth of ids in one query is refused: the client can split it.
    static var maxIDs: Int { maxPageSize }

    static func parseIDs(_ field: XMLElement) throws(StanzaError) -> [String] {
        let ids = field.children("value", namespace: XMLNamespace.dataForms).map(\.text).filter { !$0.isEmpty }
        guard ids.count <= maxIDs else {
            throw StanzaError(.policyViolation, text: "A query may name at most \(maxIDs) ids.")
        }
        return ids
    }

    /// The fields a query form may carry (an iq get of `<query/>`).
    func fields(_ request: IQRequest, _ responder: IQResponder) {
        guard request.isToOwnAccount else { return responder.error(StanzaError(.forbidden)) }
        var form = XMLElement("x", namespace: XMLNamespace.dataForms, ["type": "form"])
        var formType = XMLElement("field", ["var": "FORM_TYPE", "type": "hidden"])
        formType.append(XMLElement("value", text: Self.namespace))
        form.append(formType)
        for (name, type) in [
            ("with", "jid-single"), ("start", "text-single"), ("end", "text-single"), ("before-id", "text-single"),
            ("after-id", "text-single"), ("ids", "text-multi"),
        ] {
            form.append(XMLElement("field", ["var": name, "type": type]))
        }
        var query = XMLElement("query", namespace: Self.namespace)
        query.append(form)
        responder.result(query)
    }

    /// `<metadata/>` with the id and time of the oldest and newest message; empty for
    /// an empty archive.
    func metadata(_ request: IQRequest, _ responder: IQResponder) {
        guard request.isToOwnAccount, let username = request.from.localpart else {
            return responder.error(StanzaError(.forbidden))
        }
        responder.answer { [store, writer] in
            await writer.flush()
            // Two one-row pages, each an index lookup: no new storage call is needed.
            let oldest = try await store.queryArchive(user: username, ArchiveQuery(max: 1)).messages.first
            let newest = try await store.queryArchive(user: username, ArchiveQuery(before: "", max: 1)).messages.last
            var metadata = XMLElement("metadata", namespace: Self.namespace)
            if let oldest, let newest {
                metadata.append(XMLElement("start", ["id": oldest.stanzaID, "timestamp": OfflineModule.timestamp(oldest.archivedAt)]))
                metadata.append(XMLElement("end", ["id": newest.stanzaID, "timestamp": OfflineModule.timestamp(newest.archivedAt)]))
            }
            return metadata
        }
    }
}
