import Logging

/// Everything an operator can set. Every field has a default that is safe to run with: a
/// server started with `ServerConfiguration()` listens on loopback only, requires TLS before
/// authentication and offers no registration. `load(file:environment:)` reads it from a YAML
/// file and `PARLEYD_*` environment variables; `conf/parleyd.yaml` documents every key.
public struct ServerConfiguration: Sendable, Hashable {
    /// The XMPP domain this server is authoritative for (`domain`), in canonical form.
    public var domain = "localhost"
    /// Where the server keeps its state (`data_dir`). Relative paths are relative to the
    /// working directory, like any command-line path.
    public var dataDirectory = "./data"
    public var logLevel: Logger.Level = .info
    public var c2s = C2S()
    public var tls = TLS()
    public var auth = Auth()
    public var registration = Registration()
    public var roster = Roster()
    public var offline = Offline()
    public var archive = Archive()
    public var vCard = VCard()
    public var privateStorage = PrivateStorage()
    public var limits = Limits()
    public var keepalive = Keepalive()
    public var sessions = Sessions()
    public var streamManagement = StreamManagement()
    public var shutdown = Shutdown()
    public var metrics = Metrics()
    public var http = HTTPConfiguration()
    public var storage = Storage()
    public var pep = PEP()
    public var muc = MUC()
    public var cluster = Cluster()
    public var clientState = ClientState()
    public var contactInfo = ContactInfo()
    public var turn = TURN()

    public init() {}

    /// Client-to-server listeners.
    public struct C2S: Sendable, Hashable {
        /// Addresses to listen on; `0.0.0.0` and `::` mean every interface.
        public var interfaces = ["127.0.0.1"]
        /// The STARTTLS port (RFC 6120). 0 lets the system pick one, which tests use.
        public var port = 5222
        /// The direct TLS port (XEP-0368); 0 disables it, `anyFreePort` lets the system pick one.
        public var directTLSPort = 5223
        /// For `directTLSPort`, where 0 already means "disabled": a port the system picks, as
        /// tests need. Code only; the file accepts 0...65535.
        public static let anyFreePort = -1
        public init() {}
    }

    public struct TLS: Sendable, Hashable {
        /// PEM certificate chain; nil means `<data_dir>/tls/<domain>.crt`, which the server
        /// creates (self-signed) on first start if it is missing.
        public var certificate: String?
        /// PEM private key; nil means `<data_dir>/tls/<domain>.key`.
        public var key: String?
        /// Whether STARTTLS must be negotiated before authentication.
        public var required = true
        public init() {}
    }

    public struct Auth: Sendable, Hashable {
        public enum Mechanism: String, Sendable, Hashable, CaseIterable {
            case scramSHA256 = "SCRAM-SHA-256"
            case scramSHA1 = "SCRAM-SHA-1"
            case plain = "PLAIN"
        }

        /// Offered in this order.
        public var mechanisms: [Mechanism] = [.scramSHA256, .scramSHA1, .plain]
        /// Offers PLAIN on an unencrypted stream. Sends passwords in the clear: local tests only.
        public var allowPlainWithoutTLS = false
        /// PBKDF2 iterations for newly set passwords (RFC 7677 asks for at least 4096).
        public var scramIterations = 4096
        public init() {}
    }

    /// In-band registration (XEP-0077).
    public struct Registration: Sendable, Hashable {
        public var enabled = false
        public var minPasswordLength = 8
        public init() {}
    }

    public struct Roster: Sendable, Hashable {
        /// Contacts one account may have; adding more is refused with `not-allowed`.
        public var maxItems = 1000
        public init() {}
    }

    /// Offline messages (XEP-0160).
    public struct Offline: Sendable, Hashable {
        /// Messages kept for one account; beyond it senders get `resource-constraint`.
        public var quota = 1000
        public init() {}
    }

    /// The message archive (XEP-0313).
    public struct Archive: Sendable, Hashable {
        /// Keep a message archive (XEP-0313, with XEP-0359 stanza ids). Off, messages are
        /// not archived and MAM queries get service-unavailable.
        public var enabled = true
        /// Messages kept per account, oldest dropped first; 0 for unlimited.
        public var maxMessagesPerUser = 10_000
        /// Messages older than this many days are deleted (checked hourly); 0 keeps them.
        public var retentionDays = 0
        public init() {}
    }

    /// vCards (XEP-0054).
    public struct VCard: Sendable, Hashable {
        /// The largest vCard kept, serialized; a larger one is refused with not-acceptable.
        public var maxBytes = 65_536
        public init() {}
    }

    /// Private XML storage (XEP-0049), where clients keep bookmarks (XEP-0048) and settings.
    public struct PrivateStorage: Sendable, Hashable {
        /// The largest element kept, serialized.
        public var maxElementBytes = 65_536
        /// Distinct elements one account may keep.
        public var maxElements = 100
        public init() {}
    }

    /// What one peer may cost the server; exceeding one ends in a stream error, not a crash.
    public struct Limits: Sendable, Hashable {
        public var maxStanzaBytes = 262_144
        public var maxDepth = 32
        public var connectionsPerIP = 32
        public var maxConnections = 100_000
        /// A connection that has not authenticated by then is closed.
        public var unauthenticatedTimeout: Duration = .seconds(30)
        /// Failed authentications from one IP within `authFailureWindow` before it is slowed down.
        public var authFailuresPerIP = 5
        public var authFailureWindow: Duration = .seconds(300)
        /// Sustained inbound stanza rate per session; above it the server stops reading
        /// (shaping) instead of dropping stanzas.
        public var stanzasPerSecond = 50
        public var stanzaBurst = 100
        public init() {}
    }

