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
    /// Every session in the room with its `to` made once, and whether its occupant is a
    /// moderator (see `MUCRecipient`): what each presence the room broadcasts is copied to.
    private(set) var recipientsBySession: [JID: MUCRecipient] = [:]
    /// Whether the room let its recipients' `to`s go, and whether an entry or a message used
    /// them since the service last looked (see `releaseRecipients`).
    private var recipientsReleased = false
    private var recipientsUsed = false
    /// The occupants' nicknames in order, kept so as entries come and go: a newcomer gets
    /// everyone's presence in this order, and sorting them for each of a thousand newcomers
    /// was a tenth of a fill's time.
    private(set) var nicksInOrder: [String] = []
    /// The occupants' own presences, each content once (see `MUCSharedPresences`).
    private(set) var sharedPresences = MUCSharedPresences()
    /// The occupants' presences as the others see them, serialized, while they are used (see
    /// `MUCShownPresences`, `releaseShownPresences`).
    let shownPresences = MUCShownPresences()
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

    func occupantID(for account: JID) -> MUCOccupantID {
        let digest = (try? HashFunction.sha256.hmac(key: occupantIDKey, data: Array(account.bare.description.utf8))) ?? []
        return MUCOccupantID(digest: digest)
    }

    // MARK: Changes to the occupant list

    mutating func add(_ occupant: MUCOccupant) {
        var occupant = occupant
        occupant.sharePresence(&sharedPresences)
        if occupants.updateValue(occupant, forKey: occupant.nick) == nil { insertInOrder(occupant.nick) }
        for session in occupant.sessions {
            nickBySession[session] = occupant.nick
            seat(session, moderator: occupant.role == .moderator)
        }
    }

    mutating func addSession(_ session: JID, to nick: String) {
        occupants[nick]?.sessions.append(session)
        nickBySession[session] = nick
        seat(session, moderator: occupants[nick]?.role == .moderator)
    }

    /// Removes one session; returns the occupant if that was its last.
    mutating func removeSession(_ session: JID) -> MUCOccupant? {
        recipientsBySession[session] = nil
        guard let nick = nickBySession.removeValue(forKey: session), var occupant = occupants[nick] else { return nil }
        occupant.sessions.remove(session)
        if occupant.sessions.isEmpty {
            occupants[nick] = nil
            removeFromOrder(nick)
            shownPresences.forget(nick)
            return occupant
        }
        occupants[nick] = occupant
        return nil
    }

    mutating func update(_ nick: String, _ change: (inout MUCOccupant) -> Void) {
        guard var occupant = occupants[nick] else { return }
        let before = (role: occupant.role, sessions: occupant.sessions)
        change(&occupant)
        occupant.sharePresence(&sharedPresences)
        occupants[nick] = occupant
        if occupant.role != before.role || occupant.sessions != before.sessions {
            for session in before.sessions where !occupant.sessions.contains(session) { recipientsBySession[session] = nil }
            for session in occupant.sessions { seat(session, moderator: occupant.role == .moderator) }
        }
    }

    /// Takes a token from the occupant's rate-limit bucket, in place; true if there was one
    /// (or no one has the nickname: nothing to charge). Nothing else in the room derives from
    /// the bucket, so this skips `update`'s work of keeping the recipients and the shared
    /// presences in step, which made charging a groupchat message cost more than building the
    /// template its copies share (bench/README.md, MUC, fourteenth round).
    mutating func takeSpeechToken(of nick: String, _ limit: MUCRateLimit) -> Bool {
        occupants[nick]?.speech.take(limit) ?? true
    }

    /// `session` among the recipients, its `to` made once for as long as it stays.
    private mutating func seat(_ session: JID, moderator: Bool) {
        if recipientsBySession[session] == nil {
            recipientsBySession[session] = MUCRecipient(session)
        }
        recipientsBySession[session]?.isModerator = moderator
    }

    /// Makes the `to`s that a quiet room let go again (see `releaseRecipients`), before an
    /// entry, a message or a departure copies to every session.
    mutating func readyRecipients() {
        recipientsUsed = true
        guard recipientsReleased else { return }
        recipientsReleased = false
        changeRecipients { session, recipient in
            if recipient.to == nil { recipient.to = MUCRecipient.to(session) }
        }
    }

    /// Lets the recipients' `to`s go if no entry or message used them since the last call
    /// (see `MUCRecipient`); returns whether it did. The service calls it every few seconds.
    mutating func releaseRecipients() -> Bool {
        if recipientsUsed {
            recipientsUsed = false
            return false
        }
        guard !recipientsReleased, !recipientsBySession.isEmpty else { return false }
        changeRecipients { _, recipient in recipient.to = nil }
        recipients = MUCRecipients()
        recipientsReleased = true
        return true
    }

    /// Changes every recipient in place (walking `indices` would hold the table and copy it).
    private mutating func changeRecipients(_ change: (JID, inout MUCRecipient) -> Void) {
        var index = recipientsBySession.startIndex
        while index != recipientsBySession.endIndex {
            change(recipientsBySession.keys[index], &recipientsBySession.values[index])
            recipientsBySession.formIndex(after: &index)
        }
    }

    private mutating func insertInOrder(_ nick: String) {
        var low = 0
        var high = nicksInOrder.count
        while low < high {
            let middle = (low + high) / 2
            if nicksInOrder[middle] < nick { low = middle + 1 } else { high = middle }
        }
        nicksInOrder.insert(nick, at: low)
    }

    private mutating func removeFromOrder(_ nick: String) {
        if let index = nicksInOrder.firstIndex(of: nick) { nicksInOrder.remove(at: index) }
    }

    mutating func rename(_ nick: String, to newNick: String) {
        guard var occupant = occupants.removeValue(forKey: nick) else { return }
        removeFromOrder(nick)
        shownPresences.forget(nick)
        occupant.nick = newNick
        if occupants.updateValue(occupant, forKey: newNick) == nil { insertInOrder(newNick) }
        for session in occupant.sessions { nickBySession[session] = newNick }
    }
}
