import ParleyCore

extension ServerConfiguration {
    /// The `http:` and `upload:` sections (ParleyHTTP and its XEP-0363 store).
    static func readHTTP(
        _ values: ConfigurationValues, into http: inout HTTPConfiguration, domain serverDomain: String
    ) throws(ConfigurationError) {
        http.enabled = try values.bool("http.enabled", default: http.enabled)
        http.interfaces = try values.stringList("http.interfaces", default: http.interfaces)
        http.port = try values.port("http.port", default: http.port, zeroMeans: "any free port")
        http.tls = try values.bool("http.tls", default: http.tls)
        http.allowPlainHTTP = try values.bool("http.allow_plain_http", default: http.allowPlainHTTP)
        http.publicURL = values.optionalString("http.public_url")
        if let url = http.publicURL, !(url.hasPrefix("http://") || url.hasPrefix("https://")) {
            throw values.error("http.public_url", "expected an http:// or https:// URL, got \"\(url)\"")
        }
        // Uploads carry bearer tokens in their URLs; over plain HTTP on a public interface
        // anyone on the path could replay them.
        if !http.tls, !http.allowPlainHTTP,
            let exposed = http.interfaces.first(where: { !["127.0.0.1", "::1", "localhost"].contains($0) })
        {
            throw values.error(
                "http.tls", "is false while http.interfaces includes \(exposed); set http.allow_plain_http: true to serve plain HTTP beyond loopback")
        }
        var upload = http.upload
        upload.enabled = try values.bool("upload.enabled", default: upload.enabled)
        upload.maxFileSize = try values.positiveInt("upload.max_file_size", default: upload.maxFileSize)
        upload.dailyQuota = try values.int(
            "upload.daily_quota", default: upload.dailyQuota, in: 0...Int.max, expected: "an integer, 0 for unlimited")
        upload.totalQuota = try values.int(
            "upload.total_quota", default: upload.totalQuota, in: 0...Int.max, expected: "an integer, 0 for unlimited")
        upload.slotLifetime = try values.seconds("upload.slot_lifetime", default: upload.slotLifetime)
        upload.expiryDays = try values.int(
            "upload.expiry_days", default: upload.expiryDays, in: 0...1_000_000, expected: "an integer, 0 to keep files forever")
        upload.secret = values.optionalString("upload.secret")
        upload.allowed = try values.string("upload.allowed", default: upload.allowed)
        guard ["local", "none"].contains(upload.allowed) else {
            throw values.error("upload.allowed", "expected one of local, none, got \"\(upload.allowed)\"")
        }
        upload.directory = values.optionalString("upload.directory")
        upload.domain = values.optionalString("upload.domain")
        if let domain = upload.domain, (try? JID(domain)).map({ $0.isDomain && $0.domainpart != serverDomain }) != true {
            throw values.error("upload.domain", "expected a domain of its own such as upload.\(serverDomain), got \"\(domain)\"")
        }
        http.upload = upload

        var webSocket = http.webSocket
        webSocket.enabled = try values.bool("websocket.enabled", default: webSocket.enabled)
        webSocket.path = try values.string("websocket.path", default: webSocket.path)
        guard webSocket.path.hasPrefix("/"), !webSocket.path.contains("?") else {
            throw values.error("websocket.path", "expected an absolute path such as /xmpp-websocket, got \"\(webSocket.path)\"")
        }
        webSocket.maxMessageBytes = try values.positiveInt("websocket.max_message_size", default: webSocket.maxMessageBytes)
        webSocket.allowedOrigins = try values.stringList("websocket.allowed_origins", default: webSocket.allowedOrigins)
        http.webSocket = webSocket

        var webChat = http.webChat
        webChat.enabled = try values.bool("webchat.enabled", default: webChat.enabled)
        webChat.path = try values.string("webchat.path", default: webChat.path)
        while webChat.path.count > 1, webChat.path.hasSuffix("/") { webChat.path.removeLast() }
        guard webChat.path.hasPrefix("/"), webChat.path.count > 1,
            !webChat.path.contains(where: { "?#{}:*".contains($0) }), webChat.path != webSocket.path
        else {
            throw values.error("webchat.path", "expected an absolute path of its own such as /chat, got \"\(webChat.path)\"")
        }
        http.webChat = webChat
        try readBOSH(values, into: &http.bosh)
    }
}

extension ServerConfiguration {
    /// The `bosh:` section (XEP-0124/0206 on the HTTP service).
    static func readBOSH(_ values: ConfigurationValues, into bosh: inout HTTPConfiguration.BOSH) throws(ConfigurationError) {
        bosh.enabled = try values.bool("bosh.enabled", default: bosh.enabled)
        bosh.path = try values.string("bosh.path", default: bosh.path)
        guard bosh.path.hasPrefix("/"), !bosh.path.contains("?") else {
            throw values.error("bosh.path", "expected an absolute path such as /http-bind, got \"\(bosh.path)\"")
        }
        bosh.maxWait = try values.seconds("bosh.max_wait", default: bosh.maxWait)
        bosh.maxHold = try values.int("bosh.max_hold", default: bosh.maxHold, in: 0...16, expected: "an integer from 0 to 16")
        bosh.maxRequests = try values.int("bosh.max_requests", default: bosh.maxRequests, in: 1...17, expected: "an integer from 1 to 17")
        bosh.inactivity = try values.seconds("bosh.inactivity", default: bosh.inactivity)
        bosh.maxPause = try values.seconds("bosh.max_pause", default: bosh.maxPause)
        bosh.polling = try values.seconds("bosh.polling", default: bosh.polling)
        bosh.maxBodyBytes = try values.positiveInt("bosh.max_body_size", default: bosh.maxBodyBytes)
        bosh.maxSessions = try values.positiveInt("bosh.max_sessions", default: bosh.maxSessions)
    }
}
