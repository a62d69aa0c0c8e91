import Foundation
import Logging
import ParleyCore
import ParleyPostgres
import ParleyStorage
import ParleyTestSupport
import Testing

/// The server on the PostgreSQL backend, end to end over real sockets: login, the roster
/// handshake, a message to an offline user delivered at its next login, the archive (MAM),
/// and all of it still there after a restart on the same database.
@Suite struct PostgresBackendScenarios {
    static let mam = "urn:xmpp:mam:2"

    @Test func imOnPostgreSQLSurvivesARestart() async throws {
        let url = try await PostgresCluster.shared().createDatabase()
        let postgres = try await PostgresStorage.open(
            url: url, logger: Logger(label: "parley.scenario.postgres", factory: { _ in SwiftLogNoOpLogHandler() }))
        defer { Task { await postgres.close() } }
        try await TestServer.with(storage: postgres) { server in
            #expect(
                !FileManager.default.fileExists(atPath: server.configuration.sqlitePath),
                "the server opened no SQLite file of its own")
            // The accounts TestServer created are PostgreSQL's.
            #expect(try await postgres.usernames() == ["alice", "bob"])

            // RFC 6121 subscription handshake both ways, over the wire.
            try await Subscribe.establish(server, "alice", to: "bob")
            try await Subscribe.establish(server, "bob", to: "alice")
            let alice = try await server.login("alice", resource: "r")
            let items = try await alice.rosterItems()
            #expect(items["bob@localhost"]?[attribute: "subscription"] == "both")
            try await server.disconnect("alice", alice)
            #expect(try await postgres.roster(of: "alice").items.map(\.subscription) == [.both])

            // Alice is offline: Bob's messages wait in PostgreSQL.
            let bob = try await server.im("bob")
            for index in 1...2 {
                try await bob.sendMessage(to: "alice@localhost", id: "m\(index)", body: "offline \(index)")
            }
            try await eventuallyStored(postgres, count: 2)

            // Delivered at her next available presence, in order, stamped with their delay.
            let back = try await server.im("alice", "back")
            // Bob's presence (probed) and the two messages, in whichever order they come.
            let arrived = try await back.nextElements(3)
            _ = try arrived.one("bob's presence") { $0.name == "presence" && $0.from == "bob@localhost/r" }
            let messages = arrived.filter { $0.name == "message" }
            #expect(messages.map(\.id) == ["m1", "m2"])
            #expect(messages.map { $0.firstChild("body")?.text } == ["offline 1", "offline 2"])
            #expect(messages.allSatisfy { $0.firstChild("delay", namespace: IM.delay)?[attribute: "from"] == "localhost" })
            try await back.expectNothingPending("each message once")
            try await eventuallyStored(postgres, count: 0)

            // Both are in her archive, read back through MAM.
            #expect(try await archivedBodies(back, id: "q1") == ["offline 1", "offline 2"])
            try await server.disconnect("alice", back)
            try await server.disconnect("bob", bob)

            // A new server process on the same database has it all.
            try await server.restart()
            let again = try await server.login("alice", resource: "again")
            #expect(try await again.rosterItems()["bob@localhost"]?[attribute: "subscription"] == "both")
            #expect(try await archivedBodies(again, id: "q2", with: "bob@localhost") == ["offline 1", "offline 2"])
        }
    }

    /// The bodies of the messages a MAM query returns, oldest first.
    private func archivedBodies(_ client: TestClient, id: String, with: String? = nil) async throws -> [String] {
        let form =
            with.map {
                """
                <x xmlns='jabber:x:data' type='submit'><field var='FORM_TYPE' type='hidden'><value>\(Self.mam)</value></field>\
                <field var='with'><value>\($0)</value></field></x>
                """
            } ?? ""
        try await client.send("<iq type='set' id='\(id)'><query xmlns='\(Self.mam)' queryid='\(id)'>\(form)</query></iq>")
        var bodies: [String] = []
        while true {
            let element = try await client.nextElement()
            if element.name == "iq" {
                guard element.type == "result", element.id == id else { throw ScenarioFailure("query failed: \(element.xmlString())") }
                #expect(element.firstChild("fin", namespace: Self.mam)?[attribute: "complete"] == "true")
                return bodies
            }
            let result = try #require(element.firstChild("result", namespace: Self.mam), "\(element.xmlString())")
            #expect(result[attribute: "queryid"] == id)
            if let body = result.firstChild("forwarded", namespace: "urn:xmpp:forward:0")?.firstChild("message")?.firstChild("body")?.text {
                bodies.append(body)
            }
        }
    }

    /// Offline messages are written (and deleted once acknowledged) in the background.
    private func eventuallyStored(_ postgres: PostgresStorage, count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while try await postgres.offlineCount(for: "alice") != count {
            guard ContinuousClock.now < deadline else {
                throw ScenarioFailure("alice has \(try await postgres.offlineCount(for: "alice")) offline messages, not \(count)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
