import ParleyCore
import ParleyStream

extension C2SSessionHandler {
    /// The server is stopping. The session ends as on any shutdown (not resumable here; its
    /// unacknowledged messages go to offline storage), then the stream ends with where to go
    /// next when the operator configured one, else with `<system-shutdown/>`.
    func shuttingDown(_ shutdown: ServerShutdownEvent) {
        guard !isClosed else { return }
        if shutdown.redirectedByTransport {
            // RFC 7395 §3.6.1: no stream error, a `<close/>` that names the other endpoint;
            // the framing handler below adds it.
            logger.info("server shutdown: client redirected", metadata: ["to": "\(shutdown.redirectWebSocketURI ?? shutdown.redirectBOSHURI ?? "")"])
            if !responseHeaderSent {
                write(.open(StreamOpening(from: server.policy.domain.description, id: makeStreamID())))
                responseHeaderSent = true
            }
            endSession(reason: "server shutdown")
            return finish(with: .close)
        }
        if let host = shutdown.redirectHost {
            // RFC 6120 §4.9.3.19: the same service, reachable at another host during a restart.
            return fail(StreamError(.seeOtherHost, text: "The server is restarting; reconnect to \(host).", otherHost: host))
        }
        fail(StreamError(.systemShutdown, text: "The server is shutting down."))
    }
}
