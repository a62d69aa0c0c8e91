import ParleyCore

/// A resumed session that never answers. Prosody 0.12 can resume a session whose stanza
/// processing died with the connection it was serving: it sends `<resumed/>` and its queue,
/// then handles nothing more, not even `<r/>`. Resuming that session again after each silence
/// would go on forever (and never deliver what the client sends), so a connection that resumed
/// and then got no `<a/>` back before the client gave up on it ends the session for the
/// client: the next connection binds a new one and sends the unacknowledged messages again
/// (the receiving side drops any it already has, by origin id).
///
/// Giving up is either the heartbeat (nothing at all from the server) or, while the server
/// still sends (other people's messages reach the dead session), an `<r/>` left unanswered
/// for as long as the heartbeat would wait.
extension XMPPClient {
    func abandonUnresponsiveResumedSession() {
        guard resumedWithoutAcknowledgement, managed?.resumptionID != nil else { return }
        resumedWithoutAcknowledgement = false
        logger.warning("the resumed session never answered; starting a new session instead of resuming it again")
        managed?.resumptionID = nil
    }

    /// Called when an `<r/>` goes out: if this connection has not answered it in time, it ends.
    func watchAcknowledgement() {
        acknowledgementWatch?.cancel()
        guard let watched = connection else { return }
        let patience = configuration.heartbeatInterval + configuration.heartbeatTimeout
        acknowledgementWatch = Task { [weak self] in
            try? await Task.sleep(for: patience)
            guard !Task.isCancelled else { return }
            await self?.acknowledgementOverdue(on: watched)
        }
    }

    private func acknowledgementOverdue(on watched: ClientConnection) {
        guard connection === watched, managedIsLive, managed?.acknowledgementRequested == true else { return }
        logger.warning("the server left a request for acknowledgement unanswered; reconnecting")
        // Ended as the heartbeat ends a connection: abruptly, so that a server that is only
        // slow keeps the session for a resumption, and with the same consequence here.
        watched.channel.pipeline.fireErrorCaught(StreamError(.connectionTimeout, text: "No answer to <r/>."))
    }
}

extension ConnectionEnd {
    static let silenceDescription = "no answer from the server (heartbeat timed out)"
}
