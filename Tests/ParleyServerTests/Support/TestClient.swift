import Foundation
import NIOCore
import NIOPosix
import ParleyCore
import ParleyTLS
import ParleyTestSupport
import Synchronization
import Testing

/// A failed expectation about what the server sent; ends the scenario with a readable reason.
struct ScenarioFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A raw XMPP client over a real loopback socket: the test writes XML text, and reads back
/// what the server sent as parsed events. Every element received is validated against
/// `schemas/` (a stream header together with its features, as one synthetic document).
final class TestClient: Sendable {
    /// Generous: it only bounds how long a failing scenario waits. When the suite still
    /// started every scenario's server at once on two cores, a server took over 5 s to answer
    /// a stream header; `make test` now runs 16 at a time, and this stays for loaded machines.
    static let defaultTimeout: Duration = .seconds(15)

    let channel: any Channel
    let events: ServerEventQueue
    private let fingerprint: String
    /// The last stream header received, to validate the features that follow it with it.
    private let lastHeader = Mutex<XMLStreamHeader?>(nil)

    init(channel: any Channel, events: ServerEventQueue, fingerprint: String) {
        self.channel = channel
        self.events = events
        self.fingerprint = fingerprint
    }

    /// Connects to 127.0.0.1:`port`. With `directTLS` (the ALPN protocols to offer), TLS starts
    /// at once, pinned to the server's certificate, and this returns once the handshake is done.
    static func connect(port: Int, fingerprint: String, directTLS alpn: [String]? = nil) async throws -> TestClient {
        let events = ServerEventQueue()
        let tls = try alpn.map { try clientTLSContext(fingerprint: fingerprint, alpn: $0) }
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(.seconds(2))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls { try channel.pipeline.syncOperations.addHandler(TLSHandler(context: tls)) }
                    try channel.pipeline.syncOperations.addHandler(ClientStreamHandler(queue: events))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        let client = TestClient(channel: channel, events: events, fingerprint: fingerprint)
        if tls != nil { try await client.waitForHandshake() }
        return client
    }

    static func clientTLSContext(fingerprint: String, alpn: [String] = []) throws -> TLSContext {
        try TLSContext(client: TLSClientConfiguration(trust: .pinned(.sha256Fingerprint(fingerprint)), alpnProtocols: alpn))
    }

    // MARK: Sending

    func send(_ xml: String) async throws {
        try await send(Array(xml.utf8))
    }

    func send(_ bytes: [UInt8]) async throws {
        var buffer = channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        try await channel.writeAndFlush(buffer)
    }

    /// Sends without waiting for the write to complete; for floods.
    func sendUnwaited(_ xml: String) {
        channel.writeAndFlush(ByteBuffer(string: xml), promise: nil)
    }

    func close() async {
        try? await channel.close()
    }

    // MARK: TLS

    /// Puts a client-mode TLS handler in front of everything, as a client does on `<proceed/>`.
    func upgradeToTLS() async throws {
        let context = try Self.clientTLSContext(fingerprint: fingerprint)
        let channel = self.channel
        try await channel.eventLoop.submit {
            try channel.pipeline.syncOperations.addHandler(TLSHandler(context: context), position: .first)
        }.get()
        try await waitForHandshake()
    }

    var handshake: TLSHandshakeInfo? { events.handshake }

