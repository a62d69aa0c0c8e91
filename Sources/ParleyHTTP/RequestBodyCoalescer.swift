import NIOCore
import NIOHTTPTypes

/// Joins the request body parts that arrive in one read into one part.
///
/// Behind TLS every record (16 KiB at most) becomes a body part of its own. Hummingbird hands
/// parts to the route through an async sequence that stops reading the socket when ten parts
/// wait, so a large upload went in bursts of ten records: read, stop, wait for the route's
/// task to drain, hop back to the event loop to read again — the upload's speed was set by
/// thread wake-ups, not by CPU (PUT of 100 MiB over HTTPS at ~60 MB/s with the CPU mostly
/// idle). Joined, a read is one part, and reading goes on while the route writes to disk.
/// A part alone in its read is passed on as it is; joining copies, up to `limit` bytes.
final class RequestBodyCoalescer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    private let limit: Int
    private var pending: ByteBuffer?
    private var joined = false

    init(limit: Int = 1 << 20) {
        self.limit = limit
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .body(let part) = unwrapInboundIn(data) else {
            flush(context: context)
            context.fireChannelRead(data)
            return
        }
        guard var buffer = pending else {
            pending = part
            return
        }
        if !joined {
            // The first part is a slice of the TLS or socket buffer: copy into one of our own.
            var fresh = context.channel.allocator.buffer(capacity: Swift.min(limit, Swift.max(buffer.readableBytes * 4, 64 * 1024)))
            fresh.writeImmutableBuffer(buffer)
            buffer = fresh
            joined = true
        }
        pending = nil  // unique, so the append below does not copy the buffer
        buffer.writeImmutableBuffer(part)
        pending = buffer
        if buffer.readableBytes >= limit { flush(context: context) }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flush(context: context)
        context.fireChannelReadComplete()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        flush(context: context)
    }

    private func flush(context: ChannelHandlerContext) {
        guard let buffer = pending else { return }
        pending = nil
        joined = false
        context.fireChannelRead(wrapInboundOut(.body(buffer)))
    }
}
