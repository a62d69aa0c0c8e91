import Foundation
import Logging
@testable import ParleyServer
import ParleyStorage
import Synchronization
import Testing

/// Offline delivery reads the store only after the messages accepted before are written: a
/// message routed offline just before its recipient came online is delivered in that session,
/// not at the next login.
@Suite struct OfflineWriterTests {
    /// A store whose writes take a while, as a synced commit on a busy disk does.
    final class SlowStore: OfflineStore {
        let stored = Mutex<[OfflineStoreRequest]>([])

        func storeOffline(user: String, stanza: String, quota: Int) async throws -> Int64 {
            try await storeOffline([OfflineStoreRequest(user: user, stanza: stanza, quota: quota)]).first!.get()
        }

        func storeOffline(_ requests: [OfflineStoreRequest]) async -> [Result<Int64, any Error>] {
            try? await Task.sleep(for: .milliseconds(300))
            return stored.withLock { stored in
                stored.append(contentsOf: requests)
                return requests.indices.map { .success(Int64(stored.count - requests.count + $0 + 1)) }
            }
        }

        func offlineMessages(for user: String, limit: Int) async throws -> [OfflineMessage] { [] }
        func deleteOffline(user: String, ids: [Int64]) async throws {}
        func offlineCount(for user: String) async throws -> Int { stored.withLock { $0.count } }
    }

    @Test func waitingForAcceptedWritesReturnsOnlyOnceTheyAreStored() async throws {
        let store = SlowStore()
        let writer = OfflineWriter(store: store, quota: 100, logger: Logger(label: "test"))
        // Nothing pending: no wait.
        await writer.waitForAccepted()
        writer.enqueue(user: "bob", stanza: "<message/>") { _ in }
        writer.enqueue(user: "bob", stanza: "<message id='2'/>") { _ in }
        await writer.waitForAccepted()
        #expect(store.stored.withLock { $0.count } == 2)
    }
}
