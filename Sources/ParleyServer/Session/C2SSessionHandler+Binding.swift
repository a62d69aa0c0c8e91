import NIOCore
import ParleyCore

/// Resource binding (RFC 6120 §7) and the policy for several logins of one account
/// (§7.7.2.2: replace or reject; optionally one device only).
extension C2SSessionHandler {
    func bindOrRefuse(_ element: XMLElement) {
        guard element.namespace == XMLNamespace.client, element.name == "iq",
            let bind = element.firstChild("bind", namespace: XMLNamespace.bind), element.type == "set"
        else {
            if element.namespace == XMLNamespace.client, element.name == "iq",
                element.firstChild("session", namespace: XMLNamespace.session) != nil
            {
                return send(element.errorReply(StanzaError(.notAllowed, text: "Bind a resource first.")) ?? element)
            }
            return fail(StreamError(.notAuthorized, text: "Bind a resource before sending stanzas."))
        }
        guard let username = authenticatedUser, let context else { return }
        let requested = bind.firstChild("resource", namespace: XMLNamespace.bind)?.text ?? ""
        let jid: JID
        do {
            jid = try JID(
                localpart: username, domainpart: server.policy.domain.domainpart,
                resourcepart: requested.isEmpty ? generatedResource() : requested)
        } catch {
            return send(element.errorReply(StanzaError(.badRequest, text: "The resource is not valid: \(error).")) ?? element)
        }
        let policy = server.policy
        let existing = server.sessions.sessions(of: jid.bare)
        var replaced: [SessionHandle] = []
        var replacementNotice = ""
        if policy.singleDevice {
            replaced = existing
            replacementNotice = "Signed out: your account logged in on another device."
        } else if let same = existing.first(where: { $0.jid == jid }) {
            if policy.onSameResource == .reject {
                return send(element.errorReply(StanzaError(.conflict, text: "This resource is already in use.")) ?? element)
            }
            replaced = [same]
            replacementNotice = "Replaced by a new login with the same resource."
        }
        if policy.maxSessionsPerAccount > 0, existing.count - replaced.count >= policy.maxSessionsPerAccount {
            return send(
                element.errorReply(
                    StanzaError(.resourceConstraint, text: "This account already has \(existing.count) sessions, the most allowed.")) ?? element)
        }
        let (handle, session) = makeHandle(jid: jid, user: username, context: context)
        pendingSession?.discard()
        pendingSession = session
        // The usual case, nothing to replace: bind now. Waiting (below) costs a task, a task
        // group and a cancelled 5-second sleep per login.
        if replaced.isEmpty {
            return completeBind(handle, request: element, replacing: [])
        }
        for old in replaced { old.terminate(StreamError(.conflict, text: replacementNotice)) }
        // The replaced sessions end completely (their presence gone, their stanzas handed
        // on) before this one is bound, so no stanza can reach a half-dead session.
        let waits = replaced.map(\.closeFuture)
        let timeout = policy.replacementTimeout
        suspend({
            try? await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { for wait in waits { try? await wait.get() } }
                group.addTask { try await Task.sleep(nanoseconds: UInt64(timeout.nanoseconds)) }
                _ = try await group.next()
                group.cancelAll()
            }
        }) { [self] _ in
            completeBind(handle, request: element, replacing: replaced)
        }
    }

    private func completeBind(_ handle: SessionHandle, request: XMLElement, replacing: [SessionHandle]) {
        guard let session = pendingSession else { return }
        pendingSession = nil
        if let conflict = server.sessions.bind(handle, replacing: Set(replacing), maxPerAccount: server.policy.maxSessionsPerAccount) {
            let error: StanzaError
            switch conflict {
            case .resourceInUse: error = StanzaError(.conflict, text: "This resource was taken by another login meanwhile.")
            case .tooManySessions: error = StanzaError(.resourceConstraint, text: "This account has the most sessions allowed.")
            }
            session.discard()
            return send(request.errorReply(error) ?? request)
        }
        cancelUnauthenticatedTimer()
        boundSession = session
        phase = .bound(handle)
        if clientInactive { applyClientState(active: false, session: session) }
        server.events.publish(.sessionBound(handle))
        sessionStart = .now()
        server.metrics.sessionsAuthenticated.increment()
        // `logger` builds its metadata (strings, a dictionary) even for a message it drops.
        if server.logger.logLevel <= .info { logger.info("session started", metadata: ["secure": "\(isSecure)"]) }
        var result = XMLElement("bind", namespace: XMLNamespace.bind)
        result.append(XMLElement("jid", text: handle.jid.description))
        var reply = request.iqResult(result)
        reply.from = nil
        reply.to = nil
        send(reply)
    }

    private func makeHandle(jid: JID, user: String, context: ChannelHandlerContext) -> (SessionHandle, BoundSession) {
        let session = BoundSession(server: server, user: user, accountID: authenticatedAccountID, attachment: attachment(context))
        let handle = SessionHandle(
            jid: jid, id: server.makeSessionID(), remoteAddress: remoteAddress, accountID: authenticatedAccountID,
            eventLoop: context.eventLoop,
            closeFuture: session.endedFuture, cluster: server.sessions.cluster
        ) { delivery, batch in
            session.dispatch(delivery, batch: batch)
        }
        session.setHandle(handle)
        return (handle, session)
    }

    func attachment(_ context: ChannelHandlerContext) -> BoundSession.Attachment {
        BoundSession.Attachment(id: ObjectIdentifier(self), handler: NIOLoopBound(self, eventLoop: context.eventLoop))
    }

    private func generatedResource() -> String {
        "parley-" + makeStreamID().prefix(12)
    }

    /// A stanza or order from elsewhere in the server for this session, on this loop.
    func receive(_ delivery: SessionDelivery, hopped: Bool = false) {
        guard let session = boundSession else {
            if case .confirmed(_, let written) = delivery { written.fail(ChannelError.ioOnClosedChannel) }
            return
        }
        switch session.record(delivery, by: ObjectIdentifier(self), hopped: hopped) {
        case .ended:
            session.handOn(delivery)
        case .notAttached:
            // Resumed on another connection meanwhile: it goes there (or waits for one).
            session.dispatch(delivery)
        case .overflow:
            fail(StreamError(.resourceConstraint, text: "Too many stanzas were left unacknowledged."))
        case .heldWhileInactive:
            return
        case .flushHeld(let stanzas, let managed):
            sendHeld(stanzas, managed: managed)
        case .send(let managed, let heldFirst):
            sendHeld(heldFirst, managed: managed)
            switch delivery {
            case .stanza(let stanza):
                sendSoon(stanza)
            case .confirmed(let stanza, let written):
                if managed {
                    // Deleted from storage when the client acknowledges it, not when written.
                    sendSoon(stanza)
                } else {
                    server.metrics.stanzaOut(stanza.name)
                    context?.write(wrapOutboundOut(.element(stanza)), promise: written)
                    scheduleFlush()
                }
            case .terminate(let error):
                return fail(error)
            }
            if managed { sentManagedStanza() }
        }
    }

    /// Takes the connection out of its session, once, whatever ended it. A resumable session
    /// (XEP-0198) whose connection failed is detached and waits for its client; otherwise it
    /// ends for good (out of routing, unacknowledged messages handed on).
    func endSession(reason: String, resumable: Bool = false) {
        guard case .bound = phase else { return }
        phase = .closed
        ackRequestTimer?.cancel()
        ackRequestTimer = nil
        guard let session = boundSession else { return }
        switch session.release(from: ObjectIdentifier(self), detach: resumable) {
        case .notAttached:
            logger.debug("connection closed; its session continues on another one", metadata: ["reason": "\(reason)"])
        case .detached:
            logger.info("session detached, waiting for resumption", metadata: ["reason": "\(reason)"])
        case .ending:
            session.end(reason: reason)
        }
    }
}
