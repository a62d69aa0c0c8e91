import Foundation
import NIOConcurrencyHelpers
import ParleyCore
import ParleyServer
import ParleyStorage

/// What a client is given for one XEP-0363 slot (§4): where to PUT, the headers to send with it,
/// and where the file will be served.
public struct UploadSlot: Sendable, Hashable {
    public var putURL: String
    public var headers: [(name: String, value: String)] { [] }
    public var getURL: String
    public var id: String

    public static func == (a: Self, b: Self) -> Bool { a.putURL == b.putURL && a.getURL == b.getURL }
    public func hash(into hasher: inout Hasher) { hasher.combine(putURL) }
}

/// Why a slot was refused, mapped by the hosted service onto XEP-0363 §4.1 errors.
public enum UploadSlotError: Error, Sendable, Equatable {
    /// `<file-too-large><max-file-size>…` with the maximum.
    case fileTooLarge(maxFileSize: Int)
    /// `resource-constraint` with `<retry stamp=…>` when waiting helps (the daily quota), nil when
    /// only deleting files does (the total quota).
    case quotaExceeded(reason: String, retryAfter: Date?)
    case notAllowed(String)
    case badRequest(String)
}

/// Hands out signed, single-use, short-lived upload slots and enforces the quotas. The
/// `urn:xmpp:http:upload:0` hosted service calls `cachedSlot`, then `makeSlot` when that cannot
/// answer; the PUT route calls `verify`, then `claim`. A slot is only signed (`SignedSlot`) and
/// counted in memory (`UploadUsage`): its PUT writes the first row.
public final class UploadSlots: Sendable {
    public let configuration: HTTPConfiguration.Upload
    /// Where URLs point, without a trailing slash, e.g. `https://example.org:5281`. Settable
    /// because with port 0 it is only known once the listener is bound.
    public var baseURL: String {
        get { base.withLockedValue { $0 } }
        set { base.withLockedValue { $0 = newValue.hasSuffix("/") ? String(newValue.dropLast()) : newValue } }
    }
    private let base: NIOLockedValueBox<String>
    let metadata: any UploadMetadataStore
    let usage = UploadUsage()
    private let secret: [UInt8]
    private let now: @Sendable () -> Date

    public init(
        configuration: HTTPConfiguration.Upload, baseURL: String, secret: [UInt8], metadata: any UploadMetadataStore,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.configuration = configuration
        self.base = NIOLockedValueBox(baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL)
        self.secret = secret
        self.metadata = metadata
        self.now = now
    }

    /// A slot for `account`, or why it is refused. Reads the account's usage from the database
    /// when it is not cached; `cachedSlot` answers without suspending when it is.
    public func makeSlot(account: String, filename: String, size: Int64, contentType: String?) async throws(UploadSlotError)
        -> UploadSlot
    {
        let slot = try checked(account: account, filename: filename, size: size, contentType: contentType)
        let created = now()
        var reservation = reserve(slot, at: created)
        if reservation == nil {
            do {
                _ = try await usage.usage(of: account, now: created) {
                    try await metadata.uploadUsage(of: account, since: created.addingTimeInterval(-86_400))
                }
            } catch {
                throw .notAllowed("Only accounts on this server may upload")
            }
            reservation = reserve(slot, at: created)
        }
        switch reservation {
        case .reserved?:
            return urls(slot)
        case .overDailyQuota?:
            let dayAgo = created.addingTimeInterval(-86_400)
            let oldest = (try? await metadata.uploads(of: account))?.map(\.createdAt).filter { $0 >= dayAgo }.min() ?? created
            throw .quotaExceeded(
                reason: "Daily upload quota of \(configuration.dailyQuota) bytes reached", retryAfter: oldest.addingTimeInterval(86_400))
        case .overTotalQuota?:
            throw .quotaExceeded(
                reason: "Storage quota of \(configuration.totalQuota) bytes reached; delete files to make room", retryAfter: nil)
        case nil:
            // The usage just read was pruned already: only under a flood of accounts.
            throw .quotaExceeded(reason: "The upload service is busy; try again shortly", retryAfter: created.addingTimeInterval(5))
        }
    }

    /// The slot when the account's usage is cached and the slot fits its quotas; nil when
    /// `makeSlot` must answer (usage to read, or a quota refusal to explain). Most slot
    /// requests are answered here, on the caller's thread, without touching the database.
    public func cachedSlot(account: String, filename: String, size: Int64, contentType: String?) throws(UploadSlotError)
        -> UploadSlot?
    {
        let slot = try checked(account: account, filename: filename, size: size, contentType: contentType)
        return reserve(slot, at: now()) == .reserved ? urls(slot) : nil
    }

