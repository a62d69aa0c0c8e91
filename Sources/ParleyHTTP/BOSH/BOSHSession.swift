import NIOCore
import ParleyCore
import ParleyStream

/// What one HTTP request gets back.
struct BOSHAnswer: Sendable {
    var status: Int
    var body: ByteBuffer
    var contentType: String
}

/// One BOSH session (XEP-0124): the rid sequence, the requests held for the server to answer
/// on, the answers kept for a client that lost one, and the inactivity and wait timers, over
/// a `BOSHChannel` whose pipeline holds the client session. Everything runs on that channel's
/// event loop.
final class BOSHSession {
    /// What the session creation request and the configuration settled (§7.1–7.2).
    struct Terms: Sendable {
        var wait: Int
        var hold: Int
        var requests: Int
        var inactivity: Int
        var maxPause: Int
        var polling: Int
        /// The `ver` we answer with; nil when the client sent none, which asks for the
        /// deprecated HTTP error codes (§17.1).
        var version: String?
        var contentType: String
        /// The client asked for acknowledgements (`ack='1'`, §9).
        var acknowledgements: Bool
        /// The server's domain, the creation answer's `from`.
        var domain: String
        /// What the stream header the client session sees says (`to`, `xml:lang`, `from`).
        var header: XMLStreamHeader
    }

    struct Held {
        var rid: UInt64
        var promise: EventLoopPromise<BOSHAnswer>
        var since: NIODeadline
    }

    let sid: String
    let channel: BOSHChannel
    let terms: Terms
    let registry: BOSHSessions
    /// The next rid to process; requests beyond it (within the window) wait in `early`.
    var nextRID: UInt64
    let creationRID: UInt64
    var held: [Held] = []
    var early: [UInt64: (request: BOSHRequest, promise: EventLoopPromise<BOSHAnswer>)] = [:]
    /// The last answers sent, oldest first, for a client that repeats a rid (§14.3).
    var answered: [(rid: UInt64, answer: BOSHAnswer, sent: NIODeadline)] = []
    /// §9.3: the client's `ack` showed it lacks the answer to this rid, sent this long ago; the
    /// next answer goes at once and says so.
    var report: (rid: UInt64, milliseconds: Int64)?
    /// What the client session wrote that no request has carried yet.
    var output = BOSHResponseBody()
    var outputElements = 0
    /// The body that ends the session once the client session's stream is over.
    var terminal: BOSHResponseBody?
    /// What any later request is answered with once the session is over.
    var finalAnswer: BOSHAnswer?
    var creationPending = true
    var streamID: String?
    var awaitingRestart = false
    /// The client sent `type='terminate'`: its requests are answered with the end, once the
    /// client session has said its last word (work in flight may delay it).
    var terminating = false
    /// While a request's stanzas go in, answers wait, so that they go out together.
    var processing = false
    /// Events held while the client session has reading off (storage, stanza rate).
    var unread: [XMLStreamEvent] = []
    var waitTimer: Scheduled<Void>?
    var inactivityTimer: Scheduled<Void>?
    /// A `pause` (§10) stretches the inactivity allowed until the next request.
    var pausedFor: Int?
    /// For the polling rule of a session holding no requests (§12).
    var lastEmptyRequest: NIODeadline?
    var lastAnswerCarriedPayload = true

    static let maxBufferedOutput = 16 << 20
    /// An answer younger than this may still be on its way when the client's `ack` says it is
    /// missing (the two crossed): only an older one is reported lost (§9.3).
    static let reportAfter = TimeAmount.seconds(1)

    init(sid: String, channel: BOSHChannel, terms: Terms, creationRID: UInt64, registry: BOSHSessions) {
        self.sid = sid
        self.channel = channel
        self.terms = terms
        self.registry = registry
        self.creationRID = creationRID
        nextRID = creationRID
    }

    var eventLoop: any EventLoop { channel.eventLoop }
    var isOver: Bool { finalAnswer != nil }

    // MARK: Requests

    /// A request for this session, in whatever order requests arrive.
    func receive(_ request: BOSHRequest, promise: EventLoopPromise<BOSHAnswer>) {
        eventLoop.preconditionInEventLoop()
        if let finalAnswer { return promise.succeed(finalAnswer) }
        let rid = request.rid
        // §14.3: the client lost the answer to a request it made; it gets the same answer again,
        // and the stanzas in the repeat are not processed a second time.
        if let cached = answered.last(where: { $0.rid == rid }) { return promise.succeed(cached.answer) }
        if let index = held.firstIndex(where: { $0.rid == rid }) {
            let previous = held[index].promise
            held[index].promise = promise
            return previous.succeed(answer(BOSHResponseBody()))
        }
        if let waiting = early[rid] {
            early[rid] = (waiting.request, promise)
            return waiting.promise.succeed(answer(BOSHResponseBody()))
        }
        guard rid >= nextRID else {
            return fail(.itemNotFound, "rid \(rid) was answered too long ago to repeat", answering: promise)
        }
        guard rid < nextRID + UInt64(terms.requests) else {
            return fail(.itemNotFound, "rid \(rid) is beyond the window of \(terms.requests) from \(nextRID)", answering: promise)
        }
        // §12: one request over the limit is allowed only to pause or terminate.
        let outstanding = held.count + early.count
        let allowance = request.isTerminate || request.pause != nil ? terms.requests + 1 : terms.requests
        guard outstanding < allowance else {
            return fail(.policyViolation, "more than \(terms.requests) simultaneous requests", answering: promise)
        }
        inactivityTimer?.cancel()
        inactivityTimer = nil
        pausedFor = nil
        guard rid == nextRID else {
            early[rid] = (request, promise)
            return
        }
        processing = true
        process(request, promise: promise)
        while !isOver, let next = early.removeValue(forKey: nextRID) {
            process(next.request, promise: next.promise)
        }
        processing = false
        guard !isOver else { return }
        settle()
        if let pause = pausedFor { answerAll(thenInactiveFor: pause) }
    }

