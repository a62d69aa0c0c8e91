import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import ParleyCore
import ParleyStream
import ParleyTLS

/// Why a WebSocket could not carry an XMPP stream, in one line a person can act on.
enum WebSocketConnectError: Error, Sendable, CustomStringConvertible {
    /// The server answered the upgrade with this status and text (the first line of its body).
    case refused(WebSocketURL, status: HTTPResponseStatus, body: String)
    /// RFC 7395 §3.1: the server accepted the WebSocket but not the `xmpp` subprotocol.
    case noXMPPSubprotocol(WebSocketURL)
    /// `ws://` to a host across the network.
    case unencrypted(WebSocketURL)
    /// The connection ended during the HTTP exchange.
    case closedDuringUpgrade(WebSocketURL)

    var description: String {
        switch self {
        case .refused(let url, let status, let body):
            "\(url) refused the WebSocket upgrade: HTTP \(status.code) \(status.reasonPhrase)" + (body.isEmpty ? "" : ": \(body)")
        case .noXMPPSubprotocol(let url):
            "\(url) accepted the WebSocket without the 'xmpp' subprotocol (RFC 7395 §3.1): it is not an XMPP endpoint"
        case .unencrypted(let url):
            "refusing \(url): an unencrypted WebSocket is only used on this machine; use wss://"
        case .closedDuringUpgrade(let url):
            "\(url) closed the connection during the WebSocket upgrade"
        }
    }
}

extension ClientConnection {
    /// What the upgrade request ends in.
    private enum Upgrade: Sendable {
        case xmpp
        case withoutXMPPSubprotocol
        case refused(EventLoopFuture<(HTTPResponseHead, String)>)
    }

    /// The largest message the client accepts from the server: parleyd and Prosody send
    /// stanzas of at most their own stanza limit (256 KiB by default), plus a margin.
    static let maxWebSocketMessageBytes = 1 << 20

