import Foundation
import NIOSSL
import ParleyStorage
import PostgresNIO

/// `storage.url`: `postgres://user[:password]@host[:port]/database[?sslmode=disable|prefer|require]`,
/// the libpq form operators know. A password may also come from `PGPASSWORD`, so that it
/// need not stand in the configuration file.
struct PostgresURL: CustomStringConvertible {
    var host: String
    var port: Int
    var user: String
    var password: String?
    var database: String
    var sslMode: String

    init(_ text: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        guard let components = URLComponents(string: text), let scheme = components.scheme,
            ["postgres", "postgresql"].contains(scheme)
        else {
            throw StorageError.unusableDatabase("storage.url '\(Self.redacted(text))' is not a postgres://user@host:port/database URL")
        }
        guard let host = components.host, !host.isEmpty else {
            throw StorageError.unusableDatabase("storage.url '\(Self.redacted(text))' names no host")
        }
        guard let user = components.user, !user.isEmpty else {
            throw StorageError.unusableDatabase("storage.url '\(Self.redacted(text))' names no user")
        }
        let database = String(components.path.drop { $0 == "/" })
        guard !database.isEmpty else {
            throw StorageError.unusableDatabase("storage.url '\(Self.redacted(text))' names no database")
        }
        let sslMode = components.queryItems?.first { $0.name == "sslmode" }?.value ?? "prefer"
        guard ["disable", "prefer", "require"].contains(sslMode) else {
            throw StorageError.unusableDatabase("storage.url: sslmode '\(sslMode)' is not disable, prefer or require")
        }
        self.host = host
        self.port = components.port ?? 5432
        self.user = user.removingPercentEncoding ?? user
        self.password = components.password.map { $0.removingPercentEncoding ?? $0 } ?? environment["PGPASSWORD"]
        self.database = database.removingPercentEncoding ?? database
        self.sslMode = sslMode
    }

    var clientConfiguration: PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS =
            switch sslMode {
            case "disable": .disable
            case "require": .require(.makeClientConfiguration())
            default: .prefer(.makeClientConfiguration())
            }
        return PostgresClient.Configuration(
            host: host, port: port, username: user, password: password, database: database, tls: tls)
    }

    /// The same server, user, database and TLS mode as `clientConfiguration`, for one
    /// connection outside the pool.
    var connectionConfiguration: PostgresConnection.Configuration {
        get throws {
            let tls: PostgresConnection.Configuration.TLS =
                switch sslMode {
                case "disable": .disable
                case "require": .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
                default: .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
                }
            return PostgresConnection.Configuration(
                host: host, port: port, username: user, password: password, database: database, tls: tls)
        }
    }

    var description: String { "postgres://\(user)@\(host):\(port)/\(database)" }

    /// For error messages: the URL without its password.
    static func redacted(_ text: String) -> String {
        guard var components = URLComponents(string: text), components.password != nil else { return text }
        components.password = "***"
        return components.string ?? text
    }
}

extension PostgresStorage {
    /// `url` without its password, for messages and logs.
    public static func redacted(_ url: String) -> String { PostgresURL.redacted(url) }
}
