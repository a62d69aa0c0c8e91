import Foundation
import ParleyCore
import ParleyServer
import ParleyStorage

/// An archive query to a room (XEP-0313 §4 with XEP-0059 paging), checked against the room
/// and the one asking.
struct MUCArchiveRequest: Sendable {
    /// The largest page a query gets whatever `max` it asks for (XEP-0059 §2.1 lets the
    /// responder return fewer), and the page it gets without one: the accounts' archives' sizes.
    static let maxPageSize = 250
    static let defaultPageSize = 50

    var query = MUCArchiveQuery(max: defaultPageSize)
    var queryID: String?
    /// XEP-0313 flip-page: the page is sent newest first.
    var flipped = false

    /// `mayReadRealJIDs`: whether the asker may filter by a sender's real JID; a `with` naming
    /// one would otherwise tell it who is behind a nickname.
    init(_ payload: XMLElement, room: JID, serverDomain: String, mayReadRealJIDs: Bool) throws(StanzaError) {
        queryID = payload[attribute: "queryid"]
        flipped = payload.firstChild("flip-page", namespace: XMLNamespace.archive) != nil
        if let form = payload.firstChild("x", namespace: XMLNamespace.dataForms) {
            for field in form.children("field", namespace: XMLNamespace.dataForms) {
                let name = field[attribute: "var"] ?? ""
                if name == "ids" {
                    let ids = try Self.ids(field)
                    if !ids.isEmpty { query.ids = ids }
                    continue
                }
                let value = field.firstChild("value", namespace: XMLNamespace.dataForms)?.text ?? ""
                if value.isEmpty { continue }
                switch name {
                case "FORM_TYPE":
                    guard value == XMLNamespace.archive else {
                        throw StanzaError(.badRequest, text: "The form is not of type \(XMLNamespace.archive).")
                    }
                case "with":
                    try filter(with: value, room: room, serverDomain: serverDomain, mayReadRealJIDs: mayReadRealJIDs)
                case "start", "end":
                    let date = try ArchivePaging.date(field: name, value)
                    if name == "start" { query.start = date } else { query.end = date }
                case "after-id":
                    query.afterID = value
                case "before-id":
                    query.beforeID = value
                default:
                    throw StanzaError(.badRequest, text: "The field '\(name)' is not supported by room archives.")
                }
            }
        }
        let paging = try ArchivePaging(payload.firstChild("set", namespace: XMLNamespace.resultSetManagement))
        if let max = paging.max { query.max = max }
        if let after = paging.after { query.after = after }
        if let before = paging.before { query.before = before }
        query.max = min(query.max, Self.maxPageSize)
    }

    /// The `ids` field's values (XEP-0313 `#extended`); more than a page's worth is refused,
    /// as the accounts' archives do: the client can split the query.
    private static func ids(_ field: XMLElement) throws(StanzaError) -> [String] {
        let ids = field.children("value", namespace: XMLNamespace.dataForms).map(\.text).filter { !$0.isEmpty }
        guard ids.count <= maxPageSize else {
            throw StanzaError(.policyViolation, text: "A query may name at most \(maxPageSize) ids.")
        }
        return ids
    }

    /// `with` is an occupant JID (room@service/nick: what that nickname said), the room's own
    /// JID (everything), or, for those who may see them, a sender's real bare JID.
    private mutating func filter(with value: String, room: JID, serverDomain: String, mayReadRealJIDs: Bool) throws(StanzaError) {
        guard let jid = try? JID(value) else { throw StanzaError(.jidMalformed, text: "'with' is not a JID.") }
        if jid.bare == room {
            query.nick = jid.resourcepart
            return
        }
        guard mayReadRealJIDs else {
            throw StanzaError(.forbidden, text: "Only those who may see real JIDs in this room filter by them; use an occupant JID.")
        }
        if jid.domainpart == serverDomain, let username = jid.localpart {
            query.senderUsername = username
        } else {
            query.senderJID = jid.bare.description
        }
    }

    /// What a `get` of the query form answers (XEP-0313 §4.1.5): the fields a room supports.
    static var fields: XMLElement {
        var form = XMLElement("x", namespace: XMLNamespace.dataForms, ["type": "form"])
        var formType = XMLElement("field", ["var": "FORM_TYPE", "type": "hidden"])
        formType.append(XMLElement("value", text: XMLNamespace.archive))
        form.append(formType)
        form.append(XMLElement("field", ["var": "with", "type": "jid-single"]))
        form.append(XMLElement("field", ["var": "start", "type": "text-single"]))
        form.append(XMLElement("field", ["var": "end", "type": "text-single"]))
        form.append(XMLElement("field", ["var": "before-id", "type": "text-single"]))
        form.append(XMLElement("field", ["var": "after-id", "type": "text-single"]))
        form.append(XMLElement("field", ["var": "ids", "type": "text-multi"]))
        return XMLElement("query", namespace: XMLNamespace.archive, [:], [form])
    }
}