    public struct Keepalive: Sendable, Hashable {
        /// A single space sent on a quiet stream keeps NATs open; nil disables it.
        public var whitespaceInterval: Duration? = .seconds(60)
        /// Read idleness after which the server sends an XEP-0199 ping; nil disables it.
        public var pingAfter: Duration? = .seconds(120)
        /// Read idleness after which the stream ends with `connection-timeout`.
        public var idleTimeout: Duration = .seconds(300)
        public init() {}
    }

    public struct Sessions: Sendable, Hashable {
        public enum SameResourcePolicy: String, Sendable, Hashable, CaseIterable {
            /// The new session wins; the old one gets `<conflict/>` (RFC 6120 §7.7.2.2).
            case replace
            /// The new bind fails with `<conflict/>`.
            case reject
        }

        public var onSameResource = SameResourcePolicy.replace
        /// 0 means unlimited.
        public var maxPerAccount = 0
        /// A new session of an account ends all its other sessions.
        public var singleDevice = false
        /// How often the server looks for accounts deleted or changed by another process
        /// (`parleyd deluser`). Code only, for tests that need to act before it looks.
        public var accountChangePollInterval: Duration = .seconds(1)
        public init() {}
    }

    /// XEP-0198 stream management: acknowledgements and resumption.
    public struct StreamManagement: Sendable, Hashable {
        /// Offers `<sm xmlns='urn:xmpp:sm:3'/>` after authentication.
        public var enabled = true
        /// How long a resumable session whose connection dropped waits for its client.
        public var resumeTimeout: Duration = .seconds(300)
        /// Stanzas sent and not yet acknowledged that one session may hold; beyond it the
        /// session ends (its messages go to offline storage).
        public var maxUnacked = 1000
        public init() {}
    }

    public struct Shutdown: Sendable, Hashable {
        /// How long sessions get to drain before they are closed.
        public var gracePeriod: Duration = .seconds(10)
        /// For rolling restarts: TCP streams end with `<see-other-host>` naming this
        /// (`host` or `host:port`, RFC 6120 §4.9.3.19) instead of `<system-shutdown/>`.
        public var redirectHost: String?
        /// WebSocket sessions end with `<close see-other-uri=…/>` (RFC 7395 §3.6.1) naming this.
        public var redirectWebSocketURI: String?
        /// BOSH sessions end with `<body type='terminate' condition='see-other-uri'>` and a
        /// `<uri/>` naming this (XEP-0124 §17.2).
        public var redirectBOSHURI: String?
        public init() {}
    }

    /// A Prometheus `/metrics` endpoint.
    public struct Metrics: Sendable, Hashable {
        public var enabled = false
        public var address = "127.0.0.1"
        public var port = 9464
        public init() {}
    }

    /// Personal eventing (XEP-0163): a pubsub service on every account's bare JID.
    public struct PEP: Sendable, Hashable {
        public var enabled = true
        /// The largest `pubsub#max_items` a node may have (and what `max` means).
        public var maxItemsPerNode = 256
        /// The largest item payload, in bytes of XML.
        public var maxPayloadBytes = 65_536
        public var maxNodesPerAccount = 64
        public init() {}
    }

    public struct Storage: Sendable, Hashable {
        public enum Backend: String, Sendable, Hashable, CaseIterable {
            case sqlite
            /// Every store on one PostgreSQL database (`url`), which several nodes can share.
            case postgresql
        }

        public struct SQLite: Sendable, Hashable {
            /// nil means `<data_dir>/parley.sqlite`.
            public var path: String?
            public init() {}
        }

        public var backend = Backend.sqlite
        public var sqlite = SQLite()
        /// The PostgreSQL database, `postgres://user[:password]@host[:port]/database`; required
        /// with the postgresql backend.
        public var url: String?
        public init() {}
    }
}

extension ServerConfiguration {
    /// XEP-0352 client state indication (`csi`).
    public struct ClientState: Sendable, Hashable {
        /// Stanzas held back for an inactive client before all of them are sent anyway.
        public var queueSize = 256
        public init() {}
    }

    /// XEP-0157 contact addresses (`contact_info`), as URIs (`mailto:`, `xmpp:`, `https:`).
    public struct ContactInfo: Sendable, Hashable {
        public var abuse: [String] = []
        public var admin: [String] = []
        public var feedback: [String] = []
        public var sales: [String] = []
        public var security: [String] = []
        public var support: [String] = []
        public init() {}

        public var isEmpty: Bool { [abuse, admin, feedback, sales, security, support].allSatisfy(\.isEmpty) }
    }

    /// A STUN/TURN server announced through XEP-0215 (`turn`), with credentials made the way
    /// coturn's REST API (`use-auth-secret`) checks them.
    public struct TURN: Sendable, Hashable {
        /// nil: no service is announced.
        public var host: String?
        public var port = 3478
        /// coturn's `static-auth-secret`; nil announces STUN only.
        public var secret: String?
        /// How long the credentials handed out stay valid.
        public var ttl: Duration = .seconds(86_400)
        /// Also announce TURN over TCP on `port`.
        public var tcp = false
        /// TURN over TLS (`turns`) on this port; 0 for none.
        public var tlsPort = 0
        public init() {}
    }
}

// Paths whose defaults follow `data_dir` and `domain`, so that changing either in code or in
// the file moves them too.
extension ServerConfiguration {
    public var tlsCertificatePath: String { tls.certificate ?? "\(dataDirectory)/tls/\(domain).crt" }
    public var tlsKeyPath: String { tls.key ?? "\(dataDirectory)/tls/\(domain).key" }
    public var sqlitePath: String { storage.sqlite.path ?? "\(dataDirectory)/parley.sqlite" }
}