    /// TCP, TLS for `wss`, the HTTP/1.1 upgrade to a WebSocket with the `xmpp` subprotocol,
    /// then the same stream negotiation as on TCP, over RFC 7395 framing.
    static func openWebSocket(
        _ url: WebSocketURL, configuration: ClientConfiguration, tls: TLSContext?, group: any EventLoopGroup, registersAccount: Bool,
        resumption: ResumptionRequest?, callbacks: @escaping @Sendable () -> ClientStreamHandler.Callbacks
    ) async throws -> ClientConnection {
        guard url.isSecure || url.isLoopback || configuration.security == .none else { throw WebSocketConnectError.unencrypted(url) }
        let keepalive = StreamKeepaliveHandler.Configuration(
            whitespaceInterval: nil, pingAfter: TimeAmount(configuration.heartbeatInterval),
            idleTimeout: TimeAmount(configuration.heartbeatInterval + configuration.heartbeatTimeout))
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: url.path)
        head.headers.add(name: "Host", value: url.hostHeader)
        head.headers.add(name: "Sec-WebSocket-Protocol", value: "xmpp")
        head.headers.add(name: "Content-Length", value: "0")
        let upgrader = NIOTypedWebSocketClientUpgrader<Upgrade>(
            maxFrameSize: maxWebSocketMessageBytes,
            enableAutomaticErrorHandling: false,
            upgradePipelineHandler: { channel, response in
                channel.eventLoop.makeCompletedFuture {
                    // RFC 7395 §3.1: without the subprotocol this is not an XMPP endpoint.
                    let chosen = response.headers[canonicalForm: "Sec-WebSocket-Protocol"].map { $0.trimmingCharacters(in: .whitespaces) }
                    guard chosen.contains("xmpp") else { return .withoutXMPPSubprotocol }
                    try channel.pipeline.syncOperations.addHandler(WebSocketClientFraming(maxMessageBytes: maxWebSocketMessageBytes))
                    return .xmpp
                }
            })
        let upgradeConfiguration = NIOTypedHTTPClientUpgradeConfiguration<Upgrade>(
            upgradeRequestHead: head, upgraders: [upgrader],
            notUpgradingCompletionHandler: { channel in
                channel.eventLoop.makeCompletedFuture {
                    let promise = channel.eventLoop.makePromise(of: (HTTPResponseHead, String).self)
                    try channel.pipeline.syncOperations.addHandler(RefusalReader(promise: promise))
                    return .refused(promise.futureResult)
                }
            })
        let upgraded = NIOLockedValueBox<EventLoopFuture<Upgrade>?>(nil)
        let channel = try await ClientBootstrap(group: group)
            .connectTimeout(TimeAmount(configuration.connectTimeout))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if url.isSecure, let tls {
                        // The certificate must be the XMPP domain's, as on TCP (RFC 7395 §3.2
                        // and RFC 6120 §13.7.2), whatever host serves the WebSocket.
                        try pipeline.addHandler(TLSHandler(context: tls, serverName: configuration.jid.domainpart))
                    }
                    // Below the frame codec: every byte from the server (a pong too) is life.
                    try pipeline.addHandler(StreamKeepaliveHandler(configuration: keepalive))
                    var http = NIOUpgradableHTTPClientPipelineConfiguration(upgradeConfiguration: upgradeConfiguration)
                    http.leftOverBytesStrategy = .forwardBytes
                    let result = try pipeline.configureUpgradableHTTPClientPipeline(configuration: http)
                    upgraded.withLockedValue { $0 = result }
                }
            }
            .connect(host: url.host, port: url.port).get()
        guard let upgrade = upgraded.withLockedValue({ $0 }) else { throw WebSocketConnectError.closedDuringUpgrade(url) }
        let timeout = channel.eventLoop.scheduleTask(in: TimeAmount(configuration.connectTimeout)) { channel.close(promise: nil) }
        defer { timeout.cancel() }
        let outcome: Upgrade
        do {
            outcome = try await upgrade.get()
        } catch ChannelError.inappropriateOperationForState {
            channel.close(promise: nil)
            throw WebSocketConnectError.closedDuringUpgrade(url)
        } catch {
            channel.close(promise: nil)
            throw error
        }
        switch outcome {
        case .xmpp:
            // Only now: while the upgrade handler is still in the pipeline it refuses writes,
            // and the stream handler writes `<open/>` as soon as it is added.
            try await channel.eventLoop.submit {
                guard channel.isActive else { throw WebSocketConnectError.closedDuringUpgrade(url) }
                try channel.pipeline.syncOperations.addHandler(
                    ClientStreamHandler(
                        configuration: configuration, tls: tls, registersAccount: registersAccount, resumption: resumption,
                        callbacks: callbacks()))
            }.get()
            return ClientConnection(channel: channel)
        case .withoutXMPPSubprotocol:
            try? await channel.close()
            throw WebSocketConnectError.noXMPPSubprotocol(url)
        case .refused(let answer):
            let (response, body) = try await answer.get()
            try? await channel.close()
            throw WebSocketConnectError.refused(url, status: response.status, body: body)
        }
    }
}

/// Reads a refused upgrade's answer: its status, and the first line of its body (parleyd and
/// Prosody say why there), so the error can show it.
private final class RefusalReader: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart

    private let promise: EventLoopPromise<(HTTPResponseHead, String)>
    private var head: HTTPResponseHead?
    private var body = ByteBuffer()
    private var done = false

    init(promise: EventLoopPromise<(HTTPResponseHead, String)>) {
        self.promise = promise
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body(var part):
            // Only the start of it is shown.
            if body.readableBytes < 512 { body.writeBuffer(&part) }
        case .end:
            complete()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        complete()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        complete()
    }

    private func complete() {
        guard !done else { return }
        done = true
        guard let head else { return promise.fail(ChannelError.inappropriateOperationForState) }
        let text = body.readString(length: min(body.readableBytes, 512)) ?? ""
        let line = text.split(whereSeparator: \.isNewline).first.map { String($0).trimmingCharacters(in: .whitespaces) } ?? ""
        promise.succeed((head, line.count > 200 ? String(line.prefix(200)) + "…" : line))
    }
}
