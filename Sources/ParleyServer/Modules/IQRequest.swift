import ParleyCore

/// An iq get or set that the server answers itself, with the sender already authenticated
/// and its `from` stamped.
public struct IQRequest: Sendable {
    public let stanza: XMLElement
    /// The single child element that says what is asked (RFC 6120 §8.2.3).
    public let payload: XMLElement
    public let from: JID
    /// The server's domain, or the bare JID of the account the server answers for.
    public let to: JID
    public let kind: IQKind
    /// The requesting session, when the request came from a bound session of this server.
    public let session: SessionHandle?

    /// Whether the request is addressed to the requester's own account (or carries no `to`),
    /// which RFC 6120 §10.3.3 has the server handle on the account's behalf.
    public var isToOwnAccount: Bool { to == from.bare }
}

public enum IQKind: String, Sendable, Hashable {
    case get, set
}

/// Sends the one reply an iq get or set deserves, from whatever thread finishes the work.
public struct IQResponder: Sendable {
    let request: XMLElement
    let send: @Sendable (XMLElement) -> Void

    public init(request: XMLElement, send: @escaping @Sendable (XMLElement) -> Void) {
        self.request = request
        self.send = send
    }

    public func result(_ payload: XMLElement? = nil) {
        send(request.iqResult(payload))
    }

    public func error(_ error: StanzaError) {
        if let reply = request.errorReply(error) { send(reply) }
    }

    /// Runs async work (storage, hashing) off the event loop and replies with its outcome;
    /// a thrown `StanzaError` becomes the error reply, anything else `internal-server-error`.
    public func answer(_ work: @escaping @Sendable () async throws -> XMLElement?) {
        Task {
            do {
                result(try await work())
            } catch let stanzaError as StanzaError {
                error(stanzaError)
            } catch {
                self.error(StanzaError(.internalServerError, text: "The server could not complete the request."))
            }
        }
    }
}

public typealias IQHandler = @Sendable (IQRequest, IQResponder) -> Void
