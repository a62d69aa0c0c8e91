import Foundation
import NIOConcurrencyHelpers
import ParleyStorage

#if canImport(Glibc)
import Glibc
#endif

/// Faults a test can ask a real `parleyd` process for through its environment, to check what
/// survives a crash at the worst moment. Nothing here runs unless the variable is set.
///
/// `PARLEY_FAULT_STALL_ARCHIVE_COMMIT=<n>:<path>`: the n-th archive transaction (counting
/// from 1) stops after writing its rows, before its commit: it creates the file at `path`
/// and blocks the storage writer for good, so the test can SIGKILL the server exactly
/// between a batch's write and its commit. (Not `PARLEYD_`: that prefix is configuration.)
enum FaultInjection {
    static let stallArchiveCommitVariable = "PARLEY_FAULT_STALL_ARCHIVE_COMMIT"

    static func storageOptions(environment: [String: String] = ProcessInfo.processInfo.environment) -> SQLiteStorage.Options {
        var options = SQLiteStorage.Options()
        guard let value = environment[stallArchiveCommitVariable], let colon = value.firstIndex(of: ":"),
            let stallAt = Int(value[..<colon]), stallAt > 0
        else { return options }
        let marker = String(value[value.index(after: colon)...])
        let transactions = TransactionCounter()
        options.beforeArchiveCommit = {
            guard transactions.next() == stallAt else { return }
            FileManager.default.createFile(atPath: marker, contents: Data())
            // The storage writer's own thread, never an event loop: it blocks until the kill.
            while true { sleep(60) }
        }
        return options
    }

    private final class TransactionCounter: Sendable {
        private let count = NIOLockedValueBox(0)
        func next() -> Int {
            count.withLockedValue {
                $0 += 1
                return $0
            }
        }
    }
}
