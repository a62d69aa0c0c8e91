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
        let handle = makeHandle(jid: jid, context: context)
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
        if let conflict = server.sessions.bind(handle, replacing: Set(replacing), maxPerAccount: server.policy.maxSessionsPerAccount) {
            let error: StanzaError
            switch conflict {
            case .resourceInUse: error = StanzaError(.conflict, text: "This resource was taken by another login meanwhile.")
            case .tooManySessions: error = StanzaError(.resourceConstraint, text: "This account has the most sessions allowed.")
            }
            return send(request.errorReply(error) ?? request)
        }
        cancelUnauthenticatedTimer()
        phase = .bound(handle)
        server.events.publish(.sessionBound(handle))
        sessionStart = .now()
        server.metrics.sessionsAuthenticated.increment()
        logger[metadataKey: "jid"] = "\(handle.jid)"
        logger.info("session started", metadata: ["secure": "\(isSecure)"])
        var result = XMLElement("bind", namespace: XMLNamespace.bind)
        result.append(XMLElement("jid", text: handle.jid.description))
        var reply = request.iqResult(result)
        reply.from = nil
        reply.to = nil
        send(reply)
    }

    private func makeHandle(jid: JID, context: ChannelHandlerContext) -> SessionHandle {
        let eventLoop = context.eventLoop
        let loopBound = NIOLoopBound(self, eventLoop: eventLoop)
        return SessionHandle(
            jid: jid, id: server.makeSessionID(), remoteAddress: remoteAddress, eventLoop: eventLoop,
            closeFuture: context.channel.closeFuture
        ) { delivery in
            if eventLoop.inEventLoop {
                loopBound.value.receive(delivery)
            } else {
                eventLoop.execute { loopBound.value.receive(delivery) }
            }
        }
    }

    private func generatedResource() -> String {
        "parley-" + makeStreamID().prefix(12)
    }

    /// A stanza or order from elsewhere in the server for this session.
    func receive(_ delivery: SessionDelivery) {
        guard case .bound = phase else {
            // The session ended after the router picked it: messages go elsewhere instead.
            switch delivery {
            case .stanza(let stanza) where stanza.name == "message":
                redeliver(stanza)
            case .confirmed(_, let written):
                written.fail(ChannelError.ioOnClosedChannel)
            default:
                break
            }
            return
        }
        switch delivery {
        case .stanza(let stanza):
            sendSoon(stanza)
        case .confirmed(let stanza, let written):
            server.metrics.stanzaOut(stanza.name)
            context?.write(wrapOutboundOut(.element(stanza)), promise: written)
            scheduleFlush()
        case .terminate(let error):
            fail(error)
        }
    }

    private func redeliver(_ message: XMLElement) {
        guard let to = message.to.flatMap({ try? JID($0) }) else { return }
        server.router.redeliver(message, account: to.bare)
    }

    /// Takes the session out of routing and logs its end, once, whatever ended it.
    func endSession(reason: String) {
        guard case .bound(let handle) = phase else { return }
        phase = .closed
        server.sessions.unbind(handle)
        server.events.publish(.sessionEnded(handle))
        server.metrics.sessionsAuthenticated.decrement()
        let seconds = (NIODeadline.now() - sessionStart).nanoseconds / 1_000_000_000
        logger.info("session ended", metadata: ["reason": "\(reason)", "duration_s": "\(seconds)"])
    }
}
