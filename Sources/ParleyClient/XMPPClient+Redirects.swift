extension XMPPClient {
    /// More than this many redirects without a session in between is a loop between nodes
    /// that point at each other, not a rolling restart.
    static let maxRedirectsInARow = 5

    /// Reconnects where the server said (after the usual short, jittered delay, so a node's
    /// clients do not all arrive on the next one at once), with the same credentials; the
    /// managed session is offered for resumption there.
    func followRedirect(to target: ServerRedirect) {
        guard redirectsInARow < Self.maxRedirectsInARow, let next = target.applied(to: connectedVia ?? configuration) else {
            redirect = nil
            let why = redirectsInARow < Self.maxRedirectsInARow ? "not followed" : "one too many in a row"
            return scheduleReconnect(after: .connectionLost("the server sent the client to \(target) (\(why))"))
        }
        redirectsInARow += 1
        redirect = next
        scheduleReconnect(after: .redirected(to: target.description))
    }
}
