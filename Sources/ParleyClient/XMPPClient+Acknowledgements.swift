import ParleyCore

/// XEP-0198 from the client's side: every stanza sent is kept until the server's `<a h/>`
/// covers it, so a dropped connection loses nothing the server did not take.
extension XMPPClient {
    /// Writes a stanza to the current connection and, on a managed stream, keeps it until
    /// the server acknowledges it. Without stream management, written is all we can know.
    func transmit(_ stanza: XMLElement) {
        guard let connection else { return outbox.append(stanza) }
        connection.send(stanza)
        if managedIsLive, managed != nil {
            managed?.sent(stanza)
            requestAcknowledgement()
        } else {
            notifyAcknowledged([stanza])
        }
    }

    func requestAcknowledgement() {
        guard managedIsLive, let session = managed, !session.acknowledgementRequested else { return }
        managed?.acknowledgementRequested = true
        connection?.send(StreamManagementElements.request)
        watchAcknowledgement()
    }

    func acknowledged(_ h: UInt32) async {
        guard managedIsLive else { return }
        managed?.acknowledgementRequested = false
        acknowledgementWatch?.cancel()
        resumedWithoutAcknowledgement = false
        guard let handled = acknowledge(h) else { return }
        notifyAcknowledged(handled)
        // Whatever went out after our `<r/>` still needs its own acknowledgement.
        if managed?.unacknowledged.isEmpty == false {
            requestAcknowledgement()
        } else {
            resumeAcknowledgementWaiters()
        }
    }

    /// Returns once the server has acknowledged everything sent so far (XEP-0198), or the
    /// connection is gone; at once on a stream without acknowledgements. What a short-lived
    /// program waits for, so that what it sent is not left to be resent by its next run.
    public func waitForAcknowledgements() async {
        guard managedIsLive, managed?.unacknowledged.isEmpty == false else { return }
        requestAcknowledgement()
        await withCheckedContinuation { acknowledgementWaiters.append($0) }
    }

    func resumeAcknowledgementWaiters() {
        let waiters = acknowledgementWaiters
        acknowledgementWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    /// nil when the server acknowledged more than we sent: a broken server, so the
    /// connection is dropped and the session (whatever it counted) is not resumed.
    func acknowledge(_ h: UInt32) -> [XMLElement]? {
        do {
            return try managed?.acknowledge(h) ?? []
        } catch {
            logger.warning("the server acknowledged more stanzas than were sent", metadata: ["h": "\(h)"])
            let unacknowledged = managed?.unacknowledged ?? []
            managed = nil
            managedIsLive = false
            outbox.insert(contentsOf: unacknowledged.filter { $0.name == "message" }, at: 0)
            connection?.close()
            return nil
        }
    }

    func notifyAcknowledged(_ stanzas: [XMLElement]) {
        guard !stanzas.isEmpty else { return }
        for handler in acknowledgementHandlers { handler(stanzas) }
    }
}
