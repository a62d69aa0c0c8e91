import NIOCore

/// What a client session needs to know of the connection under it, and the one thing only the
/// connection can do for it (start TLS in-band). Everything else the session needs is the same
/// on every transport: it reads `XMLStreamEvent`s and writes `XMLStreamOutput`, and the
/// transport's own handlers turn those into bytes (TCP: `<stream:stream>` framing; WebSocket,
/// RFC 7395: `<open/>`/`<close/>` and one element per message), including stream restarts
/// (`XMLStreamDecoder.Restart`) and closing.
///
/// A value, shared by every connection of one listener: an idle session pays nothing for it.
public struct C2STransport: Sendable, Hashable {
    /// For logs: `tcp`, `tls`, `websocket`, `bosh`.
    public let name: String
    /// Whether the bytes are already confidential when the stream begins (direct TLS; a
    /// WebSocket over HTTPS or over loopback). PLAIN and registration depend on it.
    public let isSecure: Bool
    /// Whether STARTTLS (RFC 6120 §5) can be offered: only where the session's stream is the
    /// connection's byte stream. RFC 7395 §3.2 leaves TLS to the WebSocket's own connection.
    public let offersStartTLS: Bool

    public init(name: String, isSecure: Bool, offersStartTLS: Bool) {
        self.name = name
        self.isSecure = isSecure
        self.offersStartTLS = offersStartTLS
    }

    /// The STARTTLS port (RFC 6120).
    public static let tcp = C2STransport(name: "tcp", isSecure: false, offersStartTLS: true)
    /// XEP-0368: TLS from the first byte.
    public static let directTLS = C2STransport(name: "tls", isSecure: true, offersStartTLS: false)

    /// RFC 7395 on the HTTP service.
    public static func webSocket(secure: Bool) -> C2STransport {
        C2STransport(name: "websocket", isSecure: secure, offersStartTLS: false)
    }

    /// XEP-0124/0206 on the HTTP service: TLS, if any, is the HTTP connection's (XEP-0206 §5).
    public static func bosh(secure: Bool) -> C2STransport {
        C2STransport(name: "bosh", isSecure: secure, offersStartTLS: false)
    }
}

extension ServerContext {
    /// The session handler for a connection that some other target (the HTTP service's
    /// WebSocket endpoint) accepted: it goes at the tail of that connection's pipeline, above
    /// handlers that turn the transport's frames into `XMLStreamEvent`s and
    /// `XMLStreamOutput` into frames.
    public func makeSessionHandler(remoteAddress: String, transport: C2STransport) -> any ChannelHandler & RemovableChannelHandler {
        C2SSessionHandler(server: self, remoteAddress: remoteAddress, transport: transport)
    }
}
