import Logging
import NIOConcurrencyHelpers
import NIOCore
import ParleyCore
import ParleyStorage
import ParleyTLS

/// Everything a client session shares with the rest of the server, built once at start-up.
public final class ServerContext: Sendable {
    public let policy: C2SPolicy
    public let sessions: SessionRegistry
    public let router: StanzaRouter
    public let accounts: any AccountStore
    public let registration: RegistrationModule?
    public let tls: TLSContext?
    public let connectionLimiter: ConnectionLimiter
    public let authFailures: AuthFailureLimiter
    public let metrics: ServerMetrics
    public let events: ServerEventBus
    /// Post-authentication stream features that modules announce.
    public let streamFeatures: [XMLElement]
    public let logger: Logger
    /// The archive's writer when archiving is on: XEP-0198 acknowledgements wait for it.
    let archive: ArchiveWriter?
    /// Resumable sessions (XEP-0198) by id.
    let resumption = ResumptionRegistry()
    /// Every open client connection, so shutdown can reach them all.
    let connections = ConnectionTracker()
    /// Keys the fake SCRAM salts of unknown users, so they are stable across attempts
    /// (a changing salt would reveal that the user does not exist). Random per process.
    let unknownUserSecret: [UInt8]
    private let nextSessionID = NIOLockedValueBox<UInt64>(0)
    /// The stream features, built once instead of at every stream header.
    let features: StreamFeatureSet

    public init(
        policy: C2SPolicy, sessions: SessionRegistry, router: StanzaRouter, accounts: any AccountStore,
        registration: RegistrationModule?, tls: TLSContext?, connectionLimiter: ConnectionLimiter, authFailures: AuthFailureLimiter,
        metrics: ServerMetrics, events: ServerEventBus, streamFeatures: [XMLElement], logger: Logger,
        archive: ArchiveModule? = nil
    ) throws {
        self.archive = archive?.writer
        self.events = events
        self.streamFeatures = streamFeatures
        self.policy = policy
        self.sessions = sessions
        self.router = router
        self.accounts = accounts
        self.registration = registration
        self.tls = tls
        self.connectionLimiter = connectionLimiter
        self.authFailures = authFailures
        self.metrics = metrics
        self.logger = logger
        self.unknownUserSecret = try SecureRandom.bytes(32)
        self.features = StreamFeatureSet(policy: policy, hasTLS: tls != nil, streamFeatures: streamFeatures)
    }

    func makeSessionID() -> UInt64 {
        nextSessionID.withLockedValue {
            $0 += 1
            return $0
        }
    }
}

/// Every `<stream:features/>` a client stream can be offered: before authentication one per
/// transport kind (STARTTLS on offer or not) and security, after it one for all.
struct StreamFeatureSet: Sendable {
    let afterAuthentication: XMLElement
    /// Indexed by `offersStartTLS` (2) and `secure` (1).
    private let beforeAuthentication: [XMLElement]

    init(policy: C2SPolicy, hasTLS: Bool, streamFeatures: [XMLElement]) {
        afterAuthentication = C2SSessionHandler.bindFeatures(streamFeatures: streamFeatures)
        beforeAuthentication = (0..<4).map { index in
            C2SSessionHandler.preAuthenticationFeatures(
                policy: policy, hasTLS: hasTLS, offersStartTLS: index & 2 != 0, secure: index & 1 != 0)
        }
    }

    func beforeAuthentication(offersStartTLS: Bool, secure: Bool) -> XMLElement {
        beforeAuthentication[(offersStartTLS ? 2 : 0) + (secure ? 1 : 0)]
    }
}
