import ParleyCore

/// Learning what each resource wants notifications for (XEP-0115 with XEP-0163 §4.3.3): its
/// presence announces a `ver`; the server asks the resource once per unknown `ver` for its
/// disco#info, and caches the answer for every resource announcing that `ver` only if the
/// answer hashes to it. An answer that does not is believed for the resource that gave it
/// alone (like Prosody), never for others who claim the same `ver`.
extension PEPService {
    /// A presence without caps needs no task: `presenceChanged` is only for one with them.
    func presenceChangedWithoutCaps(_ session: SessionHandle, initial: Bool) {
        // No caps on a later presence may be a client saving bytes: keep what it had.
        if initial {
            interests.set([], for: session.jid, fresh: true)
            mirrorInterests(of: session)
        }
    }

    func presenceChanged(_ session: SessionHandle, _ presence: XMLElement, initial: Bool) async {
        guard let announcement = EntityCapabilities.Announcement(presence: presence) else {
            return presenceChangedWithoutCaps(session, initial: initial)
        }
        if !initial, interests.isSettled(session.jid, ver: announcement.ver) { return }
        guard announcement.isVerifiable else { return await learn(session, announcement, initial: initial, shared: false) }
        if let nodes = interests.cached(announcement.ver) {
            let new = interests.set(nodes, for: session.jid, ver: announcement.ver, fresh: initial)
            mirrorInterests(of: session)
            return await sendLastItems(to: session, nodes: new)
        }
        if initial { interests.forget(session.jid) }
        guard interests.wait(for: announcement.ver, session) else { return }
        await learn(session, announcement, initial: initial, shared: true)
    }

    /// Keeps the session's interests where other nodes of a cluster read them.
    private func mirrorInterests(of session: SessionHandle) {
        let nodes = interests.nodes(of: session.jid)
        session.withPresence { $0.notifyNodes = nodes }
    }

    /// Asks `session` for its features; with `shared`, the answer settles its `ver` for
    /// everyone waiting on it.
    private func learn(_ session: SessionHandle, _ announcement: EntityCapabilities.Announcement, initial: Bool, shared: Bool) async {
        let query = XMLElement("query", namespace: XMLNamespace.discoInfo, ["node": "\(announcement.node)#\(announcement.ver)"])
        let outcome = await requests.request(.get, query, to: session, timeout: limits.capsQueryTimeout)
        var answer: XMLElement? = nil
        if case .answered(let reply) = outcome, reply.type == "result" {
            answer = reply.firstChild("query", namespace: XMLNamespace.discoInfo)
        }
        let nodes = answer.map { NotifyInterests.notifyNodes(in: EntityCapabilities.features(of: $0)) }
        let verified = shared && answer.flatMap(EntityCapabilities.sha1Ver) == announcement.ver
        if !verified, answer != nil {
            logger.debug("entity capabilities do not match their ver", metadata: ["jid": "\(session.jid)", "ver": "\(announcement.ver)"])
        }
        var waiting = [session]
        if shared {
            waiting = interests.resolve(announcement.ver, verified: verified ? nodes : nil)
            if !waiting.contains(session) { waiting.append(session) }
        }
        for other in waiting {
            guard other.isAvailable || other == session else { continue }
            if other == session || verified {
                let new = interests.set(nodes ?? [], for: other.jid, ver: announcement.ver, fresh: other == session && initial)
                mirrorInterests(of: other)
                await sendLastItems(to: other, nodes: new)
            } else {
                // Their claim of the same ver is not proven by someone else's answer.
                Task { await self.learn(other, announcement, initial: false, shared: false) }
            }
        }
    }
}
