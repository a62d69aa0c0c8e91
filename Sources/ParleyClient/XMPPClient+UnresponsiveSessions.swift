/// A resumed session that never answers. Prosody 0.12 can resume a session whose stanza
/// processing died with the connection it was serving: it sends `<resumed/>` and its queue,
/// then handles nothing more, not even `<r/>`. Resuming that session again after each silence
/// would go on forever (and never deliver what the client sends), so a connection that resumed
/// and then heard nothing back until the heartbeat gave up ends the session for the client:
/// the next connection binds a new one and sends the unacknowledged messages again (the
/// receiving side drops any it already has, by origin id).
extension XMPPClient {
    func abandonUnresponsiveResumedSession() {
        guard resumedWithoutAcknowledgement, managed?.resumptionID != nil else { return }
        resumedWithoutAcknowledgement = false
        logger.warning("the resumed session never answered; starting a new session instead of resuming it again")
        managed?.resumptionID = nil
    }
}

extension ConnectionEnd {
    static let silenceDescription = "no answer from the server (heartbeat timed out)"
}
