import ParleyCore

/// Why a client call failed, in words a person can act on.
public enum ClientError: Error, Sendable, Equatable, CustomStringConvertible {
    case disconnected
    case timeout
    case kicked(KickReason)
    case authenticationFailed(String)
    case certificateUntrusted(String)
    case connectionFailed(String)
    /// The server answered a request with an error (registration refused, password change
    /// not allowed, …).
    case registrationRefused(StanzaError)
    /// The server or a room said no (XEP-0045: banned, wrong password, not a moderator, …),
    /// with its stanza error condition and text.
    case refused(StanzaError)
    /// A room operation for a room we have not joined.
    case notInRoom(JID)
    /// A JID, nickname or value the call cannot use.
    case invalidArgument(String)

    public var description: String {
        switch self {
        case .disconnected: "not connected"
        case .timeout: "the server did not answer in time"
        case .kicked(let reason): "signed out: \(reason)"
        case .authenticationFailed(let reason): "authentication failed: \(reason)"
        case .certificateUntrusted(let reason): "untrusted certificate: \(reason)"
        case .connectionFailed(let reason): reason
        case .registrationRefused(let error): "the server refused: \(error)"
        case .refused(let error): "refused: " + (error.text.map { "\($0) (\(error.condition.rawValue))" } ?? error.condition.rawValue)
        case .notInRoom(let room): "you are not in the room \(room)"
        case .invalidArgument(let detail): detail
        }
    }
}
