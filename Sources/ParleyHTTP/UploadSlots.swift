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
/// `urn:xmpp:http:upload:0` hosted service calls `makeSlot`; the PUT route calls `verify`.
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

    public func makeSlot(account: String, filename: String, size: Int64, contentType: String?) async throws(UploadSlotError)
        -> UploadSlot
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

        let created = now()
        let dayAgo = created.addingTimeInterval(-86_400)
        let usage: (recent: Int64, stored: Int64)
        do {
            usage = try await self.usage.usage(of: account, now: created) {
                try await metadata.uploadUsage(of: account, since: dayAgo)
            }
        } catch {
            throw .notAllowed("Only accounts on this server may upload")
        }
        if configuration.dailyQuota > 0, usage.recent + size > configuration.dailyQuota {
            let oldest = (try? await metadata.uploads(of: account))?.map(\.createdAt).filter { $0 >= dayAgo }.min() ?? created
            throw .quotaExceeded(
                reason: "Daily upload quota of \(configuration.dailyQuota) bytes reached", retryAfter: oldest.addingTimeInterval(86_400))
        }
        if configuration.totalQuota > 0, usage.stored + size > configuration.totalQuota {
            throw .quotaExceeded(
                reason: "Storage quota of \(configuration.totalQuota) bytes reached; delete files to make room", retryAfter: nil)
        }
        let id = Self.randomHex(bytes: 16)
        do {
            _ = try await metadata.insertUpload(
                UploadRecord(id: id, owner: account, filename: name, size: size, contentType: type, createdAt: created))
        } catch StorageError.accountNotFound {
            throw .notAllowed("Only accounts on this server may upload")
        } catch {
            throw .badRequest("The slot could not be recorded; try again")
        }
        self.usage.slotIssued(to: account, size: size)
        let expires = Int64(created.timeIntervalSince1970) + configuration.slotLifetime.components.seconds
        let path = Self.path(id: id, filename: name)
        let token = signature(path: path, size: size, contentType: type, expires: expires)
        return UploadSlot(putURL: "\(baseURL)\(path)?expires=\(expires)&token=\(token)", getURL: "\(baseURL)\(path)", id: id)
    }

    /// Whether `token` signs this record's path, size and type with `expires`, and `expires`
    /// has not passed. Returns the reason for a refusal.
    func verify(record: UploadRecord, expires: Int64, token: String) -> String? {
        let expected = signature(
            path: Self.path(id: record.id, filename: record.filename), size: record.size, contentType: record.contentType,
            expires: expires)
        guard Self.constantTimeEqual(Array(expected.utf8), Array(token.utf8)) else { return "The upload token is not valid" }
        guard Double(expires) >= now().timeIntervalSince1970 else { return "The upload slot has expired" }
        return nil
    }

    static func path(id: String, filename: String) -> String {
        "/upload/\(id)/\(filename.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/", ";", "?", "#"])) ?? id)"
    }

    private func signature(path: String, size: Int64, contentType: String, expires: Int64) -> String {
        let message = Array("\(path)\n\(size)\n\(contentType)\n\(expires)".utf8)
        let mac = (try? HashFunction.sha256.hmac(key: secret, data: message)) ?? []
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