    private func process(_ request: BOSHRequest, promise: EventLoopPromise<BOSHAnswer>) {
        nextRID = request.rid + 1
        if let ack = request.ack {
            answered.removeAll { $0.rid <= ack }
            noteMissingAnswer(after: ack)
        }
        if let pause = request.pause {
            guard pause <= terms.maxPause else {
                return fail(.policyViolation, "a pause of \(pause) s is over maxpause \(terms.maxPause)", answering: promise)
            }
            pausedFor = pause
        }
        let isPoll = request.isEmpty && !request.isTerminate && request.pause == nil && !request.isRestart
        if terms.hold == 0, isPoll {
            let now = NIODeadline.now()
            if let last = lastEmptyRequest, now - last < .seconds(Int64(terms.polling)), !lastAnswerCarriedPayload {
                return fail(.policyViolation, "empty requests more often than every \(terms.polling) s", answering: promise)
            }
            lastEmptyRequest = now
        } else if !isPoll {
            lastEmptyRequest = nil
        }
        held.append(Held(rid: request.rid, promise: promise, since: .now()))
        if request.isRestart {
            guard awaitingRestart else {
                return fail(.badRequest, "a stream restart was asked for before authentication succeeded", answering: nil)
            }
            awaitingRestart = false
            deliver(.streamOpened(terms.header))
        } else if request.rid == creationRID {
            deliver(.streamOpened(terms.header))
        }
        for stanza in request.payload { deliver(.stanza(stanza)) }
        if request.isTerminate {
            terminating = true
            deliver(.streamClosed)
        }
        if !isOver, channel.autoRead { channel.pipeline.fireChannelReadComplete() }
    }

    /// §9.3: an `ack` lower than the last rid answered means the client lacks an answer; if it
    /// was sent a while ago (lost, not crossing this request), the client is told which.
    private func noteMissingAnswer(after ack: UInt64) {
        guard let missing = answered.first(where: { $0.rid == ack + 1 }) else { return }
        let age = NIODeadline.now() - missing.sent
        guard age >= Self.reportAfter else { return }
        report = (missing.rid, age.nanoseconds / 1_000_000)
    }

    private func deliver(_ event: XMLStreamEvent) {
        guard !isOver else { return }
        if !channel.autoRead || !unread.isEmpty { return unread.append(event) }
        channel.pipeline.fireChannelRead(event)
    }

    /// The client session turned reading back on: what it was not given yet goes in now.
    func channelReadingChanged(_ autoRead: Bool) {
        guard autoRead, !unread.isEmpty else { return }
        processing = true
        while channel.autoRead, !isOver, !unread.isEmpty {
            channel.pipeline.fireChannelRead(unread.removeFirst())
        }
        processing = false
        if !isOver {
            channel.pipeline.fireChannelReadComplete()
            settle()
        }
    }

    // MARK: Ending

    /// Ends the session with a terminal binding condition: the request that broke a rule (if
    /// any) and every held one get it, and so does any later request for a while.
    func fail(_ condition: BOSHError.Condition, _ reason: String, answering promise: EventLoopPromise<BOSHAnswer>?) {
        registry.logger.info("BOSH session ended", metadata: ["sid": "\(sid)", "condition": "\(condition.rawValue)", "reason": "\(reason)"])
        terminal = .terminate(condition)
        let failure = answer(.terminate(condition), condition: condition)
        promise?.succeed(failure)
        // Closing the channel ends the client session as a dropped connection would (its
        // presence goes, stream management may resume it), then answers the held requests.
        if channel.isOpen { channel.close(promise: nil) } else { channelClosed() }
    }

    /// The server is stopping and sends its clients to another connection manager: the end the
    /// client session is about to write becomes `see-other-uri` (XEP-0124 §17.2).
    func redirect(to uri: String) {
        var body = BOSHResponseBody.terminate(.seeOtherURI)
        body.append(XMLElement("uri", namespace: BOSHRequest.namespace, text: uri))
        terminal = body
    }

    /// The session's inactivity ran out (§8 `inactivity`): as a TCP connection gone quiet.
    func inactivityElapsed() {
        inactivityTimer = nil
        guard !isOver, held.isEmpty else { return }
        registry.logger.debug("BOSH session inactive", metadata: ["sid": "\(sid)"])
        channel.close(promise: nil)
    }
}
