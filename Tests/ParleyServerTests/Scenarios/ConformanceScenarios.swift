import ParleyCore
import Testing

/// Wire details where Parley now sends what Prosody sends (clients are tested against it).
/// The subscription order (the `subscribed`/`unsubscribed` before the roster push) is
/// checked by IMSubscriptionScenarios, result sets without `index` by ArchiveExtendedScenarios.
@Suite struct ConformanceScenarios {
    @Test func anOfflineMessagesDelayCarriesNoText() async throws {
        try await TestServer.with { server in
            let bob = try await server.login("bob", resource: "r")
            try await bob.sendMessage(to: "alice@localhost", id: "m1", body: "while you were out")
            try await bob.expectNothingPending()
            let alice = try await server.im("alice")
            let message = try await alice.expectMessage(id: "m1")
            let delay = try #require(message.firstChild("delay", namespace: IM.delay), "\(message.xmlString())")
            #expect(delay.text.isEmpty && delay.elements.isEmpty, "\(delay.xmlString())")
            #expect(delay[attribute: "from"] == "localhost" && delay[attribute: "stamp"] != nil)
        }
    }
}
