import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ParleyTestSupport

/// One HTTP/1.1 connection kept open across requests, as a browser keeps one: for behaviour
/// that depends on which requests share a connection (BOSH requests answered in the
/// connection's pipeline, then a request for another path on the same connection). Requests
/// are written out byte for byte; answers are read by their Content-Length.
final class HTTPTestConnection: Sendable {
    struct Response: Sendable {
        let status: Int
        /// Header names lowercased.
        let headers: [String: String]
        let text: String
    }

    private let channel: any Channel
    private let received: NIOLockedValueBox<ByteBuffer>

    private init(channel: any Channel, received: NIOLockedValueBox<ByteBuffer>) {
        self.channel = channel
        self.received = received
    }

    static func open(port: Int) async throws -> HTTPTestConnection {
        let received = NIOLockedValueBox(ByteBuffer())
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(2))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Collector(received: received)) }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return HTTPTestConnection(channel: channel, received: received)
    }

    /// Writes one request (with Content-Length when there is a body) and waits for its answer.
    func request(
        _ method: String, _ path: String, body: String = "", headers: [(String, String)] = [], timeout: Duration = .seconds(10)
    ) async throws -> Response {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: localhost\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if method == "POST" { text += "Content-Type: text/xml; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\n" }
        try await channel.writeAndFlush(ByteBuffer(string: text + "\r\n" + body))
        return try await response(timeout: timeout)
    }

    /// The next whole response on the connection.
    func response(timeout: Duration = .seconds(10)) async throws -> Response {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let response = received.withLockedValue({ Self.take(from: &$0) }) { return response }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw ScenarioFailure("no HTTP response within \(timeout); received so far: \(received.withLockedValue { String(buffer: $0) })")
    }

    /// Whether the server closes the connection within `timeout`.
    func closes(within timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if !channel.isActive { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return !channel.isActive
    }

    func close() async {
        try? await channel.close()
    }

    private static func take(from buffer: inout ByteBuffer) -> Response? {
        let text = String(buffer: buffer)
        guard let end = text.range(of: "\r\n\r\n") else { return nil }
        let lines = text[..<end.lowerBound].components(separatedBy: "\r\n")
        guard let status = lines.first?.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let headBytes = text[..<end.upperBound].utf8.count
        let length = headers["content-length"].flatMap { Int($0) } ?? 0
        guard buffer.readableBytes >= headBytes + length else { return nil }
        buffer.moveReaderIndex(forwardBy: headBytes)
        let body = buffer.readString(length: length) ?? ""
        buffer.discardReadBytes()
        return Response(status: status, headers: headers, text: body)
    }

    private final class Collector: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let received: NIOLockedValueBox<ByteBuffer>

        init(received: NIOLockedValueBox<ByteBuffer>) {
            self.received = received
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var bytes = unwrapInboundIn(data)
            received.withLockedValue { $0.writeBuffer(&bytes) }
        }
    }
}
