import ParleyCore

/// One nickname in a room: an account, present from one or more of its sessions (devices).
/// Every session gets the room's traffic; the others see one occupant.
///
/// Held inline in the room's table: what it holds on the heap beyond that is only what an
/// occupant cannot do without (its presence's payloads, a second session's list). A room of
/// N kept N of each separately allocated piece, made while the room filled and scattered
/// over the pages of the fill's churn, which they then kept resident (bench/README.md, MUC,
/// seventh round).
struct MUCOccupant: Sendable {
    var nick: String { didSet { changed() } }
    /// The account's bare JID.
    let account: JID
    /// The sessions in the room, in the order they joined.
    var sessions: MUCCompactList<JID> { didSet { changed() } }
    var role: MUCRole { didSet { changed() } }
    /// XEP-0421: the same for this account in this room whatever its nickname or device.
    let id: MUCOccupantID
    /// The presence the occupant last sent (show, status, caps…): what the others see. Kept
    /// as a small element of its own, not the parsed stanza, which would hold on to the
    /// parser's whole buffer for as long as the occupant stays.
    var presence: XMLElement {
        get { keptPresence }
        set {
            keptPresence = Self.compact(newValue)
            changed()
        }
    }
    private var keptPresence: XMLElement
    /// Changes with every change of the occupant (any copy's): whether a shown presence the
    /// room built of it is still its presence (see `MUCShownPresences`).
    private(set) var revision: UInt64
    /// Its groupchat rate limit's state (MUCRateLimiter).
    var speech = MUCTokenBucket()

    init(nick: String, account: JID, sessions: MUCCompactList<JID>, role: MUCRole, id: MUCOccupantID, presence: XMLElement) {
        self.nick = nick
        self.account = account
        self.sessions = sessions
        self.role = role
        self.id = id
        self.keptPresence = Self.compact(presence)
        self.revision = MUCShownPresences.nextRevision()
    }

    /// Its presence as the instance in `shared` with the same content, if there is one (else
    /// its own goes in): most occupants of a room send the same (a server's avatar hash
    /// element, the same client's caps), and each kept copy was two or more heap blocks of
    /// child lists (seventh round). Not a change: the content is the same.
    mutating func sharePresence(_ shared: inout MUCSharedPresences) {
        keptPresence = shared.instance(of: keptPresence)
    }

    /// Its XEP-0421 id as stanzas carry it.
    var occupantID: String { id.text }

    private mutating func changed() {
        revision = MUCShownPresences.nextRevision()
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
