import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus

/// A minimal HTTP listener that serves `GET /metrics` in the Prometheus text format. It is
/// off unless configured, and listens on loopback by default: metrics reveal load patterns.
struct MetricsEndpoint {
    static func bind(host: String, port: Int, registry: PrometheusCollectorRegistry, group: any EventLoopGroup) async throws -> any Channel {
        try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(MetricsHTTPHandler(registry: registry))
                }
            }
            .bind(host: host, port: port).get()
    }
}

final class MetricsHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let registry: PrometheusCollectorRegistry
    private var path = ""
    private var method = HTTPMethod.GET

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            path = head.uri
            method = head.method
        case .body:
            break
        case .end:
            respond(context: context)
        }
    }

    private func respond(context: ChannelHandlerContext) {
        let found = method == .GET && (path == "/metrics" || path.hasPrefix("/metrics?"))
        var body = context.channel.allocator.buffer(capacity: 4096)
        if found {
            body.writeBytes(registry.emitToBuffer())
        } else {
            body.writeString("Not found: metrics are at /metrics\n")
        }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: found ? "text/plain; version=0.0.4" : "text/plain")
        headers.add(name: "Content-Length", value: "\(body.readableBytes)")
        headers.add(name: "Connection", value: "close")
        let head = HTTPResponseHead(version: .http1_1, status: found ? .ok : .notFound, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}
