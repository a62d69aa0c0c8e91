import NIOCore
import ParleyCore
import ParleyStream

/// What the client session writes, and how it goes out on held requests (XEP-0124 §8, §11).
extension BOSHSession: BOSHChannelDelegate {
    func channelWrote(_ written: XMLStreamOutput) {
        switch written {
        case .open(let opening):
            // No header on BOSH: the stream id is the creation answer's `authid` (XEP-0206 §4).
            streamID = opening.id
        case .element(let element):
            output.append(element)
            outputElements += 1
            checkBacklog()
        case .whitespace:
            break
        case .error(let error):
            // XEP-0206 §7: a stream error ends the session with `remote-stream-error`, the
            // <stream:error/> inside.
            var body = BOSHResponseBody.terminate(.remoteStreamError)
            body.append(error.element)
            terminal = body
        case .close:
            if terminal == nil { terminal = .terminate() }
        }
    }

    func channelFlushed() {
        guard !processing, !isOver else { return }
        settle()
    }

    func channelRestartRequested() {
        awaitingRestart = true
    }

    /// The channel closed: the client session's stream is over, or the BOSH side ended it.
    /// Every request still open is answered, and later ones get the same end.
    func channelClosed() {
        guard finalAnswer == nil else { return }
        waitTimer?.cancel()
        inactivityTimer?.cancel()
        waitTimer = nil
        inactivityTimer = nil
        let ending = terminal ?? .terminate()
        let condition = ending.attributes.first { $0.name == "condition" }.flatMap { BOSHError.Condition(rawValue: $0.value) }
        // What was written before the end goes first, then the end (a <stream:error/>).
        var last = ending
        last.payload = output.payload
        last.append(ending.payload)
        output = BOSHResponseBody()
        let full = answer(last, condition: condition)
        var rest = BOSHResponseBody(ending.attributes)
        // Where to go next is for every request that learns of the end, not only the first.
        if condition == .seeOtherURI { rest.payload = ending.payload }
        let bare = answer(rest, condition: condition)
        finalAnswer = held.isEmpty ? full : bare
        for (index, request) in held.enumerated() {
            request.promise.succeed(index == 0 ? full : bare)
        }
        held = []
        for waiting in early.values { waiting.promise.succeed(bare) }
        early = [:]
        unread = []
        registry.ended(sid, eventLoop: eventLoop, keepFor: .seconds(Int64(terms.inactivity)))
    }

    // MARK: Answering

    func answer(_ body: BOSHResponseBody, condition: BOSHError.Condition? = nil) -> BOSHAnswer {
        let status = terms.version == nil ? (condition?.legacyStatus ?? 200) : 200
        return BOSHAnswer(status: status, body: body.bytes, contentType: terms.contentType)
    }

    /// Waiting output goes on the oldest held request; then no more than `hold` stay held.
    func settle() {
        guard !isOver, !terminating else { return }
        if outputElements > 0 || report != nil, !held.isEmpty { answerOldest() }
        while held.count > terms.hold { answerOldest() }
        armTimers()
    }

    /// §10: a pausing client gets every held request back at once.
    func answerAll(thenInactiveFor seconds: Int) {
        while !held.isEmpty { answerOldest() }
        inactivityTimer?.cancel()
        inactivityTimer = nil
        pausedFor = seconds
        armTimers()
    }

    func answerOldest() {
        let request = held.removeFirst()
        var body = BOSHResponseBody()
        if creationPending, request.rid == creationRID {
            creationPending = false
            body = creationBody()
        } else if terms.acknowledgements, request.rid + 1 < nextRID {
            // §9.2: an answer to an older request says which is the newest the server has.
            body.attributes.append(("ack", "\(nextRID - 1)"))
        }
        if let report {
            // §9.3: which answer the client lacks, and how many milliseconds ago it went.
            body.attributes.append(("report", "\(report.rid)"))
            body.attributes.append(("time", "\(report.milliseconds)"))
            self.report = nil
        }
        body.payload = output.payload
        lastAnswerCarriedPayload = outputElements > 0
        output = BOSHResponseBody()
        outputElements = 0
        channel.setWritable(true)
        let answer = answer(body)
        answered.append((request.rid, answer, .now()))
        if answered.count > terms.requests { answered.removeFirst(answered.count - terms.requests) }
        request.promise.succeed(answer)
    }

    /// The session creation response (§7.2, XEP-0206 §4): the terms, and the stream's id.
    private func creationBody() -> BOSHResponseBody {
        var body = BOSHResponseBody([
            ("sid", sid), ("wait", "\(terms.wait)"), ("requests", "\(terms.requests)"), ("hold", "\(terms.hold)"),
            ("inactivity", "\(terms.inactivity)"), ("polling", "\(terms.polling)"), ("maxpause", "\(terms.maxPause)"),
        ])
        if let version = terms.version { body.attributes.append(("ver", version)) }
        body.attributes.append(("from", terms.domain))
        if let streamID { body.attributes.append(("authid", streamID)) }
        // The connection manager is the server itself: nothing travels further unencrypted.
        body.attributes.append(("secure", "true"))
        if terms.acknowledgements { body.attributes.append(("ack", "\(creationRID)")) }
        body.declaresXMPP = true
        body.attributes.append(("xmpp:version", "1.0"))
        body.attributes.append(("xmpp:restartlogic", "true"))
        return body
    }

    /// A client that stops asking makes the server hold everything sent to it; past a bound,
    /// the session ends as a slow TCP reader's does.
    private func checkBacklog() {
        guard output.payload.readableBytes > Self.maxBufferedOutput / 4 else { return }
        channel.setWritable(false)
        guard output.payload.readableBytes > Self.maxBufferedOutput, terminal == nil else { return }
        let channel = self.channel
        eventLoop.execute {
            channel.pipeline.fireErrorCaught(StreamError(.resourceConstraint, text: "Too much data is waiting for you to read it."))
        }
    }

    // MARK: Timers

    private func armTimers() {
        waitTimer?.cancel()
        waitTimer = nil
        let loopBound = NIOLoopBound(self, eventLoop: eventLoop)
        if let oldest = held.first {
            inactivityTimer?.cancel()
            inactivityTimer = nil
            let rid = oldest.rid
            // §7.1 `wait`: the longest a request is held before an empty answer.
            waitTimer = eventLoop.scheduleTask(deadline: oldest.since + .seconds(Int64(terms.wait))) {
                let session = loopBound.value
                session.waitTimer = nil
                guard session.held.first?.rid == rid, !session.terminating else { return }
                session.answerOldest()
                session.settle()
            }
        } else if inactivityTimer == nil {
            inactivityTimer = eventLoop.scheduleTask(in: .seconds(Int64(pausedFor ?? terms.inactivity))) {
                loopBound.value.inactivityElapsed()
            }
        }
    }
}
