import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ParleyCore
import ParleyServer
import ParleyStorage
import ServiceLifecycle
import Testing

@testable import ParleyHTTP

/// parleyd's HTTP service on a free loopback port (plain HTTP), over a fresh database with the
/// accounts alice and bob, driven with AsyncHTTPClient like a real client.
final class UploadHarness: Sendable {
    static let secret = "test-secret-for-upload-slots-0123456789"

    let directory: String
    let storage: SQLiteStorage
    let server: ParleyHTTPServer
    let group: ServiceGroup
    let base: String
    private let running: Task<Void, any Error>

    var slots: UploadSlots { server.uploadSlots! }
    var uploadDirectory: String { "\(directory)/uploads" }

    init(gracePeriod: Duration = .seconds(5), configure: (inout HTTPConfiguration.Upload) -> Void = { _ in }) async throws {
        directory = NSTemporaryDirectory() + "parley-http-" + UUID().uuidString
        var configuration = ServerConfiguration()
        configuration.domain = "example.test"
        configuration.dataDirectory = directory
        configuration.http.enabled = true
        configuration.http.port = 0
        configuration.http.tls = false
        configuration.http.upload.secret = Self.secret
        configuration.shutdown.gracePeriod = gracePeriod
        configure(&configuration.http.upload)
        storage = try SQLiteStorage(path: "\(directory)/parley.sqlite")
        let keys = try AccountKeys.derive(password: "secret", iterations: 4096)
        for user in ["alice", "bob"] { try await storage.createAccount(username: user, keys: keys) }
        var logger = Logger(label: "parley-http-tests")
        logger.logLevel = .error
        server = try ParleyHTTPServer(
            configuration: configuration, storage: storage, certificatePath: "", keyPath: "",
            maintenanceInterval: .milliseconds(100), logger: logger)
        group = ServiceGroup(services: [server], logger: logger)
        let group = self.group
        running = Task { try await group.run() }
        let address = await server.addresses()[0]
        base = "http://127.0.0.1:\(address.port!)"
        // The server names itself by its domain (example.test:<port>, checked below); the
        // client here cannot resolve that name.
        precondition(server.uploadSlots!.baseURL == "http://example.test:\(address.port!)")
        server.uploadSlots!.baseURL = base
    }

    /// Graceful shutdown; returns once the service has stopped.
    func stop() async throws {
        await group.triggerGracefulShutdown()
        try await running.value
        try? FileManager.default.removeItem(atPath: directory)
    }

    func slot(_ user: String = "alice", name: String = "photo.png", size: Int, type: String? = "image/png") async throws
        -> UploadSlot
    {
        try await slots.makeSlot(account: user, filename: name, size: Int64(size), contentType: type)
    }

    struct Reply {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    func send(
        _ method: HTTPMethod, _ url: String, headers: [(String, String)] = [], body: HTTPClientRequest.Body? = nil
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = body
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(120))
        var fields: [String: String] = [:]
        for header in response.headers { fields[header.name.lowercased()] = header.value }
        let bytes = try await response.body.collect(upTo: 16 << 20)
        return Reply(status: Int(response.status.code), headers: fields, body: Array(bytes.readableBytesView))
    }

    func put(_ slot: UploadSlot, _ bytes: [UInt8], type: String = "image/png") async throws -> Reply {
        try await send(.PUT, slot.putURL, headers: [("Content-Type", type)], body: .bytes(ByteBuffer(bytes: bytes)))
    }

    /// A PUT URL for `slot` with other values, signed with the test secret the way the server
    /// signs (id, owner, file name, size, type, expiry), written out here so that a change of
    /// the server's signing shows.
    func putURL(for slot: UploadSlot, owner: String = "alice", size: Int, type: String, expires: Int64) throws -> String {
        let name = try #require(slot.getURL.split(separator: "/").last.flatMap { String($0).removingPercentEncoding })
        let message = Array("\(slot.id)\n\(owner)\n\(name)\n\(size)\n\(type)\n\(expires)".utf8)
        let mac = try HashFunction.sha256.hmac(key: Array(Self.secret.utf8), data: message)
        let escapedType = type.replacingOccurrences(of: "/", with: "%2F").replacingOccurrences(of: "+", with: "%2B")
        return "\(slot.getURL)?owner=\(owner)&size=\(size)&type=\(escapedType)&expires=\(expires)"
            + "&token=\(mac.map { String(format: "%02x", $0) }.joined())"
    }

    static func bytes(_ count: Int, seed: UInt8 = 7) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
    }
}

/// Holds a body after its first chunk until the test releases it, so a test can act while an
/// upload is certainly still running, however slow the machine.
final class BodyHold: Sendable {
    private let released: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() { (released, continuation) = AsyncStream<Void>.makeStream() }

    func release() { continuation.finish() }

    func wait() async {
        for await _ in released {}
    }
}

/// `count` bytes in chunks of `chunk`, made on demand, so the sender never holds the file.
struct GeneratedBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let count: Int
    var chunk = 64 * 1024
    var pause: Duration? = nil
    var hold: BodyHold? = nil

    struct AsyncIterator: AsyncIteratorProtocol {
        var remaining: Int
        let chunk: Int
        let pause: Duration?
        var hold: BodyHold?
        var sentFirstChunk = false
        mutating func next() async throws -> ByteBuffer? {
            guard remaining > 0 else { return nil }
            if let pause { try await Task.sleep(for: pause) }
            if let waiting = hold, sentFirstChunk {
                hold = nil
                await waiting.wait()
            }
            sentFirstChunk = true
            let size = Swift.min(chunk, remaining)
            remaining -= size
            return ByteBuffer(repeating: 0x5A, count: size)
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(remaining: count, chunk: chunk, pause: pause, hold: hold)
    }
}

/// `count` bytes in 64 KiB chunks that stop at each gate until the file the server is writing
/// in `folder` holds at least the gate minus `slack` bytes; a minute without that fails the
/// upload. The server shares this process and writes to an unnamed temporary file (O_TMPFILE,
/// linked in at the end), so the file is found among this process's open descriptors.
struct GatedBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let count: Int
    let gates: [Int]
    let slack: Int
    let folder: String

    struct NotStreamed: Error, CustomStringConvertible {
        let description: String
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let body: GatedBody
        var sent = 0
        var gates: [Int]

        mutating func next() async throws -> ByteBuffer? {
            guard sent < body.count else { return nil }
            if let gate = gates.first, sent >= gate {
                gates.removeFirst()
                var written = 0
                for _ in 0..<600 {
                    written = GatedBody.sizeOfOpenFile(under: body.folder)
                    if written >= gate - body.slack { break }
                    try await Task.sleep(for: .milliseconds(100))
                }
                guard written >= gate - body.slack else {
                    throw NotStreamed(description: "\(sent) bytes sent, only \(written) written in \(body.folder)")
                }
            }
            let size = Swift.min(64 * 1024, body.count - sent)
            sent += size
            return ByteBuffer(repeating: 0x5A, count: size)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(body: self, gates: gates) }

    /// The largest file open in this process whose path is in `folder` (0 if none).
    static func sizeOfOpenFile(under folder: String) -> Int {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        var largest = 0
        for descriptor in descriptors {
            let link = "/proc/self/fd/" + descriptor
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: link), target.hasPrefix(folder) else { continue }
            var status = stat()
            if stat(link, &status) == 0 { largest = Swift.max(largest, Int(status.st_size)) }
        }
        return largest
    }
}
