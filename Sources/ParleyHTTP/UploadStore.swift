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
                try await handle.withBufferedWriter { writer in
                    for try await buffer in body {
                        received += Int64(buffer.readableBytes)
                        guard received <= size else { throw UploadStoreError.sizeMismatch(expected: size, received: received) }
                        _ = try await writer.write(contentsOf: buffer)
                    }
                }
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
        if let range { return try await fileIO.loadFile(path: path, range: range, context: context) }
        return try await fileIO.loadFile(path: path, context: context)
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
