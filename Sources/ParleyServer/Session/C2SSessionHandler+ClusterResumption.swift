import NIOCore
import ParleyCore

/// XEP-0198 `<resume/>` for a session held by another node of the cluster (the client's
/// previous connection went through the load balancer to that node): that node hands the
/// session over (`ClusterLink.takeOverSession`), and this one adopts it and resumes it
/// exactly as a local resumption would, counters, unacknowledged stanzas and all.
extension C2SSessionHandler {
    /// Starts asking the nodes that hold sessions of the account; false if there are none
    /// to ask (no cluster, or no session of the account elsewhere).
    func resumeFromAnotherNode(_ previd: String, h: UInt32, user: String) -> Bool {
        guard let cluster = server.sessions.cluster,
            let account = try? JID(localpart: user, domainpart: server.policy.domain.domainpart)
        else { return false }
        var holders: [String] = []
        for session in server.sessions.sessions(of: account) {
            if let node = session.node, !holders.contains(node) { holders.append(node) }
        }
        guard !holders.isEmpty else { return false }
        let nodes = holders
        let accountID = authenticatedAccountID
        suspend({ await cluster.takeOverSession(previd: previd, user: user, accountID: accountID, from: nodes) }) { [self] result in
            guard case .success(let transfer?) = result, transfer.jid.bare == account, transfer.resumptionID == previd else {
                return refuseResumption(previd, user: user)
            }
            adoptTransferredSession(transfer, previd: previd, h: h, user: user)
        }
        return true
    }

    private func adoptTransferredSession(_ transfer: SessionTransfer, previd: String, h: UInt32, user: String) {
        guard let context else { return }
        let session = BoundSession(server: server, user: user, accountID: authenticatedAccountID, attachment: attachment(context))
        let handle = SessionHandle(
            jid: transfer.jid, id: server.makeSessionID(), remoteAddress: remoteAddress, accountID: authenticatedAccountID,
            eventLoop: context.eventLoop, closeFuture: session.endedFuture, cluster: server.sessions.cluster
        ) { delivery, batch in
            session.dispatch(delivery, batch: batch)
        }
        session.setHandle(handle)
        session.adopt(transfer)
        // Before the bind, so the directory entry the bind writes carries it.
        handle.withPresence { $0 = transfer.presence }
        // The other node's entry for this JID may not have left this node's copy yet.
        let stale = server.sessions.sessions(of: transfer.jid.bare).filter { $0.jid == transfer.jid && $0.isRemote }
        if server.sessions.bind(handle, replacing: Set(stale)) != nil {
            // A new login took the resource meanwhile: the session cannot go on under it.
            session.discard()
            for stanza in transfer.queue where stanza.name == "message" {
                server.router.redeliver(stanza, account: transfer.jid.bare)
            }
            return send(StreamManagementXML.failed(.itemNotFound, h: transfer.inbound))
        }
        server.resumption.register(previd, session)
        server.metrics.sessionsAuthenticated.increment()
        sessionStart = .now()
        // Waits detached, as a session whose connection dropped here would, then resumes.
        _ = session.release(from: ObjectIdentifier(self), detach: true)
        logger.info("session taken over from another node", metadata: ["jid": "\(transfer.jid)", "unacked": "\(transfer.queue.count)"])
        resume(session, previd: previd, h: h)
    }
}
