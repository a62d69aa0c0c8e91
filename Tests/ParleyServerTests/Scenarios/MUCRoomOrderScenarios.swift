import Logging
import NIOPosix
import ParleyCore
import ParleyMUC
import Testing

/// A room has one order of events, and every occupant sees it, whichever event loop carries
/// the sender's connection and its own. A room's message is written at once to the
/// occupants on the loop that sent it and handed to the other loop as a task; the next
/// message, sent from that other loop, must not be written to its occupants before the task
/// that carries the one before it.
@Suite struct MUCRoomOrderScenarios {
    private static let room = "order@\(MUC.service)"

    @Test func twoSendersOnTwoLoopsReachEveryOccupantInOneOrder() async throws {
        // A group of its own: connections are placed on its two loops in turn, so the two
        // senders and the two listeners are on different loops, one of each per loop.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        var settings = MUCService.Settings(domain: MUC.service, serverDomain: TestServer.domain)
        settings.archiveByDefault = false
        settings.rateLimit = MUCRateLimit(messagesPerSecond: 1_000_000, burst: 1_000_000)
        let muc = MUCService(settings: settings, logger: Logger(label: "parley.scenario.muc"))
        try await TestServer.with(accounts: TestServer.threeAccounts, hostedServices: [muc], group: group) { server in
            let first = try await server.login("alice", resource: "first")
            let second = try await server.login("bob", resource: "second")
            let third = try await server.login("carol", resource: "third")
            let fourth = try await server.login("alice", resource: "fourth")
            try await MUC.createInstantRoom(first, "order", nick: "First")
            var present = ["First"]
            for (client, nick) in [(second, "Second"), (third, "Third"), (fourth, "Fourth")] {
                _ = try await client.enter("order", nick: nick)
                for (earlier, earlierNick) in [(first, "First"), (second, "Second"), (third, "Third")] where present.contains(earlierNick) {
                    try await earlier.expectRoomPresence("order", nick)
                }
                present.append(nick)
            }

            // Both send as fast as they can, neither reading until all are sent.
            let perSender = 300
            async let fromFirst: Void = Self.send(perSender, as: "first", from: first)
            async let fromSecond: Void = Self.send(perSender, as: "second", from: second)
            _ = try await (fromFirst, fromSecond)

            var orders: [[String]] = []
            for client in [first, second, third, fourth] {
                var bodies: [String] = []
                while bodies.count < 2 * perSender {
                    let message = try await client.expectIgnoringAckRequests("message")
                    if let body = message.firstChild("body")?.text { bodies.append(body) }
                }
                orders.append(bodies)
            }
            // Each sender's own messages in the order sent, and the room's order the same for all.
            for sender in ["first", "second"] {
                #expect(orders[0].filter { $0.hasPrefix(sender) } == (0..<perSender).map { "\(sender) \($0)" })
            }
            for index in 1..<orders.count {
                let differ = orders[0].indices.first { orders[0][$0] != orders[index][$0] }
                #expect(orders[index] == orders[0], "occupant \(index + 1) differs from the first at \(differ.map(String.init) ?? "the end")")
            }
        }
        try await group.shutdownGracefully()
    }

    private static func send(_ count: Int, as name: String, from client: TestClient) async throws {
        for index in 0..<count {
            try await client.send("<message to='\(room)' type='groupchat'><body>\(name) \(index)</body></message>")
        }
    }
}
