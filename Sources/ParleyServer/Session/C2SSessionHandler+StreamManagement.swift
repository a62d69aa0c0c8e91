import NIOCore
import ParleyCore

/// XEP-0198 on the stream: `<enable/>`, `<r/>` and `<a/>` once bound, `<resume/>` instead
/// of a bind, and the server's own acknowledgement requests.
extension C2SSessionHandler {
    func isStreamManagement(_ element: XMLElement) -> Bool {
        element.namespace == StreamManagementXML.namespace && server.policy.streamManagement != nil
    }

    /// Authenticated, not bound: `<resume/>` takes a session over; `<enable/>` is too early.
    func streamManagementBeforeBind(_ element: XMLElement) {
        switch element.name {
        case "resume":
            resume(element)
        case "enable", "r", "a":
            send(StreamManagementXML.failed(.unexpectedRequest))
        default:
            fail(StreamError(.unsupportedStanzaType, text: "<\(element.name)/> is not a stream management element."))
        }
    }

    func streamManagement(_ element: XMLElement, session: BoundSession) {
        switch element.name {
        case "enable":
            enableStreamManagement(element, session: session)
        case "r":
            guard session.isManaged else { return send(StreamManagementXML.failed(.unexpectedRequest)) }
            answerAcknowledgementRequest(session)
        case "a":
            guard session.isManaged else { return send(StreamManagementXML.failed(.unexpectedRequest)) }
            guard let h = StreamManagementXML.counter(element[attribute: "h"]) else {
                return fail(StreamError(.badFormat, text: "<a/> needs an 'h' attribute with the number of stanzas handled."))
            }
            do {
                try session.acknowledge(h)
            } catch {
                switch error {
                case .handledCountTooHigh(let h, let sendCount): failHandledCountTooHigh(h: h, sendCount: sendCount)
                }
            }
        case "resume":
            send(StreamManagementXML.failed(.unexpectedRequest))
        default:
            fail(StreamError(.unsupportedStanzaType, text: "<\(element.name)/> is not a stream management element."))
        }
    }

    /// `<a h='…'/>` once every message `h` counts is stored. Offline copies already are (the
    /// stream held this request until they were); archive rows may still be queued, and then
    /// only this answer waits for their commit (`deferAcknowledgement`): the stream reads on,
    /// so a client asking after every message does not get one commit per message.
    private func answerAcknowledgementRequest(_ session: BoundSession) {
        switch session.durableInbound() {
        case .durable(let h):
            guard !deferredAcknowledgements.isEmpty else {
                write(.element(StreamManagementXML.answer(h)))
                return scheduleFlush()
            }
            // Behind earlier answers still waiting: `h` never goes backwards on the wire.
            deferredAcknowledgements.append((h, nil, nil))
            answerDeferredAcknowledgements(server.archive)
        case .pending(let rows):
            guard let archive = server.archive else { return }
            deferAcknowledgement(h: session.inboundCount, rows: rows, archive: archive)
        case .failed:
            failUnstoredMessages()
        }
    }

    /// Acknowledging would claim they are safe. Ended without resumption, the client
    /// resends everything unacknowledged; stanza ids keep that from duplicating.
    func failUnstoredMessages() {
        fail(StreamError(.internalServerError, text: "Messages you sent could not be stored; send them again."))
    }

    private func failHandledCountTooHigh(h: UInt32, sendCount: UInt32) {
        fail(
            StreamError(.undefinedCondition, text: "You acknowledged \(h) stanzas, but only \(sendCount) were sent."),
            applicationCondition: StreamManagementXML.handledCountTooHigh(h: h, sendCount: sendCount))
    }

    private func enableStreamManagement(_ element: XMLElement, session: BoundSession) {
        guard let policy = server.policy.streamManagement else { return }
        let wantsResume = element[attribute: "resume"] == "true" || element[attribute: "resume"] == "1"
        var id: String? = nil
        var seconds = 0
        if wantsResume, policy.resumeTimeout > .zero {
            seconds = Int(policy.resumeTimeout.nanoseconds / 1_000_000_000)
            // The client may ask for less time, not more (XEP-0198 §5).
            if let requested = element[attribute: "max"].flatMap({ Int($0) }), requested > 0 { seconds = min(seconds, requested) }
            id = makeStreamID() + makeStreamID()
        }
        guard session.enable(resumptionID: id, resumeTimeout: .seconds(Int64(seconds)), maxUnacked: policy.maxUnacked) else {
            return send(StreamManagementXML.failed(.unexpectedRequest))
        }
        if let id { server.resumption.register(id, session) }
        send(StreamManagementXML.enabled(id: id, maxSeconds: id == nil ? nil : seconds))
        logger.debug("stream management enabled", metadata: ["resumable": "\(id != nil)"])
    }

