import ParleyCore

/// XEP-0012 Last Activity of a contact: how long ago they went offline, and what they said
/// then (their server answers for the bare JID, to those allowed to see their presence).
public struct LastActivity: Sendable, Equatable {
    public var seconds: Int
    public var status: String?
}

/// Why `lastActivity(of:)` has no answer.
public enum LastActivityError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Their server refused: `forbidden` when we may not see their presence,
    /// `service-unavailable` when it does not keep last activity.
    case refused(StanzaError)
    case malformedAnswer

    public var description: String {
        switch self {
        case .refused(let error): "the server refused: \(error.text ?? error.condition.rawValue)"
        case .malformedAnswer: "the server's last-activity answer has no seconds"
        }
    }
}

extension ChatClient {
    public func lastActivity(of jid: JID) async throws -> LastActivity {
        var iq = XMLElement("iq", namespace: XMLNamespace.client, ["type": "get", "to": jid.description])
        iq.append(XMLElement("query", namespace: ProfileNamespace.lastActivity))
        let answer: XMLElement
        do {
            answer = try await xmpp.request(iq)
        } catch let error as StanzaError {
            throw LastActivityError.refused(error)
        }
        guard let query = answer.firstChild("query", namespace: ProfileNamespace.lastActivity),
            let seconds = query[attribute: "seconds"].flatMap(Int.init), seconds >= 0
        else { throw LastActivityError.malformedAnswer }
        return LastActivity(seconds: seconds, status: DisplayName.printable(query.text))
    }

    /// XEP-0352: whether the user is looking at the app. See `XMPPClient.setActive`.
    @discardableResult
    public func setActive(_ active: Bool) async -> Bool {
        await xmpp.setActive(active)
    }
}
