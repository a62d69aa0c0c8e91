import Hummingbird
import NIOCore
import _NIOFileSystem

/// Where uploaded bytes live. The default keeps them under the data directory; a deployment can
/// put them elsewhere (another disk, an object store) by providing its own.
public protocol UploadStore: Sendable {
    /// Stores `body` as the file `id` of `accountID`, atomically: until it returns, the file does
    /// not exist. Throws `UploadStoreError.sizeMismatch` (and keeps nothing) when the body is not
    /// exactly `size` bytes; it stops reading as soon as the body is longer.
    func write<Body: AsyncSequence & Sendable>(_ body: Body, accountID: Int64, id: String, size: Int64) async throws
    where Body.Element == ByteBuffer

    /// The bytes `range` of the file (all of it when nil), streamed.
    func read(accountID: Int64, id: String, range: ClosedRange<Int>?, context: HTTPContext) async throws -> ResponseBody

    func remove(accountID: Int64, id: String) async throws
    /// Every file of the account (after the account is deleted).
    func removeAll(accountID: Int64) async throws
}

public enum UploadStoreError: Error, Equatable {
    case sizeMismatch(expected: Int64, received: Int64)
}

/// Files at `<directory>/<account id>/<upload id>`, written through a temporary file renamed
/// into place. All I/O goes through NIOFileSystem's thread pool, never an event loop.
public struct DirectoryUploadStore: UploadStore {
    public let directory: String
    private let fileIO = FileIO()
    /// Bytes per write to disk and per read from it.
    static let writeSize = 256 * 1024

    public init(directory: String) {
        self.directory = directory
    }

    public func write<Body: AsyncSequence & Sendable>(_ body: Body, accountID: Int64, id: String, size: Int64) async throws
    where Body.Element == ByteBuffer {
        let folder = FilePath("\(directory)/\(accountID)")
        try await FileSystem.shared.createDirectory(at: folder, withIntermediateDirectories: true, permissions: nil)
        let temporary = folder.appending(".\(id).part")
        var received: Int64 = 0
        do {
            try await FileSystem.shared.withFileHandle(forWritingAt: temporary, options: .newFile(replaceExisting: true)) { handle in
                // Large parts (a read's worth, joined by RequestBodyCoalescer) are written as
                // they come, without a copy; small ones are gathered first, so that a trickle
                // does not cost a thread-pool hop per part.
                var gathered = ByteBuffer()
                var offset: Int64 = 0
                for try await part in body {
                    received += Int64(part.readableBytes)
                    guard received <= size else { throw UploadStoreError.sizeMismatch(expected: size, received: received) }
                    if gathered.readableBytes == 0, part.readableBytes >= Self.writeSize / 4 {
                        offset += try await handle.write(contentsOf: part, toAbsoluteOffset: offset)
                        continue
                    }
                    gathered.writeImmutableBuffer(part)
                    if gathered.readableBytes >= Self.writeSize {
                        offset += try await handle.write(contentsOf: gathered, toAbsoluteOffset: offset)
                        gathered.clear()
                    }
                }
                if gathered.readableBytes > 0 { _ = try await handle.write(contentsOf: gathered, toAbsoluteOffset: offset) }
            }
            guard received == size else { throw UploadStoreError.sizeMismatch(expected: size, received: received) }
            try await FileSystem.shared.moveItem(at: temporary, to: folder.appending(id))
        } catch {
            _ = try? await FileSystem.shared.removeItem(at: temporary, strategy: .platformDefault, recursively: false)
            throw error
        }
    }

    public func read(accountID: Int64, id: String, range: ClosedRange<Int>?, context: HTTPContext) async throws -> ResponseBody {
        let path = "\(directory)/\(accountID)/\(id)"
        if let range { return try await fileIO.loadFile(path: path, range: range, context: context, chunkLength: Self.writeSize) }
        return try await fileIO.loadFile(path: path, context: context, chunkLength: Self.writeSize)
    }

    public func remove(accountID: Int64, id: String) async throws {
        _ = try await FileSystem.shared.removeItem(
            at: FilePath("\(directory)/\(accountID)/\(id)"), strategy: .platformDefault, recursively: false)
    }

    public func removeAll(accountID: Int64) async throws {
        _ = try await FileSystem.shared.removeItem(
            at: FilePath("\(directory)/\(accountID)"), strategy: .platformDefault, recursively: true)
    }
}
