import NIOConcurrencyHelpers
import NIOCore
import ParleyCore

/// The router's view of one bound client session: its address, its presence state, and a way
/// to hand it a stanza from any thread. The session itself lives on its channel's event loop.
public final class SessionHandle: Sendable, Hashable, CustomStringConvertible {
    public let jid: JID
    public let id: UInt64
    public let remoteAddress: String
    /// The id of the account that authenticated (`AccountRecord.id`): an account deleted and
    /// re-created under the same name is another account, and ending the old one's sessions
    /// must spare the new one's.
    public let accountID: Int64?
    let eventLoop: any EventLoop
    /// Completes when the session has ended for good: its connection closed, or, for a
    /// resumable session (XEP-0198), it was not resumed in time or was ended some other way.
    public let closeFuture: EventLoopFuture<Void>
    /// `jid` as a string, made once: every stanza routed to the session is stamped with it.
    public let jidString: String
    /// The cluster node the session is bound on when that is another node (a cluster's
    /// remote session); nil for a session of this server.
    public let node: String?
    /// In a cluster: for a local session, told when its `ClusterView` changes; for a remote
    /// one, what carries stanzas to its node. nil on a single node.
    let cluster: (any ClusterLink)?
    private let state: NIOLockedValueBox<SessionPresence>
    private let sink: @Sendable (SessionDelivery, DeliveryBatch?) -> Void

    init(
        jid: JID, id: UInt64, remoteAddress: String, accountID: Int64? = nil, eventLoop: any EventLoop,
        closeFuture: EventLoopFuture<Void>, node: String? = nil, cluster: (any ClusterLink)? = nil,
        batchingSink: @escaping @Sendable (SessionDelivery, DeliveryBatch?) -> Void
    ) {
        self.node = node
        self.cluster = cluster
        self.accountID = accountID
        self.closeFuture = closeFuture
        self.jid = jid
        self.jidString = jid.description
        self.id = id
        self.remoteAddress = remoteAddress
        self.eventLoop = eventLoop
        self.sink = batchingSink
        self.state = NIOLockedValueBox(SessionPresence())
    }

    /// A session whose sink takes every delivery at once (tests).
    convenience init(
        jid: JID, id: UInt64, remoteAddress: String, accountID: Int64? = nil, eventLoop: any EventLoop,
        closeFuture: EventLoopFuture<Void>, sink: @escaping @Sendable (SessionDelivery) -> Void
    ) {
        self.init(
            jid: jid, id: id, remoteAddress: remoteAddress, accountID: accountID, eventLoop: eventLoop, closeFuture: closeFuture
        ) { delivery, _ in sink(delivery) }
    }

    /// Whether the session has sent available presence and not since gone unavailable
    /// (RFC 6121 §1.5 "available resource").
    public var isAvailable: Bool { state.withLockedValue { $0.isAvailable } }
    public var priority: Int8 { state.withLockedValue { $0.priority } }

    /// Reads or changes the session's presence bookkeeping atomically. In a cluster, a change
    /// of what other nodes route by is passed on to them.
    public func withPresence<Result>(_ body: (inout SessionPresence) -> Result) -> Result {
        guard let cluster, node == nil else { return state.withLockedValue(body) }
        let (result, changed) = state.withLockedValue { state -> (Result, Bool) in
            let before = state.clusterView
            let result = body(&state)
            return (result, state.clusterView != before)
        }
        if changed { cluster.localSessionChanged(self) }
        return result
    }

    /// Whether the session is bound on another node of the cluster.
    public var isRemote: Bool { node != nil }

