import NIOCore
import ParleyCore

/// Keeps an XML stream alive and notices when it died: writes a single space (RFC 6120
/// §4.6.1) when nothing was sent for `whitespaceInterval` (but never where a stream header
/// is due, see `AwaitingHeader`), and reports
/// `StreamError(.connectionTimeout)` through `errorCaught` when nothing at all arrived for
/// `idleTimeout`. Before that, after `pingAfter` of silence, it fires `PeerIdle` once so the
/// protocol layer can ask the peer for a sign of life (an XEP-0199 ping). It sits on the plaintext byte side of the pipeline, below the XML decoder,
/// so whitespace the peer sends counts as life too.
public final class StreamKeepaliveHandler: ChannelDuplexHandler, RemovableChannelHandler, LoopTimed {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer
    public typealias OutboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    public struct Configuration: Sendable {
        /// Send whitespace after this long without writing; nil never sends any.
        public var whitespaceInterval: TimeAmount?
        /// Report `PeerIdle` after this long without reading; nil never does.
        public var pingAfter: TimeAmount?
        /// Give up on a peer silent for this long; nil never does.
        public var idleTimeout: TimeAmount?

        public init(
            whitespaceInterval: TimeAmount? = .seconds(60), pingAfter: TimeAmount? = .seconds(120),
            idleTimeout: TimeAmount? = .seconds(300)
        ) {
            self.whitespaceInterval = whitespaceInterval
            self.pingAfter = pingAfter
            self.idleTimeout = idleTimeout
        }
    }

    /// Fired inbound once per silent spell, after `pingAfter`.
    public struct PeerIdle: Sendable {}

    /// Sent with `triggerUserOutboundEvent` by the handler that owns the stream when the next
    /// bytes it writes must be a stream header: when the connection starts, and when its side
    /// of the stream restarts (after `<proceed/>` or SASL `<success/>`). Whitespace then waits
    /// until something has been written, since before a header it would precede the XML
    /// declaration and make the new stream ill-formed.
    public struct AwaitingHeader: Sendable {
        public init() {}
    }

    /// `Configuration` as nanoseconds, -1 for none: 24 bytes where the three optionals took
    /// 48, in every connection.
    private let timings: (whitespaceInterval: Int64, pingAfter: Int64, idleTimeout: Int64)
    private var configuration: Configuration {
        func amount(_ nanoseconds: Int64) -> TimeAmount? { nanoseconds < 0 ? nil : .nanoseconds(nanoseconds) }
        return Configuration(
            whitespaceInterval: amount(timings.whitespaceInterval), pingAfter: amount(timings.pingAfter),
            idleTimeout: amount(timings.idleTimeout))
    }
    private var lastRead = NIODeadline.now()
    private var lastWrite = NIODeadline.now()
    /// Set while running: the deadline's callback needs it. Cleared when stopped, since the
    /// context holds this handler.
    private var context: ChannelHandlerContext?
    private var timerSlot: Int32 = -1
    public var loopTimerSlot: Int {
        get { Int(timerSlot) }
        set { timerSlot = Int32(newValue) }
    }
    private var timedOut = false
    private var idleReported = false
    private var running = false
    /// False from an `AwaitingHeader` until the next write.
    private var whitespaceAllowed = true

    public init(configuration: Configuration) {
        func nanoseconds(_ amount: TimeAmount?) -> Int64 { amount.map { max($0.nanoseconds, 0) } ?? -1 }
        timings = (
            nanoseconds(configuration.whitespaceInterval), nanoseconds(configuration.pingAfter),
            nanoseconds(configuration.idleTimeout)
        )
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context: context) }
    }

    public func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        stop()
    }

    public func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        lastRead = context.eventLoop.now
        if idleReported {
            // The next PeerIdle is due `pingAfter` from now, which may come before the armed
            // timer, or there may be no timer at all (nothing else configured).
            idleReported = false
            if running, !timedOut { rearm(context: context) }
        }
        context.fireChannelRead(data)
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        lastWrite = context.eventLoop.now
        whitespaceAllowed = true
        context.write(data, promise: promise)
    }

    public func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard event is AwaitingHeader else {
            return context.triggerUserOutboundEvent(event, promise: promise)
        }
        whitespaceAllowed = false
        promise?.succeed(())
    }

    private func start(context: ChannelHandlerContext) {
        guard !running else { return }
        running = true
        self.context = context
        lastRead = context.eventLoop.now
        lastWrite = lastRead
        scheduleCheck(context: context)
    }

    private func stop() {
        running = false
        if let context { LoopTimers.on(context.eventLoop).cancel(self) }
        context = nil
    }

    private func rearm(context: ChannelHandlerContext) {
        scheduleCheck(context: context)
    }

    public func deadlinePassed(now: NIODeadline) {
        guard let context else { return }
        check(context: context)
    }

    /// One deadline per connection, for whichever comes first, on the loop's shared timer
    /// (`LoopTimers`): at 100,000 idle sessions a scheduled task each was memory, and time
    /// to cancel.
    private func scheduleCheck(context: ChannelHandlerContext) {
        // A handler that reacted to PeerIdle may have closed the channel (and stopped us).
        guard running else { return }
        var deadlines: [NIODeadline] = []
        if let interval = configuration.whitespaceInterval {
            // Before a header there is nothing to keep alive yet; look again later.
            deadlines.append(whitespaceAllowed ? lastWrite + interval : context.eventLoop.now + interval)
        }
        if let timeout = configuration.idleTimeout { deadlines.append(lastRead + timeout) }
        if let pingAfter = configuration.pingAfter, !idleReported { deadlines.append(lastRead + pingAfter) }
        guard let next = deadlines.min() else {
            return LoopTimers.on(context.eventLoop).cancel(self)
        }
        LoopTimers.on(context.eventLoop).schedule(self, at: next)
    }

    private func check(context: ChannelHandlerContext) {
        // The loop's clock, which the timer ran on (and which tests can drive).
        let now = context.eventLoop.now
        if let timeout = configuration.idleTimeout, now >= lastRead + timeout, !timedOut {
            timedOut = true
            let seconds = timeout.nanoseconds / 1_000_000_000
            context.fireErrorCaught(
                StreamError(.connectionTimeout, text: "Nothing was received for \(seconds) seconds."))
            return
        }
        if let pingAfter = configuration.pingAfter, !idleReported, now >= lastRead + pingAfter {
            idleReported = true
            context.fireUserInboundEventTriggered(PeerIdle())
        }
        if let interval = configuration.whitespaceInterval, whitespaceAllowed, now >= lastWrite + interval {
            var space = context.channel.allocator.buffer(capacity: 1)
            space.writeStaticString(" ")
            write(context: context, data: wrapOutboundOut(space), promise: nil)
            context.flush()
        }
        scheduleCheck(context: context)
    }
}
