/// A WebSocket endpoint (`wss://host:port/path`, RFC 6455 §3), as configured or as a domain's
/// XEP-0156 host-meta lists it.
public struct WebSocketURL: Sendable, Hashable, CustomStringConvertible {
    /// `wss`: TLS under the WebSocket, the only form a client uses across a network.
    public var isSecure: Bool
    public var host: String
    public var port: Int
    /// With its query, if any: the request target of the upgrade.
    public var path: String

    public init(isSecure: Bool, host: String, port: Int? = nil, path: String = "/") {
        self.isSecure = isSecure
        self.host = host
        self.port = port ?? (isSecure ? 443 : 80)
        self.path = path.isEmpty ? "/" : path
    }

    /// Parses `ws://` and `wss://` URLs; anything else (an `https://` BOSH URL) is nil.
    public init?(_ text: String) {
        let secure: Bool
        var rest: Substring
        let lowered = text.lowercased()
        if lowered.hasPrefix("wss://") {
            secure = true
            rest = text.dropFirst(6)
        } else if lowered.hasPrefix("ws://") {
            secure = false
            rest = text.dropFirst(5)
        } else {
            return nil
        }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        rest = rest[authorityEnd...]
        if let fragment = rest.firstIndex(of: "#") { rest = rest[..<fragment] }
        // User information has no meaning for a WebSocket (RFC 6455 §3).
        guard !authority.isEmpty, !authority.contains("@") else { return nil }
        var host = Substring(authority)
        var port: Int? = nil
        if authority.hasPrefix("[") {
            // An IPv6 literal: [::1]:5280.
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let number = Int(after.dropFirst()) else { return nil }
                port = number
            }
        } else if let colon = authority.lastIndex(of: ":") {
            guard let number = Int(authority[authority.index(after: colon)...]) else { return nil }
            host = authority[..<colon]
            port = number
        }
        if let port, !(1...65535).contains(port) { return nil }
        guard !host.isEmpty else { return nil }
        self.init(isSecure: secure, host: String(host), port: port, path: rest.hasPrefix("?") ? "/" + rest : String(rest))
    }

    /// The `Host` header's value: the port only when it is not the scheme's default.
    var hostHeader: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == (isSecure ? 443 : 80) ? name : "\(name):\(port)"
    }

    /// Traffic that never leaves the machine, the one place a client may speak `ws://`.
    var isLoopback: Bool {
        host == "localhost" || host.hasPrefix("127.") || host == "::1"
    }

    public var description: String {
        "\(isSecure ? "wss" : "ws")://\(hostHeader)\(path)"
    }
}