    /// After each counted stanza: ask for an acknowledgement every few stanzas, and shortly
    /// after any that is still unacknowledged.
    func sentManagedStanza() {
        guard let policy = server.policy.streamManagement, let context else { return }
        unackedSinceRequest += 1
        if unackedSinceRequest >= policy.requestAfterStanzas { return requestAcknowledgement() }
        guard ackRequestTimer == nil else { return }
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        ackRequestTimer = context.eventLoop.scheduleTask(in: policy.requestAfter) {
            let handler = loopBound.value
            handler.ackRequestTimer = nil
            guard !handler.isClosed, handler.unackedSinceRequest > 0, handler.boundSession?.unackedCount ?? 0 > 0 else { return }
            handler.requestAcknowledgement()
        }
    }

    func requestAcknowledgement() {
        unackedSinceRequest = 0
        ackRequestTimer?.cancel()
        ackRequestTimer = nil
        releaseOccasionalIfIdle()
        write(.element(StreamManagementXML.request))
        scheduleFlush()
    }

    /// XEP-0198 §5: `<resume previd='…' h='…'/>` in place of a bind.
    private func resume(_ element: XMLElement) {
        guard let previd = element[attribute: "previd"], let h = StreamManagementXML.counter(element[attribute: "h"]) else {
            return send(StreamManagementXML.failed(.badRequest))
        }
        guard let user = authenticatedUser else { return }
        guard let session = server.resumption.session(previd), session.user == user, session.accountID == authenticatedAccountID else {
            // Not here: in a cluster it may be on the node the client was on before.
            if server.resumption.tombstone(previd) == nil, resumeFromAnotherNode(previd, h: h, user: user) { return }
            return refuseResumption(previd, user: user)
        }
        resume(session, previd: previd, h: h)
    }

    func resume(_ session: BoundSession, previd: String, h: UInt32) {
        guard let context, let user = authenticatedUser else { return }
        switch session.resume(by: attachment(context), h: h) {
        case .gone:
            refuseResumption(previd, user: user)
        case .archivePending(let sequences):
            guard let archive = server.archive else { return }
            suspend({ await archive.waitUntilWritten(sequences.upperBound) }) { [self] _ in
                resume(session, previd: previd, h: h)
            }
        case .archiveFailed:
            session.end(reason: "messages it counted could not be archived")
            send(StreamManagementXML.failed(.internalServerError))
        case .handledCountTooHigh(let h, let sendCount):
            session.end(reason: "resumed with an h higher than what was sent")
            failHandledCountTooHigh(h: h, sendCount: sendCount)
        case .resumed(let handle, let inbound, let resend, let previous):
            cancelUnauthenticatedTimer()
            boundSession = session
            phase = .bound(handle)
            // A new connection starts out active, resumed or not; the client may have said otherwise first.
            if clientInactive { applyClientState(active: false, session: session) }
            logger.info("session resumed", metadata: ["resent": "\(resend.count)", "secure": "\(isSecure)"])
            // A connection the client gave up on but we had not noticed yet is closed.
            previous?.run { $0.fail(StreamError(.conflict, text: "The session was resumed on another connection.")) }
            send(StreamManagementXML.resumed(previd: previd, h: inbound))
            for stanza in resend { send(stanza) }
            if !resend.isEmpty { requestAcknowledgement() }
            scheduleFlush()
        }
    }

    /// `<failed/>` for a session that is gone (XEP-0198 §5). Only the session's own user
    /// learns how far it got, and only once what that `h` counts is stored; if some of it
    /// could not be, there is no `h`, and the client resends everything it has not seen acknowledged.
    func refuseResumption(_ previd: String, user: String) {
        guard let tombstone = server.resumption.tombstone(previd), tombstone.user == user, tombstone.accountID == authenticatedAccountID
        else {
            return send(StreamManagementXML.failed(.itemNotFound))
        }
        guard let sequences = tombstone.archive, let archive = server.archive else {
            return send(StreamManagementXML.failed(.itemNotFound, h: tombstone.h))
        }
        switch archive.outcome(of: sequences) {
        case .committed:
            send(StreamManagementXML.failed(.itemNotFound, h: tombstone.h))
        case .failed:
            send(StreamManagementXML.failed(.itemNotFound))
        case .pending:
            suspend({ await archive.waitUntilWritten(sequences.upperBound) }) { [self] _ in
                refuseResumption(previd, user: user)
            }
        }
    }
}
