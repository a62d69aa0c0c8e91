import Foundation
import ParleyServer
import Testing

/// The `cluster` section: its defaults, and the mistakes refused at start with the key named.
@Suite struct ClusterConfigurationTests {
    private func load(_ yaml: String) async throws -> ServerConfiguration {
        try await withConfigurationFile(yaml) { path in try await ServerConfiguration.load(file: path, environment: [:]) }
    }

    private func error(_ yaml: String) async throws -> String {
        do {
            _ = try await load(yaml)
            Issue.record("loaded without error")
            return ""
        } catch {
            return String(describing: error)
        }
    }

    private let postgres = "storage:\n  backend: postgresql\n  url: postgres://parley@127.0.0.1/parley\n"

    @Test func offByDefaultAndNamedAfterHostAndPort() async throws {
        let configuration = try await load("c2s:\n  port: 5333\n")
        #expect(configuration.cluster.enabled == false)
        #expect(configuration.clusterNodeID == "\(ProcessInfo.processInfo.hostName):5333")
        #expect(configuration.cluster.heartbeatInterval == .seconds(1))
        #expect(configuration.cluster.leaseTimeout == .seconds(5))
    }

    @Test func readsItsOptions() async throws {
        let configuration = try await load(
            postgres + "cluster:\n  enabled: true\n  node_id: node-a\n  heartbeat_interval: 0.5\n  lease_timeout: 3\n")
        #expect(configuration.cluster.enabled)
        #expect(configuration.clusterNodeID == "node-a")
        #expect(configuration.cluster.heartbeatInterval == .milliseconds(500))
        #expect(configuration.cluster.leaseTimeout == .seconds(3))
    }

    @Test func aClusterNeedsPostgreSQL() async throws {
        #expect(
            try await error("cluster:\n  enabled: true\n")
                == "cluster.enabled: a cluster needs storage.backend postgresql (the nodes meet in its database); this server uses sqlite")
    }

    @Test func refusesALeaseShorterThanTwoBeats() async throws {
        #expect(
            try await error(postgres + "cluster:\n  enabled: true\n  heartbeat_interval: 2\n  lease_timeout: 3\n")
                == "cluster.lease_timeout: must be at least twice cluster.heartbeat_interval, or a node missing one beat is taken for dead")
    }

    @Test func refusesANodeIDWithABar() async throws {
        #expect(
            try await error(postgres + "cluster:\n  enabled: true\n  node_id: a|b\n")
                == "cluster.node_id: expected 1 to 200 characters without '|', got \"a|b\"")
    }
}
