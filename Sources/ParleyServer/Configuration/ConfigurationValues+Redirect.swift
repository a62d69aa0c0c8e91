/// The shutdown redirect's values, checked at start-up: a typo would otherwise only show when
/// every client is sent to it during a restart.
extension ConfigurationValues {
    /// `host` or `host:port` (`[v6]:port`), what `<see-other-host/>` carries.
    func redirectHost(_ key: String) throws(ConfigurationError) -> String? {
        guard let value = optionalString(key) else { return nil }
        let bad = value.contains("/") || value.contains(" ") || value.hasPrefix(":") || value.contains("@")
        var port: Substring?
        if value.hasPrefix("[") {
            guard let close = value.firstIndex(of: "]") else { throw error(key, "expected host or host:port, got \"\(value)\"") }
            let rest = value[value.index(after: close)...]
            if !rest.isEmpty { port = rest.hasPrefix(":") ? rest.dropFirst() : rest }
        } else if value.filter({ $0 == ":" }).count == 1, let colon = value.firstIndex(of: ":") {
            port = value[value.index(after: colon)...]
        }
        if bad || port.map({ Int($0).map { !(1...65535).contains($0) } ?? true }) == true {
            throw error(key, "expected host or host:port (e.g. node2.example.org:5222), got \"\(value)\"")
        }
        return value
    }

    /// A `ws://` or `wss://` URL with a host, what `<close see-other-uri/>` carries.
    func webSocketURI(_ key: String) throws(ConfigurationError) -> String? {
        guard let value = optionalString(key) else { return nil }
        let lowered = value.lowercased()
        let rest = lowered.hasPrefix("wss://") ? lowered.dropFirst(6) : lowered.hasPrefix("ws://") ? lowered.dropFirst(5) : nil
        guard let rest, let first = rest.first, first != "/", !value.contains(" ") else {
            throw error(key, "expected a WebSocket URL (wss://host:port/path), got \"\(value)\"")
        }
        return value
    }

    /// An `http://` or `https://` URL with a host, what a BOSH `see-other-uri` carries.
    func boshURI(_ key: String) throws(ConfigurationError) -> String? {
        guard let value = optionalString(key) else { return nil }
        let lowered = value.lowercased()
        let rest = lowered.hasPrefix("https://") ? lowered.dropFirst(8) : lowered.hasPrefix("http://") ? lowered.dropFirst(7) : nil
        guard let rest, let first = rest.first, first != "/", !value.contains(" ") else {
            throw error(key, "expected a BOSH URL (https://host:port/path), got \"\(value)\"")
        }
        return value
    }
}
