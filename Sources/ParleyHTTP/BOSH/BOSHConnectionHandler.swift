import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Answers the BOSH requests of an HTTP/1.1 connection in its NIO pipeline, with no Swift task.
///
/// A BOSH client keeps one request held on each connection, nearly all the time. Through the
/// router, each connection was a task in Hummingbird's server whose async frames (connection
/// loop, responder, route, the wait for the held answer) held about 14 KiB of task stack per
/// idle session, more than the whole client session. Here a held request costs its promise.
///
/// Used on connections whose first request is for the BOSH path. If such a connection later
/// asks for anything else, `fallback` moves it to the ordinary async path once and for all,
/// after this handler (the route serves BOSH there too).
final class BOSHConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart

    private enum State {
        case idle
        case reading(preflight: Bool, close: Bool)
        case answering(close: Bool)
        case passingOn
    }

    private let endpoint: BOSHEndpoint
    private let fallback: (ChannelHandlerContext) throws -> Void
    private var state = State.idle
    private var body: ByteBuffer?
    private var oversized = false

    init(endpoint: BOSHEndpoint, fallback: @escaping (ChannelHandlerContext) throws -> Void) {
        self.endpoint = endpoint
        self.fallback = fallback
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch (state, part) {
        case (.passingOn, _):
            context.fireChannelRead(data)
        case (.idle, .head(let head)):
            guard let kind = endpoint.requestKind(method: head.method.rawValue, path: head.path) else {
                return passOn(context: context, data)
            }
            state = .reading(preflight: kind == .preflight, close: head.headerFields[.connection]?.lowercased() == "close")
        case (.reading, .body(let part)):
            guard !oversized else { return }
            if part.readableBytes + (body?.readableBytes ?? 0) > endpoint.configuration.maxBodyBytes {
                oversized = true
                body = nil
            } else if body == nil {
                body = part
            } else {
                body!.writeImmutableBuffer(part)
            }
        case (.reading(let preflight, let close), .end):
            state = .answering(close: close)
            let bytes = body ?? ByteBuffer()
            body = nil
            if preflight { return write(context: context, status: .ok, contentType: nil, ByteBuffer()) }
            if oversized {
                oversized = false
                return write(context: context, endpoint.oversizedBody())
            }
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            endpoint.receive(bytes, remoteAddress: context.channel.remoteAddress, eventLoop: context.eventLoop).answer
                .hop(to: context.eventLoop)
                .whenSuccess { answer in
                    let (handler, context) = loopBound.value
                    handler.write(context: context, answer)
                }
        default:
            // A request sent before the last one was answered (pipelining, which no BOSH client
            // does) or parts out of order: the connection is not one this handler can serve.
            context.close(promise: nil)
        }
    }

    /// From now on every request goes to the async path; this one first.
    private func passOn(context: ChannelHandlerContext, _ data: NIOAny) {
        state = .passingOn
        do {
            try fallback(context)
            context.fireChannelRead(data)
        } catch {
            context.close(promise: nil)
        }
    }

    private func write(context: ChannelHandlerContext, _ answer: BOSHAnswer) {
        write(context: context, status: .init(code: answer.status), contentType: answer.contentType, answer.body)
    }

    private func write(context: ChannelHandlerContext, status: HTTPResponse.Status, contentType: String?, _ body: ByteBuffer) {
        guard case .answering(let close) = state, context.channel.isActive else { return }
        state = .idle
        var headers = BOSHEndpoint.corsHeaders
        if let contentType { headers[.contentType] = contentType }
        headers[.contentLength] = "\(body.readableBytes)"
        if close { headers[.connection] = "close" }
        context.write(wrapOutboundOut(.head(HTTPResponse(status: status, headerFields: headers))), promise: nil)
        if body.readableBytes > 0 { context.write(wrapOutboundOut(.body(body)), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        if close { context.close(promise: nil) }
    }
}
