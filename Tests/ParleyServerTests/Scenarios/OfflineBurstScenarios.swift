import ParleyCore
import Testing

/// A client sending faster than offline storage commits is slowed down, not cut off: its
/// stanzas wait (reading pauses) and every message is kept, in order.
@Suite struct OfflineBurstScenarios {
    @Test func aBurstToAnOfflineContactIsStoredWholeAndInOrder() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice", resource: "burst")
            let count = 300
            var burst = ""
            for index in 1...count {
                burst += "<message to='bob@localhost' type='chat' id='m\(index)'><body>\(index)</body></message>"
            }
            try await alice.send(burst)
            // Answered only after every message before it was stored (and no stream error came):
            // 300 durable commits, which take longer than one stanza's wait on a loaded machine.
            let before = try await alice.sync(timeout: .seconds(60))
            #expect(before.isEmpty)

            let bob = try await server.login("bob", resource: "back")
            try await bob.send("<presence/>")
            var bodies: [String] = []
            while bodies.count < count {
                let element = try await bob.nextElement()
                if element.name == "message" { bodies.append(element.firstChild("body")?.text ?? "") }
            }
            #expect(bodies == (1...count).map(String.init))
        }
    }
}
