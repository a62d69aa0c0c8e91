import ArgumentParser
import Foundation
import Logging
import ParleyPostgres
import ParleyServer
import ParleyStorage

/// `parleyd storage …`: the PostgreSQL backend's administration.
struct StorageCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storage", abstract: "Prepare the configured database, or copy a SQLite data directory into PostgreSQL.",
        subcommands: [Migrate.self, Copy.self])

    /// The server migrates at start-up too; this lets an operator do it beforehand (and see it fail) once for all nodes.
    struct Migrate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "migrate", abstract: "Create or update the configured database's tables, then list the migrations applied.")

        @OptionGroup var options: ConfigOptions

        func run() async throws {
            let configuration = try await loadConfiguration(options)
            let logger = Logger(label: "parleyd.storage")
            switch configuration.storage.backend {
            case .sqlite:
                _ = try SQLiteStorage(path: configuration.sqlitePath)
                print("SQLite database \(configuration.sqlitePath) is up to date")
            case .postgresql:
                guard let storage = try await openPostgresIfConfigured(configuration, logger: logger) else { return }
                let applied = try await storage.appliedMigrations()
                await storage.close()
                print("PostgreSQL database \(storageLocation(configuration)) is up to date: \(applied.joined(separator: ", "))")
            }
        }
    }

    struct Copy: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "copy",
            abstract: "Copy a SQLite data directory's database into the configured (empty) PostgreSQL database.",
            discussion: "Stop the server that uses the SQLite directory first. Uploaded files stay where they are: point upload.directory at them.")

        @OptionGroup var options: ConfigOptions
        @Option(name: .customLong("from-sqlite"), help: "The data directory (or the .sqlite file) to copy.") var source: String

        func run() async throws {
            let configuration = try await loadConfiguration(options)
            guard configuration.storage.backend == .postgresql else {
                throw ValidationError("storage.backend is sqlite: set it to postgresql, with storage.url, to copy into PostgreSQL")
            }
            var isDirectory: ObjCBool = false
            let path =
                FileManager.default.fileExists(atPath: source, isDirectory: &isDirectory) && isDirectory.boolValue
                ? (source as NSString).appendingPathComponent("parley.sqlite") : source
            guard FileManager.default.fileExists(atPath: path) else { throw ValidationError("no SQLite database at \(path)") }
            guard let storage = try await openPostgresIfConfigured(configuration, logger: Logger(label: "parleyd.storage")) else { return }
            do {
                let copied = try await SQLiteImport.copy(fromSQLite: path, to: storage)
                await storage.close()
                for (table, rows) in copied where rows > 0 { print("  \(table): \(rows)") }
                print("copied \(path) into \(storageLocation(configuration))")
            } catch {
                await storage.close()
                throw ValidationError("copy failed, nothing was copied: \(error)")
            }
        }
    }
}
