import NIOCore
import ParleyCore

/// Serializes `XMLStreamOutput` into bytes, keeping track of the namespace context of the
/// stream it opened so stanzas carry no redundant declarations.
///
/// Everything written between two flushes goes into one buffer, handed on at the flush (or
/// whenever it passes `coalescingLimit`). A burst of stanzas to one session (a room's
/// occupant list for a newcomer: one presence per occupant, in one event-loop tick) would
/// otherwise be a buffer and a queue entry each; NIO's queue of pending writes never gives
/// back the capacity it grew to, and the freed small buffers leave the heap fragmented.
/// The buffer is not kept after the flush, so an idle stream holds none.
public final class XMLStreamEncoder: ChannelOutboundHandler, RemovableChannelHandler {
    public typealias OutboundIn = XMLStreamOutput
    public typealias OutboundOut = ByteBuffer

    /// Past this many bytes the pending buffer is written on without waiting for the flush,
    /// so a long burst is a few large writes instead of one ever-growing buffer.
    public static let coalescingLimit = 64 << 10

    private var context = XMLNamespaceContext.clientStream
    /// Whether we have an open stream of our own to close; an error before any header (the
    /// peer's header was unacceptable) must still open one first (RFC 6120 §4.9.1.1).
    private var streamOpen = false
    /// The header to send if an error must be written before any stream was opened: shared
    /// by the encoders of one listener, as it is the same for all (inline, its six strings
    /// cost every idle connection 96 bytes).
    private let fallback: Fallback
    /// Bytes written since the last flush, not yet passed on.
    private var pending: ByteBuffer?
    /// Completed when `pending` is written (several writes' promises, cascaded).
    private var pendingPromise: EventLoopPromise<Void>?
    /// Its own context while it is in a pipeline: what `enqueue` and `flushEnqueued` write on.
    private var handlerContext: ChannelHandlerContext?
    /// NIO's only allocator (a channel's is always this one), not asked of the channel on
    /// every write: that was a measurable share of a room's fan-out. Static, not stored:
    /// its four function pointers were 32 bytes of every connection.
    private static let allocator = ByteBufferAllocator()

    /// A stream header kept for `XMLStreamEncoder`s that may need it, made once and shared.
    public final class Fallback: Sendable {
        public let opening: StreamOpening

        public init(_ opening: StreamOpening) {
            self.opening = opening
        }
    }

    public convenience init(fallbackOpening: StreamOpening = StreamOpening()) {
        self.init(fallback: Fallback(fallbackOpening))
    }

    public init(fallback: Fallback) {
        self.fallback = fallback
    }

    public func handlerAdded(context channelContext: ChannelHandlerContext) {
        handlerContext = channelContext
    }

    public func write(context channelContext: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        encode(unwrapOutboundIn(data), promise: promise, context: channelContext)
    }

    /// What a write of `output` without a promise does, called straight by the handler just
    /// above this one (the session, which the listener gives this encoder), on the channel's
    /// event loop. A room's message to a hundred occupants is a hundred writes: each one
    /// through the pipeline boxed its element into an `NIOAny` (an allocation) and passed two
    /// handler contexts (bench/README.md, MUC, fifth round). False when this encoder is not
    /// (or no longer) in a pipeline: then the caller writes through its context.
    public func enqueue(_ output: XMLStreamOutput) -> Bool {
        guard let handlerContext else { return false }
        encode(output, promise: nil, context: handlerContext)
        return true
    }

    /// `flush`, called straight by the handler above (see `enqueue`); false when not in a pipeline.
    public func flushEnqueued() -> Bool {
        guard let handlerContext else { return false }
        flush(context: handlerContext)
        return true
    }

    private func encode(_ output: XMLStreamOutput, promise: EventLoopPromise<Void>?, context channelContext: ChannelHandlerContext) {
        var buffer: ByteBuffer
        if let pending {
            buffer = pending
            self.pending = nil  // so the append below does not copy the storage
        } else {
            var capacity = 512
            if case .element(let element) = output { capacity = max(capacity, element.serializedSizeEstimate + 64) }
            buffer = Self.allocator.buffer(capacity: capacity)
        }
        switch output {
        case .open(let opening):
            opening.write(to: &buffer)
            context = opening.namespaceContext
            streamOpen = true
        case .element(let element):
            XMLSerializer.write(element, to: &buffer, context: context)
        case .whitespace:
            buffer.writeStaticString(" ")
        case .error(let error):
            if !streamOpen {
                fallback.opening.write(to: &buffer)
                context = fallback.opening.namespaceContext
            }
            XMLSerializer.write(error.element, to: &buffer, context: context)
            buffer.writeStaticString("</stream:stream>")
            streamOpen = false
        case .close:
            buffer.writeStaticString("</stream:stream>")
            streamOpen = false
        }
        pending = buffer
        if let promise {
            if let pendingPromise {
                pendingPromise.futureResult.cascade(to: promise)
            } else {
                pendingPromise = promise
            }
        }
        if buffer.readableBytes >= Self.coalescingLimit { writePending(channelContext) }
    }

    public func flush(context channelContext: ChannelHandlerContext) {
        writePending(channelContext)
        channelContext.flush()
    }

    /// Outbound events keep their place after what was written before them: a handler below
    /// may depend on the order (the keepalive allows whitespace again on any write, and must
    /// see `<success/>` before the `AwaitingHeader` that follows it).
    public func triggerUserOutboundEvent(
        context channelContext: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?
    ) {
        writePending(channelContext)
        channelContext.triggerUserOutboundEvent(event, promise: promise)
    }

    /// What was written before a close would have been dropped unflushed in NIO's queue too;
    /// its promises fail the same way.
    public func close(context channelContext: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if mode != .output { failPending(ChannelError.ioOnClosedChannel) }
        channelContext.close(mode: mode, promise: promise)
    }

    public func handlerRemoved(context channelContext: ChannelHandlerContext) {
        // The context holds this handler: keeping it would be a cycle.
        handlerContext = nil
        if channelContext.channel.isActive {
            // Removed from a live stream: what was written goes on, unflushed as it was.
            writePending(channelContext)
        } else {
            failPending(ChannelError.ioOnClosedChannel)
        }
    }

    private func writePending(_ channelContext: ChannelHandlerContext) {
        guard let buffer = pending else { return }
        let promise = pendingPromise
        pending = nil
        pendingPromise = nil
        channelContext.write(wrapOutboundOut(buffer), promise: promise)
    }

    private func failPending(_ error: any Error) {
        pending = nil
        let promise = pendingPromise
        pendingPromise = nil
        promise?.fail(error)
    }
}