    /// The checks that need nothing but the request; the slot they describe.
    private func checked(account: String, filename: String, size: Int64, contentType: String?) throws(UploadSlotError)
        -> SignedSlot
    {
        guard configuration.enabled, configuration.allowed == "local" else {
            throw .notAllowed("File upload is disabled on this server")
        }
        let name = Self.sanitized(filename)
        guard !name.isEmpty else { throw .badRequest("The filename is empty or only made of characters that are not allowed") }
        guard name.utf8.count <= 255 else { throw .badRequest("The filename is longer than 255 bytes") }
        guard size > 0 else { throw .badRequest("The size must be a positive number of bytes") }
        guard size <= configuration.maxFileSize else { throw .fileTooLarge(maxFileSize: configuration.maxFileSize) }
        let type = (contentType?.isEmpty ?? true) ? "application/octet-stream" : contentType!.lowercased()
        guard Self.isValidContentType(type) else { throw .badRequest("The content type '\(type)' is not a valid media type") }
        let expires = Int64(now().timeIntervalSince1970) + configuration.slotLifetime.components.seconds
        return SignedSlot(id: Self.randomHex(bytes: 16), owner: account, filename: name, size: size, contentType: type, expires: expires)
    }

    private func reserve(_ slot: SignedSlot, at date: Date) -> UploadUsage.Reservation? {
        usage.reserve(
            slot.size, for: slot.owner, expires: slot.expires, now: date, dailyQuota: Int64(configuration.dailyQuota),
            totalQuota: Int64(configuration.totalQuota))
    }

    private func urls(_ slot: SignedSlot) -> UploadSlot {
        let base = baseURL, path = slot.path
        return UploadSlot(putURL: "\(base)\(path)?\(slot.query)&token=\(signature(slot))", getURL: base + path, id: slot.id)
    }

    /// The slot a PUT's URL describes, if its token is this server's and it has not expired;
    /// otherwise the reason for a 403.
    func verify(_ slot: SignedSlot?, token: String?) -> Result<SignedSlot, SlotRefusal> {
        guard let slot, let token else { return .failure(SlotRefusal("The upload URL lacks its token")) }
        guard Self.constantTimeEqual(Array(signature(slot).utf8), Array(token.utf8)) else {
            return .failure(SlotRefusal("The upload token is not valid"))
        }
        guard Double(slot.expires) >= now().timeIntervalSince1970 else { return .failure(SlotRefusal("The upload slot has expired")) }
        return .success(slot)
    }

    struct SlotRefusal: Error {
        var reason: String
        init(_ reason: String) { self.reason = reason }
    }

    /// The PUT's exact quota check, in the transaction that records the upload.
    func claim(_ slot: SignedSlot) async throws -> UploadClaim {
        let record = UploadRecord(
            id: slot.id, owner: slot.owner, filename: slot.filename, size: slot.size, contentType: slot.contentType,
            createdAt: now(), state: .uploading)
        return try await metadata.claimUpload(
            record, dailyQuota: Int64(configuration.dailyQuota), totalQuota: Int64(configuration.totalQuota))
    }

    private func signature(_ slot: SignedSlot) -> String {
        let mac = (try? HashFunction.sha256.hmac(key: secret, data: Array(slot.signedText.utf8))) ?? []
        return Self.hex(mac)
    }

    /// Lowercase hex, without running Foundation's formatter (`String(format:)`) once per byte.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(unsafeUninitializedCapacity: bytes.count * 2) { buffer in
            for (index, byte) in bytes.enumerated() {
                buffer[2 * index] = digits[Int(byte >> 4)]
                buffer[2 * index + 1] = digits[Int(byte & 0x0F)]
            }
            return bytes.count * 2
        }
    }

    /// Path separators and control characters would let a name escape its directory or break
    /// headers; they become `_`.
    static func sanitized(_ filename: String) -> String {
        let mapped = String(
            filename.unicodeScalars.map { scalar -> Character in
                scalar == "/" || scalar == "\\" || scalar.properties.generalCategory == .control ? "_" : Character(scalar)
            })
        let trimmed = mapped.trimmingCharacters(in: .whitespaces)
        return trimmed == "." || trimmed == ".." ? "" : trimmed
    }

    static func isValidContentType(_ type: String) -> Bool {
        let parts = type.split(separator: "/", omittingEmptySubsequences: false)
        let token = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyz0123456789!#$&^_.+-")
        guard parts.count == 2, type.count <= 255 else { return false }
        return parts.allSatisfy { !$0.isEmpty && $0.unicodeScalars.allSatisfy(token.contains) }
    }

    /// `bytes` random bytes in hex, drawn eight at a time: each draw is a getrandom(2) call.
    static func randomHex(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        var random: [UInt8] = []
        random.reserveCapacity(bytes + 7)
        while random.count < bytes {
            withUnsafeBytes(of: generator.next() as UInt64) { random.append(contentsOf: $0) }
        }
        return hex(Array(random.prefix(bytes)))
    }

    private static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    /// The configured secret, or the one in `path`, generated there (mode 0600) on first start
    /// so that slots stay valid across restarts.
    public static func secret(configured: String?, path: String) throws -> [UInt8] {
        if let configured { return Array(configured.utf8) }
        if let existing = FileManager.default.contents(atPath: path), existing.count >= 32 { return Array(existing) }
        let fresh = Data(randomHex(bytes: 32).utf8)
        guard FileManager.default.createFile(atPath: path, contents: fresh, attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
        return Array(fresh)
    }
}
