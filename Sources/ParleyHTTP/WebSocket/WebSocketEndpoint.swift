import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOWebSocket
import ParleyCore
import ParleyServer
import ParleyStream

/// The XMPP side of the WebSocket endpoint: which upgrades it accepts (RFC 7395 §3.1), and the
/// pipeline a accepted one gets: the client session of the c2s port, over RFC 7395 framing.
public struct WebSocketEndpoint: Sendable {
    public let configuration: HTTPConfiguration.WebSocket
    let server: RunningServer
    /// Whether the HTTP listener is HTTPS: then a session is confidential from its first byte.
    let httpTLS: Bool

    public init(configuration: HTTPConfiguration.WebSocket, server: RunningServer, httpTLS: Bool) {
        self.configuration = configuration
        self.server = server
        self.httpTLS = httpTLS
    }

    static let subprotocol = "xmpp"

    /// Why an upgrade request is refused, as the body of the 4xx answer.
    enum Refusal: Sendable {
        case wrongPath
        case noXMPPSubprotocol
        case originNotAllowed(String)

        var status: HTTPResponse.Status {
            switch self {
            case .wrongPath: .notFound
            case .noXMPPSubprotocol: .badRequest
            case .originNotAllowed: .forbidden
            }
        }

        var text: String {
            switch self {
            case .wrongPath: "No WebSocket endpoint here.\n"
            case .noXMPPSubprotocol: "This endpoint speaks XMPP over WebSocket only: request the 'xmpp' subprotocol (Sec-WebSocket-Protocol, RFC 7395 §3.1).\n"
            case .originNotAllowed(let origin): "Web pages from \(origin) may not connect to this server.\n"
            }
        }
    }

    /// Nil accepts the upgrade.
    func refusal(of head: HTTPRequestHead) -> Refusal? {
        let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? head.uri
        guard path == configuration.path else { return .wrongPath }
        let protocols = head.headers[canonicalForm: "Sec-WebSocket-Protocol"].map { $0.trimmingCharacters(in: .whitespaces) }
        guard protocols.contains(Self.subprotocol) else { return .noXMPPSubprotocol }
        // Browsers send Origin; other clients need not, and are not what the check is for.
        if !configuration.allowedOrigins.isEmpty, let origin = head.headers.first(name: "Origin"),
            !configuration.allowedOrigins.contains(origin)
        {
            return .originNotAllowed(origin)
        }
        return nil
    }

    /// Runs on the channel's event loop, right after the upgrade's 101 went out and the frame
    /// codec was added, before anything else is read.
    func installSession(on channel: any Channel) throws {
        let remote = channel.remoteAddress
        let address = remote?.ipAddress ?? "unknown"
        let secure = httpTLS || Self.isLoopback(remote)
        let xmpp = server.configuration
        let keepalive = StreamKeepaliveHandler.Configuration(
            whitespaceInterval: nil,
            pingAfter: xmpp.keepalive.pingAfter.map(TimeAmount.init),
            idleTimeout: TimeAmount(xmpp.keepalive.idleTimeout))
        let limits = XMLStreamParser.Limits(maxStanzaBytes: xmpp.limits.maxStanzaBytes, maxDepth: xmpp.limits.maxDepth)
        let pipeline = channel.pipeline.syncOperations
        // Below the frame codec, so that every byte from the peer (a pong too) counts as life.
        let encoder = try pipeline.handler(type: WebSocketFrameEncoder.self)
        try pipeline.addHandler(StreamKeepaliveHandler(configuration: keepalive), position: .before(encoder))
        try pipeline.addHandler(WebSocketFramingHandler(maxMessageBytes: configuration.maxMessageBytes, limits: limits))
        try pipeline.addHandler(server.context.makeSessionHandler(remoteAddress: address, transport: .webSocket(secure: secure)))
        server.trackConnection(channel)
    }

    /// Traffic that never leaves the machine (a local reverse proxy, a local client) needs no
    /// TLS of its own, as for c2s's PLAIN rule.
    static func isLoopback(_ address: SocketAddress?) -> Bool {
        guard let ip = address?.ipAddress else { return false }
        return ip.hasPrefix("127.") || ip == "::1" || ip.hasPrefix("::ffff:127.")
    }
}
