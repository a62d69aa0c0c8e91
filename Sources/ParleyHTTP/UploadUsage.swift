import Foundation
import NIOConcurrencyHelpers

/// Each account's upload usage as the quota checks of a slot request need it: bytes uploaded
/// in the last 24 hours, bytes stored, and bytes of slots issued but not used yet.
///
/// A slot writes nothing to the database (its signed URL is self-describing; the PUT records
/// the upload), so slots not used yet exist only here: each one counts until its URL expires or
/// its file is stored, so that asking for many slots at once cannot pass the daily quota. The
/// database sums (a row per upload the account ever made) are read at most once per `lifetime`
/// per account and kept current in between by what this process does; what changes elsewhere
/// (files expired or deleted by the admin command) shows after at most `lifetime`, and until
/// then the usage errs high. The exact check is the PUT's (`UploadMetadataStore.claimUpload`,
/// in one transaction): this one refuses early with the XEP's error, and may let a slot through
/// whose PUT will be refused only when it raced another process's change.
final class UploadUsage: Sendable {
    struct Usage: Sendable {
        var recent: Int64
        var stored: Int64
        var readAt: Date
        /// Unused slots' bytes by the second their URL expires, oldest first (slots of one
        /// lifetime expire in the order they were issued, so this stays sorted by appending).
        var outstanding: [(expires: Int64, bytes: Int64)] = []
        var outstandingBytes: Int64 = 0

        mutating func dropExpired(at now: Date) {
            let second = Int64(now.timeIntervalSince1970)
            let expired = outstanding.prefix { $0.expires < second }
            guard !expired.isEmpty else { return }
            outstandingBytes -= expired.reduce(0) { $0 + $1.bytes }
            outstanding.removeFirst(expired.count)
        }

        mutating func release(_ bytes: Int64, expiring expires: Int64) {
            guard let index = outstanding.lastIndex(where: { $0.expires == expires }) else { return }
            let released = min(bytes, outstanding[index].bytes)
            outstanding[index].bytes -= released
            outstandingBytes -= released
        }
    }

    let lifetime: TimeInterval
    /// Past this many accounts, entries that hold nothing current are dropped.
    private let pruneAbove: Int
    private let accounts = NIOLockedValueBox<[String: Usage]>([:])

    init(lifetime: TimeInterval = 60, pruneAbove: Int = 10_000) {
        self.lifetime = lifetime
        self.pruneAbove = pruneAbove
    }

    enum Reservation: Equatable {
        case reserved
        case overDailyQuota
        case overTotalQuota
    }

    /// When `account`'s usage is cached: counts a slot of `size` bytes expiring at `expires`
    /// (seconds since 1970) if it fits both quotas (0: none). Nil when the usage must be read
    /// first (`usage(of:now:read:)`). Checks and counts under one lock, so that simultaneous
    /// requests cannot all pass with the same remainder.
    func reserve(_ size: Int64, for account: String, expires: Int64, now: Date, dailyQuota: Int64, totalQuota: Int64)
        -> Reservation?
    {
        let lifetime = self.lifetime
        return accounts.withLockedValue { accounts -> Reservation? in
            guard var usage = accounts[account], now.timeIntervalSince(usage.readAt) < lifetime else { return nil }
            usage.dropExpired(at: now)
            if dailyQuota > 0, usage.recent + usage.outstandingBytes + size > dailyQuota { return .overDailyQuota }
            if totalQuota > 0, usage.stored + size > totalQuota { return .overTotalQuota }
            if let last = usage.outstanding.last, last.expires == expires {
                usage.outstanding[usage.outstanding.count - 1].bytes += size
            } else {
                usage.outstanding.append((expires, size))
            }
            usage.outstandingBytes += size
            accounts[account] = usage
            return .reserved
        }
    }

    /// `account`'s usage at `now` (recent bytes including unused slots), read with `read` when
    /// none is cached or it is too old.
    func usage(
        of account: String, now: Date, read: () async throws -> (recent: Int64, stored: Int64)
    ) async throws -> (recent: Int64, stored: Int64) {
        let lifetime = self.lifetime, pruneAbove = self.pruneAbove
        let cached = accounts.withLockedValue { accounts -> (recent: Int64, stored: Int64)? in
            guard var usage = accounts[account], now.timeIntervalSince(usage.readAt) < lifetime else { return nil }
            usage.dropExpired(at: now)
            accounts[account] = usage
            return (usage.recent + usage.outstandingBytes, usage.stored)
        }
        if let cached { return cached }
        let fresh = try await read()
        return accounts.withLockedValue { accounts in
            var usage = accounts[account] ?? Usage(recent: 0, stored: 0, readAt: now)
            usage.recent = fresh.recent
            usage.stored = fresh.stored
            usage.readAt = now
            usage.dropExpired(at: now)
            accounts[account] = usage
            if accounts.count > pruneAbove {
                accounts = accounts.filter { now.timeIntervalSince($0.value.readAt) < lifetime || $0.value.outstandingBytes > 0 }
            }
            return (usage.recent + usage.outstandingBytes, usage.stored)
        }
    }

    /// The file of a slot expiring at `expires` is stored: its bytes are no longer a slot's
    /// but a recent upload's and a stored file's.
    func fileStored(by account: String, size: Int64, slotExpires expires: Int64) {
        accounts.withLockedValue { accounts in
            guard var usage = accounts[account] else { return }
            usage.release(size, expiring: expires)
            usage.recent += size
            usage.stored += size
            accounts[account] = usage
        }
    }
}
