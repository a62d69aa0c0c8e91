import ParleyCore

/// What nicknames may be, and who may reserve one by registering with a room (XEP-0045
/// §7.10, §7.12).
public struct MUCNicknamePolicy: Sendable, Hashable {
    public enum Registration: String, Sendable, Hashable {
        /// Anyone not banned may register with an open room and so become a member; in a
        /// members-only room only those already on its lists may (to reserve a nickname).
        case open
        /// Only those already affiliated (members, admins, owners) may register, which
        /// then only reserves their nickname: Prosody's default.
        case affiliated
    }

    /// The longest nickname, in bytes of UTF-8; longer is `jid-malformed`.
    public var maxBytes = 128
    public var registration = Registration.open
    /// A registered user always gets the reserved nickname on entry (status 210) and
    /// cannot change to another (`not-acceptable`), as Prosody's
    /// `enforce_registered_nickname` does (registering then kicks the user's occupant under
    /// another nickname); off, the reservation only keeps others out.
    public var enforceRegistered = false

    public init() {}
}

extension MUCService {
    /// RFC 7622 §3.4 (the resourcepart's OpaqueString profile) has already prepared the nick
    /// the address carries; what the client wrote may differ (another Unicode normal form,
    /// exotic spaces). Returns whether it did, so the occupant learns its name was changed
    /// (status 210); refuses a nickname that is too long or shows nothing.
    func checkNickname(_ nick: String, in stanza: XMLElement) throws(StanzaError) -> Bool {
        guard nick.utf8.count <= settings.nicknames.maxBytes else {
            throw StanzaError(.jidMalformed, text: "A nickname is at most \(settings.nicknames.maxBytes) bytes.")
        }
        // As Prosody: a nickname of spaces alone names nobody anyone could see or address.
        guard nick.unicodeScalars.contains(where: { !$0.properties.isWhitespace }) else {
            throw StanzaError(.notAllowed, text: "A nickname needs at least one visible character.")
        }
        // Bytes, not Swift's ==, which calls canonically equivalent strings equal.
        guard let written = Self.writtenResource(of: stanza.to ?? "") else { return false }
        return !written.utf8.elementsEqual(nick.utf8)
    }

    /// The resourcepart of an address as written, before any preparation.
    static func writtenResource(of address: String) -> String? {
        guard let slash = address.firstIndex(of: "/") else { return nil }
        return String(address[address.index(after: slash)...])
    }
}

extension MUCRoom {
    /// The nickname `session` enters or changes to when it asks for `nick`: a nickname
    /// reserved by another account is a `conflict` (§7.12); with `enforce`, a registered
    /// user gets its own reserved nickname on entry (the second value: it was assigned)
    /// and may not change to another.
    func resolve(_ nick: String, for session: JID, enforce: Bool) throws(StanzaError) -> (nick: String, assigned: Bool) {
        if let holder = reservationHolder(of: nick), holder != session.bare {
            throw StanzaError(.conflict, text: "The nickname '\(nick)' is reserved in this room by another user.")
        }
        guard enforce, let reserved = reservedNick(of: session.bare), reserved != nick else { return (nick, false) }
        if let current = self.nick(of: session) {
            // A presence update under the nickname it already has is no change of name.
            if current == nick { return (nick, false) }
            throw StanzaError(.notAcceptable, text: "In this room you are registered as '\(reserved)' and keep that nickname.")
        }
        return (reserved, true)
    }
}
