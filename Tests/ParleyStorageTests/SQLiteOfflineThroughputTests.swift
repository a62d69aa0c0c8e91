import Foundation
import ParleyStorage
import Testing

/// A measurement, not a test: prints durable stores/s and drained (read + delete) messages/s.
/// Runs only with PARLEY_STORAGE_BENCH=1 (best on a release build:
/// `PARLEY_STORAGE_BENCH=1 swift test -c release --filter SQLiteOfflineThroughputTests`).
@Suite struct SQLiteOfflineThroughputTests {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["PARLEY_STORAGE_BENCH"] == "1"))
    func offlineThroughput() async throws {
        let environment = ProcessInfo.processInfo.environment
        let callers = Int(environment["PARLEY_BENCH_CALLERS"] ?? "") ?? 1000
        let perCaller = Int(environment["PARLEY_BENCH_PER_CALLER"] ?? "") ?? 50
        let users = (0..<100).map { "user\($0)" }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let storage = try await SQLiteStorage.withAccounts(users, in: directory)
        let stanza = "<message from='romeo@example.net/orchard' to='juliet@example.com' type='chat' id='"
            + UUID().uuidString + "'><body>" + String(repeating: "x", count: 200) + "</body></message>"

        // One caller at a time: one commit, and one fsync, per message.
        var start = ContinuousClock.now
        for _ in 0..<200 {
            _ = try await storage.storeOffline(user: users[0], stanza: stanza, quota: .max)
        }
        let sequential = 200 / (ContinuousClock.now - start).seconds

        start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for caller in 0..<callers {
                group.addTask {
                    for _ in 0..<perCaller {
                        _ = try await storage.storeOffline(user: users[caller % users.count], stanza: stanza, quota: .max)
                    }
                }
            }
            try await group.waitForAll()
        }
        let stores = callers * perCaller
        let storeRate = Double(stores) / (ContinuousClock.now - start).seconds

        // Every user drains at once, 100 messages a round: read, then acknowledge (delete).
        start = ContinuousClock.now
        let drained = try await withThrowingTaskGroup(of: Int.self) { group in
            for user in users {
                group.addTask {
                    var count = 0
                    while true {
                        let messages = try await storage.offlineMessages(for: user, limit: 100)
                        if messages.isEmpty { return count }
                        try await storage.deleteOffline(user: user, ids: messages.map(\.id))
                        count += messages.count
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        let drainRate = Double(drained) / (ContinuousClock.now - start).seconds
        #expect(drained == stores + 200)

        print(
            """
            offline throughput: sequential \(Int(sequential)) stores/s; \
            \(callers) concurrent callers × \(perCaller): \(Int(storeRate)) stores/s; \
            drain by \(users.count) concurrent users: \(Int(drainRate)) msgs/s
            """)
    }
}
