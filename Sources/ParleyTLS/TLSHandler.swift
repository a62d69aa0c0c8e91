import NIOCore

/// TLS for one channel, server or client side, over OpenSSL memory BIOs.
///
/// Works from the first byte (direct TLS, XEP-0368) and when inserted at `.first` into a
/// pipeline that already carried plaintext (STARTTLS): the handshake starts as soon as the
/// handler is in an active channel. Writes made before the handshake completes are held and
/// sent, with their promises, right after it. Failures reach the pipeline as `TLSError` through
/// `errorCaught`, after which the channel is closed.
public final class TLSHandler: ChannelDuplexHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer
    public typealias OutboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    public enum State: Equatable, Sendable {
        /// Added, but the channel is not active yet.
        case idle
        case handshaking
        case active
        /// We sent close_notify and wait for the peer's (bounded by `closeTimeout`).
        case closing
        case closed
    }

    public private(set) var state: State = .idle

    private let tlsContext: TLSContext
    private let serverName: String?
    private let closeTimeout: TimeAmount
    private var connection: SSLConnection?
    private var pendingWrites: [(ByteBuffer, EventLoopPromise<Void>?)] = []
    private var closePromise: EventLoopPromise<Void>?
    private var closeTimer: Scheduled<Void>?
    private var eventLoop: (any EventLoop)?

    /// - Parameters:
    ///   - serverName: client only: the name to verify and send as SNI (the XMPP domain).
    ///   - closeTimeout: how long a clean close waits for the peer's close_notify.
    public init(context: TLSContext, serverName: String? = nil, closeTimeout: TimeAmount = .seconds(2)) {
        self.tlsContext = context
        self.serverName = serverName
        self.closeTimeout = closeTimeout
    }

    // MARK: Public queries (call on the channel's event loop)

    /// RFC 9266 `tls-exporter` channel binding (32 bytes) for SCRAM-*-PLUS.
    public func channelBindingTLSExporter() throws -> [UInt8] {
        eventLoop?.preconditionInEventLoop()
        guard state == .active, let connection else {
            throw TLSError.channelBindingUnavailable("no established TLS session")
        }
        return try connection.tlsExporter()
    }

    public var negotiatedALPN: String? {
        eventLoop?.preconditionInEventLoop()
        return state == .active ? connection?.negotiatedALPN : nil
    }

    public var peerCertificateFingerprint: String? {
        eventLoop?.preconditionInEventLoop()
        return connection?.peerCertificateFingerprint
    }

    // MARK: Lifecycle

    public func handlerAdded(context: ChannelHandlerContext) {
        eventLoop = context.eventLoop
        do {
            connection = try SSLConnection(context: tlsContext, serverName: serverName)
        } catch {
            state = .closed
            context.fireErrorCaught(error)
            context.close(promise: nil)
            return
        }
        if context.channel.isActive {
            startHandshake(context: context)
        }
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        closeTimer?.cancel()
        closeTimer = nil
        failPendingWrites(TLSError.closed)
        if let promise = closePromise {
            closePromise = nil
            promise.fail(TLSError.closed)
        }
        state = .closed
        connection?.free()
        connection = nil
    }

    public func channelActive(context: ChannelHandlerContext) {
        if state == .idle {
            startHandshake(context: context)
        }
        context.fireChannelActive()
    }

    public func channelInactive(context: ChannelHandlerContext) {
        closeTimer?.cancel()
        closeTimer = nil
        switch state {
        case .handshaking, .active:
            // No close_notify came first: whatever we received may be truncated.
            state = .closed
            failPendingWrites(TLSError.unexpectedEOF)
            context.fireErrorCaught(TLSError.unexpectedEOF)
        case .closing:
            // The peer dropped the connection instead of answering our close_notify; the
            // close the user asked for has still happened.
            state = .closed
            closePromise?.succeed(())
            closePromise = nil
        case .idle, .closed:
            state = .closed
        }
        context.fireChannelInactive()
    }

    // MARK: Inbound

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        if state == .idle {
            startHandshake(context: context)
        }
        guard state != .closed, let connection else { return }
        connection.feed(buffer)
        advance(context: context)
    }

    public func channelReadComplete(context: ChannelHandlerContext) {
        flushOutput(context: context)
        context.fireChannelReadComplete()
    }

    // MARK: Outbound

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let buffer = unwrapOutboundIn(data)
        switch state {
        case .idle, .handshaking:
            pendingWrites.append((buffer, promise))
        case .active:
            encrypt(buffer, promise: promise, context: context)
        case .closing, .closed:
            promise?.fail(TLSError.closed)
        }
    }

    public func flush(context: ChannelHandlerContext) {
        // Before the handshake, the held writes get flushed when it completes.
        if state != .idle, state != .handshaking {
            context.flush()
        }
    }

    public func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard mode == .all else {
            context.close(mode: mode, promise: promise)
            return
        }
        switch state {
        case .idle, .handshaking, .closed:
            // close_notify is meaningless before the handshake; closed means nothing to say.
            state = .closed
            failPendingWrites(TLSError.closed)
            context.close(mode: mode, promise: promise)
        case .closing:
            if let existing = closePromise {
                promise.map { existing.futureResult.cascade(to: $0) }
            } else {
                closePromise = promise
            }
        case .active:
            sendCloseNotify(context: context, promise: promise)
        }
    }

    // MARK: Engine

    private func startHandshake(context: ChannelHandlerContext) {
        guard state == .idle, connection != nil else { return }
        state = .handshaking
        advance(context: context)
    }

    /// Runs OpenSSL as far as the buffered input allows, then acts on what came out.
    private func advance(context: ChannelHandlerContext) {
        if state == .handshaking {
            guard let connection else { return }
            switch connection.handshake() {
            case .incomplete:
                flushOutput(context: context)
                // Keep reading even when the user turned autoRead off: they cannot drive a
                // handshake they do not see.
                context.read()
                return
            case .complete:
                flushOutput(context: context)
                handshakeCompleted(context: context)
            case .closedByPeer:
                fail(TLSError.handshakeFailed(reason: "peer closed the connection during the handshake"), context: context)
                return
            case .failed(let error):
                fail(error, context: context)
                return
            }
        }
        if state == .active || state == .closing {
            readPlaintext(context: context)
        }
    }

    private func handshakeCompleted(context: ChannelHandlerContext) {
        guard let connection else { return }
        state = .active
        let held = pendingWrites
        pendingWrites = []
        for (buffer, promise) in held {
            encrypt(buffer, promise: promise, context: context)
        }
        context.flush()
        let info = TLSHandshakeInfo(
            negotiatedALPN: connection.negotiatedALPN,
            peerCertificateFingerprint: connection.peerCertificateFingerprint,
            protocolVersion: connection.protocolVersion, cipherSuite: connection.cipherSuite,
            tlsExporter: try? connection.tlsExporter())
        context.fireUserInboundEventTriggered(TLSEvent.handshakeCompleted(info))
    }

    /// Decrypts everything available before telling the pipeline anything, so that a handler
    /// reacting to the data (closing, removing us) cannot pull the SSL out from under the loop.
    /// One channelRead of ciphertext yields at most one buffer of plaintext: fewer, larger
    /// reads for the XML parser, and the size stays bounded by what the socket delivered.
    private func readPlaintext(context: ChannelHandlerContext) {
        guard let connection else { return }
        var plaintext = context.channel.allocator.buffer(capacity: 0)
        var outcome: SSLConnection.Outcome
        while true {
            outcome = connection.read(into: &plaintext)
            guard case .complete = outcome else { break }
        }
        flushOutput(context: context)  // post-handshake messages (tickets, key updates)
        if state == .active { connection.releaseHandshakeBuffers() }

        // After our own close_notify we no longer deliver data.
        if state == .active, plaintext.readableBytes > 0 {
            context.fireChannelRead(wrapInboundOut(plaintext))
            guard state == .active else { return }
        }
        switch outcome {
        case .complete, .incomplete:
            break
        case .closedByPeer:
            peerClosed(context: context)
        case .failed(let error):
            fail(error, context: context)
        }
    }

    private func encrypt(_ buffer: ByteBuffer, promise: EventLoopPromise<Void>?, context: ChannelHandlerContext) {
        // A held write may come after a failure that happened while earlier ones were sent.
        guard state == .active, let connection else {
            promise?.fail(TLSError.closed)
            return
        }
        if case .failed(let error) = connection.write(buffer) {
            promise?.fail(error)
            fail(error, context: context)
            return
        }
        // One ciphertext write per plaintext write keeps each promise tied to its own bytes.
        let output = connection.takeOutput(allocator: context.channel.allocator)
            ?? context.channel.allocator.buffer(capacity: 0)
        context.write(wrapOutboundOut(output), promise: promise)
    }

    private func flushOutput(context: ChannelHandlerContext) {
        guard let output = connection?.takeOutput(allocator: context.channel.allocator) else { return }
        context.writeAndFlush(wrapOutboundOut(output), promise: nil)
    }

    // MARK: Closing

    private func sendCloseNotify(context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        guard let connection else {
            context.close(promise: promise)
            return
        }
        state = .closing
        closePromise = promise
        let outcome = connection.shutdown()
        flushOutput(context: context)
        switch outcome {
        case .complete, .closedByPeer, .failed:
            finishClose(context: context)
        case .incomplete:
            closeTimer = context.eventLoop.assumeIsolated().scheduleTask(in: closeTimeout) {
                // The peer never answered; closing anyway is the point of the timeout.
                self.closeTimer = nil
                if self.state == .closing { self.finishClose(context: context) }
            }
        }
    }

    /// The peer's close_notify arrived: answer it, then close the transport (RFC 8446 6.1).
    private func peerClosed(context: ChannelHandlerContext) {
        if state == .active {
            _ = connection?.shutdown()
            flushOutput(context: context)
        }
        finishClose(context: context)
    }

    private func finishClose(context: ChannelHandlerContext) {
        closeTimer?.cancel()
        closeTimer = nil
        state = .closed
        failPendingWrites(TLSError.closed)
        let promise = closePromise
        closePromise = nil
        context.close(promise: promise)
    }

    private func fail(_ error: TLSError, context: ChannelHandlerContext) {
        guard state != .closed else { return }
        flushOutput(context: context)  // the alert tells the peer why
        failPendingWrites(error)
        context.fireErrorCaught(error)
        finishClose(context: context)
    }

    private func failPendingWrites(_ error: any Error) {
        let held = pendingWrites
        pendingWrites = []
        for (_, promise) in held {
            promise?.fail(error)
        }
    }
}

@available(*, unavailable)
extension TLSHandler: Sendable {}
