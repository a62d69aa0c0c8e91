/// Every option the configuration knows, by dotted key, so that a file or an environment
/// variable naming anything else is refused instead of silently ignored.
///
/// `ServerConfiguration+Load` reads exactly these keys; a test checks that the commented
/// `conf/parleyd.yaml` lists every one of them.
enum ConfigurationSchema {
    enum Shape: Sendable {
        /// A single value: a string, number or boolean.
        case scalar
        /// A YAML sequence, or a comma-separated environment variable.
        case list
    }

    static let options: [String: Shape] = [
        "domain": .scalar,
        "data_dir": .scalar,
        "log_level": .scalar,
        "c2s.interfaces": .list,
        "c2s.port": .scalar,
        "c2s.direct_tls_port": .scalar,
        "tls.certificate": .scalar,
        "tls.key": .scalar,
        "tls.required": .scalar,
        "auth.mechanisms": .list,
        "auth.allow_plain_without_tls": .scalar,
        "auth.scram_iterations": .scalar,
        "registration.enabled": .scalar,
        "registration.min_password_length": .scalar,
        "roster.max_items": .scalar,
        "offline.quota": .scalar,
        "archive.enabled": .scalar,
        "archive.max_messages_per_user": .scalar,
        "archive.retention_days": .scalar,
        "vcard.max_bytes": .scalar,
        "private_storage.max_element_bytes": .scalar,
        "private_storage.max_elements": .scalar,
        "limits.max_stanza_bytes": .scalar,
        "limits.max_depth": .scalar,
        "limits.connections_per_ip": .scalar,
        "limits.max_connections": .scalar,
        "limits.unauthenticated_timeout": .scalar,
        "limits.auth_failures_per_ip": .scalar,
        "limits.auth_failure_window": .scalar,
        "limits.stanzas_per_second": .scalar,
        "limits.stanza_burst": .scalar,
        "keepalive.whitespace_interval": .scalar,
        "keepalive.ping_after": .scalar,
        "keepalive.idle_timeout": .scalar,
        "sessions.on_same_resource": .scalar,
        "sessions.max_per_account": .scalar,
        "sessions.single_device": .scalar,
        "stream_management.enabled": .scalar,
        "stream_management.resume_timeout": .scalar,
        "stream_management.max_unacked": .scalar,
        "shutdown.grace_period": .scalar,
        "shutdown.redirect_host": .scalar,
        "shutdown.redirect_websocket_uri": .scalar,
        "shutdown.redirect_bosh_uri": .scalar,
        "http.enabled": .scalar,
        "http.interfaces": .list,
        "http.port": .scalar,
        "http.tls": .scalar,
        "http.allow_plain_http": .scalar,
        "http.public_url": .scalar,
        "upload.enabled": .scalar,
        "upload.max_file_size": .scalar,
        "upload.daily_quota": .scalar,
        "upload.total_quota": .scalar,
        "upload.slot_lifetime": .scalar,
        "upload.expiry_days": .scalar,
        "upload.secret": .scalar,
        "upload.allowed": .scalar,
        "upload.directory": .scalar,
        "upload.domain": .scalar,
        "websocket.enabled": .scalar,
        "websocket.path": .scalar,
        "websocket.max_message_size": .scalar,
        "websocket.allowed_origins": .list,
        "webchat.enabled": .scalar,
        "webchat.path": .scalar,
        "bosh.enabled": .scalar,
        "bosh.path": .scalar,
        "bosh.max_wait": .scalar,
        "bosh.max_hold": .scalar,
        "bosh.max_requests": .scalar,
        "bosh.inactivity": .scalar,
        "bosh.max_pause": .scalar,
        "bosh.polling": .scalar,
        "bosh.max_body_size": .scalar,
        "bosh.max_sessions": .scalar,
        "metrics.enabled": .scalar,
        "metrics.address": .scalar,
        "metrics.port": .scalar,
        "storage.backend": .scalar,
        "storage.sqlite.path": .scalar,
        "storage.url": .scalar,
        "cluster.enabled": .scalar,
        "cluster.node_id": .scalar,
        "cluster.heartbeat_interval": .scalar,
        "cluster.lease_timeout": .scalar,
        "pep.enabled": .scalar,
        "pep.max_items_per_node": .scalar,
        "pep.max_payload_bytes": .scalar,
        "pep.max_nodes_per_account": .scalar,
        "muc.enabled": .scalar,
        "muc.domain": .scalar,
        "muc.room_creation": .scalar,
        "muc.admins": .list,
        "muc.max_rooms": .scalar,
        "muc.max_occupants_per_room": .scalar,
        "muc.max_rooms_per_account": .scalar,
        "muc.max_message_bytes": .scalar,
        "muc.max_nick_bytes": .scalar,
        "muc.registration": .scalar,
        "muc.enforce_registered_nickname": .scalar,
        "muc.messages_per_minute": .scalar,
        "muc.message_burst": .scalar,
        "muc.archive_by_default": .scalar,
        "muc.archive_max_messages_per_room": .scalar,
        "muc.archive_retention_days": .scalar,
        "csi.queue_size": .scalar,
        "contact_info.abuse": .list,
        "contact_info.admin": .list,
        "contact_info.feedback": .list,
        "contact_info.sales": .list,
        "contact_info.security": .list,
        "contact_info.support": .list,
        "turn.host": .scalar,
        "turn.port": .scalar,
        "turn.secret": .scalar,
        "turn.ttl": .scalar,
        "turn.tcp": .scalar,
        "turn.tls_port": .scalar,
    ]

    /// Keys that hold other keys: `c2s`, `storage`, `storage.sqlite`, …
    static let sections: Set<String> = Set(
        options.keys.flatMap { key in
            let components = key.split(separator: ".")
            return (1..<max(components.count, 1)).map { components.prefix($0).joined(separator: ".") }
        })

    /// Environment variables start with this; the rest is the key in upper case with dots
    /// as underscores (`c2s.port` → `PARLEYD_C2S_PORT`), which is how swift-configuration's
    /// environment provider spells a key prefixed with `parleyd`.
    static let environmentPrefix = "PARLEYD_"

    /// `PARLEYD_` variables that are not options: `parleyd` reads the file's path from this.
    static let environmentVariablesNotOptions: Set<String> = ["PARLEYD_CONFIG", "PARLEYD_PASSWORD"]

    static func environmentVariable(for key: String) -> String {
        environmentPrefix + key.uppercased().map { $0.isLetter || $0.isNumber ? String($0) : "_" }.joined()
    }

    static let optionsByEnvironmentVariable: [String: String] = Dictionary(
        uniqueKeysWithValues: options.keys.map { (environmentVariable(for: $0), $0) })

    /// The closest known name to a misspelt one, if any is close enough to be a likely typo.
    static func suggestion(for name: String, among candidates: some Sequence<String>) -> String? {
        let scored = candidates.map { ($0, editDistance(name, $0)) }
        guard let best = scored.min(by: { $0.1 < $1.1 || ($0.1 == $1.1 && $0.0 < $1.0) }) else { return nil }
        // Two edits catch a swapped pair or a missing letter; beyond that it is a guess.
        return best.1 <= max(2, name.count / 4) ? best.0 : nil
    }

    /// Levenshtein distance, counting a swap of neighbours (`prot` for `port`) as one edit.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var d = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
                }
            }
        }
        return d[a.count][b.count]
    }
}
