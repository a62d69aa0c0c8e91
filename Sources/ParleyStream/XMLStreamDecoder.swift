import NIOCore
import ParleyCore

/// Turns the bytes of an XML stream into `XMLStreamEvent`s.
///
/// libxml2 buffers partial input itself, so this is a plain inbound handler that hands each
/// `ByteBuffer` to the push parser rather than a `ByteToMessageDecoder`. A parse failure is
/// passed on as a `StreamError` through `errorCaught`; the handler that owns the stream sends
/// it to the peer and closes. Nothing more is read from a failed stream.
public final class XMLStreamDecoder: ChannelDuplexHandler, RemovableChannelHandler, LoopTimed {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = XMLStreamEvent
    public typealias OutboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    /// Sent with `triggerUserOutboundEvent` by the handler that negotiates the stream, when a
    /// new stream begins on the same connection (RFC 6120 §4.3.3).
    public enum Restart: Sendable {
        /// After SASL success: bytes after the element that ended the old stream belong to the
        /// new one.
        case afterSASL
        /// After STARTTLS: bytes after `<starttls/>` or `<proceed/>` were sent in the clear
        /// and must not be trusted as part of the encrypted stream; they are dropped.
        case afterTLS
    }

    // Word-sized properties first, bytes last: no padding between them (every connection
    // has one of these).
    private let parser: XMLStreamParser
    private var lastRead = NIODeadline.uptimeNanoseconds(0)
    /// The loop whose `LoopTimers` holds our release deadline, while it does.
    private var releaseLoop: (any EventLoop)?
    /// After this long without input, the parser gives its libxml2 context back; an idle
    /// connection then costs a few kilobytes instead of tens. A stream that speaks again
    /// sooner than the second, longer time after its context went is in use: its next release
    /// waits that long, since a client sending a message every few hundred milliseconds
    /// rebuilt its context (and woke the loop's timer) for every message. Nanoseconds, -1 for
    /// never: the same 16 bytes per connection as the one optional amount before.
    private let releaseDelays: (first: Int64, again: Int64)
    private var timerSlot: Int32 = -1
    public var loopTimerSlot: Int {
        get { Int(timerSlot) }
        set { timerSlot = Int32(newValue) }
    }
    private var pendingRestart: Restart?
    private var isFeeding = false
    private var failed = false
    /// Set by a restart until the new stream's first non-whitespace byte: XML allows nothing
    /// before an XML declaration, but whitespace the peer sent between the old stream's last
    /// element and the new header (a keepalive, a newline after `</auth>`) is legal XMPP.
    private var skippingLeadingWhitespace = false
    /// Set when the stream spoke again within `again` of its previous read, its context gone
    /// meanwhile: the next release waits `again`. Cleared by a longer silence.
    private var inUse = false

    /// `releaseMemoryAgainAfter` (never shorter than `releaseMemoryAfter`) applies to a stream
    /// that came back within that time of its context going; by default, the same.
    public init(
        limits: XMLStreamParser.Limits = .init(), releaseMemoryAfter: TimeAmount? = .seconds(2),
        releaseMemoryAgainAfter: TimeAmount? = nil
    ) {
        parser = XMLStreamParser(limits: limits)
        let first = releaseMemoryAfter.map { max($0.nanoseconds, 0) } ?? -1
        let again = releaseMemoryAgainAfter.map { max($0.nanoseconds, first) } ?? first
        releaseDelays = (first, first < 0 ? -1 : again)
    }

    /// Whether the parser holds its libxml2 context now (false while a quiet stream rests).
    public var parserHoldsContext: Bool { parser.holdsContext }

    /// How long the parser keeps its context through silence now; nil for ever.
    private var releaseMemoryAfter: TimeAmount? {
        let delay = inUse ? releaseDelays.again : releaseDelays.first
        return delay < 0 ? nil : .nanoseconds(delay)
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        cancelMemoryRelease()
    }

    public func channelInactive(context: ChannelHandlerContext) {
        cancelMemoryRelease()
        context.fireChannelInactive()
    }

    private func cancelMemoryRelease() {
        if let loop = releaseLoop { LoopTimers.on(loop).cancel(self) }
        releaseLoop = nil
    }

    /// One deadline per connection at most (on the loop's shared timer), moved on only when
    /// it comes too early.
    private func scheduleMemoryRelease(context: ChannelHandlerContext) {
        guard let idle = releaseMemoryAfter, releaseLoop == nil, !failed else { return }
        releaseLoop = context.eventLoop
        LoopTimers.on(context.eventLoop).schedule(self, at: lastRead + idle)
    }

    public func deadlinePassed(now: NIODeadline) {
        guard let idle = releaseMemoryAfter, let loop = releaseLoop else { return }
        if now - lastRead >= idle {
            releaseLoop = nil
            parser.releaseIdleMemory()
        } else {
            LoopTimers.on(loop).schedule(self, at: lastRead + idle)
        }
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        let now = context.eventLoop.now
        if !parser.holdsContext { inUse = (now - lastRead).nanoseconds < releaseDelays.again }
        lastRead = now
        scheduleMemoryRelease(context: context)
        var buffer = unwrapInboundIn(data)
        while buffer.readableBytes > 0, !failed {
            if skippingLeadingWhitespace {
                skipWhitespace(&buffer)
                if buffer.readableBytes == 0 { break }
            }
            let consumed = feed(buffer, context: context)
            buffer.moveReaderIndex(forwardBy: consumed)
            guard let restart = pendingRestart else { break }
            pendingRestart = nil
            resetParser()
            if case .afterTLS = restart { break }
        }
    }

    public func triggerUserOutboundEvent(
        context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?
    ) {
        guard let restart = event as? Restart else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        if isFeeding {
            // Applied when the parser returns, so the bytes that follow go to the new stream.
            pendingRestart = restart
        } else {
            resetParser()
        }
        promise?.succeed(())
    }

    private func resetParser() {
        parser.reset()
        skippingLeadingWhitespace = true
    }

    private func skipWhitespace(_ buffer: inout ByteBuffer) {
        let whitespace = buffer.readableBytesView.prefix { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        buffer.moveReaderIndex(forwardBy: whitespace.count)
        if buffer.readableBytes > 0 { skippingLeadingWhitespace = false }
    }

    private func feed(_ buffer: ByteBuffer, context: ChannelHandlerContext) -> Int {
        isFeeding = true
        defer { isFeeding = false }
        do {
            return try buffer.withUnsafeReadableBytes { bytes throws(StreamError) in
                try parser.feed(bytes) { event in
                    context.fireChannelRead(self.wrapInboundOut(event))
                    return self.pendingRestart == nil && !self.failed ? .continue : .stop
                }
            }
        } catch {
            failed = true
            context.fireErrorCaught(error)
            return buffer.readableBytes
        }
    }
}
