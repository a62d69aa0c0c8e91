import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOWebSocket
import ParleyServer
import ServiceLifecycle

/// HTTP/1.1 connections of the HTTP service that may become XMPP WebSocket sessions, or carry
/// BOSH requests.
///
/// Requests that are not an upgrade go to the routes as on a plain HTTP/1.1 channel. An
/// accepted upgrade does not become an async WebSocket handler: the connection keeps a NIO
/// pipeline whose tail is the c2s session handler, behind the RFC 7395 framing, so a WebSocket
/// session costs about what a TCP one does and runs the very same code. Likewise a connection
/// whose first request is for the BOSH path is served by `BOSHConnectionHandler` in its
/// pipeline, with no task behind it, until it asks for something else.
struct WebSocketUpgradeChannel: ServerChildChannel, HTTPChannelHandler {
    enum UpgradeResult: Sendable {
        case webSocket
        case bosh
        case notUpgraded(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        case refused(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, WebSocketEndpoint.Refusal)
    }

    struct Value: ServerChildChannelValue {
        let upgradeResult: EventLoopFuture<UpgradeResult>
        let channel: any Channel
    }

    let responder: HTTPChannelHandler.Responder
    let http1: HTTP1Channel.Configuration
    let endpoint: WebSocketEndpoint?
    let bosh: BOSHEndpoint?

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            // Most requests here are small (BOSH bodies, WebSocket frames): NIO's default first
            // read buffer of 2 KiB stays with each connection for its life, as on c2s (C2SListener).
            // Bigger reads (uploads) grow it again.
            try channel.syncOptions?.setOption(
                .recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 65_536))
            let refusal = NIOLoopBoundBox<WebSocketEndpoint.Refusal?>(nil, eventLoop: channel.eventLoop)
            let firstIsBOSH = NIOLoopBoundBox(false, eventLoop: channel.eventLoop)
            var upgraders: [any NIOTypedHTTPServerProtocolUpgrader<UpgradeResult>] = []
            if let endpoint { upgraders.append(Self.upgrader(endpoint, refusal: refusal)) }
            let http1 = self.http1
            let bosh = self.bosh
            let channelHandler = self
            let configuration = NIOTypedHTTPServerUpgradeConfiguration(
                upgraders: upgraders,
                notUpgradingCompletionHandler: { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let pipeline = channel.pipeline.syncOperations
                        try pipeline.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                        if let bosh, firstIsBOSH.value {
                            try pipeline.addHandler(HTTPConnectionStateHandler(idleTimeout: http1.idleTimeout.map { .init($0) }, logger: logger))
                            try pipeline.addHandler(
                                BOSHConnectionHandler(endpoint: bosh) { context in
                                    try context.pipeline.syncOperations.addHandlers(http1.additionalChannelHandlers())
                                    let asyncChannel = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                                        wrappingChannelSynchronously: context.channel, configuration: .init(isOutboundHalfClosureEnabled: true))
                                    // Not a child of the server's task group: this connection's
                                    // task ended when it was found to be a BOSH one. Graceful
                                    // shutdown still reaches it (Hummingbird's quiescing closes
                                    // the connection once its request is answered).
                                    Task { await channelHandler.handleHTTP(asyncChannel: asyncChannel, logger: logger) }
                                })
                            return .bosh
                        }
                        try pipeline.addHandlers(http1.additionalChannelHandlers())
                        try pipeline.addHandler(HTTPConnectionStateHandler(idleTimeout: http1.idleTimeout.map { .init($0) }, logger: logger))
                        let asyncChannel = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                            wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
                        if let refused = refusal.value { return .refused(asyncChannel, refused) }
                        return .notUpgraded(asyncChannel)
                    }
                })
            var pipeline = NIOUpgradableHTTPServerPipelineConfiguration<UpgradeResult>(upgradeConfiguration: configuration)
            pipeline.enablePipelining = false
            pipeline.enableErrorHandling = false
            pipeline.enableResponseHeaderValidation = false
            let result = try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(configuration: pipeline)
            if let bosh {
                let upgrade = try channel.pipeline.syncOperations.handler(type: NIOTypedHTTPServerUpgradeHandler<UpgradeResult>.self)
                try channel.pipeline.syncOperations.addHandler(FirstRequestPeek(bosh: bosh, isBOSH: firstIsBOSH), position: .before(upgrade))
            }
            return Value(upgradeResult: result, channel: channel)
        }
    }

    private static func upgrader(
        _ endpoint: WebSocketEndpoint, refusal: NIOLoopBoundBox<WebSocketEndpoint.Refusal?>
    ) -> NIOTypedWebSocketServerUpgrader<UpgradeResult> {
        NIOTypedWebSocketServerUpgrader<UpgradeResult>(
            // Fragments are joined (and limited) by the framing handler; one frame can be no
            // larger than a whole message.
            maxFrameSize: endpoint.configuration.maxMessageBytes,
            enableAutomaticErrorHandling: false,
            shouldUpgrade: { channel, head in
                if let refused = endpoint.refusal(of: head) {
                    refusal.value = refused
                    return channel.eventLoop.makeSucceededFuture(nil)
                }
                return channel.eventLoop.makeSucceededFuture(HTTPHeaders([("Sec-WebSocket-Protocol", WebSocketEndpoint.subprotocol)]))
            },
            upgradePipelineHandler: { channel, _ in
                channel.eventLoop.makeCompletedFuture {
                    try endpoint.installSession(on: channel)
                    return .webSocket
                }
            })
    }

    func handle(value: Value, logger: Logger) async {
        do {
            // A connection that has not sent its first request yet (browsers open spare ones
            // ahead of need) would hold a graceful shutdown for ever: nothing else completes
            // this future, and cancellation does not reach it. Closing it fails the future.
            let channel = value.channel
            // Nor may it stay open without a request for longer than an idle one may: the
            // idle timeout of HTTP connections only starts once the first request is read.
            let firstRequestTimeout = http1.idleTimeout.map { timeout in
                channel.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
            }
            let upgradeResult = try await withGracefulShutdownHandler {
                try await value.upgradeResult.get()
            } onGracefulShutdown: {
                channel.close(promise: nil)
            }
            firstRequestTimeout?.cancel()
            switch upgradeResult {
            case .bosh:
                // The connection lives on in its pipeline (BOSHConnectionHandler); a task per
                // held request is what this avoids.
                return
            case .notUpgraded(let http):
                await handleHTTP(asyncChannel: http, logger: logger)
            case .refused(let http, let refusal):
                await refuse(http, refusal, logger: logger)
            case .webSocket:
                // The session runs in the pipeline, and RunningServer tracks its connection: at
                // shutdown it says <system-shutdown/> (or redirects) and waits for it, as for a
                // TCP one. A task kept here until the connection closed only held its stack
                // (about 13 KiB per idle session, as measured for BOSH).
                return
            }
        } catch {
            logger.debug("WebSocket upgrade failed", metadata: ["error": "\(error)"])
        }
    }

    /// A refused upgrade gets a plain HTTP answer saying why, and the connection closes.
    private func refuse(
        _ http: NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, _ refusal: WebSocketEndpoint.Refusal, logger: Logger
    ) async {
        do {
            try await http.executeThenClose { _, outbound in
                let body = ByteBuffer(string: refusal.text)
                let head = HTTPResponse(
                    status: refusal.status,
                    headerFields: [.connection: "close", .contentType: "text/plain; charset=utf-8", .contentLength: "\(body.readableBytes)"])
                try await outbound.write(contentsOf: [.head(head), .body(body), .end(nil)])
            }
        } catch {
            logger.trace("could not answer a refused WebSocket upgrade", metadata: ["error": "\(error)"])
        }
    }
}

/// Notes whether a connection's first request is for the BOSH endpoint, before the upgrade
/// handler decides what the connection becomes; then leaves the pipeline.
private final class FirstRequestPeek: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    private let bosh: BOSHEndpoint
    private let isBOSH: NIOLoopBoundBox<Bool>

    init(bosh: BOSHEndpoint, isBOSH: NIOLoopBoundBox<Bool>) {
        self.bosh = bosh
        self.isBOSH = isBOSH
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let head) = unwrapInboundIn(data) else { return context.fireChannelRead(data) }
        isBOSH.value = bosh.requestKind(method: head.method.rawValue, path: head.uri) != nil
        context.fireChannelRead(data)
        // Only after passing the head on: a context that left the pipeline has no next handler.
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}
