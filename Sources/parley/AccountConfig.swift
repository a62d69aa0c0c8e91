import Foundation
import ParleyClient
import ParleyCore
import ParleyTLS

/// The account the CLI signs in with: `~/.config/parley/config.json` (or `--config`), then
/// command-line overrides. Example:
///
///     { "jid": "alice@example.org", "host": "xmpp.example.org", "port": 5222,
///       "trusted_fingerprint": "AB:CD:…", "direct_tls": false }
///
/// or, over a WebSocket, `"websocket": "wss://example.org/xmpp-websocket"` (or `"auto"`).
///
/// The password comes from `PARLEY_PASSWORD`, else the file's "password" (only if the file
/// is readable by its owner alone), else a prompt without echo.
struct AccountConfig: Decodable {
    var jid: String?
    var host: String?
    var port: Int?
    var trustedFingerprint: String?
    var password: String?
    var directTLS: Bool?
    /// XMPP over WebSocket: a `wss://` URL, or "auto" for XEP-0156 discovery.
    var webSocket: String?
    /// A PEM file HTTPS file transfers trust besides the system roots.
    var httpTrustedCertificate: String?
    /// The SQLite cache of roster and messages; default under ~/.local/share/parley.
    var cache: String?

    enum CodingKeys: String, CodingKey {
        case jid, host, port, password, cache
        case trustedFingerprint = "trusted_fingerprint"
        case directTLS = "direct_tls"
        case webSocket = "websocket"
        case httpTrustedCertificate = "http_trusted_certificate"
    }

    static var defaultPath: String {
        UserDirectories.current.config + "/parley/config.json"
    }

    /// Reads the file; a missing default file is an empty configuration, a missing explicit
    /// one is an error. Remembers whether others can read it (for the password rule).
    static func load(path: String?) throws -> (AccountConfig, isPrivate: Bool) {
        let file = path ?? defaultPath
        guard FileManager.default.fileExists(atPath: file) else {
            if path != nil { throw CLIError("no config file at \(file)", .usage) }
            return (AccountConfig(), true)
        }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: file))
        } catch {
            throw CLIError("cannot read \(file): \(error.localizedDescription)", .usage)
        }
        let config: AccountConfig
        do {
            config = try JSONDecoder().decode(AccountConfig.self, from: data)
        } catch {
            throw CLIError("\(file) is not a valid config (JSON with jid, host, port, trusted_fingerprint): \(error)", .usage)
        }
        let mode = (try? FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int) ?? 0o777
        return (config, mode & 0o077 == 0)
    }

    init() {}

    static func password(from config: AccountConfig, isPrivate: Bool, configPath: String, prompt: String) throws -> String {
        if let password = ProcessInfo.processInfo.environment["PARLEY_PASSWORD"], !password.isEmpty { return password }
        if let password = config.password {
            guard isPrivate else {
                throw CLIError(
                    "refusing to use the password in \(configPath): others can read the file; run chmod 600 \(configPath)", .usage)
            }
            return password
        }
        return try Terminal.readSecret(prompt: prompt)
    }

    static func defaultCachePath(for jid: JID) -> String {
        UserDirectories.current.data + "/parley/\(jid.bare).sqlite"
    }
}
