import Foundation
import Testing

@testable import ParleyStorage

@Suite struct OfflineStoreTests {
    @Test(arguments: Backend.allCases) func storedOldestFirstAcrossReopeningTheFile(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let before = Date()
        var ids: [Int64] = []
        do {
            let storage = fixture.storage
            for n in 1...5 {
                ids.append(try await storage.storeOffline(user: "juliet", stanza: "<message id='\(n)'/>", quota: 100))
            }
            _ = try await storage.storeOffline(user: "romeo", stanza: "<message id='r'/>", quota: 100)
        }
        #expect(ids == ids.sorted() && Set(ids).count == 5)

        let storage = try await fixture.reopen()
        let messages = try await storage.offlineMessages(for: "juliet", limit: 100)
        #expect(messages.map(\.id) == ids)
        #expect(messages.map(\.stanza) == (1...5).map { "<message id='\($0)'/>" })
        #expect(messages.allSatisfy { abs($0.storedAt.timeIntervalSince(before)) < 60 })
        #expect(try await storage.offlineMessages(for: "juliet", limit: 2).map(\.id) == Array(ids.prefix(2)))
        #expect(try await storage.offlineCount(for: "juliet") == 5)
        #expect(try await storage.offlineCount(for: "romeo") == 1)

        // Ids are never reused, not even once every message is gone.
        try await storage.deleteOffline(user: "juliet", ids: ids)
        let next = try await storage.storeOffline(user: "juliet", stanza: "<message id='6'/>", quota: 100)
        #expect(next > ids.last!)
    }

    @Test(arguments: Backend.allCases) func deleteOnlyTouchesTheUsersOwnMessages(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        var ids: [Int64] = []
        for n in 1...4 {
            ids.append(try await storage.storeOffline(user: "juliet", stanza: "<message id='\(n)'/>", quota: 100))
        }
        let romeos = try await storage.storeOffline(user: "romeo", stanza: "<message/>", quota: 100)

        try await storage.deleteOffline(user: "juliet", ids: [ids[0], ids[2], romeos, 999_999])
        #expect(try await storage.offlineMessages(for: "juliet", limit: 10).map(\.id) == [ids[1], ids[3]])
        #expect(try await storage.offlineCount(for: "romeo") == 1)
        try await storage.deleteOffline(user: "juliet", ids: [])
        try await storage.deleteOffline(user: "mercutio", ids: [romeos])
        #expect(try await storage.offlineCount(for: "juliet") == 2)
        #expect(try await storage.offlineCount(for: "romeo") == 1)
    }

    @Test(arguments: Backend.allCases) func quotaAndUnknownUsers(_ backend: Backend) async throws {
        let fixture = try await StorageFixture(backend)
        defer { fixture.remove() }
        let storage = fixture.storage
        for n in 1...3 {
            _ = try await storage.storeOffline(user: "juliet", stanza: "<message id='\(n)'/>", quota: 3)
        }
        await #expect(throws: StorageError.quotaExceeded(limit: 3)) {
            try await storage.storeOffline(user: "juliet", stanza: "<message id='4'/>", quota: 3)
        }
        // The quota is the caller's: a larger one admits more.
        _ = try await storage.storeOffline(user: "juliet", stanza: "<message id='5'/>", quota: 4)
        #expect(try await storage.offlineCount(for: "juliet") == 4)

        await #expect(throws: StorageError.accountNotFound(username: "mercutio")) {
            try await storage.storeOffline(user: "mercutio", stanza: "<message/>", quota: 3)
        }
        #expect(try await storage.offlineMessages(for: "mercutio", limit: 10).isEmpty)
        #expect(try await storage.offlineCount(for: "mercutio") == 0)
    }

    /// Stores from many concurrent tasks: each is stored exactly once, one task's in the order it
    /// stored them; quota failures within one batch count the batch's earlier messages.
    @Test(arguments: Backend.allCases) func concurrentStoresAreGroupCommittedInCallerOrder(_ backend: Backend) async throws {
        let users = (0..<10).map { "user\($0)" }
        let fixture = try await StorageFixture(backend, users: users)
        defer { fixture.remove() }
        let storage = fixture.storage
        let tasks = 200
        let perTask = 20
        let quota = tasks * perTask / users.count  // exactly enough

        let start = ContinuousClock.now
        let stored = try await withThrowingTaskGroup(of: [Int64].self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var ids: [Int64] = []
                    for n in 0..<perTask {
                        ids.append(
                            try await storage.storeOffline(
                                user: users[task % users.count], stanza: "<message t='\(task)' n='\(n)'/>", quota: quota))
                    }
                    return ids
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let elapsed = ContinuousClock.now - start
        let batches = fixture.offlineBatchCount
        print("offline (\(backend)): \(tasks * perTask) stores from \(tasks) tasks in \(elapsed) (\(batches) transactions): "
            + "\(Int(Double(tasks * perTask) / elapsed.seconds)) stores/s")
        // Group commit: transactions are shared (how many depends on scheduling, not asserted closely).
        #expect(batches * 2 <= tasks * perTask)

        #expect(stored.allSatisfy { $0 == $0.sorted() })
        #expect(Set(stored.joined()).count == tasks * perTask)
        for (index, user) in users.enumerated() {
            let messages = try await storage.offlineMessages(for: user, limit: 10_000)
            #expect(messages.count == quota)
            // In id order, each task's messages come in the order it stored them.
            var next: [Int: Int] = [:]
            for message in messages {
                let numbers = message.stanza.split(separator: "'")
                let task = Int(numbers[1])!
                let n = Int(numbers[3])!
                #expect(task % users.count == index)
                #expect(n == next[task, default: 0])
                next[task] = n + 1
            }
        }

        // Full now: a burst of concurrent stores for one user is refused as a whole.
        let refusals = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    do {
                        _ = try await storage.storeOffline(user: "user0", stanza: "<message/>", quota: quota)
                        return false
                    } catch {
                        return error as? StorageError == .quotaExceeded(limit: quota)
                    }
                }
            }
            return await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
        }
        #expect(refusals == 50)

        // A concurrent burst with room for some: exactly that many get in.
        let admitted = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    (try? await storage.storeOffline(user: "user1", stanza: "<message/>", quota: quota + 7)) != nil
                }
            }
            return await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
        }
        #expect(admitted == 7)
        #expect(try await storage.offlineCount(for: "user1") == quota + 7)
    }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
