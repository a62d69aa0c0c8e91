import Foundation

/// The HTTP(S) service (ParleyHTTP) and the XEP-0363 upload store behind it. Plain data here so
/// the configuration file is read in one place; ParleyServer itself never serves HTTP from it.
public struct HTTPConfiguration: Sendable, Hashable {
    public var enabled = false
    public var interfaces = ["127.0.0.1"]
    /// Prosody's HTTPS port. 0 picks a free port (tests).
    public var port = 5281
    /// HTTPS with the c2s certificate. Plain HTTP is refused on a non-loopback interface unless
    /// `allowPlainHTTP` says so (behind a TLS-terminating proxy, say).
    public var tls = true
    public var allowPlainHTTP = false
    /// What clients are given in upload URLs (the proxy's address, when there is one). When not
    /// set: http(s)://<domain>:<port>.
    public var publicURL: String?
    public var upload = Upload()
    public var webSocket = WebSocket()
    public var webChat = WebChat()
    public var bosh = BOSH()

    public init() {}

    /// The web chat parleyd serves (static files speaking XMPP over the WebSocket endpoint).
    public struct WebChat: Sendable, Hashable {
        /// Served only when the WebSocket endpoint is on too: the page has no other way in.
        public var enabled = true
        public var path = "/chat"

        public init() {}
    }

    /// XMPP over WebSocket (RFC 7395), announced through XEP-0156 host-meta.
    public struct WebSocket: Sendable, Hashable {
        public var enabled = true
        /// Prosody's path, which web clients try first.
        public var path = "/xmpp-websocket"
        /// Largest WebSocket message (one XML element) a client may send.
        public var maxMessageBytes = 262_144
        /// Origins (`https://chat.example.org`) whose pages may connect; empty allows every origin,
        /// as Prosody's `cross_domain_websocket = true`.
        public var allowedOrigins: [String] = []

        public init() {}
    }

    /// XMPP over BOSH (XEP-0124/0206), announced through XEP-0156 host-meta next to WebSocket.
    /// The defaults are Prosody's mod_bosh's (hold 1, requests 2, inactivity 60 s, wait ≤ 120 s).
    public struct BOSH: Sendable, Hashable {
        public var enabled = true
        /// Prosody's path, which web clients try first.
        public var path = "/http-bind"
        /// The longest a request is held before an empty answer; a client may ask for less.
        public var maxWait: Duration = .seconds(120)
        /// The most requests held at once per session (`hold`).
        public var maxHold = 1
        /// The most requests a client may have outstanding at once (`requests`), which is
        /// also the window of rids accepted ahead of the next expected one.
        public var maxRequests = 2
        /// A session with no request for this long ends, as a dropped TCP connection does.
        public var inactivity: Duration = .seconds(60)
        /// The longest a client may pause its session for (`maxpause`, XEP-0124 §10).
        public var maxPause: Duration = .seconds(120)
        /// Shortest interval between empty requests of a session that holds none (`polling`).
        public var polling: Duration = .seconds(5)
        /// Largest request body, in bytes.
        public var maxBodyBytes = 262_144
        /// The most BOSH sessions at once, over all clients.
        public var maxSessions = 10_000

        public init() {}
    }

    public struct Upload: Sendable, Hashable {
        public var enabled = true
        /// Largest single file (XEP-0363 `max-file-size`).
        public var maxFileSize = 100 * 1024 * 1024
        /// Bytes an account may request slots for in 24 hours; 0 for unlimited.
        public var dailyQuota = 1024 * 1024 * 1024
        /// Bytes an account may keep stored; 0 for unlimited.
        public var totalQuota = 2 * 1024 * 1024 * 1024
        /// How long a slot's PUT URL stays valid.
        public var slotLifetime: Duration = .seconds(300)
        /// Files older than this are deleted; 0 keeps them forever.
        public var expiryDays = 30
        /// HMAC key for slot URLs; when not set, one is generated into `<data_dir>/upload.secret`.
        public var secret: String?
        /// Who may request slots: `local` (accounts on this server) or `none`.
        public var allowed = "local"
        /// Where files go. When not set: <data_dir>/uploads.
        public var directory: String?
        /// The XMPP domain of the slot service (XEP-0363); nil: `upload.<domain>`.
        public var domain: String?

        public init() {}
    }
}

extension ServerConfiguration {
    /// The domain the XEP-0363 upload service serves.
    public var uploadDomain: String { http.upload.domain ?? "upload.\(domain)" }
}
