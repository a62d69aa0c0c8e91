import ParleyCore

/// Everything a client reports to the application, in order, on `XMPPClient.events`.
public enum ClientEvent: Sendable, Equatable {
    case connecting
    /// Authenticated and bound; `jid` is the full JID the server gave.
    case connected(jid: JID)
    /// The previous session was taken over on a new connection (XEP-0198): nothing was
    /// missed in between, and what the server had not received was sent again.
    case resumed(jid: JID)
    case disconnected(DisconnectReason)
    /// The connection was lost; the client tries again after `delay`.
    case reconnecting(attempt: Int, delay: Duration)
    /// The server ended the session for a reason reconnecting would not fix; the client stays
    /// disconnected until the application calls `connect()` again.
    case kicked(KickReason)
    /// A message received, caught up from the archive, or sent by another of our devices
    /// (a carbon copy: `from` is then our own JID).
    case message(ChatMessage)
    /// The server took responsibility for a message this client sent (XEP-0198
    /// acknowledgement, or the archive listing it): it will not be lost.
    case sent(messageID: String)
    /// A delivery receipt (XEP-0184) for a message this client sent.
    case delivered(messageID: String, by: JID)
    /// The recipient's client showed the message, and everything before it (XEP-0333).
    case displayed(messageID: String, by: JID)
    /// A message was taken back by its sender (XEP-0424): `bySelf` for one of ours, from
    /// this or another of our devices.
    case retracted(messageID: String, peer: JID, bySelf: Bool)
    case presence(PresenceUpdate)
    /// A friend request: `from` asks to see our presence, with an optional note.
    case contactRequest(from: JID, message: String?)
    case contactAccepted(JID)
    case contactDeclined(JID)
    case contactRemoved(JID)
    case rosterChanged([Contact])
    /// What we know of a contact's profile changed: their avatar (XEP-0084, or the vCard
    /// photo of XEP-0153), nickname (XEP-0172) or vCard names. Also for our own account.
    case contactProfileChanged(JID)
    /// Group chat (XEP-0045): room messages, occupants, invitations, removals.
    case room(RoomEvent)
    /// A stanza error for something this client sent.
    case stanzaError(id: String?, from: JID?, error: StanzaError)
    /// How far a file upload or download got (at most about every percent, and at the end).
    case transferProgress(TransferProgress)
}

public enum DisconnectReason: Sendable, Equatable, CustomStringConvertible {
    /// The application asked for it.
    case requested
    /// Network loss, connection refused, timeout, or a TLS or stream failure.
    case connectionLost(String)
    /// The server is shutting down or restarting (`<system-shutdown/>`).
    case serverShutdown
    /// The server sent the client to another host or endpoint (a rolling restart), where it
    /// reconnects and resumes the session if it can.
    case redirected(to: String)
    case authenticationFailed(String)
    case certificateUntrusted(String)

    public var description: String {
        switch self {
        case .requested: "disconnected"
        case .connectionLost(let detail): "connection lost: \(detail)"
        case .serverShutdown: "the server is shutting down"
        case .redirected(let target): "the server sent the client to \(target)"
        case .authenticationFailed(let detail): "authentication failed: \(detail)"
        case .certificateUntrusted(let detail): "untrusted certificate: \(detail)"
        }
    }
}

public enum KickReason: Sendable, Equatable, CustomStringConvertible {
    /// `<conflict/>`: the same account signed in on another device (or with this resource).
    case loggedInElsewhere
    /// The account was deleted.
    case accountRemoved
    /// `<not-authorized/>` after the session began: typically the password was changed.
    case credentialsRevoked
    /// Another stream error that reconnecting would only repeat.
    case streamError(StreamErrorCondition, String?)

    public var description: String {
        switch self {
        case .loggedInElsewhere: "your account logged in on another device"
        case .accountRemoved: "your account was removed"
        case .credentialsRevoked: "your password was changed; sign in again"
        case .streamError(let condition, let text): text.map { "\(condition.rawValue): \($0)" } ?? condition.rawValue
        }
    }
}
