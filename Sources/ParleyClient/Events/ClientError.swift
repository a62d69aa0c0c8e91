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

    public var description: String {
        switch self {
        case .disconnected: "not connected"
        case .timeout: "the server did not answer in time"
        case .kicked(let reason): "signed out: \(reason)"
        case .authenticationFailed(let reason): "authentication failed: \(reason)"
        case .certificateUntrusted(let reason): "untrusted certificate: \(reason)"
        case .connectionFailed(let reason): reason
        case .registrationRefused(let error): "the server refused: \(error)"
        }
    }
}
