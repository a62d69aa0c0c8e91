import NIOCore
import ParleyCore

/// What a client session needs to know of the server's configuration, in the session's own
/// terms (durations as `TimeAmount`, mechanisms as types), fixed at start-up.
public struct C2SPolicy: Sendable {
    public enum SameResource: String, Sendable {
        /// The new login wins; the old session gets `<conflict/>` (RFC 6120 §7.7.2.2).
        case replace
        /// The new login's bind fails with `<conflict/>`.
        case reject
    }

    public var domain: JID
    public var tlsRequired = true
    public var tlsAvailable = true
    public var mechanisms: [SASLMechanism] = [.scramSHA256, .scramSHA1, .plain]
    public var allowPlainWithoutTLS = false
    public var registrationEnabled = false
    public var minimumPasswordLength = 8
    public var scramIterations = SCRAMCredentials.minimumIterations
    public var unauthenticatedTimeout: TimeAmount = .seconds(30)
    public var stanzasPerSecond: Double = 50
    public var stanzaBurst: Double = 100
    public var onSameResource = SameResource.replace
    public var maxSessionsPerAccount = 0
    public var singleDevice = false
    /// Time allowed for replaced sessions to end before a new bind completes anyway.
    public var replacementTimeout: TimeAmount = .seconds(5)
    /// XEP-0352: stanzas held for an inactive client before they are all sent anyway.
    public var clientStateQueueSize = 256
    /// XEP-0198, when offered.
    public var streamManagement: StreamManagement?

    public struct StreamManagement: Sendable {
        /// 0: acknowledgements only, no resumption.
        public var resumeTimeout: TimeAmount
        public var maxUnacked: Int
        /// The server asks for an acknowledgement after this many unacknowledged stanzas…
        public var requestAfterStanzas = 5
        /// …or this long after the first one.
        public var requestAfter: TimeAmount = .seconds(1)

        public init(resumeTimeout: TimeAmount, maxUnacked: Int) {
            self.resumeTimeout = resumeTimeout
            self.maxUnacked = maxUnacked
        }
    }

    public init(domain: JID) {
        self.domain = domain
    }

    /// The mechanisms offered on a stream in this security state (PLAIN only over TLS
    /// unless explicitly allowed for local testing).
    func offeredMechanisms(secure: Bool) -> [SASLMechanism] {
        mechanisms.filter { $0 != .plain || secure || allowPlainWithoutTLS }
    }
}