    /// A session bound on another node: deliveries go through `link` to that node's inbox.
    /// `closeFuture` completes when the cluster learns that the session ended.
    public static func remote(
        jid: JID, node: String, accountID: Int64?, eventLoop: any EventLoop, closeFuture: EventLoopFuture<Void>,
        link: any ClusterLink
    ) -> SessionHandle {
        let id = remoteSessionIDs.withLockedValue { next -> UInt64 in
            next += 1
            return next
        }
        let box = NIOLockedValueBox(WeakSessionHandle())
        let handle = SessionHandle(
            jid: jid, id: id, remoteAddress: "node \(node)", accountID: accountID, eventLoop: eventLoop,
            closeFuture: closeFuture, node: node, cluster: link
        ) { [weak link] delivery, _ in
            guard let link, let handle = box.withLockedValue({ $0.handle }) else { return }
            switch delivery {
            case .stanza(let stanza):
                _ = link.forward(stanza, to: handle)
            case .confirmed(let stanza, let written):
                let task = link.forward(stanza, to: handle)
                Task {
                    await task.value
                    written.succeed(())
                }
            case .terminate(let error):
                link.terminate(handle, error)
            }
        }
        // Weak: the handle owns its sink, which must not keep the handle alive in turn.
        box.withLockedValue { $0.handle = handle }
        return handle
    }

    /// Hands `stanza` to the session; for one on another node, returns the write of it to
    /// that node's inbox, which whoever must not acknowledge it earlier waits for.
    func handOver(_ stanza: XMLElement) -> Task<Void, Never>? {
        if node != nil, let cluster { return cluster.forward(stanza, to: self) }
        deliver(stanza)
        return nil
    }

    /// Queues a stanza for the client; it is written on the session's own event loop. A
    /// message that finds the session already gone is handed back to the router, so it
    /// reaches another resource or offline storage instead of vanishing.
    public func deliver(_ stanza: XMLElement) {
        sink(.stanza(stanza), nil)
    }

    /// Like `deliver`, with the hop to the session's event loop left to `batch.submit()`.
    public func deliver(_ stanza: XMLElement, in batch: DeliveryBatch) {
        sink(.stanza(stanza), batch)
    }

    /// Like `deliver`, but `written` completes once the stanza was handed to the socket (with
    /// XEP-0198 enabled: once the client acknowledged it), or fails if the session ended
    /// first: for deliveries whose source may only then forget the stanza (offline storage).
    public func deliver(_ stanza: XMLElement, written: EventLoopPromise<Void>) {
        sink(.confirmed(stanza, written), nil)
    }

    /// Ends the session with a stream error (for example `conflict` when replaced).
    public func terminate(_ error: StreamError) {
        sink(.terminate(error), nil)
    }

    public var description: String { "\(jid) [\(remoteAddress)]" }

    public static func == (lhs: SessionHandle, rhs: SessionHandle) -> Bool { lhs.id == rhs.id }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
}

/// Remote sessions' ids start far above any local session's, so the two never meet.
private let remoteSessionIDs = NIOLockedValueBox<UInt64>(1 << 62)

private struct WeakSessionHandle {
    weak var handle: SessionHandle?
}

enum SessionDelivery: Sendable {
    case stanza(XMLElement)
    case confirmed(XMLElement, EventLoopPromise<Void>)
    case terminate(StreamError)

    var isTermination: Bool {
        if case .terminate = self { true } else { false }
    }
}

/// What the server keeps about a session's presence (RFC 6121 §4) and what it asked for.
public struct SessionPresence: Sendable {
    /// Sent available presence and not since unavailable: an "available resource".
    public var isAvailable = false
    public var priority: Int8 = 0
    /// The last available presence it broadcast, `from` stamped: what probes are answered with.
    public var lastPresence: XMLElement?
    /// The status text of the last unavailable presence it broadcast: the account's last
    /// words if this turns out to be its last session (XEP-0012).
    public var unavailableStatus: String?
    /// Requested the roster, so it is an "interested resource" that gets roster pushes.
    public var wantsRosterPushes = false
    /// Requested the block list (XEP-0191), so it gets block list pushes.
    public var wantsBlocklistPushes = false
    /// Enabled message carbons (XEP-0280): gets copies of the account's other chats.
    public var wantsCarbons = false
    /// Recipients of directed available presence outside any subscription: they get
    /// unavailable presence when the session goes away (RFC 6121 §4.6.3).
    public var directedPresence = DirectedPresenceRecipients()
    /// The PEP nodes it wants notifications of (XEP-0163 `+notify`, from its entity
    /// capabilities), mirrored here so that other nodes of a cluster know them too.
    public var notifyNodes: Set<String> = []
}
