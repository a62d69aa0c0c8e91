import ParleyCore

/// XEP-0198 on one connection: `<enable/>` once bound, `<resume/>` in place of a bind when
/// the previous connection's session can be taken over, and `<r/>`/`<a/>` once managed.
extension ClientStreamHandler {
    /// Bound (and the legacy session made): turn on acknowledgements and resumption when the
    /// server offers them.
    func sessionEstablished(_ jid: JID) {
        guard configuration.streamManagement, StreamManagementElements.isOffered(in: sessionFeatures) else {
            return established(jid, .bound(management: nil, failedResumption: failedResumption))
        }
        send(StreamManagementElements.enable())
        phase = .enablingManagement(jid: jid)
    }

    func managementAnswer(_ element: XMLElement, jid: JID) {
        switch element.name {
        case "enabled":
            let counter = HandledCounter()
            handledCounter = counter
            let resumable = element[attribute: "resume"] == "true" || element[attribute: "resume"] == "1"
            let management = SessionStart.ManagedSession(resumptionID: resumable ? element[attribute: "id"] : nil, counter: counter)
            established(jid, .bound(management: management, failedResumption: failedResumption))
        default:
            // `<failed/>`: the session goes on without acknowledgements.
            established(jid, .bound(management: nil, failedResumption: failedResumption))
        }
    }

    func resumptionAnswer(_ element: XMLElement, _ request: ResumptionRequest) {
        guard element.namespace == StreamManagementElements.namespace else { return unexpected(element) }
        switch element.name {
        case "resumed":
            guard let h = StreamManagementElements.counter(element) else {
                return fail(StreamError(.badFormat, text: "<resumed/> needs an 'h'."), report: .connectionLost("the server resumed without saying how far it got"))
            }
            handledCounter = request.counter
            established(request.jid, .resumed(h: h, counter: request.counter))
        case "failed":
            // Too late or unknown: a new session, after which the client resends what the
            // old one did not acknowledge (XEP-0198 §5).
            failedResumption = SessionStart.FailedResumption(h: StreamManagementElements.counter(element))
            bind()
        default:
            unexpected(element)
        }
    }

    /// `<r/>` and `<a/>` on a managed stream.
    func managementElement(_ element: XMLElement) {
        guard let counter = handledCounter else { return }
        switch element.name {
        case "r":
            send(StreamManagementElements.answer(counter.count))
        case "a":
            guard let h = StreamManagementElements.counter(element) else {
                return fail(StreamError(.badFormat, text: "<a/> needs an 'h'."), report: .connectionLost("the server sent an acknowledgement without a count"))
            }
            callbacks.onAcknowledged(h)
        default:
            break
        }
    }
}
