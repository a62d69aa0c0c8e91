import Foundation
import NIOConcurrencyHelpers

/// Each account's upload usage as the quota checks need it on every slot request: bytes of
/// slots issued in the last 24 hours and bytes stored.
///
/// Summing them in the database costs a row per upload the account ever made (a client that
/// sends many pictures has thousands), on every slot request. So they are read at most once per
/// `lifetime` per account and kept current in between by what this process does: each slot
/// issued adds to the recent bytes, each file stored to the stored bytes. What changes
/// elsewhere (slots leaving the 24-hour window, files expired or deleted by the admin command)
/// shows after at most `lifetime`; until then the usage errs high, so a quota is reached up to
/// `lifetime` early rather than overrun. (Like the database sums before, check and insert are
/// not one step: requests of one account that race each other may pass the quota by a slot.)
final class UploadUsage: Sendable {
    struct Usage: Sendable {
        var recent: Int64
        var stored: Int64
        var readAt: Date
    }

    let lifetime: TimeInterval
    /// Past this many accounts, entries too old to be used are dropped.
    private let pruneAbove: Int
    private let accounts = NIOLockedValueBox<[String: Usage]>([:])

    init(lifetime: TimeInterval = 60, pruneAbove: Int = 10_000) {
        self.lifetime = lifetime
        self.pruneAbove = pruneAbove
    }

    /// `account`'s usage at `now`, read with `read` when none is cached or it is too old.
    func usage(
        of account: String, now: Date, read: () async throws -> (recent: Int64, stored: Int64)
    ) async throws -> (recent: Int64, stored: Int64) {
        if let cached = accounts.withLockedValue({ $0[account] }), now.timeIntervalSince(cached.readAt) < lifetime {
            return (cached.recent, cached.stored)
        }
        let fresh = try await read()
        let lifetime = self.lifetime, pruneAbove = self.pruneAbove
        accounts.withLockedValue { accounts in
            accounts[account] = Usage(recent: fresh.recent, stored: fresh.stored, readAt: now)
            if accounts.count > pruneAbove {
                accounts = accounts.filter { now.timeIntervalSince($0.value.readAt) < lifetime }
            }
        }
        return fresh
    }

    func slotIssued(to account: String, size: Int64) {
        accounts.withLockedValue { $0[account]?.recent += size }
    }

    func fileStored(by account: String, size: Int64) {
        accounts.withLockedValue { $0[account]?.stored += size }
    }
}
