import ParleyCore

/// One room's state. Every change happens under the service's lock and appends the stanzas
/// it causes to `out`, in the order occupants must see them.
struct MUCRoom: Sendable {
    /// The room's bare JID.
    let jid: JID
    var configuration = MUCRoomConfiguration()
    /// A room created with the MUC protocol stays locked until its owner configures it (an
    /// instant room: the default form submitted); others cannot enter until then (§10.1.1).
    var locked: Bool
    var affiliations: [JID: MUCAffiliation] = [:]
    /// Nicknames reserved by registration (§7.10), by account.
    var reservedNicks: [JID: String] = [:]
    private(set) var occupants: [String: MUCOccupant] = [:]
    /// Which nickname each session in the room is under.
    private(set) var nickBySession: [JID: String] = [:] { didSet { recipients = MUCRecipients() } }
    /// The sessions of `nickBySession`, ready to be copied to (see `MUCRecipients`).
    private(set) var recipients = MUCRecipients()
    /// The current subject and who set it (a room occupant JID, or the room's own).
    var subject: (text: String, from: JID)?
    /// The last groupchat messages, for newcomers (in memory only).
    var history = MUCHistory()
    /// How many messages `history` keeps.
    var historyLimit = 20
    /// The room's vCard and its photo's hash (XEP-0153); nil: none.
    var avatar: MUCRoomAvatar?
    /// Requests passed between occupants, awaiting their answers.
    var pendingIQs = MUCPendingIQs()
    /// Keys XEP-0421 occupant ids, so they are stable per account in this room and reveal
    /// nothing about the account elsewhere.
    let occupantIDKey: [UInt8]

    init(jid: JID, locked: Bool, owner: JID) throws {
        self.jid = jid
        self.locked = locked
        self.affiliations = [owner.bare: .owner]
        self.occupantIDKey = try SecureRandom.bytes(32)
    }

    var isEmpty: Bool { occupants.isEmpty }
    var occupantCount: Int { occupants.count }

    func affiliation(of account: JID) -> MUCAffiliation { affiliations[account.bare] ?? .none }

    func nick(of session: JID) -> String? { nickBySession[session] }

    func occupant(_ nick: String) -> MUCOccupant? { occupants[nick] }

    /// Every session of every occupant, in no particular order.
    var allSessions: [JID] { Array(nickBySession.keys) }

    func occupantJID(_ nick: String) -> JID {
        (try? jid.with(resource: nick)) ?? jid
    }

    func occupantID(for account: JID) -> String {
        let digest = (try? HashFunction.sha256.hmac(key: occupantIDKey, data: Array(account.bare.description.utf8))) ?? []
        return Base64.encode(Array(digest.prefix(18)))
    }

    // MARK: Changes to the occupant list

    mutating func add(_ occupant: MUCOccupant) {
        occupants[occupant.nick] = occupant
        for session in occupant.sessions { nickBySession[session] = occupant.nick }
    }

    mutating func addSession(_ session: JID, to nick: String) {
        occupants[nick]?.sessions.append(session)
        nickBySession[session] = nick
    }

    /// Removes one session; returns the occupant if that was its last.
    mutating func removeSession(_ session: JID) -> MUCOccupant? {
        guard let nick = nickBySession.removeValue(forKey: session), var occupant = occupants[nick] else { return nil }
        occupant.sessions.removeAll { $0 == session }
        if occupant.sessions.isEmpty {
            occupants[nick] = nil
            return occupant
        }
        occupants[nick] = occupant
        return nil
    }

    mutating func update(_ nick: String, _ change: (inout MUCOccupant) -> Void) {
        guard var occupant = occupants[nick] else { return }
        change(&occupant)
        occupants[nick] = occupant
    }

    mutating func rename(_ nick: String, to newNick: String) {
        guard var occupant = occupants.removeValue(forKey: nick) else { return }
        occupant.nick = newNick
        occupants[newNick] = occupant
        for session in occupant.sessions { nickBySession[session] = newNick }
    }
}
