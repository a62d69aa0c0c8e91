import Foundation

/// One XEP-0363 upload: a slot handed out, then (after its PUT) a stored file.
public struct UploadRecord: Sendable, Hashable {
    public enum State: String, Sendable, Hashable {
        /// Recorded without a PUT (the state of rows written before slots became self-describing
        /// signed URLs; a PUT now records its upload as `uploading` directly).
        case pending
        /// A PUT holds the slot; a second PUT is refused (slots are single use).
        case uploading
        /// The file is stored and served.
        case stored
    }

    /// Random, unguessable; also the file's name in the store.
    public var id: String
    public var owner: String
    /// Set by the store: the owner's account, which the file's location is keyed by so that a
    /// deleted account's files can go even after its row has.
    public var accountID: Int64
    public var filename: String
    public var size: Int64
    public var contentType: String
    public var createdAt: Date
    public var state: State

    public init(
        id: String, owner: String, accountID: Int64 = 0, filename: String, size: Int64, contentType: String,
        createdAt: Date, state: State = .pending
    ) {
        self.id = id
        self.owner = owner
        self.accountID = accountID
        self.filename = filename
        self.size = size
        self.contentType = contentType
        self.createdAt = createdAt
        self.state = state
    }
}

/// What `claimUpload` decided.
public enum UploadClaim: Sendable, Equatable {
    /// Recorded as `uploading`, with its account id.
    case claimed(UploadRecord)
    /// A row with this id exists: the slot has been used.
    case alreadyUsed
    /// The bytes recorded in the last 24 hours plus this upload's pass the daily quota; `oldest`
    /// is when the oldest of those was recorded (the quota frees up 24 hours after it).
    case overDailyQuota(oldest: Date)
    /// The bytes stored (or being stored) plus this upload's pass the total quota.
    case overTotalQuota
}

/// Metadata of uploaded files (the bytes live in an `UploadStore` of ParleyHTTP). Rows go with
/// their account.
public protocol UploadMetadataStore: Sendable {
    /// Records `record` as `uploading` when its PUT starts, in one transaction with the checks
    /// that make a slot single use (its id is the key) and keep the quotas (0: none) exact even
    /// when uploads of one account race each other: bytes of uploads recorded since
    /// `record.createdAt` minus 24 hours, and bytes stored or uploading. Throws
    /// `StorageError.accountNotFound` for an account that does not exist (any more).
    func claimUpload(_ record: UploadRecord, dailyQuota: Int64, totalQuota: Int64) async throws -> UploadClaim

    /// Records a new slot for `record.owner`, returning it with its account id. Throws
    /// `StorageError.accountNotFound` for an account that does not exist.
    func insertUpload(_ record: UploadRecord) async throws -> UploadRecord

    func upload(id: String) async throws -> UploadRecord?

    /// Bytes of uploads recorded for `owner` since `date`, and bytes stored in all. (Slots
    /// issued but not yet used have no row; the slot service counts those itself.) Throws
    /// `StorageError.accountNotFound` for an account that does not exist.
    func uploadUsage(of owner: String, since date: Date) async throws -> (recent: Int64, stored: Int64)

    /// Moves the upload from `from` to `to` if it is in `from`; false if it was not (a slot
    /// already used, or gone).
    func transitionUpload(id: String, from: UploadRecord.State, to: UploadRecord.State) async throws -> Bool

    /// `owner`'s uploads, oldest first.
    func uploads(of owner: String) async throws -> [UploadRecord]

    /// Deletes the rows and returns what they were, so that the caller removes the files.
    func deleteUploads(ids: [String]) async throws -> [UploadRecord]

    /// Uploads created before `date` (stored files past their expiry, and slots never used).
    func uploads(createdBefore date: Date, limit: Int) async throws -> [UploadRecord]
}
