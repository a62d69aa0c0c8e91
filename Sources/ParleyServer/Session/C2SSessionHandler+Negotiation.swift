import NIOCore
import ParleyCore
import ParleyStream
import ParleyTLS

/// Stream headers, features and STARTTLS (RFC 6120 §4 and §5).
extension C2SSessionHandler {
    static let registerFeatureNamespace = XMLNamespace.registerFeature

    func receivedHeader(_ header: XMLStreamHeader) {
        guard case .awaitingHeader = phase else { return }
        let domain = server.policy.domain.description
        var opening = StreamOpening(from: domain, id: makeStreamID())
        if let from = header[attribute: "from"], (try? JID(from)) != nil { opening.to = from }
        write(.open(opening))
        responseHeaderSent = true
        if let refusal {
            return fail(refusal)
        }
        if let error = checkHeader(header) {
            return fail(error)
        }
        if authenticatedUser != nil {
            phase = .awaitingBind
            send(bindFeatures())
        } else {
            phase = .negotiating
            send(preAuthenticationFeatures())
        }
    }

    /// RFC 6120 §4.8–4.9: what a client's header must say before we go on.
    private func checkHeader(_ header: XMLStreamHeader) -> StreamError? {
        if header.defaultNamespace != XMLNamespace.client {
            let found = header.defaultNamespace.map { "'\($0)'" } ?? "none"
            return StreamError(.invalidNamespace, text: "The stream's content namespace must be 'jabber:client' (found \(found)).")
        }
        if header.prefix != nil, header.prefix != "stream" {
            return StreamError(.badNamespacePrefix, text: "The stream element must use the 'stream' prefix.")
        }
        guard let to = header[attribute: "to"] else {
            return StreamError(.hostUnknown, text: "The stream header has no 'to' address; this server is \(server.policy.domain).")
        }
        guard let toJID = try? JID(to), toJID == server.policy.domain else {
            return StreamError(.hostUnknown, text: "This server does not serve '\(to)'; it is \(server.policy.domain).")
        }
        guard let version = header[attribute: "version"] else {
            return StreamError(.unsupportedVersion, text: "The stream has no version; this server speaks XMPP 1.0 only.")
        }
        let parts = version.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let major = Int(parts[0]), Int(parts[1]) != nil else {
            return StreamError(.unsupportedVersion, text: "'\(version)' is not a stream version.")
        }
        if major != 1 {
            return StreamError(.unsupportedVersion, text: "This server speaks XMPP 1.0, not \(version).")
        }
        return nil
    }

    /// The same for every stream with the same transport and security: built once per
    /// server (`ServerContext.features`), not per stream header.
    func preAuthenticationFeatures() -> XMLElement {
        server.features.beforeAuthentication(offersStartTLS: offersStartTLS, secure: isSecure)
    }

    func bindFeatures() -> XMLElement {
        server.features.afterAuthentication
    }

    static func preAuthenticationFeatures(policy: C2SPolicy, hasTLS: Bool, offersStartTLS: Bool, secure: Bool) -> XMLElement {
        var features = XMLElement("features", namespace: XMLNamespace.streams)
        let canStartTLS = offersStartTLS && !secure && policy.tlsAvailable && hasTLS
        if canStartTLS {
            var starttls = XMLElement("starttls", namespace: XMLNamespace.tls)
            if policy.tlsRequired { starttls.append(XMLElement("required")) }
            features.append(starttls)
        }
        // While TLS is still required, only STARTTLS is on offer (RFC 6120 §5.3.1).
        if !(canStartTLS && policy.tlsRequired) {
            let mechanisms = policy.offeredMechanisms(secure: secure)
            if !mechanisms.isEmpty { features.append(SASLMechanism.featureElement(offering: mechanisms)) }
            if policy.registrationEnabled {
                features.append(XMLElement("register", namespace: Self.registerFeatureNamespace))
            }
        }
        return features
    }

    static func bindFeatures(streamFeatures: [XMLElement]) -> XMLElement {
        var features = XMLElement("features", namespace: XMLNamespace.streams)
        features.append(XMLElement("bind", namespace: XMLNamespace.bind))
        var session = XMLElement("session", namespace: XMLNamespace.session)
        session.append(XMLElement("optional"))
        features.append(session)
        features.append(Self.clientStateFeature)
        for feature in streamFeatures { features.append(feature) }
        return features
    }

    /// An element received after the features, before authentication.
    func negotiate(_ element: XMLElement) {
        switch (element.namespace, element.name) {
        case (XMLNamespace.tls?, "starttls"):
            startTLS()
        case (XMLNamespace.sasl?, "auth"):
            if mustStartTLSFirst {
                return send(SASLFailure(.encryptionRequired, text: "Use STARTTLS before authenticating.").element)
            }
            beginAuthentication(element)
        case (XMLNamespace.sasl?, "abort"):
            send(SASLFailure(.aborted).element)
        case (XMLNamespace.client?, "iq") where isRegistrationRequest(element):
            if mustStartTLSFirst {
                return send(element.errorReply(StanzaError(.notAuthorized, text: "Use STARTTLS before registering.")) ?? element)
            }
            handlePreAuthenticationRegistration(element)
        case (XMLNamespace.client?, "iq"), (XMLNamespace.client?, "message"), (XMLNamespace.client?, "presence"):
            fail(StreamError(.notAuthorized, text: "Stanzas cannot be sent before authentication."))
        case (StreamManagementXML.namespace?, "enable"), (StreamManagementXML.namespace?, "resume")
        where isStreamManagement(element):
            // XEP-0198 §3, §5: too early, answered as Prosody does; the stream goes on.
            send(StreamManagementXML.failed(.unexpectedRequest))
        default:
            fail(StreamError(.unsupportedStanzaType, text: "<\(element.name)/> in '\(element.namespace ?? "")' is not understood here."))
        }
    }

    var mustStartTLSFirst: Bool {
        offersStartTLS && !isSecure && server.policy.tlsRequired && server.tls != nil
    }

    private func isRegistrationRequest(_ iq: XMLElement) -> Bool {
        iq.firstChild("query", namespace: RegistrationModule.namespace) != nil
            && (iq.to == nil || iq.to == server.policy.domain.description)
    }

    /// RFC 6120 §5.4.2.3: `<proceed/>` in the clear, then TLS from the very next byte, then
    /// a new stream; anything the client sent in the clear after `<starttls/>` is dropped.
    private func startTLS() {
        guard offersStartTLS, let tls = server.tls, !isSecure, let context else {
            send(XMLElement("failure", namespace: XMLNamespace.tls))
            return fail(StreamError(.policyViolation, text: "STARTTLS is not available on this stream."))
        }
        context.writeAndFlush(wrapOutboundOut(.element(XMLElement("proceed", namespace: XMLNamespace.tls))), promise: nil)
        do {
            try context.pipeline.syncOperations.addHandler(TLSHandler(context: tls), position: .first)
        } catch {
            logger.error("could not start TLS", metadata: ["error": "\(error)"])
            return closeNow()
        }
        context.triggerUserOutboundEvent(XMLStreamDecoder.Restart.afterTLS, promise: nil)
        context.triggerUserOutboundEvent(StreamKeepaliveHandler.AwaitingHeader(), promise: nil)
        phase = .awaitingHeader
        responseHeaderSent = false
    }
}
