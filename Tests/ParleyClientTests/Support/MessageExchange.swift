import Foundation
import ParleyClient
import ParleyCore
import Testing

/// Alice and Bob exchanging numbered messages ("a0", "b0", …), then checking that both
/// caches hold every one exactly once, each sender's in order, both in the same order.
struct MessageExchange {
    var perSide: Int
    let aliceJID = try! JID("alice@localhost")
    let bobJID = try! JID("bob@localhost")

    /// A client of `configuration`'s account that connects through `proxy` and comes back
    /// quickly after each cut, with its own cache and a recorder of its events.
    static func client(_ configuration: ClientConfiguration, through proxy: FaultInjectingProxy, cacheDirectory: String) throws -> (ChatClient, EventRecorder) {
        var configuration = configuration
        configuration.port = proxy.port
        configuration.reconnect.initialDelay = .milliseconds(50)
        configuration.reconnect.maximumDelay = .milliseconds(300)
        // A server that stops answering (a resumed session that handles nothing) is found
        // by the heartbeat: soon enough to leave time for the catch-up.
        configuration.heartbeatInterval = .seconds(5)
        configuration.heartbeatTimeout = .seconds(5)
        let name = configuration.jid.localpart ?? "client"
        let client = try ChatClient(configuration: configuration, cachePath: cacheDirectory + "/\(name).sqlite", logger: quietLogger("client.\(name)"))
        return (client, EventRecorder(client.events))
    }

    /// Connects, retrying while the cutter cuts the first attempts short.
    func connectThroughCuts(_ client: ChatClient) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            do {
                return try await client.connect()
            } catch {
                guard ContinuousClock.now < deadline else { throw error }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    /// The whole run through the cutter: both connect, exchange while it cuts, and once it
    /// stops, catch up and are verified. Returns both conversations.
    func throughCuts(_ alice: ChatClient, _ bob: ChatClient, proxy: FaultInjectingProxy) async throws -> ([StoredMessage], [StoredMessage]) {
        try await connectThroughCuts(alice)
        try await connectThroughCuts(bob)
        try await exchange(alice, bob)
        proxy.setCutting(false)
        let (aliceHistory, bobHistory) = try await caughtUp(alice, bob)
        try verify(aliceHistory, bobHistory)
        return (aliceHistory, bobHistory)
    }

    /// How many times a client resumed its session, and how many new sessions it bound.
    static func sessions(_ events: EventRecorder) -> (resumed: Int, new: Int) {
        let all = events.all
        return (all.filter { if case .resumed = $0 { true } else { false } }.count,
                all.filter { if case .connected = $0 { true } else { false } }.count)
    }

    /// Alice and Bob each send `perSide` numbered messages, interleaved, in small bursts.
    func exchange(_ alice: ChatClient, _ bob: ChatClient, pause: Duration = .milliseconds(5), progress: Progress? = nil) async throws {
        for index in 0..<perSide {
            progress?.sent = index
            await alice.sendMessage(to: bobJID, body: "a\(index)")
            await bob.sendMessage(to: aliceJID, body: "b\(index)")
            if index % 10 == 9 { try await Task.sleep(for: pause) }
        }
    }

    /// Waits until both caches hold every message confirmed by the archive, catching up
    /// again while they do not; returns both conversations.
    func caughtUp(_ alice: ChatClient, _ bob: ChatClient) async throws -> ([StoredMessage], [StoredMessage]) {
        let deadline = ContinuousClock.now + .seconds(120)
        while true {
            try? await alice.synchronize()
            try? await bob.synchronize()
            let aliceHistory = try await alice.history(with: bobJID, limit: 100_000)
            let bobHistory = try await bob.history(with: aliceJID, limit: 100_000)
            let complete = { (history: [StoredMessage]) in
                history.count >= 2 * perSide && history.allSatisfy(\.confirmedByArchive)
            }
            if complete(aliceHistory) && complete(bobHistory) { return (aliceHistory, bobHistory) }
            guard ContinuousClock.now < deadline else {
                Issue.record("not caught up in time: alice has \(aliceHistory.count) (\(aliceHistory.filter(\.confirmedByArchive).count) confirmed), bob \(bobHistory.count) (\(bobHistory.filter(\.confirmedByArchive).count) confirmed)")
                return (aliceHistory, bobHistory)
            }
            try await Task.sleep(for: .milliseconds(300))
        }
    }

    /// Every message once, each sender's in the order sent, and both sides in the same order.
    func verify(_ aliceHistory: [StoredMessage], _ bobHistory: [StoredMessage]) throws {
        let expected = Set((0..<perSide).flatMap { ["a\($0)", "b\($0)"] })
        for (name, history, own) in [("alice", aliceHistory, "a"), ("bob", bobHistory, "b")] {
            let bodies = history.map(\.body)
            #expect(bodies.count == 2 * perSide, "\(name)'s cache holds \(bodies.count) messages")
            #expect(Set(bodies) == expected, "\(name)'s cache misses \(expected.subtracting(bodies).sorted().prefix(10))")
            #expect(Set(bodies).count == bodies.count, "\(name)'s cache holds duplicates")
            #expect(history.allSatisfy { $0.direction == ($0.body.hasPrefix(own) ? .outgoing : .incoming) })
            for prefix in ["a", "b"] {
                let numbers = bodies.filter { $0.hasPrefix(prefix) }.compactMap { Int($0.dropFirst()) }
                #expect(numbers == numbers.sorted(), "\(name)'s cache has \(prefix)'s messages out of order")
            }
        }
        #expect(aliceHistory.map(\.body) == bobHistory.map(\.body), "both caches are in the same (the archive's) order")
    }
}
