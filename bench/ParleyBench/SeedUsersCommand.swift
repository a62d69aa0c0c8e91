import Foundation
import NIOConcurrencyHelpers
import ParleyCore
import ParleyServer
import ParleyStorage

/// `ParleyBench seed-users`: creates `user1` … `userN` with one password, for the login
/// benchmark, in parleyd's SQLite file and/or in a Prosody `internal_hashed` data directory.
///
/// `parleyd adduser` and `prosodyctl register` run PBKDF2 for every account (and prosodyctl
/// starts a Lua VM each time), which for 10,000 accounts takes minutes. Here the keys are
/// derived once and every account shares them (same salt, same keys): fine for a benchmark,
/// never for real accounts.
enum SeedUsersCommand: Benchmark {
    static var name: String { "seed-users" }
    static var summary: String {
        "create user1…userN for the login benchmark: --users N [--password P] [--iterations I] [--sqlite FILE] [--prosody-data DIR --prosody-host localhost]"
    }

    static func run(arguments: [String]) throws {
        let options = try BenchOptions(
            arguments,
            valueOptions: ["--users", "--password", "--iterations", "--sqlite", "--prosody-data", "--prosody-host", "--prefix"])
        let count = try options.int("--users")
        let password = try options.string("--password", default: "benchpass")
        let iterations = try options.int("--iterations", default: 4096)
        let prefix = try options.string("--prefix", default: "user")
        let usernames = (1...max(count, 1)).prefix(count).map { "\(prefix)\($0)" }
        guard options.optionalString("--sqlite") != nil || options.optionalString("--prosody-data") != nil else {
            throw UsageError(description: "give --sqlite FILE and/or --prosody-data DIR")
        }

        if let path = options.optionalString("--sqlite") {
            let start = Date()
            let keys = try AccountKeys.derive(password: password, iterations: iterations)
            let storage = try SQLiteStorage(path: path)
            try blocking {
                // A handful of writes in flight keeps GRDB's writer queue busy without
                // queueing 10,000 tasks at once.
                try await withThrowingTaskGroup(of: Void.self) { group in
                    var next = usernames.makeIterator()
                    for _ in 0..<8 {
                        guard let username = next.next() else { break }
                        group.addTask { try await createIfMissing(storage, username, keys) }
                    }
                    while try await group.next() != nil {
                        guard let username = next.next() else { continue }
                        group.addTask { try await createIfMissing(storage, username, keys) }
                    }
                }
            }
            print("seeded \(count) parleyd accounts in \(path) (\(String(format: "%.1f", -start.timeIntervalSinceNow)) s)")
        }

        if let directory = options.optionalString("--prosody-data") {
            let start = Date()
            let host = try options.string("--prosody-host", default: "localhost")
            // Prosody keeps the salt as a string (a UUID when it makes one) and sends its bytes.
            let salt = "parley-bench-" + (try SecureRandom.bytes(8)).map { String(format: "%02x", $0) }.joined()
            let credentials = try SCRAMCredentials.derive(
                password: password, salt: Array(salt.utf8), iterations: iterations, hash: .sha256)
            let hex: ([UInt8]) -> String = { $0.map { String(format: "%02x", $0) }.joined() }
            // mod_auth_internal_hashed (0.12) with password_hash = "SHA-256": stored_key and
            // server_key in lower-case hex, salt and iteration_count as given.
            let record = """
                return {
                \t["iteration_count"] = \(iterations);
                \t["salt"] = "\(salt)";
                \t["server_key"] = "\(hex(credentials.serverKey))";
                \t["stored_key"] = "\(hex(credentials.storedKey))";
                };

                """
            let accounts = URL(fileURLWithPath: directory)
                .appendingPathComponent(prosodyPathEncode(host))
                .appendingPathComponent("accounts")
            try FileManager.default.createDirectory(at: accounts, withIntermediateDirectories: true)
            let data = Data(record.utf8)
            for username in usernames {
                try data.write(to: accounts.appendingPathComponent(prosodyPathEncode(username) + ".dat"))
            }
            print("seeded \(count) prosody accounts in \(accounts.path) (\(String(format: "%.1f", -start.timeIntervalSinceNow)) s)")
        }
    }

    private static func createIfMissing(_ storage: SQLiteStorage, _ username: String, _ keys: [StoredSCRAMKeys]) async throws {
        do {
            try await storage.createAccount(username: username, keys: keys)
        } catch StorageError.accountExists {
            try await storage.updateKeys(username: username, keys: keys, origin: .admin)
        }
    }

    /// util.datamanager's encoding of hosts and usernames in file names: every byte that is
    /// not a letter or digit becomes %xx.
    private static func prosodyPathEncode(_ text: String) -> String {
        text.utf8.map { byte -> String in
            let c = Character(Unicode.Scalar(byte))
            return byte < 128 && (c.isLetter || c.isNumber) ? String(c) : String(format: "%%%02x", byte)
        }.joined()
    }
}

/// Runs async work to completion from synchronous code (the benchmarks' entry points are
/// synchronous).
func blocking<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
    let result = NIOLockedValueBox<Result<T, Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        do {
            let value = try await work()
            result.withLockedValue { $0 = .success(value) }
        } catch {
            result.withLockedValue { $0 = .failure(error) }
        }
        done.signal()
    }
    done.wait()
    return try result.withLockedValue { $0! }.get()
}
