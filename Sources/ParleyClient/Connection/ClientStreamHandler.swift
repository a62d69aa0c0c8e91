import NIOCore
import ParleyCore
import ParleyStream
import ParleyTLS

/// The client side of RFC 6120 stream negotiation on one connection: header, STARTTLS,
/// SASL (SCRAM-SHA-256, then SCRAM-SHA-1, then PLAIN over TLS only), restart, bind. Once
/// bound it hands every stanza to `onStanza`. It reports exactly one end through `onClosed`.
final class ClientStreamHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = XMLStreamEvent
    typealias OutboundOut = XMLStreamOutput

    struct Callbacks {
        /// The bound JID, the features offered after authentication, and whether the session
        /// is new or resumed (XEP-0198).
        var onEstablished: (JID, XMLElement?, SessionStart) -> Void
        var onStanza: (XMLElement) -> Void
        var onClosed: (ConnectionEnd) -> Void
        /// The server has handled this many of our stanzas in the managed session (`<a h/>`).
        var onAcknowledged: (UInt32) -> Void = { _ in }
    }

    enum Phase {
        case awaitingFeatures
        case startingTLS
        case authenticating(Authentication)
        case binding(id: String)
        case establishingSession(id: String, jid: JID)
        /// `<resume/>` was sent in place of a bind.
        case resuming(ResumptionRequest)
        /// Bound; `<enable/>` was sent.
        case enablingManagement(jid: JID)
        /// XEP-0077 before authentication: the form was asked for (`submitted` false), or the
        /// filled-in form was sent.
        case registering(id: String, submitted: Bool)
        case established
        case closed
    }

    enum Authentication {
        case scram(SCRAMClient)
        case plain
    }

    let configuration: ClientConfiguration
    private let tls: TLSContext?
    let callbacks: Callbacks
    /// Creates the account (XEP-0077) once the stream is secure, instead of signing in.
    private let registersAccount: Bool
    var phase = Phase.awaitingFeatures
    private var isSecure: Bool
    private var isAuthenticated = false
    private var context: ChannelHandlerContext?
    private var pingCounter = 0
    var sessionFeatures: XMLElement?
    /// The managed session to take over, if the previous connection had one.
    private let resumption: ResumptionRequest?
    var failedResumption: SessionStart.FailedResumption?
    /// Counts handled stanzas once stream management is on (XEP-0198).
    var handledCounter: HandledCounter?

    init(
        configuration: ClientConfiguration, tls: TLSContext?, registersAccount: Bool = false, resumption: ResumptionRequest? = nil,
        callbacks: Callbacks
    ) {
        self.configuration = configuration
        self.tls = tls
        self.registersAccount = registersAccount
        self.resumption = resumption
        self.callbacks = callbacks
        self.isSecure = configuration.startsSecure
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { openStream() }
    }

    func channelActive(context: ChannelHandlerContext) {
        openStream()
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(.connectionLost("the connection closed"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        switch error {
        case let streamError as StreamError where streamError.condition == .connectionTimeout:
            finish(.serverSilent)
        case let streamError as StreamError:
            // The server's bytes broke the rules: say so, then give up the connection.
            write(.error(streamError))
            finish(.connectionLost("the server sent invalid XML: \(streamError)"))
        case let tlsError as TLSError where tlsError.untrustedCertificateReason != nil:
            finish(.certificateUntrusted(tlsError.untrustedCertificateReason ?? ""))
        default:
            finish(.connectionLost("\(error)"))
        }
        context.close(promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let redirect = event as? WebSocketClientFraming.Redirect {
            // The `<close/>` that carried it follows, and is answered as any other.
            if let target = ServerRedirect(seeOtherURI: redirect.uri) { finish(.redirected(target)) }
            return
        }
        if event is StreamKeepaliveHandler.PeerIdle, case .established = phase {
            // A managed stream asks for an acknowledgement instead (XEP-0198 §8): it proves
            // the server alive and tells it how far we are, without a stanza to count.
            if handledCounter != nil {
                send(StreamManagementElements.request)
                context.flush()
                context.fireUserInboundEventTriggered(event)
                return
            }
            // XEP-0199 heartbeat: any answer counts as life; silence ends in the idle timeout.
            pingCounter += 1
            var ping = XMLElement("iq", namespace: XMLNamespace.client, ["type": "get", "id": "heartbeat-\(pingCounter)", "to": configuration.jid.domainpart])
            ping.append(XMLElement("ping", namespace: XMLNamespace.ping))
            send(ping)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .streamOpened(let header):
            if header.namespace != XMLNamespace.streams || header.defaultNamespace != XMLNamespace.client {
                fail(StreamError(.invalidNamespace, text: "Expected a jabber:client stream."), report: .connectionLost("the server did not open an XMPP client stream"))
            }
        case .streamClosed:
            write(.close)
            finish(.connectionLost("the server closed the stream"))
            context.close(promise: nil)
        case .stanza(let element):
            received(element)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
        context.fireChannelReadComplete()
    }

    // MARK: Negotiation

    private func openStream() {
        var opening = StreamOpening(to: configuration.jid.domainpart)
        // RFC 6120 §4.7.1: once the stream is protected, say who we are.
        if isSecure { opening.from = configuration.jid.bare.description }
        write(.open(opening))
        context?.flush()
    }

    private func received(_ element: XMLElement) {
        if element.name == "error", element.namespace == XMLNamespace.streams {
            let error = StreamError(element: element)
            if error.condition == .seeOtherHost, let other = error.otherHost, let redirect = ServerRedirect(seeOtherHost: other) {
                return finish(.redirected(redirect))
            }
            return finish(.streamError(error))
        }
        switch phase {
        case .awaitingFeatures:
            guard element.name == "features", element.namespace == XMLNamespace.streams else { return unexpected(element) }
            features(element)
        case .startingTLS:
            guard element.namespace == XMLNamespace.tls, element.name == "proceed" else {
                return finish(.connectionLost("the server refused STARTTLS"))
            }
            startTLS()
        case .authenticating(let authentication):
            authenticationStep(element, authentication)
        case .binding(let id):
            guard element.name == "iq", element.id == id else { return }
            bound(element)
        case .establishingSession(let id, let jid):
            guard element.name == "iq", element.id == id else { return }
            sessionEstablished(jid)
        case .resuming(let request):
            resumptionAnswer(element, request)
        case .enablingManagement(let jid):
            guard element.namespace == StreamManagementElements.namespace else {
                // Stanzas may come before `<enabled/>`; they are not counted.
                return callbacks.onStanza(element)
            }
            managementAnswer(element, jid: jid)
        case .registering(let id, let submitted):
            guard element.name == "iq", element.id == id else { return }
            registrationStep(element, submitted: submitted)
        case .established:
            if element.namespace == StreamManagementElements.namespace { return managementElement(element) }
            callbacks.onStanza(element)
            // Counted once handed on: from here on the client owns it (XEP-0198 §4).
            if element.isStanza, element.namespace == XMLNamespace.client { handledCounter?.increment() }
        case .closed:
            return
        }
    }

    private func features(_ features: XMLElement) {
        if isAuthenticated {
            sessionFeatures = features
            if let resumption, StreamManagementElements.isOffered(in: features) {
                send(StreamManagementElements.resume(previd: resumption.previd, h: resumption.counter.count))
                phase = .resuming(resumption)
                return
            }
            bind()
            return
        }
        if !isSecure, configuration.negotiatesStartTLS {
            guard features.firstChild("starttls", namespace: XMLNamespace.tls) != nil, tls != nil else {
                return fail(
                    StreamError(.policyViolation, text: "This client requires TLS."),
                    report: .connectionLost("the server does not offer STARTTLS; refusing to send credentials in the clear"))
            }
            send(XMLElement("starttls", namespace: XMLNamespace.tls))
            phase = .startingTLS
            return
        }
        if registersAccount {
            return askForRegistrationForm()
        }
        let offered = SASLMechanism.offered(in: features)
        guard let mechanism = SASLMechanism.preferred(among: offered, allowPlain: isSecure) else {
            return finish(.authenticationFailed("the server offers no usable mechanism (offered: \(offered.joined(separator: ", ")))"))
        }
        let username = configuration.jid.localpart ?? ""
        if let hash = mechanism.scramHash {
            var scram = SCRAMClient(hash: hash, username: username, password: configuration.password)
            do {
                let first = try scram.clientFirst()
                send(SASLElement.auth(mechanism: mechanism.rawValue, initialResponse: first).element)
                phase = .authenticating(.scram(scram))
            } catch {
                finish(.authenticationFailed("\(error)"))
            }
        } else {
            do {
                let message = try PLAINMessage(authcid: username, password: configuration.password).encoded()
                send(SASLElement.auth(mechanism: mechanism.rawValue, initialResponse: message).element)
                phase = .authenticating(.plain)
            } catch {
                finish(.authenticationFailed("\(error)"))
            }
        }
    }

    private var needsSession = false

    func bind() {
        let id = "bind-1"
        var bind = XMLElement("bind", namespace: XMLNamespace.bind)
        if let resource = configuration.resource { bind.append(XMLElement("resource", text: resource)) }
        send(XMLElement("iq", namespace: XMLNamespace.client, ["type": "set", "id": id], [bind]))
        phase = .binding(id: id)
        needsSession = sessionFeatures?.firstChild("session", namespace: XMLNamespace.session).map { $0.firstChild("optional") == nil } ?? false
    }

    private func startTLS() {
        guard let tls, let context else { return }
        do {
            try context.pipeline.syncOperations.addHandler(TLSHandler(context: tls, serverName: configuration.jid.domainpart), position: .first)
        } catch {
            return finish(.connectionLost("TLS could not start: \(error)"))
        }
        context.triggerUserOutboundEvent(XMLStreamDecoder.Restart.afterTLS, promise: nil)
        isSecure = true
        phase = .awaitingFeatures
        openStream()
    }

    private func authenticationStep(_ element: XMLElement, _ authentication: Authentication) {
        let sasl: SASLElement
        do {
            sasl = try SASLElement(parsing: element)
        } catch {
            return finish(.authenticationFailed("the server sent an invalid SASL element"))
        }
        switch (sasl, authentication) {
        case (.challenge(let data), .scram(var scram)):
            do {
                let final = try scram.receiveServerFirst(data)
                send(SASLElement.response(final).element)
                phase = .authenticating(.scram(scram))
            } catch {
                abort("\(error)")
            }
        case (.success(let data), .scram(var scram)):
            do {
                // The server must prove it knows our keys too (RFC 5802 §5.1 "v=").
                try scram.receiveServerFinal(data ?? [])
            } catch {
                return finish(.authenticationFailed("the server's SCRAM signature is wrong: \(error)"))
            }
            authenticated()
        case (.success, .plain):
            authenticated()
        case (.failure(let failure), _):
            finish(.authenticationFailed(failure.text.map { "\(failure.condition.rawValue): \($0)" } ?? failure.condition.rawValue))
        default:
            abort("unexpected <\(element.name)/>")
        }
    }

    private func abort(_ reason: String) {
        send(SASLElement.abort.element)
        finish(.authenticationFailed(reason))
    }

    private func authenticated() {
        isAuthenticated = true
        context?.triggerUserOutboundEvent(XMLStreamDecoder.Restart.afterSASL, promise: nil)
        phase = .awaitingFeatures
        openStream()
    }

    private func bound(_ result: XMLElement) {
        guard result.type == "result", let text = result.firstChild("bind", namespace: XMLNamespace.bind)?.firstChild("jid")?.text,
            let jid = try? JID(text)
        else {
            let error = StanzaError(stanza: result)
            return finish(.authenticationFailed("resource binding failed: \(error?.description ?? "no JID in the answer")"))
        }
        if needsSession {
            let id = "session-1"
            send(XMLElement("iq", namespace: XMLNamespace.client, ["type": "set", "id": id], [XMLElement("session", namespace: XMLNamespace.session, [:])]))
            phase = .establishingSession(id: id, jid: jid)
        } else {
            sessionEstablished(jid)
        }
    }

    func established(_ jid: JID, _ start: SessionStart) {
        phase = .established
        callbacks.onEstablished(jid, sessionFeatures, start)
    }

    func unexpected(_ element: XMLElement) {
        fail(StreamError(.unsupportedStanzaType, text: "<\(element.name)/> was not expected before the features."), report: .connectionLost("the server sent <\(element.name)/> before its features"))
    }

    // MARK: Output and the end

    func send(_ element: XMLElement) {
        write(.element(element))
    }

    private func write(_ output: XMLStreamOutput) {
        guard let context else { return }
        context.write(wrapOutboundOut(output), promise: nil)
    }

    func fail(_ error: StreamError, report end: ConnectionEnd) {
        write(.error(error))
        context?.flush()
        finish(end)
        context?.close(promise: nil)
    }

    /// Reports how the connection ended, once.
    func finish(_ end: ConnectionEnd) {
        if case .closed = phase { return }
        phase = .closed
        callbacks.onClosed(end)
        context?.flush()
        if case .streamError = end { context?.close(promise: nil) }
        if case .authenticationFailed = end { context?.close(promise: nil) }
    }

    /// Registration is over either way: close the stream politely, then the connection.
    func finishRegistration(_ end: ConnectionEnd) {
        finish(end)
        write(.close)
        context?.flush()
        context?.close(promise: nil)
    }
}

/// How one connection ended, as the connection saw it.
enum ConnectionEnd: Sendable, Equatable {
    case connectionLost(String)
    /// Nothing came from the server for a heartbeat interval and its timeout, though the
    /// client asked (`<r/>` or a ping).
    case serverSilent
    case streamError(StreamError)
    case authenticationFailed(String)
    case certificateUntrusted(String)
    /// In-band registration created the account.
    case registered
    /// In-band registration was refused (taken, not allowed, password too short, …).
    case registrationRefused(StanzaError)
    /// The server sent the client elsewhere (`see-other-host`, `see-other-uri`).
    case redirected(ServerRedirect)
}
