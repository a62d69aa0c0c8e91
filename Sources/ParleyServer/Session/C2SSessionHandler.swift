import Logging
import NIOCore
import ParleyCore
import ParleyStream
import ParleyTLS

/// One client-to-server connection, from the first stream header to the close: the stream
/// negotiation state machine of RFC 6120 (header → STARTTLS → SASL → restart → bind) and,
/// once bound, the hand-over of every stanza to the router.
///
/// It lives at the tail of the pipeline: `[TLS] → keepalive → XML decoder → XML encoder →
/// this`. All of its state is touched on its channel's event loop only. Storage and password
/// hashing run elsewhere; while such work is in flight the session is `suspended` and
/// queues what arrives, so events are always handled in order.
final class C2SSessionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = XMLStreamEvent
    typealias OutboundOut = XMLStreamOutput

    enum Phase {
        /// Waiting for the client's stream header (first, or after a restart).
        case awaitingHeader
        /// Header answered with features; STARTTLS, SASL or registration may begin.
        case negotiating
        /// Inside a SASL exchange. Boxed: a SCRAM exchange in progress is a few hundred bytes,
        /// which every idle session would otherwise carry inline for good.
        indirect case authenticating(SASLExchange)
        /// Authenticated, stream restarted, waiting for the bind request.
        case awaitingBind
        case bound(SessionHandle)
        case closed
    }

    // Stored properties go word-sized first and single bytes last: Swift lays a class out
    // in declaration order, and every Bool between two words cost 7 bytes of padding in
    // every session.
    let server: ServerContext
    let remoteAddress: String
    /// The encoder just below this handler (TCP and direct TLS: the listener makes both),
    /// written to directly: see `XMLStreamEncoder.enqueue`. nil: through the pipeline.
    let encoder: XMLStreamEncoder?
    /// Built when something is logged, not kept: a stored Logger with its metadata would
    /// cost every idle session a dictionary.
    var logger: Logger {
        var logger = server.logger
        logger[metadataKey: "peer"] = "\(remoteAddress)"
        if let authenticatedUser { logger[metadataKey: "user"] = "\(authenticatedUser)" }
        if case .bound(let handle) = phase { logger[metadataKey: "jid"] = "\(handle.jid)" }
        return logger
    }
    /// The localpart that authenticated, once SASL succeeded.
    var authenticatedUser: String?
    var context: ChannelHandlerContext?
    var suspendedEvents = HeldEvents()
    var stanzaBucket: TokenBucket
    var sessionStart = NIODeadline.now()
    /// The session this connection holds (from bind or resumption on); it may outlive the
    /// connection (XEP-0198).
    var boundSession: BoundSession?
    /// Rarely used state, made when needed (`C2SSessionHandler+Occasional`).
    var occasional: Occasional?
    /// The `to` of the last stanza routed, as written and as parsed (`receivedStanza`).
    var lastAddress: (text: String, jid: JID)?
    var phase = Phase.awaitingHeader
    /// The id of that user's account, as looked up for the authentication.
    var authenticatedAccountID: Int64?
    /// Whether the transport (TCP) may offer STARTTLS (`C2STransport`); only that of it is kept.
    let offersStartTLS: Bool
    var isSecure: Bool
    /// Whether our side of the current stream (since the last restart) has its header out:
    /// a stream error must always follow one (RFC 6120 §4.9.1.1).
    var responseHeaderSent = false
    var admitted = false
    var isSuspended = false
    /// Reading is off because many stanzas wait behind work in flight (storage commits):
    /// a bound client sending faster than storage keeps up is slowed by TCP, not cut off.
    private var heldForWork = false
    var readPaused = false
    var flushScheduled = false
    /// Set while a `DeliveryBatch` writes to this session: it flushes once when done.
    var flushDeferred = false
    var flushOwed = false
    /// XEP-0352: the client's last word was `<inactive/>`.
    var clientInactive = false

    init(server: ServerContext, remoteAddress: String, transport: C2STransport, encoder: XMLStreamEncoder? = nil) {
        self.server = server
        self.remoteAddress = remoteAddress
        self.offersStartTLS = transport.offersStartTLS
        self.encoder = encoder
        self.isSecure = transport.isSecure
        self.stanzaBucket = TokenBucket(rate: server.policy.stanzasPerSecond, burst: server.policy.stanzaBurst)
    }

    // MARK: Channel lifecycle

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { start(context: context) }
    }

    /// The context holds this handler, so keeping it past the pipeline's teardown would be a
    /// reference cycle: every closed connection would leak its handler (and its logger, bucket
    /// and timers) for the life of the process.
    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        server.connections.untrack(context.channel)
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    private func start(context: ChannelHandlerContext) {
        guard !admitted, refusal == nil else { return }
        // Our first bytes are the stream header, whenever the client's header comes.
        context.triggerUserOutboundEvent(StreamKeepaliveHandler.AwaitingHeader(), promise: nil)
        server.metrics.connectionsAccepted.increment()
        switch server.connectionLimiter.admit(address: remoteAddress) {
        case .none:
            admitted = true
            server.metrics.connectionsOpen.increment()
        case .tooManyFromAddress(let limit):
            server.metrics.connectionsRefused.increment()
            refusal = StreamError(.policyViolation, text: "Too many connections from your address (the limit is \(limit)).")
        case .serverFull(let limit):
            server.metrics.connectionsRefused.increment()
            refusal = StreamError(.resourceConstraint, text: "The server has reached its limit of \(limit) connections.")
        }
        let timeout = refusal == nil ? server.policy.unauthenticatedTimeout : .seconds(5)
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        unauthenticatedTimer = context.eventLoop.scheduleTask(in: timeout) {
            let handler = loopBound.value
            if handler.refusal != nil {
                handler.closeNow()
            } else if case .bound = handler.phase {
                return
            } else {
                handler.fail(StreamError(.connectionTimeout, text: "The session was not established within \(timeout.nanoseconds / 1_000_000_000) seconds."))
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        unauthenticatedTimer?.cancel()
        if admitted {
            admitted = false
            server.connectionLimiter.release(address: remoteAddress)
            server.metrics.connectionsOpen.decrement()
        }
        endSession(reason: "connection closed", resumable: true)
        phase = .closed
        pendingSession?.discard()
        pendingSession = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let event = unwrapInboundIn(data)
        // Held while work is in flight, or while the client is over its stanza rate: then
        // reading is off, so only what was already read is held.
        if isSuspended || readPaused {
            suspendedEvents.append(event)
            if !readPaused, suspendedEvents.count > 64 {
                if case .bound = phase {
                    if !heldForWork {
                        heldForWork = true
                        _ = context.channel.setOption(ChannelOptions.autoRead, value: false)
                    }
                } else {
                    // Before binding, a client may pipeline a little while we look something
                    // up; more than this while we cannot answer is abuse.
                    fail(StreamError(.policyViolation, text: "Too many stanzas were sent while authentication was in progress."))
                }
            }
            return
        }
        handle(event)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted(let info)? = event as? TLSEvent {
            isSecure = true
            if server.logger.logLevel <= .debug {
                logger.debug("TLS established", metadata: ["tls": "\(info.protocolVersion) \(info.cipherSuite)"])
            }
        } else if event is StreamKeepaliveHandler.PeerIdle {
            pingIdlePeer()
        } else if let shutdown = event as? ServerShutdownEvent {
            shuttingDown(shutdown)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        switch error {
        case let streamError as StreamError:
            fail(streamError)
        case let tlsError as TLSError:
            logger.info("TLS failed", metadata: ["error": "\(tlsError)"])
            closeNow(reason: "TLS failed: \(tlsError)", resumable: true)
        default:
            logger.debug("connection error", metadata: ["error": "\(error)"])
            closeNow(reason: "connection error: \(error)", resumable: true)
        }
    }

    // MARK: Event dispatch

    private func handle(_ event: XMLStreamEvent) {
        switch event {
        case .streamOpened(let header):
            receivedHeader(header)
        case .streamClosed:
            endSession(reason: "client closed the stream")
            finish(with: .close)
        case .stanza(let element):
            receivedElement(element)
        }
    }

    private func receivedElement(_ element: XMLElement) {
        switch phase {
        case .awaitingHeader, .closed:
            // Only a stream header may come first; the parser reports anything else.
            return
        case .negotiating:
            negotiate(element)
        case .authenticating(let exchange):
            continueAuthentication(exchange, with: element)
        case .awaitingBind:
            if isStreamManagement(element) { return streamManagementBeforeBind(element) }
            if isClientState(element) { return clientState(element) }
            bindOrRefuse(element)
        case .bound(let handle):
            let isMessage = element.name == "message" && element.namespace == XMLNamespace.client
            if !pendingDurability.isEmpty, !isMessage {
                if isAcknowledgementRequest(element), let session = boundSession { return acknowledgeAfterPendingWork(session) }
                // Anything that could be an answer or an acknowledgement waits until the
                // messages before it are durable; consecutive messages share group commits.
                suspendedEvents.pushFront(.stanza(element))
                return waitForDurability()
            }
            if !isMessage, !isAnsweredByNothing(element), !isAcknowledgementRequest(element),
                let newest = newestUnconfirmedArchiveRow()
            {
                // Likewise for their archive rows.
                suspendedEvents.pushFront(.stanza(element))
                return holdUntilArchived(newest)
            }
            if isStreamManagement(element), let session = boundSession { return streamManagement(element, session: session) }
            if isClientState(element) { return clientState(element) }
            if element.name == "message", let user = handle.jid.localpart, let preparation = server.router.modules.messagePreparer?(element, user) {
                // Before it is counted: handled again, in order, once the state is loaded.
                suspendedEvents.pushFront(.stanza(element))
                return suspend({ await preparation.value }) { _ in }
            }
            receivedStanza(element, from: handle)
        }
    }

    /// Holds the stream until every message handed to storage so far is committed.
    func waitForDurability() {
        let waits = pendingDurability
        pendingDurability = []
        durabilityGeneration += 1
        pendingDurabilityPruned = 0
        suspend({
            for wait in waits { await wait.value }
        }) { _ in }
    }

    /// Runs `work` off the event loop and hands its result back on it, holding every event
    /// that arrives meanwhile so they are handled in order afterwards.
    func suspend<Result: Sendable>(
        _ work: @escaping @Sendable () async throws -> Result,
        then resume: @escaping (Swift.Result<Result, Error>) -> Void
    ) {
        guard let context else { return }
        isSuspended = true
        let promise = context.eventLoop.makePromise(of: Result.self)
        promise.completeWithTask(work)
        let loopBound = NIOLoopBound((self, resume), eventLoop: context.eventLoop)
        promise.futureResult.whenComplete { result in
            let (handler, resume) = loopBound.value
            handler.isSuspended = false
            guard !handler.isClosed else { return }
            resume(result)
            handler.drainSuspendedEvents()
        }
    }

    func drainSuspendedEvents() {
        while !isSuspended, !readPaused, !isClosed, let event = suspendedEvents.popFirst() {
            handle(event)
        }
        if heldForWork, suspendedEvents.isEmpty, !isSuspended, let channel = context?.channel {
            heldForWork = false
            if !readPaused { _ = channel.setOption(ChannelOptions.autoRead, value: true) }
        }
        releaseOccasionalIfIdle()
        context?.flush()
    }

    /// Whether something other than rate shaping keeps reading off.
    var readingHeldForWork: Bool { heldForWork }

    var isClosed: Bool {
        if case .closed = phase { return true }
        return false
    }

    /// Sends a stream error and closes (RFC 6120 §4.9.1.1); for a stream with no header yet
    /// the encoder opens one first.
    func fail(_ error: StreamError, applicationCondition: XMLElement? = nil) {
        guard !isClosed else { return }
        server.metrics.streamError(error.condition)
        logger.info("stream error", metadata: ["condition": "\(error.condition.rawValue)", "text": "\(error.text ?? "")"])
        if !responseHeaderSent {
            write(.open(StreamOpening(from: server.policy.domain.description, id: makeStreamID())))
            responseHeaderSent = true
        }
        // An idle timeout is the network failing, not the client leaving: the session may
        // be resumed (XEP-0198).
        endSession(reason: error.description, resumable: error.condition == .connectionTimeout)
        if let applicationCondition {
            var element = error.element
            element.append(applicationCondition)
            write(.element(element))
            finish(with: .close)
        } else {
            finish(with: .error(error))
        }
    }

    /// Writes the last thing this side says on the stream, then closes once it is out.
    func finish(with output: XMLStreamOutput) {
        guard let context else { return }
        phase = .closed
        unauthenticatedTimer?.cancel()
        ackRequestTimer?.cancel()
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(output)).whenComplete { _ in
            channel.close(promise: nil)
        }
        // A peer that stopped reading must not keep a finished session alive.
        context.eventLoop.scheduleTask(in: .seconds(3)) { channel.close(promise: nil) }
    }

    /// Closes without a last word. A bound session leaves routing here: once the phase is
    /// `closed`, `channelInactive` can no longer find its handle to unbind it.
    func closeNow(reason: String = "connection closed", resumable: Bool = false) {
        endSession(reason: reason, resumable: resumable)
        phase = .closed
        context?.close(promise: nil)
    }

    func makeStreamID() -> String {
        let bytes = (try? SecureRandom.bytes(12)) ?? []
        // Hex written straight into one string: two stream headers per login made 24 small
        // strings and a join each.
        return String(unsafeUninitializedCapacity: bytes.count * 2) { buffer in
            let digits: StaticString = "0123456789abcdef"
            var index = 0
            for byte in bytes {
                buffer[index] = digits.utf8Start[Int(byte >> 4)]
                buffer[index + 1] = digits.utf8Start[Int(byte & 0x0F)]
                index += 2
            }
            return index
        }
    }

    func cancelUnauthenticatedTimer() {
        unauthenticatedTimer?.cancel()
        unauthenticatedTimer = nil
        releaseOccasionalIfIdle()
    }
}
