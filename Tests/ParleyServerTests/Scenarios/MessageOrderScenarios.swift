import NIOPosix
import ParleyCore
import Testing

/// One sender's chat messages reach each recipient in the order sent (RFC 6120 §10.1: the
/// server must deliver a client's stanzas to a recipient in order), with the archive on, as
/// shipped, while another sender on the other event loop writes to the same recipients.
@Suite struct MessageOrderScenarios {
    @Test func twoSendersOnTwoLoopsEachReachBothRecipientsInTheOrderSent() async throws {
        // A group of its own: connections are placed on its two loops in turn, so each
        // sender shares its loop with one recipient and not the other.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        try await TestServer.with(accounts: TestServer.threeAccounts, group: group) { server in
            let alice = try await server.login("alice", resource: "first")
            let bob = try await server.login("bob", resource: "second")
            let third = try await server.login("carol", resource: "third")
            let fourth = try await server.login("carol", resource: "fourth")

            let perRecipient = 200
            async let fromAlice: Void = Self.send(perRecipient, as: "alice", from: alice)
            async let fromBob: Void = Self.send(perRecipient, as: "bob", from: bob)
            _ = try await (fromAlice, fromBob)

            for (recipient, resource) in [(third, "third"), (fourth, "fourth")] {
                var bodies: [String] = []
                while bodies.count < 2 * perRecipient {
                    let message = try await recipient.expectIgnoringAckRequests("message")
                    #expect(message.to == "carol@localhost/\(resource)")
                    if let body = message.firstChild("body")?.text { bodies.append(body) }
                }
                for sender in ["alice", "bob"] {
                    #expect(
                        bodies.filter { $0.hasPrefix(sender) } == (0..<perRecipient).map { "\(sender) \(resource) \($0)" },
                        "\(sender)'s messages to \(resource)")
                }
            }
        }
        try await group.shutdownGracefully()
    }

    /// `count` messages to each of carol's two resources, alternating.
    private static func send(_ count: Int, as name: String, from client: TestClient) async throws {
        for index in 0..<count {
            for resource in ["third", "fourth"] {
                try await client.send("<message to='carol@localhost/\(resource)' type='chat'><body>\(name) \(resource) \(index)</body></message>")
            }
        }
    }
}
