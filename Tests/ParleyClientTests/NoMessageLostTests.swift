import Foundation
import ParleyClient
import ParleyCore
import ParleyServer
import Synchronization
import Testing

/// Two clients exchange thousands of messages while their connections are cut at random
/// (mid-stanza, between a message and its acknowledgement) or while the server is killed;
/// afterwards each side's cache must hold every message exactly once, in the same order.
@Suite(.serialized) struct NoMessageLostTests {
    static let perSide = 1_000
    let aliceJID = try! JID("alice@localhost")
    let bobJID = try! JID("bob@localhost")

    @Test(arguments: [UInt64(1), 2, 3])
    func twoThousandMessagesThroughAConnectionCutter(seed: UInt64) async throws {
        let server = try await TestServer.start { configuration in
            // Plain TCP, so that the cutter sees where the stanzas are; TLS is not under test.
            configuration.tls.required = false
            configuration.limits.stanzasPerSecond = 10_000
            configuration.limits.stanzaBurst = 10_000
        }
        defer { Task { await server.stop() } }
        try await server.createAccount("alice")
        try await server.createAccount("bob")
        let proxy = try await FaultInjectingProxy.start(upstreamPort: server.running.c2sPort, seed: seed)
        defer { Task { await proxy.stop() } }

        func client(_ name: String) throws -> (ChatClient, EventRecorder) {
            var configuration = try server.configuration(for: name)
            configuration.port = proxy.port
            configuration.security = .none
            configuration.reconnect.initialDelay = .milliseconds(50)
            configuration.reconnect.maximumDelay = .milliseconds(300)
            let client = try ChatClient(
                configuration: configuration, cachePath: server.directory + "/clients/\(name).sqlite", logger: quietLogger("client.\(name)"))
            return (client, EventRecorder(client.events))
        }
        let (alice, aliceEvents) = try client("alice")
        let (bob, bobEvents) = try client("bob")
        try await connectThroughCuts(alice)
        try await connectThroughCuts(bob)

        try await exchange(alice, bob)
        proxy.setCutting(false)
        let (aliceHistory, bobHistory) = try await caughtUp(alice, bob)
        try verify(aliceHistory, bobHistory)

        let counts = proxy.counts
        let sessions = { (events: EventRecorder) in
            let all = events.all
            return (all.filter { if case .resumed = $0 { true } else { false } }.count,
                    all.filter { if case .connected = $0 { true } else { false } }.count)
        }
        let (aliceResumed, aliceNew) = sessions(aliceEvents)
        let (bobResumed, bobNew) = sessions(bobEvents)
        print(
            "seed \(seed): \(counts); alice resumed \(aliceResumed)×, new sessions \(aliceNew); bob resumed \(bobResumed)×,"
                + " new sessions \(bobNew); alice's cache \(aliceHistory.count) messages, bob's \(bobHistory.count),"
                + " each exactly once, same order")
        #expect(counts.cuts >= 5, "the cutter must actually cut")
        #expect(aliceResumed + bobResumed > 0, "sessions were resumed")
        await alice.disconnect()
        await bob.disconnect()
    }

