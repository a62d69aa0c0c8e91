import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import ParleyCore
import _NIOFileSystem

/// The HTTP half of XEP-0363 for a client: PUT a file from disk and GET one to disk, a chunk
/// at a time (never the whole file in memory), hashing (SHA-256) what goes by. File I/O runs
/// on NIOFileSystem's thread pool, the network on AsyncHTTPClient's event loops.
enum HTTPTransfer {
    static let chunkLength = ByteCount.kibibytes(64)

    /// The one event loop of every transfer's connection. AsyncHTTPClient queues each part of a
    /// request body onto the connection's loop without waiting for it, and pauses the body only
    /// once the loop has run those writes and seen the socket fill; a file read faster than
    /// the loop encrypts and sends (over TLS, easily) piled up parts in the loop's queue: a
    /// third of an 80 MB file held at once. Knowing the loop, `CountedChunks` waits for it to
    /// take each part before reading the next. One loop is plenty for a client's transfers.
    private static let loop = MultiThreadedEventLoopGroup(numberOfThreads: 1).next()

    /// One client for the process, like `HTTPClient.shared`, but a connection that cannot be
    /// made (refused, untrusted certificate) fails the transfer at once instead of being
    /// tried again until the transfer's deadline.
    static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.timeout.connect = .seconds(10)
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: loop, configuration: configuration)
    }()

    /// The system roots, plus `file` (PEM: a private CA or a server's self-signed certificate)
    /// when given; nil means the HTTP client's default (the system roots).
    static func tlsConfiguration(alsoTrusting file: String?) -> TLSConfiguration? {
        guard let file else { return nil }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.file(file)]
        return tls
    }

    /// PUTs `path` (`size` bytes) to `url` with the slot's headers; returns its SHA-256.
    /// `report` is awaited after each chunk, so a slow reporter slows the upload, not memory.
    static func put(
        file path: String, size: Int64, to url: String, contentType: String, headers: [(name: String, value: String)],
        tls: TLSConfiguration?, report: @escaping @Sendable (Int64) async -> Void
    ) async throws -> [UInt8] {
        try await FileSystem.shared.withFileHandle(forReadingAt: FilePath(path)) { handle in
            let tally = try Tally(limit: size, report: report)
            var request = HTTPClientRequest(url: url)
            request.method = .PUT
            request.tlsConfiguration = tls
            for header in headers { request.headers.replaceOrAdd(name: header.name, value: header.value) }
            request.headers.replaceOrAdd(name: "Content-Type", value: contentType)
            request.body = .stream(
                CountedChunks(base: handle.readChunks(in: 0..<size, chunkLength: chunkLength), tally: tally, loop: loop), length: .known(size))
            let response = try await execute(request, url: url, timeout: timeout(for: size))
            guard (200..<300).contains(response.status.code) else { throw await refusal(response, url: url) }
            // The file changed under us (shrank): what was sent is not what the slot was for.
            guard tally.count == size else {
                throw ClientError.fileUnavailable("\(path) changed while it was uploaded (\(tally.count) of \(size) bytes)")
            }
            return try tally.digest.finish()
        }
    }

    /// GETs `url` into `path` (created or replaced), refusing more than `limit` bytes; returns
    /// the byte count and the SHA-256 of what arrived.
    static func get(
        _ url: String, to path: String, limit: Int64, tls: TLSConfiguration?, report: @escaping @Sendable (Int64, Int64?) async -> Void
    ) async throws -> (size: Int64, sha256: [UInt8]) {
        var request = HTTPClientRequest(url: url)
        request.tlsConfiguration = tls
        let response = try await execute(request, url: url, timeout: timeout(for: limit))
        guard response.status.code == 200 else { throw await refusal(response, url: url) }
        let announced = response.headers.first(name: "Content-Length").flatMap { Int64($0) }
        if let announced, announced > limit {
            throw ClientError.downloadMismatch("the server sends \(announced) bytes, more than the \(limit) expected")
        }
        let total = announced
        let tally = try Tally(limit: limit) { count in await report(count, total) }
        try await FileSystem.shared.withFileHandle(forWritingAt: FilePath(path), options: .newFile(replaceExisting: true)) { handle in
            try await handle.withBufferedWriter { writer in
                do {
                    for try await chunk in response.body {
                        try await tally.add(chunk)
                        _ = try await writer.write(contentsOf: chunk)
                    }
                } catch let error as ClientError {
                    throw error
                } catch {
                    throw ClientError.transferFailed("\(url): \(error)")
                }
            }
        }
        return (tally.count, try tally.digest.finish())
    }

    private static func execute(_ request: HTTPClientRequest, url: String, timeout: TimeAmount) async throws -> HTTPClientResponse {
        do {
            return try await client.execute(request, timeout: timeout)
        } catch let error as ClientError {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw ClientError.transferFailed("\(url): \(error)")
        }
    }

    /// A minute, plus what the file takes at a slow 100 kB/s: a stalled transfer ends.
    private static func timeout(for size: Int64) -> TimeAmount {
        .seconds(60 + size / 100_000)
    }

    /// The status and the server's one-line reason (the start of its body).
    private static func refusal(_ response: HTTPClientResponse, url: String) async -> ClientError {
        let body = (try? await response.body.collect(upTo: 64 << 10)).map { String(buffer: $0) } ?? ""
        let line = body.split(whereSeparator: \.isNewline).first.map { String($0.prefix(200)) } ?? ""
        return .httpStatus(Int(response.status.code), reason: line.trimmingCharacters(in: .whitespaces), url: url)
    }
}

/// What has gone by in one transfer: its count, its hash, and the limit it must keep to.
/// Unchecked: one transfer feeds it from one task at a time, in order.
final class Tally: @unchecked Sendable {
    let digest: IncrementalDigest
    private(set) var count: Int64 = 0
    private let limit: Int64
    private let report: @Sendable (Int64) async -> Void

    init(limit: Int64, report: @escaping @Sendable (Int64) async -> Void) throws {
        digest = try IncrementalDigest(.sha256)
        self.limit = limit
        self.report = report
    }

    func add(_ chunk: ByteBuffer) async throws {
        count += Int64(chunk.readableBytes)
        guard count <= limit else { throw ClientError.downloadMismatch("more than the \(limit) bytes expected arrived") }
        try chunk.withUnsafeReadableBytes { try digest.update($0) }
        await report(count)
    }
}

/// A body of file chunks that feeds each one to a `Tally` on its way out, and reads the next
/// only once the connection's event loop has taken the last one (see `HTTPTransfer.loop`).
struct CountedChunks<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable where Base.Element == ByteBuffer {
    typealias Element = ByteBuffer
    let base: Base
    let tally: Tally
    let loop: any EventLoop

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: Base.AsyncIterator
        let tally: Tally
        let loop: any EventLoop
        var started = false

        mutating func next() async throws -> ByteBuffer? {
            // The loop runs its tasks in order: once this one runs, the write of the part
            // handed over before has run too (and paused the body if the socket is full).
            if started { try await loop.submit {}.get() }
            started = true
            guard let chunk = try await base.next() else { return nil }
            try await tally.add(chunk)
            return chunk
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: base.makeAsyncIterator(), tally: tally, loop: loop) }
}