    private func waitForHandshake(timeout: Duration = defaultTimeout) async throws {
        let deadline = ContinuousClock.now + timeout
        while events.handshake == nil {
            if ContinuousClock.now >= deadline || !channel.isActive {
                throw ScenarioFailure("the TLS handshake did not complete")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    // MARK: Receiving

    /// The next thing the server did, validated against the schemas if it is XML.
    func next(timeout: Duration = defaultTimeout) async throws -> ServerEvent {
        guard let event = await events.next(timeout: timeout) else {
            throw ScenarioFailure("nothing arrived from the server within \(timeout)")
        }
        validate(event)
        return event
    }

    /// The next element; a header, stream end or close instead is a failure.
    func nextElement(timeout: Duration = defaultTimeout) async throws -> XMLElement {
        let event = try await next(timeout: timeout)
        guard case .element(let element) = event else {
            throw ScenarioFailure("expected an element, got \(event)")
        }
        return element
    }

    /// The next element, which must be `<name xmlns='namespace'>`.
    @discardableResult
    func expect(
        _ name: String, namespace: String = XMLNamespace.client, timeout: Duration = defaultTimeout
    ) async throws -> XMLElement {
        let element = try await nextElement(timeout: timeout)
        guard element.name == name, element.namespace == namespace else {
            throw ScenarioFailure("expected <\(name) xmlns='\(namespace)'>, got \(element.xmlString())")
        }
        return element
    }

    @discardableResult
    func expectHeader(timeout: Duration = defaultTimeout) async throws -> XMLStreamHeader {
        let event = try await next(timeout: timeout)
        guard case .header(let header) = event else { throw ScenarioFailure("expected a stream header, got \(event)") }
        return header
    }

    /// A `<stream:error/>` with `condition` (after a header, if the server had to open its
    /// stream to say it), then `</stream:stream>` and the connection closing.
    @discardableResult
    func expectStreamError(_ condition: StreamErrorCondition, timeout: Duration = defaultTimeout) async throws -> StreamError {
        var event = try await next(timeout: timeout)
        if case .header = event { event = try await next(timeout: timeout) }
        guard case .element(let element) = event, element.name == "error", element.namespace == XMLNamespace.streams else {
            throw ScenarioFailure("expected <stream:error><\(condition.rawValue)/>, got \(event)")
        }
        let error = StreamError(element: element)
        guard error.condition == condition else {
            throw ScenarioFailure("expected stream error \(condition.rawValue), got \(element.xmlString())")
        }
        try await expectStreamEnd()
        return error
    }

    /// `</stream:stream>` and then the connection closes.
    func expectStreamEnd(timeout: Duration = defaultTimeout) async throws {
        let event = try await next(timeout: timeout)
        guard case .streamClosed = event else { throw ScenarioFailure("expected </stream:stream>, got \(event)") }
        try await expectClosed(timeout: timeout)
    }

    /// The connection closes with nothing more said.
    func expectClosed(timeout: Duration = defaultTimeout) async throws {
        let event = try await next(timeout: timeout)
        guard case .closed = event else { throw ScenarioFailure("expected the connection to close, got \(event)") }
    }

    /// Nothing at all arrives for `duration`.
    func expectSilence(for duration: Duration) async throws {
        if let event = await events.next(timeout: duration) {
            throw ScenarioFailure("expected nothing, got \(event)")
        }
    }

    // MARK: Schema validation

    private func validate(_ event: ServerEvent) {
        switch event {
        case .header(let header):
            lastHeader.withLock { $0 = header }
            check(Self.document(header: header, body: ""), what: "stream header")
        case .element(let element):
            check(element.xmlString(), what: "<\(element.name)/>")
            if element.name == "features", element.namespace == XMLNamespace.streams, let header = lastHeader.withLock({ $0 }) {
                let body = element.xmlString(context: .clientStream)
                check(Self.document(header: header, body: body), what: "stream header with features")
            }
        case .streamClosed, .malformed, .closed:
            break
        }
    }

    private func check(_ xml: String, what: String) {
        do {
            try SchemaValidator.shared.validate(xml)
        } catch {
            Issue.record("\(what) does not match the schemas: \(error)\n\(xml)")
        }
    }

    /// The server's header re-serialized as the root of a document holding `body`.
    static func document(header: XMLStreamHeader, body: String) -> String {
        var bytes: [UInt8] = []
        let prefixed = header.prefix.map { "\($0):\(header.name)" } ?? header.name
        XMLSerializer.writeOpenTag(
            prefixedName: prefixed,
            declarations: header.namespaceDeclarations.sorted { $0.key < $1.key }.map { ($0.key, $0.value) },
            attributes: header.attributes, to: &bytes)
        return String(decoding: bytes, as: UTF8.self) + body + "</\(prefixed)>"
    }
}
