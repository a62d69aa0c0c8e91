import Foundation
import Logging
import ParleyPostgres
import ParleyServer
import ParleyStorage

/// The stores of the configured backend, for the admin commands: they act on the database
/// the server uses, while it runs.
func openStorage(_ configuration: ServerConfiguration, logger: Logger = Logger(label: "parleyd.storage")) async throws
    -> any ServerStorage
{
    if let postgres = try await openPostgresIfConfigured(configuration, logger: logger) { return postgres }
    return try SQLiteStorage(path: configuration.sqlitePath)
}

/// The PostgreSQL stores when `storage.backend` is postgresql (connected, schema migrated),
/// nil for SQLite.
func openPostgresIfConfigured(_ configuration: ServerConfiguration, logger: Logger) async throws -> PostgresStorage? {
    guard configuration.storage.backend == .postgresql else { return nil }
    // The configuration loader refuses postgresql without a URL.
    guard let url = configuration.storage.url else { throw StorageError.unusableDatabase("storage.url is not set") }
    return try await PostgresStorage.open(url: url, logger: logger)
}

/// Where the stores are, for messages: never the password.
func storageLocation(_ configuration: ServerConfiguration) -> String {
    switch configuration.storage.backend {
    case .sqlite: configuration.sqlitePath
    case .postgresql: configuration.storage.url.map(PostgresStorage.redacted) ?? "(no storage.url)"
    }
}
