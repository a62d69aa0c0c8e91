#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A throwaway PostgreSQL cluster for the tests of one process: started once, on first use
/// (initdb + pg_ctl, about two seconds), on a free port of 127.0.0.1 with its socket under
/// /tmp, and stopped when the process exits. Each test gets a database of its own.
///
/// PostgreSQL refuses to run as root, so under root (CI, the dev machines) it runs as the
/// `postgres` user the Debian package creates, through `runuser`. When it cannot start, every
/// test that needs it fails with the reason: a backend that is not tested must not pass.
public final class PostgresCluster: Sendable {
    public struct Unavailable: Error, CustomStringConvertible {
        public var description: String
    }

    public let port: Int
    public let directory: String
    /// The superuser initdb created; trust authentication on loopback.
    public let user = "parley"
    private let binaries: String
    private let runAs: String?

    private static let start = Task { () -> Result<PostgresCluster, Unavailable> in
        do {
            return .success(try PostgresCluster())
        } catch let error as Unavailable {
            return .failure(error)
        } catch {
            return .failure(Unavailable(description: "cannot start PostgreSQL: \(error)"))
        }
    }
    nonisolated(unsafe) private static var running: PostgresCluster?

    /// The process's cluster, started on first use.
    public static func shared() async throws -> PostgresCluster {
        try await start.value.get()
    }

    private init() throws {
        guard let binaries = Self.findBinaries() else {
            throw Unavailable(
                description: "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): run scripts/install-deps.sh")
        }
        self.binaries = binaries
        runAs = getuid() == 0 ? "postgres" : nil
        if let runAs, getpwnam(runAs) == nil {
            throw Unavailable(description: "running as root, and there is no '\(runAs)' user to run PostgreSQL as")
        }
        directory = "/tmp/parley-pg-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        if let runAs, let account = getpwnam(runAs) {
            guard chown(directory, account.pointee.pw_uid, account.pointee.pw_gid) == 0 else {
                throw Unavailable(description: "cannot chown \(directory) to \(runAs): \(String(cString: strerror(errno)))")
            }
        }
        port = try LoopbackPort.unusedBelowEphemeralRange()
        try run(
            binaries + "/initdb", ["-D", directory + "/data", "-A", "trust", "-U", user, "-E", "UTF8", "--locale=C", "--no-sync"],
            what: "initdb")
        // fsync off: the cluster is thrown away at exit, and the tests check what a commit
        // makes visible, not the disk. max_connections: each test's pool holds a few.
        let options = "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300"
        try run(
            binaries + "/pg_ctl", ["-D", directory + "/data", "-o", options, "-l", directory + "/log", "-w", "-t", "60", "start"],
            what: "pg_ctl start")
        Self.running = self
        atexit { PostgresCluster.running?.stop() }
    }

    /// A new, empty database; returns its URL for `storage.url`.
    public func createDatabase(named name: String = "test_" + UUID().uuidString.prefix(12).lowercased()) throws -> String {
        try run(binaries + "/createdb", ["-h", "127.0.0.1", "-p", "\(port)", "-U", user, name], what: "createdb", asServer: false)
        return url(database: name)
    }

    public func url(database: String) -> String {
        "postgres://\(user)@127.0.0.1:\(port)/\(database)?sslmode=disable"
    }

    /// Stops the server at once (SIGQUIT, PostgreSQL's immediate shutdown) and removes its
    /// files. A signal, not `pg_ctl stop`: this runs at exit, where launching a process could hang.
    public func stop() {
        let pidFile = (try? String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8)) ?? ""
        if let pid = pidFile.split(separator: "\n").first.flatMap({ pid_t($0) }), pid > 0 {
            kill(pid, SIGQUIT)
            for _ in 0..<100 where kill(pid, 0) == 0 { usleep(20_000) }
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The last lines of the server's log, for a failure message.
    public func logTail(lines: Int = 40) -> String {
        let text = (try? String(contentsOfFile: directory + "/log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }

    /// Runs a command to its end, its output to a file. posix_spawn and waitpid, not
    /// Foundation's Process: the server pg_ctl starts inherits the child's descriptors, and
    /// Process left `runuser` unreaped (waitUntilExit never returned) once it had.
    private func run(_ executable: String, _ arguments: [String], what: String, asServer: Bool = true) throws {
        let argv = (asServer && runAs != nil ? ["/usr/sbin/runuser", "-u", runAs!, "--", executable] : [executable]) + arguments
        let outputPath = directory + "/\(what.replacingOccurrences(of: " ", with: "-")).out"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o666)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var cArguments = argv.map { strdup($0) } + [nil]
        defer { for argument in cArguments { free(argument) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, &cArguments, environ)
        guard spawned == 0 else {
            throw Unavailable(description: "cannot run \(argv[0]) for \(what): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw Unavailable(description: "waiting for \(what): \(String(cString: strerror(errno)))") }
        }
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        // WIFEXITED / WEXITSTATUS, which Swift does not import.
        let exited = status & 0x7f == 0
        let code = (status >> 8) & 0xff
        guard exited, code == 0 else {
            throw Unavailable(
                description: "\(what) failed (\(exited ? "exit \(code)" : "signal \(status & 0x7f)")): \(text)\n--- server log ---\n\(logTail())")
        }
    }

    private static func findBinaries() -> String? {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted(by: >)
        return versions.map { "\(root)/\($0)/bin" }.first { FileManager.default.isExecutableFile(atPath: $0 + "/initdb") }
    }
}
