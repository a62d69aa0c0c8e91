import Foundation
import ParleyCore
import ParleyStorage

/// XEP-0313 §4: querying the archive with a data form (with, start, end) and XEP-0059 paging.
extension ArchiveModule {
    func query(_ request: IQRequest, _ responder: IQResponder) {
        guard request.isToOwnAccount, let username = request.from.localpart, let session = request.session else {
            return responder.error(StanzaError(.forbidden))
        }
        let query: ArchiveQuery
        do {
            query = try Self.parse(request.payload)
        } catch {
            return responder.error(error)
        }
        let queryID = request.payload[attribute: "queryid"]
        // XEP-0313 flip-page: the page is sent newest first; <first/> and <last/> still name
        // its oldest and newest message, as Prosody sends them.
        let flipped = request.payload.firstChild("flip-page", namespace: Self.namespace) != nil
        let owner = request.from.bare.description
        let client = request.from.description
        responder.answer { [store, writer] in
            await writer.flush()
            let page: ArchivePage
            do {
                page = try await store.queryArchive(user: username, query)
            } catch StorageError.itemNotFound {
                throw StanzaError(.itemNotFound, text: "No message in the archive has that id.")
            }
            for message in flipped ? page.messages.reversed() : page.messages {
                session.deliver(Self.resultMessage(message, queryID: queryID, owner: owner, to: client))
            }
            var set = XMLElement("set", namespace: XMLNamespace.resultSetManagement)
            if let first = page.messages.first, let last = page.messages.last {
                // No `index` (optional in XEP-0059 §2.6), as Prosody sends it: slixmpp,
                // paging backwards, takes "index + page size == count" for the end, which
                // the newest page always satisfies, and so never asks for a second page.
                set.append(XMLElement("first", text: first.stanzaID))
                set.append(XMLElement("last", text: last.stanzaID))
            }
            set.append(XMLElement("count", text: String(page.count)))
            var fin = XMLElement("fin", namespace: Self.namespace, ["complete": page.complete ? "true" : "false"])
            fin.append(set)
            return fin
        }
    }

    static func resultMessage(_ message: ArchivedMessage, queryID: String?, owner: String, to client: String) -> XMLElement {
        var forwarded = XMLElement("forwarded", namespace: XMLNamespace.forward)
        forwarded.append(XMLElement("delay", namespace: XMLNamespace.delay, ["stamp": OfflineModule.timestamp(message.archivedAt)]))
        forwarded.append(archivedStanza(message, owner: owner))
        var result = XMLElement("result", namespace: namespace)
        if let queryID { result[attribute: "queryid"] = queryID }
        result[attribute: "id"] = message.stanzaID
        result.append(forwarded)
        var envelope = XMLElement("message", namespace: XMLNamespace.client, ["from": owner, "to": client, "id": message.stanzaID])
        envelope.append(result)
        return envelope
    }

    /// The archived message, or for a retracted one its XEP-0424 tombstone: addresses, type
    /// and ids only, with `<retracted/>` in place of the content. The message is stored
    /// without the owner's stanza-id (both parties' archives share its text), so it gets it
    /// back here, last, where the owner's copy had it when routed; messages archived before
    /// that was so still carry theirs.
    static func archivedStanza(_ message: ArchivedMessage, owner: String) -> XMLElement {
        if let text = message.stanza, var stanza = StoredStanza.parse(text) {
            let stamped = stanza.elements.contains {
                $0.name == "stanza-id" && $0.namespace == XMLNamespace.stanzaID && $0[attribute: "by"] == owner
            }
            if !stamped {
                stanza.append(XMLElement("stanza-id", namespace: XMLNamespace.stanzaID, ["id": message.stanzaID, "by": owner]))
            }
            return stanza
        }
        var tombstone = XMLElement(
            "message", namespace: XMLNamespace.client, ["from": message.from, "to": message.to, "type": message.messageType ?? "chat"])
        if let id = message.messageID { tombstone[attribute: "id"] = id }
        tombstone.append(
            XMLElement("retracted", namespace: XMLNamespace.messageRetract, ["stamp": OfflineModule.timestamp(message.retractedAt ?? message.archivedAt)]))
        if let originID = message.originID {
            tombstone.append(XMLElement("origin-id", namespace: XMLNamespace.stanzaID, ["id": originID]))
        }
        return tombstone
    }

    static func parse(_ payload: XMLElement) throws(StanzaError) -> ArchiveQuery {
        var query = ArchiveQuery(max: defaultPageSize)
        if let form = payload.firstChild("x", namespace: XMLNamespace.dataForms) {
            for field in form.children("field", namespace: XMLNamespace.dataForms) {
                let name = field[attribute: "var"] ?? ""
                if name == "ids" {
                    let ids = try parseIDs(field)
                    if !ids.isEmpty { query.ids = ids }
                    continue
                }
                let value = field.firstChild("value", namespace: XMLNamespace.dataForms)?.text ?? ""
                if value.isEmpty { continue }
                switch name {
                case "FORM_TYPE":
                    guard value == namespace else {
                        throw StanzaError(.badRequest, text: "The form is not of type \(namespace).")
                    }
                case "with":
                    guard let jid = try? JID(value) else { throw StanzaError(.jidMalformed, text: "'with' is not a JID.") }
                    query.with = jid.description
                    query.withIsFull = jid.isFull
                case "start", "end":
                    let date = try ArchivePaging.date(field: name, value)
                    if name == "start" { query.start = date } else { query.end = date }
                case "after-id":
                    query.afterID = value
                case "before-id":
                    query.beforeID = value
                default:
                    throw StanzaError(.badRequest, text: "The field '\(name)' is not supported.")
                }
            }
        }
        let paging = try ArchivePaging(payload.firstChild("set", namespace: XMLNamespace.resultSetManagement))
        if let max = paging.max { query.max = max }
        if let after = paging.after { query.after = after }
        if let before = paging.before { query.before = before }
        query.max = min(query.max, maxPageSize)
        return query
    }
}
