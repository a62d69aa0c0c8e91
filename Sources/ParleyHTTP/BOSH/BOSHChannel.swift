import NIOConcurrencyHelpers
import NIOCore
import ParleyStream

/// What a BOSH session does with what its client session writes: the other side of the
/// pipeline's head. Called on the channel's event loop.
protocol BOSHChannelDelegate: AnyObject {
    func channelWrote(_ output: XMLStreamOutput)
    /// The session flushed: what it wrote may go out on a held request.
    func channelFlushed()
    /// The session restarted the stream (after SASL success): the next request must say
    /// `xmpp:restart='true'` (XEP-0206 §5).
    func channelRestartRequested()
    /// The session closed (its last word is written) or the BOSH session ended under it.
    func channelClosed()
    func channelReadingChanged(_ autoRead: Bool)
}

/// A NIO channel with no socket under it, whose pipeline holds one client session
/// (`C2SSessionHandler`, the same as on TCP and WebSocket): a BOSH session spans many HTTP
/// requests, each on whichever connection the client used, so none of them can carry it.
///
/// Inbound events are fired into the pipeline by the BOSH session as requests arrive; what
/// the session writes comes out at the head (`ChannelCore.write0`/`flush0`) and goes to the
/// delegate, which answers held requests with it. Closing (by the session, or by the BOSH side
/// for inactivity or a terminate) ends the session as a dropped connection would.
final class BOSHChannel: Channel, ChannelCore, @unchecked Sendable {
    let eventLoop: any EventLoop
    let allocator = ByteBufferAllocator()
    let remoteAddress: SocketAddress?
    var localAddress: SocketAddress? { nil }
    var parent: (any Channel)? { nil }
    var _channelCore: any ChannelCore { self }
    var pipeline: ChannelPipeline { _pipeline }
    var closeFuture: EventLoopFuture<Void> { closePromise.futureResult }

    private var _pipeline: ChannelPipeline!
    private let closePromise: EventLoopPromise<Void>
    /// Read from other threads (the connection tracker, metrics), written on the loop.
    private let state = NIOLockedValueBox((open: true, active: false, writable: true))
    /// Only touched on the loop; nil once closed, which breaks the session ↔ channel cycle.
    var delegate: (any BOSHChannelDelegate)?
    private(set) var autoRead = true

    init(eventLoop: any EventLoop, remoteAddress: SocketAddress?) {
        self.eventLoop = eventLoop
        self.remoteAddress = remoteAddress
        closePromise = eventLoop.makePromise()
        _pipeline = ChannelPipeline(channel: self)
    }

    var isActive: Bool { state.withLockedValue { $0.active } }
    var isWritable: Bool { state.withLockedValue { $0.writable } }
    var isOpen: Bool { state.withLockedValue { $0.open } }

    /// False while much output waits for a request to carry it, so the session checks
    /// whether its client still reads at all.
    func setWritable(_ writable: Bool) {
        state.withLockedValue { $0.writable = writable }
    }

    /// Registers and activates the channel: the session handler starts (connection limits).
    func activate() {
        eventLoop.preconditionInEventLoop()
        state.withLockedValue { $0.active = true }
        pipeline.syncOperations.fireChannelRegistered()
        pipeline.syncOperations.fireChannelActive()
    }

    // MARK: Channel

    func setOption<Option: ChannelOption>(_ option: Option, value: Option.Value) -> EventLoopFuture<Void> {
        if eventLoop.inEventLoop {
            setOption0(option, value: value)
            return eventLoop.makeSucceededVoidFuture()
        }
        let loopBound = NIOLoopBound(self, eventLoop: eventLoop)
        let sendable = UnsafeTransfer(value)
        return eventLoop.submit { loopBound.value.setOption0(option, value: sendable.wrappedValue) }
    }

    private func setOption0<Option: ChannelOption>(_ option: Option, value: Option.Value) {
        // The session turns reading off while storage catches up or while its client is over
        // its stanza rate; the BOSH session then keeps a request's stanzas until it is back on.
        guard option is ChannelOptions.Types.AutoReadOption, let on = value as? Bool, on != autoRead else { return }
        autoRead = on
        delegate?.channelReadingChanged(on)
    }

    func getOption<Option: ChannelOption>(_ option: Option) -> EventLoopFuture<Option.Value> {
        if option is ChannelOptions.Types.AutoReadOption, let value = true as? Option.Value {
            return eventLoop.makeSucceededFuture(value)
        }
        return eventLoop.makeFailedFuture(ChannelError.operationUnsupported)
    }

    // MARK: ChannelCore

    func localAddress0() throws -> SocketAddress { throw ChannelError.operationUnsupported }

    func remoteAddress0() throws -> SocketAddress {
        guard let remoteAddress else { throw ChannelError.operationUnsupported }
        return remoteAddress
    }

    func register0(promise: EventLoopPromise<Void>?) { promise?.succeed(()) }
    func registerAlreadyConfigured0(promise: EventLoopPromise<Void>?) { promise?.succeed(()) }
    func bind0(to: SocketAddress, promise: EventLoopPromise<Void>?) { promise?.fail(ChannelError.operationUnsupported) }
    func connect0(to: SocketAddress, promise: EventLoopPromise<Void>?) { promise?.fail(ChannelError.operationUnsupported) }
    func read0() {}

    func write0(_ data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard isOpen else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        // Taken at once: a write is "out" once it waits for a request to carry it.
        if let output = tryUnwrapData(data, as: XMLStreamOutput.self) { delegate?.channelWrote(output) }
        promise?.succeed(())
    }

    func flush0() {
        delegate?.channelFlushed()
    }

    func triggerUserOutboundEvent0(_ event: Any, promise: EventLoopPromise<Void>?) {
        if event is XMLStreamDecoder.Restart { delegate?.channelRestartRequested() }
        // Keepalive events have no meaning here: BOSH's inactivity timer is the keepalive.
        promise?.succeed(())
    }

    func close0(error: any Error, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        let wasOpen = state.withLockedValue { state -> Bool in
            defer { state.open = false; state.active = false }
            return state.open
        }
        guard wasOpen else {
            promise?.fail(ChannelError.alreadyClosed)
            return
        }
        promise?.succeed(())
        delegate?.channelClosed()
        delegate = nil
        pipeline.syncOperations.fireChannelInactive()
        pipeline.syncOperations.fireChannelUnregistered()
        let loopBound = NIOLoopBound(self, eventLoop: eventLoop)
        eventLoop.execute {
            // Later, as a socket channel does: handlers may still be on the stack.
            let channel = loopBound.value
            channel.removeHandlers(pipeline: channel.pipeline)
            channel.closePromise.succeed(())
        }
    }

    func channelRead0(_ data: NIOAny) {}
    func errorCaught0(error: any Error) {}
}

/// Moves a value known to stay on one event loop across the `submit` boundary.
private struct UnsafeTransfer<Value>: @unchecked Sendable {
    let wrappedValue: Value
    init(_ value: Value) { wrappedValue = value }
}
