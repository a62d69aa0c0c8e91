/// Where a server told the client to go instead of itself: a `see-other-host` stream error on
/// a TCP stream (RFC 6120 §4.9.3.19), or `<close see-other-uri=…/>` on a WebSocket (RFC 7395
/// §3.6.1). A rolling restart sends every client to another node this way.
enum ServerRedirect: Sendable, Equatable, CustomStringConvertible {
    case host(String, port: Int?)
    case webSocket(WebSocketURL)

    /// `host`, `host:port`, `[v6]:port`, or a bare IPv6 literal.
    init?(seeOtherHost text: String) {
        let text = text.trimmingWhitespace
        guard !text.isEmpty, !text.contains("/") else { return nil }
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            if rest.isEmpty { self = .host(host, port: nil); return }
            guard rest.hasPrefix(":"), let port = Int(rest.dropFirst()), (1...65535).contains(port) else { return nil }
            self = .host(host, port: port)
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            guard let port = Int(text[text.index(after: colon)...]), (1...65535).contains(port), colon != text.startIndex else { return nil }
            self = .host(String(text[..<colon]), port: port)
        } else {
            self = .host(text, port: nil)
        }
    }

    /// Only WebSocket URLs: a client without BOSH cannot follow an `https://` one.
    init?(seeOtherURI text: String) {
        guard let url = WebSocketURL(text.trimmingWhitespace) else { return nil }
        self = .webSocket(url)
    }

    /// The configuration to reconnect with, or nil when this client must not follow: to a
    /// TCP host from a WebSocket, or to a `ws://` from a `wss://` (RFC 7395 §3.6.1 forbids a
    /// lower security context). The TLS certificate is still checked against the JID's domain.
    func applied(to configuration: ClientConfiguration) -> ClientConfiguration? {
        var next = configuration
        switch self {
        case .host(let host, let port):
            guard configuration.webSocket == nil else { return nil }
            next.host = host
            next.port = port
        case .webSocket(let url):
            guard let current = configuration.webSocketEndpoint, url.isSecure || !current.isSecure else { return nil }
            next.webSocket = .endpoint(url)
        }
        return next
    }

    var description: String {
        switch self {
        case .host(let host, let port): port.map { "\(host.contains(":") ? "[\(host)]" : host):\($0)" } ?? host
        case .webSocket(let url): url.description
        }
    }
}

extension String {
    var trimmingWhitespace: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        return String(drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }
}
