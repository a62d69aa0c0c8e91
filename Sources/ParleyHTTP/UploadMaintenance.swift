import Foundation
import Logging
import ParleyStorage
import ServiceLifecycle

/// Removing uploads: by the admin command, by expiry, and with their account. Rows go first, so
/// that a file whose removal fails is no longer served; the expiry sweep finds leftovers only
/// through rows, so a failed removal is logged.
public struct UploadMaintenance: Sendable {
    let metadata: any UploadMetadataStore
    let store: any UploadStore
    let logger: Logger

    public init(metadata: any UploadMetadataStore, store: any UploadStore, logger: Logger) {
        self.metadata = metadata
        self.store = store
        self.logger = logger
    }

    public func list(owner: String) async throws -> [UploadRecord] {
        try await metadata.uploads(of: owner)
    }

    /// Deletes `owner`'s file `id` (by upload id or file name), or all their files when nil;
    /// returns what was deleted.
    @discardableResult
    public func delete(owner: String, file: String? = nil) async throws -> [UploadRecord] {
        let chosen = try await metadata.uploads(of: owner).filter { file == nil || $0.id == file || $0.filename == file }
        let deleted = try await metadata.deleteUploads(ids: chosen.map(\.id))
        await removeFiles(of: deleted)
        return deleted
    }

    /// Deletes uploads created more than `days` days before `now` (and slots never used
    /// within their lifetime, which are older than a day); returns how many.
    @discardableResult
    public func expire(olderThan days: Int, now: Date = Date()) async throws -> Int {
        var total = 0
        if days > 0 {
            total += try await sweep(before: now.addingTimeInterval(-Double(days) * 86_400)) { _ in true }
        }
        total += try await sweep(before: now.addingTimeInterval(-86_400)) { $0.state != .stored }
        return total
    }

    private func sweep(before cutoff: Date, where keep: @Sendable (UploadRecord) -> Bool) async throws -> Int {
        var total = 0
        while true {
            let batch = try await metadata.uploads(createdBefore: cutoff, limit: 500).filter(keep)
            guard !batch.isEmpty else { return total }
            let deleted = try await metadata.deleteUploads(ids: batch.map(\.id))
            await removeFiles(of: deleted)
            total += deleted.count
            if deleted.isEmpty { return total }
        }
    }

    private func removeFiles(of records: [UploadRecord]) async {
        for record in records where record.state != .pending {
            do {
                try await store.remove(accountID: record.accountID, id: record.id)
            } catch {
                logger.warning("cannot remove an uploaded file", metadata: ["id": "\(record.id)", "error": "\(error)"])
            }
        }
    }

    /// Runs until cancelled: expires files every `interval`, and removes the files of every
    /// account deleted (by `parleyd deluser` in another process too: the change feed is shared
    /// through the database) — their rows went with the account already.
    public func run(feed: any AccountChangeFeed, expiryDays: Int, interval: Duration) async {
        var cursor = (try? await feed.latestChangeID()) ?? 0
        var sinceExpiry = Duration.zero
        while !Task.isCancelled {
            if sinceExpiry == .zero {
                do { try await expire(olderThan: expiryDays) } catch { logger.warning("upload expiry failed", metadata: ["error": "\(error)"]) }
            }
            do {
                for change in try await feed.changes(after: cursor) {
                    cursor = max(cursor, change.id)
                    guard change.kind == .deleted, let accountID = change.accountID else { continue }
                    try? await store.removeAll(accountID: accountID)
                }
            } catch {
                logger.warning("cannot read the account change feed", metadata: ["error": "\(error)"])
            }
            do { try await Task.sleep(for: interval) } catch { return }
            sinceExpiry += interval
            if sinceExpiry >= .seconds(3600) { sinceExpiry = .zero }
        }
    }
}
