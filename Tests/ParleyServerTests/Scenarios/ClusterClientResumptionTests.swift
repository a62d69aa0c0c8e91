import Foundation
import NIOConcurrencyHelpers
import ParleyClient
import ParleyCore
@testable import ParleyServer
import Testing

/// The client library behind a load balancer in front of two nodes: its connection drops
/// and its reconnection lands on the other node, where it resumes its session (XEP-0198)
/// instead of starting a new one, and misses nothing.
@Suite struct ClusterClientResumptionTests {
    @Test func theClientResumesItsSessionWhenItLandsOnTheOtherNode() async throws {
        try await TestCluster.with({ $0.tls.required = false }) { cluster in
            let (a, b) = (cluster.nodes[0], cluster.nodes[1])
            let balancer = try await SwitchingProxy.start(upstreamPort: a.running.c2sPort)
            defer { Task { await balancer.stop() } }
            var configuration = ClientConfiguration(jid: try JID("alice@localhost"), password: TestServer.defaultAccounts["alice"]!)
            configuration.host = "127.0.0.1"
            configuration.port = balancer.port
            configuration.security = .none
            configuration.resource = "phone"
            configuration.reconnect.initialDelay = .milliseconds(200)
            configuration.reconnect.maximumDelay = .seconds(1)
            let client = try XMPPClient(configuration: configuration)
            let received = NIOLockedValueBox([String]())
            await client.addStanzaHandler { stanza in
                if stanza.name == "message", let id = stanza.id { received.withLockedValue { $0.append(id) } }
            }
            let events = NIOLockedValueBox([ClientEvent]())
            let stream = client.events
            let recorder = Task { for await event in stream { events.withLockedValue { $0.append(event) } } }
            defer { recorder.cancel() }
            try await client.connect()
            try await b.waitForSession("alice@localhost/phone", available: true)

            let bob = try await b.login("bob", resource: "desk")
            try await bob.send("<message to='alice@localhost/phone' type='chat' id='one'><body>1</body></message>")
            try await until { received.withLockedValue { $0 } == ["one"] }

            // The network goes away; the load balancer sends the reconnection to node 1.
            balancer.point(at: b.running.c2sPort)
            balancer.cut()
            let phone = try JID("alice@localhost/phone")
            try await until { events.withLockedValue { $0.contains(.resumed(jid: phone)) } }
            #expect(events.withLockedValue { $0.filter { if case .connected = $0 { true } else { false } }.count } == 1,
                "resumed, not a new session")
            let session = try #require(b.running.context.sessions.session(phone))
            #expect(!session.isRemote, "the session lives on node 1 now")

            try await bob.send("<message to='alice@localhost/phone' type='chat' id='two'><body>2</body></message>")
            try await until { received.withLockedValue { $0 } == ["one", "two"] }
            await client.disconnect()
        }
    }

    private func until(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(15)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw ScenarioFailure("timed out") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