    @Test(.enabled(if: ParleydProcess.executable != nil, "parleyd is built next to the tests"))
    func aServerKilledMidExchangeLosesNothingItAcknowledged() async throws {
        let parleyd = try ParleydProcess()
        try parleyd.addUser("alice", password: TestServer.password)
        try parleyd.addUser("bob", password: TestServer.password)
        try await parleyd.start()
        defer { parleyd.stop() }
        let alice = try ChatClient(
            configuration: parleyd.clientConfiguration(for: "alice", password: TestServer.password),
            cachePath: parleyd.directory + "/clients/alice.sqlite", logger: quietLogger("client.alice"))
        let bob = try ChatClient(
            configuration: parleyd.clientConfiguration(for: "bob", password: TestServer.password),
            cachePath: parleyd.directory + "/clients/bob.sqlite", logger: quietLogger("client.bob"))
        let aliceEvents = EventRecorder(alice.events)
        try await alice.connect()
        try await bob.connect()

        // Kill the server twice in the middle of the exchange, restarting it each time.
        let progress = Progress()
        let killer = Task {
            var killedAt: [Int] = []
            for _ in 0..<2 {
                try await Task.sleep(for: .milliseconds(700))
                parleyd.kill()
                killedAt.append(progress.sent)
                try await Task.sleep(for: .milliseconds(200))
                try await parleyd.start()
            }
            return killedAt
        }
        try await exchange(alice, bob, pause: .milliseconds(15), progress: progress)
        let killedAt = try await killer.value
        let (aliceHistory, bobHistory) = try await caughtUp(alice, bob)
        try verify(aliceHistory, bobHistory)
        let all = aliceEvents.all
        let acknowledged = Set(all.compactMap { if case .sent(let id) = $0 { id } else { nil } })
        let sessions = all.filter { if case .connected = $0 { true } else { false } }.count
        // What the server acknowledged before dying is in Bob's cache (and so is the rest).
        let aliceSent = aliceHistory.filter { $0.direction == .outgoing }.compactMap(\.id)
        #expect(acknowledged.isSubset(of: Set(aliceSent)))
        #expect(killedAt.allSatisfy { $0 > 0 && $0 < Self.perSide }, "the server died mid-exchange (after \(killedAt) of \(Self.perSide) rounds)")
        #expect(sessions >= 3, "alice needed a new session after each kill")
        print(
            "server SIGKILLed after rounds \(killedAt) of \(Self.perSide) and restarted: alice had \(sessions) sessions;"
                + " \(acknowledged.count) of her messages acknowledged by the server; each cache holds \(aliceHistory.count)"
                + " messages, each exactly once, same order")
        await alice.disconnect()
        await bob.disconnect()
    }

    // MARK: The exchange

    /// Connects, retrying while the cutter cuts the first attempts short.
    private func connectThroughCuts(_ client: ChatClient) async throws {
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

    /// Alice and Bob each send `perSide` numbered messages, interleaved, in small bursts.
    private func exchange(_ alice: ChatClient, _ bob: ChatClient, pause: Duration = .milliseconds(5), progress: Progress? = nil) async throws {
        for index in 0..<Self.perSide {
            progress?.sent = index
            await alice.sendMessage(to: bobJID, body: "a\(index)")
            await bob.sendMessage(to: aliceJID, body: "b\(index)")
            if index % 10 == 9 { try await Task.sleep(for: pause) }
        }
    }

    /// Waits until both caches hold every message confirmed by the archive, catching up
    /// again while they do not; returns both conversations.
    private func caughtUp(_ alice: ChatClient, _ bob: ChatClient) async throws -> ([StoredMessage], [StoredMessage]) {
        let deadline = ContinuousClock.now + .seconds(120)
        while true {
            try? await alice.synchronize()
            try? await bob.synchronize()
            let aliceHistory = try await alice.history(with: bobJID, limit: 100_000)
            let bobHistory = try await bob.history(with: aliceJID, limit: 100_000)
            let complete = { (history: [StoredMessage]) in
                history.count >= 2 * Self.perSide && history.allSatisfy(\.confirmedByArchive)
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
    private func verify(_ aliceHistory: [StoredMessage], _ bobHistory: [StoredMessage]) throws {
        let expected = Set((0..<Self.perSide).flatMap { ["a\($0)", "b\($0)"] })
        for (name, history, own) in [("alice", aliceHistory, "a"), ("bob", bobHistory, "b")] {
            let bodies = history.map(\.body)
            #expect(bodies.count == 2 * Self.perSide, "\(name)'s cache holds \(bodies.count) messages")
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

/// How far the exchange got, for the task that kills the server.
final class Progress: Sendable {
    private let value = Mutex(0)
    var sent: Int {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}
