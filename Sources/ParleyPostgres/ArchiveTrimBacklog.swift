import Foundation

/// The cut of archives back to `max_messages_per_user`, spread over the large transactions
/// that follow the one asking for it. `ArchiveWriter` asks for a cut of the accounts a batch
/// touched in one batch out of 32; on PostgreSQL, cutting them all in that batch walked each
/// account's newest entries (through index pages too fresh to be all-visible, so a heap visit
/// per entry): ~2 ms per account, 130-230 ms for the 100 accounts of the message benchmark, in
/// a transaction whose statements otherwise take ~50 ms, and every session waiting for that
/// commit waited for the cut too (bench/README.md, PostgreSQL: the commit cycle). Here the
/// accounts join a backlog, and each transaction of at least `largeBatch` archive entries cuts
/// a few of them: at least `minimumPerTransaction`, and enough to clear the backlog within
/// `spread` such transactions, so it cannot grow without bound. A small transaction (little
/// load: its own cost is ~1 ms) cuts only the accounts it asked for itself, as before, so
/// that a backlog left by a busy moment does not lengthen many small commits; those accounts
/// wait for the next large transaction or their next cut. An account touched again while it
/// waits is cut once.
///
/// Used by one group commit's writer, one transaction at a time; locked all the same.
final class ArchiveTrimBacklog: @unchecked Sendable {
    /// Accounts cut in one transaction, and the limit.
    struct Cut: Sendable, Equatable {
        var accounts: Set<Int64>
        var keeping: Int
    }

    static let minimumPerTransaction = 4
    static let spread = 32
    static let largeBatch = 256

    private let lock = NSLock()
    /// Guarded by `lock`: waiting accounts, oldest first, and the same as a set.
    private var waiting: [Int64] = []
    private var queued: Set<Int64> = []
    private var keeping = 0

    /// What a transaction writing `entries` archive entries should cut, having been asked to
    /// cut `asked` back to `keeping` entries each (none asked: nil). The accounts stay in the
    /// backlog until `done` says their transaction committed.
    func due(entries: Int, asked: Set<Int64>, keeping: Int?) -> Cut? {
        lock.withLock {
            if let keeping {
                self.keeping = keeping
                for account in asked.sorted() where queued.insert(account).inserted { waiting.append(account) }
            }
            if entries >= Self.largeBatch, !waiting.isEmpty {
                let count = max(Self.minimumPerTransaction, (waiting.count + Self.spread - 1) / Self.spread)
                return Cut(accounts: Set(waiting.prefix(count)), keeping: self.keeping)
            }
            if keeping != nil, !asked.isEmpty { return Cut(accounts: asked, keeping: self.keeping) }
            return nil
        }
    }

    /// The transaction that cut them committed.
    func done(_ cut: Cut) {
        lock.withLock {
            waiting.removeAll { cut.accounts.contains($0) }
            queued.subtract(cut.accounts)
        }
    }
}
