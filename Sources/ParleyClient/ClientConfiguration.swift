import ParleyCore
import ParleyTLS

/// How a client connects and behaves when the connection is lost.
public struct ClientConfiguration: Sendable {
    public enum Security: Sendable, Equatable {
        /// Plain TCP, then STARTTLS (RFC 6120 §5); the usual port 5222.
        case startTLS
        /// TLS from the first byte (XEP-0368), usually port 5223.
        case directTLS
        /// No TLS at all: for tests against a local server only. PLAIN is never used here.
        case none
    }

    /// XMPP over WebSocket (RFC 7395) instead of a TCP stream: the same negotiation, stream
    /// management and reconnection run over it.
    public enum WebSocket: Sendable, Equatable {
        /// This endpoint (`wss://chat.example.org/xmpp-websocket`).
        case endpoint(WebSocketURL)
        /// The endpoint the JID's domain lists in its XEP-0156 host-meta.
        case discover
    }

    public struct Reconnect: Sendable, Equatable {
        public var enabled = true
        public var initialDelay: Duration = .seconds(1)
        public var maximumDelay: Duration = .seconds(60)
        public var multiplier = 2.0
        /// Each delay is randomly shortened by up to this fraction, so clients cut off together
        /// do not come back together.
        public var jitter = 0.3
        public init() {}
    }

    public var jid: JID
    public var password: String
    /// Connect here instead of the JID's domain (and its DNS SRV records).
    public var host: String?
    public var port: Int?
    /// Ignored over a WebSocket, whose URL's scheme says whether it is TLS (`wss`) or not.
    public var security = Security.startTLS
    /// Nil: a TCP stream (`host`, `port`, `security`).
    public var webSocket: WebSocket?
    /// Where `.discover` reads XEP-0156 host-meta instead of `https://<domain>` (a host-meta
    /// on another port or host; HTTPS only).
    public var hostMetaBase: String?
    public var trust = TLSTrust.systemDefault
    /// Resource to ask for; nil lets the server choose.
    public var resource: String?
    public var reconnect = Reconnect()
    /// Ping the server after this long without traffic (XEP-0199) ...
    public var heartbeatInterval: Duration = .seconds(30)
    /// ... and give the connection up if the answer takes longer than this.
    public var heartbeatTimeout: Duration = .seconds(10)
    /// Time allowed for the TCP connection, TLS and authentication together.
    public var connectTimeout: Duration = .seconds(20)
    /// Send initial presence once connected (needed to receive messages sent to the bare JID).
    public var sendsInitialPresence = true
    /// The priority of this session's presence (RFC 6121 §4.7.2.3). A negative one receives
    /// no messages sent to the bare JID and no offline messages, but still the friend
    /// requests waiting for an answer: what a short-lived look at the roster wants.
    public var initialPriority: Int8 = 0
    /// Use XEP-0198 when the server offers it: acknowledgements, so nothing unacknowledged is
    /// forgotten, and resumption of the session after a dropped connection.
    public var streamManagement = true
    /// HTTPS file transfers (XEP-0363) trust the system roots and also this PEM file: a
    /// private CA, or the upload server's own self-signed certificate.
    public var httpTrustedCertificateFile: String?

    public init(jid: JID, password: String) {
        self.jid = jid
        self.password = password
    }

    var serverHost: String { webSocketEndpoint?.host ?? host ?? jid.domainpart }
    var serverPort: Int { webSocketEndpoint?.port ?? port ?? (security == .directTLS ? 5223 : 5222) }

    /// The WebSocket to connect to, once configured or discovered.
    var webSocketEndpoint: WebSocketURL? {
        if case .endpoint(let url) = webSocket { url } else { nil }
    }

    /// Whether the stream is confidential from its first byte (direct TLS, `wss`).
    var startsSecure: Bool {
        webSocketEndpoint.map(\.isSecure) ?? (security == .directTLS)
    }

    /// STARTTLS is part of TCP streams only; RFC 7395 §3.2 leaves TLS to the WebSocket's own.
    var negotiatesStartTLS: Bool {
        webSocket == nil && security == .startTLS
    }
}
