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

/// HTTP/1.1 connections of the HTTP service that may become XMPP WebSocket sessions.
///
/// Requests that are not an upgrade go to the routes as on a plain HTTP/1.1 channel. An
/// accepted upgrade does not become an async WebSocket handler: the connection keeps a NIO
/// pipeline whose tail is the c2s session handler, behind the RFC 7395 framing, so a WebSocket
/// session costs about what a TCP one does and runs the very same code.
struct WebSocketUpgradeChannel: ServerChildChannel, HTTPChannelHandler {
    enum UpgradeResult: Sendable {
        case webSocket
        case notUpgraded(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        case refused(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, WebSocketEndpoint.Refusal)
    }

    struct Value: ServerChildChannelValue {
        let upgradeResult: EventLoopFuture<UpgradeResult>
        let channel: any Channel
    }

    let responder: HTTPChannelHandler.Responder
    let http1: HTTP1Channel.Configuration
    let endpoint: WebSocketEndpoint

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let refusal = NIOLoopBoundBox<WebSocketEndpoint.Refusal?>(nil, eventLoop: channel.eventLoop)
            let endpoint = self.endpoint
            let upgrader = NIOTypedWebSocketServerUpgrader<UpgradeResult>(
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
            let http1 = self.http1
            let configuration = NIOTypedHTTPServerUpgradeConfiguration(
                upgraders: [upgrader],
                notUpgradingCompletionHandler: { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let pipeline = channel.pipeline.syncOperations
                        try pipeline.addHandler(HTTP1ToHTTPServerCodec(secure: false))
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
            return Value(upgradeResult: result, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        let endpoint = self.endpoint
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
            case .notUpgraded(let http):
                await handleHTTP(asyncChannel: http, logger: logger)
            case .refused(let http, let refusal):
                await refuse(http, refusal, logger: logger)
            case .webSocket:
                // The session runs in the pipeline; this task only keeps the connection counted
                // by the HTTP server until it closes. On graceful shutdown the session says
                // <system-shutdown/>, or is redirected (RunningServer tells every session it tracks).
                let channel = value.channel
                await withGracefulShutdownHandler {
                    try? await channel.closeFuture.get()
                } onGracefulShutdown: {
                    channel.pipeline.fireUserInboundEventTriggered(ServerShutdownEvent(endpoint.server.configuration.shutdown))
                }
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
