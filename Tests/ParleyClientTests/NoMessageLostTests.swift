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
    let messages = MessageExchange(perSide: NoMessageLostTests.perSide)

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
            configuration.security = .none
            return try MessageExchange.client(configuration, through: proxy, cacheDirectory: server.directory + "/clients")
        }
        let (alice, aliceEvents) = try client("alice")
        let (bob, bobEvents) = try client("bob")
        let (aliceHistory, bobHistory) = try await messages.throughCuts(alice, bob, proxy: proxy)

        let counts = proxy.counts
        let (aliceResumed, aliceNew) = MessageExchange.sessions(aliceEvents)
        let (bobResumed, bobNew) = MessageExchange.sessions(bobEvents)
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
        try await messages.exchange(alice, bob, pause: .milliseconds(15), progress: progress)
        let killedAt = try await killer.value
        let (aliceHistory, bobHistory) = try await messages.caughtUp(alice, bob)
        try messages.verify(aliceHistory, bobHistory)
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
}

/// How far the exchange got, for the task that kills the server.
final class Progress: Sendable {
    private let value = Mutex(0)
    var sent: Int {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}
