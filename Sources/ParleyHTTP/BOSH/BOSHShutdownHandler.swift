import NIOCore
import ParleyCore
import ParleyServer

/// First in a BOSH session's pipeline: a server shutdown that names another BOSH endpoint
/// (`shutdown.redirect_bosh_uri`) ends the session with the binding's own redirect, XEP-0124
/// §17.2's `see-other-uri` with the `<uri/>`, rather than a stream error inside a
/// `remote-stream-error`. A `<see-other-host/>` names a host a web client cannot use, so
/// without a BOSH URI the session ends with `<system-shutdown/>`, as a WebSocket does.
final class BOSHShutdownHandler: ChannelInboundHandler {
    typealias InboundIn = XMLStreamEvent

    private weak var session: BOSHSession?

    init(session: BOSHSession) {
        self.session = session
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard var shutdown = event as? ServerShutdownEvent else { return context.fireUserInboundEventTriggered(event) }
        shutdown.redirectHost = nil
        if let uri = shutdown.redirectBOSHURI, let session, !session.isOver {
            session.redirect(to: uri)
            shutdown.redirectedByTransport = true
        }
        context.fireUserInboundEventTriggered(shutdown)
    }
}
