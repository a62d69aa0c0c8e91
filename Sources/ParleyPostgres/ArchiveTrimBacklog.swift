import Foundation

/// The cut of archives back to `max_messages_per_user`, spread over the transactions that
/// follow the one asking for it. `ArchiveWriter` asks for a cut of the accounts a batch
/// touched in one batch out of 32; on PostgreSQL, cutting them all in that batch walked each
/// account's newest entries (through index pages too fresh to be all-visible, so a heap visit
/// per entry): ~2 ms per account, 130-230 ms for the 100 accounts of the message benchmark, in
/// a transaction whose statements otherwise take ~50 ms. Every session waiting for that
/// batch's commit waited for the cut too, and the slowest 1 % of the messages were mostly
/// those (bench/README.md, PostgreSQL: the commit cycle). Here the accounts join a backlog
/// and each transaction cuts a few of them: at least `minimumPerTransaction`, and enough to
/// clear the backlog within `spread` transactions, so an account holds at most about twice
/// the 32 batches' rows over its limit that `ArchiveWriter` allows, and the backlog cannot
/// grow without bound. An account touched again while it waits is cut once.
///
/// Used by one group commit's writer, one transaction at a time; locked all the same.
final class ArchiveTrimBacklog: @unchecked Sendable {
    /// Accounts cut in one transaction, and the limit.
    struct Cut: Sendable {
        var accounts: Set<Int64>
        var keeping: Int
    }

    static let minimumPerTransaction = 4
    static let spread = 32

    private let lock = NSLock()
    /// Guarded by `lock`: waiting accounts, oldest first, and the same as a set.
    private var waiting: [Int64] = []
    private var queued: Set<Int64> = []
    private var keeping = 0

    /// Accounts to cut back to their newest `keeping` entries.
    func add(_ accounts: Set<Int64>, keeping: Int) {
        lock.withLock {
            self.keeping = keeping
            for account in accounts.sorted() where queued.insert(account).inserted {
                waiting.append(account)
            }
        }
    }

    /// The accounts this transaction should cut, nil when none wait. They stay in the backlog
    /// until `done` says their transaction committed.
    func due() -> Cut? {
        lock.withLock {
            guard !waiting.isEmpty else { return nil }
            let count = max(Self.minimumPerTransaction, (waiting.count + Self.spread - 1) / Self.spread)
            return Cut(accounts: Set(waiting.prefix(count)), keeping: keeping)
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
