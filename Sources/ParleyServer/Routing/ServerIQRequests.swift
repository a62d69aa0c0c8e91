import NIOConcurrencyHelpers
import NIOCore
import ParleyCore

/// Iq requests the server itself sends to a client's full JID (a disco#info query for its
/// entity capabilities, XEP-0115), and the answers they wait for. The router hands every
/// result or error addressed to the server here; an answer counts only if it comes from the
/// full JID that was asked, so no other session can answer in its place.
public final class ServerIQRequests: Sendable {
    /// What became of a request.
    public enum Outcome: Sendable {
        /// The `type='result'` or `type='error'` iq that answered it.
        case answered(XMLElement)
        /// No answer in time (the client ignored it, or its session ended).
        case timedOut
    }

    private struct Pending: Sendable {
        let to: JID
        let completion: @Sendable (Outcome) -> Void
        let timer: Scheduled<Void>?
    }

    private let domain: JID
    private let pending = NIOLockedValueBox([String: Pending]())
    private let counter = NIOLockedValueBox<UInt64>(0)

    public init(domain: JID) {
        self.domain = domain
    }

    /// Sends `<iq type=kind from=domain to=session>payload</iq>` and calls `completion` once,
    /// with the answer or after `timeout`.
    public func send(
        _ kind: IQKind, _ payload: XMLElement, to session: SessionHandle, timeout: Duration = .seconds(30),
        completion: @escaping @Sendable (Outcome) -> Void
    ) {
        let id = counter.withLockedValue { counter -> String in
            counter += 1
            return "parley-\(counter)-\(UInt32.random(in: .min ... .max))"
        }
        let timer = session.eventLoop.scheduleTask(in: TimeAmount(timeout)) { [weak self] () -> Void in
            self?.finish(id, .timedOut)
        }
        pending.withLockedValue { $0[id] = Pending(to: session.jid, completion: completion, timer: timer) }
        var iq = XMLElement(
            "iq", namespace: XMLNamespace.client,
            ["from": domain.description, "to": session.jid.description, "type": kind.rawValue, "id": id])
        iq.append(payload)
        session.deliver(iq)
    }

    /// The async form of `send`.
    public func request(_ kind: IQKind, _ payload: XMLElement, to session: SessionHandle, timeout: Duration = .seconds(30)) async -> Outcome {
        await withCheckedContinuation { continuation in
            send(kind, payload, to: session, timeout: timeout) { continuation.resume(returning: $0) }
        }
    }

    /// Takes a result or error iq a session sent to the server; false if it answers no
    /// request of ours (or comes from someone other than who was asked).
    func receive(_ reply: XMLElement, from sender: JID) -> Bool {
        guard let id = reply.id else { return false }
        let matches = pending.withLockedValue { $0[id]?.to == sender }
        guard matches else { return false }
        finish(id, .answered(reply))
        return true
    }

    public var pendingCount: Int { pending.withLockedValue { $0.count } }

    private func finish(_ id: String, _ outcome: Outcome) {
        guard let request = pending.withLockedValue({ $0.removeValue(forKey: id) }) else { return }
        request.timer?.cancel()
        request.completion(outcome)
    }
}
