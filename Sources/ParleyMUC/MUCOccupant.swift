import ParleyCore

/// One nickname in a room: an account, present from one or more of its sessions (devices).
/// Every session gets the room's traffic; the others see one occupant.
struct MUCOccupant: Sendable {
    var nick: String { didSet { shown = MUCShownPresence() } }
    /// The account's bare JID.
    let account: JID
    /// The sessions in the room, in the order they joined.
    var sessions: [JID] { didSet { shown = MUCShownPresence() } }
    var role: MUCRole { didSet { shown = MUCShownPresence() } }
    /// XEP-0421: the same for this account in this room whatever its nickname or device.
    let occupantID: String
    /// The presence the occupant last sent (show, status, caps…): what the others see. Kept
    /// as a small element of its own, not the parsed stanza, which would hold on to the
    /// parser's whole buffer for as long as the occupant stays.
    var presence: XMLElement {
        didSet {
            presence = Self.compact(presence)
            shown = MUCShownPresence()
        }
    }
    /// Its presence as the others see it, built once for everyone (see `MUCShownPresence`).
    var shown = MUCShownPresence()
    /// Its groupchat rate limit's state (MUCRateLimiter).
    var speech = MUCTokenBucket()

    init(nick: String, account: JID, sessions: [JID], role: MUCRole, occupantID: String, presence: XMLElement) {
        self.nick = nick
        self.account = account
        self.sessions = sessions
        self.role = role
        self.occupantID = occupantID
        self.presence = Self.compact(presence)
    }

    /// The real JID shown to those allowed to see it: the session that joined first.
    var realJID: JID { sessions.first ?? account }

    /// The stanza's name, type and children, copied out of the parsed stanza; not the
    /// `<x xmlns='…muc'/>` of an entry (its password and history request were for the room).
    private static func compact(_ stanza: XMLElement) -> XMLElement {
        var attributes: [XMLAttribute] = []
        if let type = stanza.type { attributes.append(XMLAttribute("type", type)) }
        let children = stanza.elements.filter { $0.namespace != MUCNamespace.muc }.map { XMLNode.element(detached($0)) }
        return XMLElement(stanza.name, namespace: stanza.namespace, attributes: attributes, children: children)
    }

    private static func detached(_ element: XMLElement) -> XMLElement {
        let children = element.children.map { node -> XMLNode in
            switch node {
            case .element(let child): .element(detached(child))
            case .text(let text): .text(text)
            }
        }
        return XMLElement(element.name, namespace: element.namespace, attributes: element.attributes, children: children)
    }
}

/// An occupant's presence as most of the room sees it (no status codes, its current role),
/// serialized once but for its `to`: a newcomer gets every occupant's presence and every
/// occupant gets the newcomer's, so filling a room of N sends about N² of them, which differ
/// only in `to`. Made afresh whenever the occupant changes (a new box, so copies of an older
/// occupant keep theirs); what else it depends on (the affiliation, whether the recipient may
/// see real JIDs) is checked at each use. Guarded by the service's lock, like the room.
///
/// Kept only while it is used: a room that nobody entered for a while lets its occupants'
/// templates go (`MUCRoom.releaseShownPresences`), and the next newcomer makes them again.
/// Both templates of an occupant (an element tree and its bytes each) were about 2.5 KB, most
/// of what an occupant of a quiet room held (bench/README.md, MUC memory, fifth round).
final class MUCShownPresence: @unchecked Sendable {
    struct Built {
        var affiliation: MUCAffiliation
        /// `<presence from='room/nick'>` and its children, serialized.
        var template: XMLStanzaTemplate
    }

    /// For recipients that do not see real JIDs, and for those that do.
    var plain: Built?
    var withRealJID: Built?

    func release() {
        plain = nil
        withRealJID = nil
    }
}

/// Whether a room's shown presences were used since the service last looked (see
/// `MUCRoom.releaseShownPresences`): one per room, shared by its copies, guarded by the
/// service's lock like the room.
final class MUCShownPresenceUse: @unchecked Sendable {
    /// Some occupant of the room has a template kept.
    var kept = false
    /// A template was used since the last look.
    var recently = false
}
