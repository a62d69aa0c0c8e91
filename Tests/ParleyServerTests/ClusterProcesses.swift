import Foundation
import Logging
import ParleyCore
import ParleyPostgres
@testable import ParleyServer
import ParleyTLS
import ParleyTestSupport
import PostgresNIO

/// Three real `parleyd` processes forming a cluster on one fresh PostgreSQL database, behind
/// a real HAProxy (TCP mode, health checks) on loopback: what `ClusterKillTests` drives and
/// SIGKILLs. Each node has its own port and data directory and presents the same certificate
/// (the first node's), as nodes behind one load balancer must.
final class ClusterProcesses: @unchecked Sendable {
    let directory: String
    let url: String
    let ports: [Int]
    let proxyPort: Int
    let storage: PostgresStorage
    private(set) var nodes: [ChildProcess?]
    private var proxy: ChildProcess?
    private(set) var fingerprint = ""

    static let quiet = Logger(label: "parley.cluster-test", factory: { _ in SwiftLogNoOpLogHandler() })

    init(nodes count: Int) async throws {
        directory = NSTemporaryDirectory() + "parley-cluster-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        url = try await PostgresCluster.shared().createDatabase()
        storage = try await PostgresStorage.open(url: url, logger: Self.quiet)
        ports = try (0..<count).map { _ in try LoopbackPort.unusedBelowEphemeralRange() }
        proxyPort = try LoopbackPort.unusedBelowEphemeralRange()
        nodes = Array(repeating: nil, count: count)
    }

    deinit {
        for node in nodes { node?.kill() }
        proxy?.kill()
        try? FileManager.default.removeItem(atPath: directory)
    }

    var certificate: String { directory + "/node-0/data/tls/localhost.crt" }

    private func config(_ index: Int) -> String {
        // The first node makes the certificate; the others present the same one.
        let tls = index == 0 ? "" : "tls:\n  certificate: \(certificate)\n  key: \(directory)/node-0/data/tls/localhost.key\n"
        return """
            domain: localhost
            data_dir: \(directory)/node-\(index)/data
            log_level: warning
            c2s:
              interfaces: [127.0.0.1]
              port: \(ports[index])
              direct_tls_port: 0
            \(tls)storage:
              backend: postgresql
              url: \(url)
            cluster:
              enabled: true
              node_id: node-\(index)
              heartbeat_interval: 0.5
              lease_timeout: 2
            limits:
              stanzas_per_second: 10000
              stanza_burst: 10000
            shutdown:
              grace_period: 1
            """
    }

    func startNode(_ index: Int) async throws {
        guard let executable = ParleydKillable.executable else { throw ScenarioFailure("parleyd is not built next to the tests") }
        let nodeDirectory = directory + "/node-\(index)"
        try FileManager.default.createDirectory(atPath: nodeDirectory, withIntermediateDirectories: true)
        try config(index).write(toFile: nodeDirectory + "/parleyd.yaml", atomically: true, encoding: .utf8)
        let process = try ChildProcess(
            executable.path, ["run", "--config", nodeDirectory + "/parleyd.yaml"], environment: ProcessInfo.processInfo.environment,
            output: nodeDirectory + "/parleyd.log")
        nodes[index] = process
        let deadline = ContinuousClock.now + .seconds(60)
        while !LoopbackPort.accepts(ports[index]) {
            if let status = process.status { throw ScenarioFailure("node \(index) exited with wait status \(status): \(log(index))") }
            guard ContinuousClock.now < deadline else { throw ScenarioFailure("node \(index) did not listen within 60 s") }
            try await Task.sleep(for: .milliseconds(50))
        }
        if index == 0 { fingerprint = try CertificateFingerprint.sha256(pemFile: certificate) }
    }

    func startProxy() async throws {
        let servers = ports.enumerated().map { index, port in
            "    server node-\(index) 127.0.0.1:\(port) check inter 200ms fall 1 rise 2"
        }.joined(separator: "\n")
        let config = """
            defaults
                mode tcp
                timeout connect 1s
                timeout client 5m
                timeout server 5m
                retries 3
                option redispatch
            frontend xmpp
                bind 127.0.0.1:\(proxyPort)
                default_backend parleyd
            backend parleyd
                balance roundrobin
            \(servers)

            """
        try config.write(toFile: directory + "/haproxy.cfg", atomically: true, encoding: .utf8)
        proxy = try ChildProcess("/usr/sbin/haproxy", ["-f", directory + "/haproxy.cfg", "-db"], output: directory + "/haproxy.log")
        let deadline = ContinuousClock.now + .seconds(10)
        while !LoopbackPort.accepts(proxyPort) {
            if let status = proxy?.status { throw ScenarioFailure("haproxy exited with wait status \(status)") }
            guard ContinuousClock.now < deadline else { throw ScenarioFailure("haproxy did not listen within 10 s") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// SIGKILL: the node commits, flushes and tells nothing more.
    func kill(_ index: Int) {
        nodes[index]?.kill()
    }

    func stopAll() async {
        for node in nodes { _ = node?.stop(grace: .seconds(3)) }
        proxy?.kill()
        await storage.close()
    }

    func log(_ index: Int) -> String {
        (try? String(contentsOfFile: directory + "/node-\(index)/parleyd.log", encoding: .utf8)) ?? ""
    }

    /// Accounts `u00`… with passwords `pw-u00`…, every pair subscribed both ways except
    /// `except`, straight in the database (the test's setup, not what it tests).
    func createAccounts(_ count: Int, except: (String, String)) async throws -> [String] {
        let names = (0..<count).map { String(format: "u%02d", $0) }
        for name in names {
            try await storage.createAccount(username: name, keys: try AccountKeys.derive(password: "pw-" + name, iterations: 4096))
        }
        let (x, y) = except
        _ = try await storage.postgresClient.withConnection { connection in
            try await connection.query(
                """
                INSERT INTO roster_items (account_id, contact, name, groups, subscription, ask_subscribe, approved, version)
                SELECT a.id, b.username || '@localhost', NULL, '[]', 'both', false, false, 1 FROM accounts a, accounts b
                WHERE a.id <> b.id AND NOT (a.username IN (\(x), \(y)) AND b.username IN (\(x), \(y)))
                """, logger: Self.quiet
            ).collect()
            try await connection.query(
                "INSERT INTO roster_versions (account_id, version) SELECT id, 1 FROM accounts ON CONFLICT DO NOTHING", logger: Self.quiet
            ).collect()
        }
        return names
    }

    /// The node a full JID is bound on, as the directory says.
    func node(of jid: String) async throws -> String? {
        try await storage.postgresClient.withConnection { connection in
            try await connection.query("SELECT node_id FROM cluster_sessions WHERE jid = \(jid)", logger: Self.quiet).collect()
        }.first?.decode(String.self)
    }
}
