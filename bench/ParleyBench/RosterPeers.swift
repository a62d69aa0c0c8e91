import NIOConcurrencyHelpers
import NIOCore
import ParleyCore

/// The clients of the roster benchmark (`RosterBenchmark`). Each `RosterPeer` is confined to
/// the event loop of its connection: every method but `init` runs there.

/// One handshake's two accounts; done when both peers are.
final class RosterPair: Sendable {
    let initiator: RosterPeer
    let responder: RosterPeer
    private let state = NIOLockedValueBox<(started: NIODeadline?, done: Int)>((nil, 0))
    private let finished: @Sendable (RosterPair, Int64) -> Void

    init(initiator: RosterPeer, responder: RosterPeer, finished: @escaping @Sendable (RosterPair, Int64) -> Void) {
        self.initiator = initiator
        self.responder = responder
        self.finished = finished
    }

    /// The initiator asks for the responder's presence: the handshake's clock starts.
    func start() {
        state.withLockedValue { $0.started = .now() }
        let initiator = self.initiator
        initiator.loop.execute { initiator.subscribe() }
    }

    /// Called by each peer once, when its side is complete.
    func peerDone() {
        let now = NIODeadline.now()
        let (both, started) = state.withLockedValue { state -> (Bool, NIODeadline?) in
            state.done += 1
            return (state.done == 2, state.started)
        }
        guard both, let started else { return }
        finished(self, (now - started).nanoseconds)
    }
}

/// One account of a pair. The initiator sends `subscribe` and approves the partner's request;
/// the responder approves the initiator's request and asks back in the same write, as a
/// client that shows "accept and add" would. A side is complete once its roster push says
/// subscription='both' for the partner and the partner's available presence has arrived
/// (RFC 6121 §3.1.5: the approving contact's server sends it).
final class RosterPeer: @unchecked Sendable {
    struct Stats: Sendable {
        var errors = 0
        var firstError: String?
        /// Subscription stanzas or pushes this peer did not expect (a peer server's quirk).
        var unexpected = 0
    }

    let loop: any EventLoop
    let bareJID: String
    let partnerJID: String
    let isInitiator: Bool
    weak var pair: RosterPair?
    var context: ChannelHandlerContext?
    private(set) var stats = Stats()
    private(set) var subscription = "none"
    private(set) var hasPartnerPresence = false
    private(set) var complete = false
    private var approved = false

    init(loop: any EventLoop, bareJID: String, partnerJID: String, isInitiator: Bool) {
        self.loop = loop
        self.bareJID = bareJID
        self.partnerJID = partnerJID
        self.isInitiator = isInitiator
    }

    func subscribe() {
        guard let context else { return }
        send("<presence to='\(partnerJID)' type='subscribe'/>", context: context)
    }

    func received(_ stanza: XMLElement, context: ChannelHandlerContext) {
        switch stanza.name {
        case "iq":
            if stanza.type == "error" { recordError(stanza) }
            if let items = PEPStanzas.rosterItems(stanza) {
                for (jid, subscription) in items where jid == partnerJID { self.subscription = subscription }
            }
            PEPStanzas.answerIQ(stanza, caps: nil, context: context)
        case "presence":
            received(presence: stanza, context: context)
        case "message":
            if stanza.type == "error" { recordError(stanza) }
        default:
            return
        }
        checkComplete()
    }

    private func received(presence: XMLElement, context: ChannelHandlerContext) {
        guard let from = presence.from else { return }
        let sender = from.split(separator: "/", maxSplits: 1).first.map(String.init) ?? from
        switch presence.type {
        case nil:
            if sender == partnerJID { hasPartnerPresence = true }
        case "subscribe":
            guard sender == partnerJID, !approved else { return stats.unexpected += 1 }
            approved = true
            // The responder accepts and asks back; the initiator, already asking, accepts.
            let back = isInitiator ? "" : "<presence to='\(partnerJID)' type='subscribe'/>"
            send("<presence to='\(partnerJID)' type='subscribed'/>" + back, context: context)
        case "error":
            recordError(presence)
        default:
            return
        }
    }

    private func checkComplete() {
        guard !complete, subscription == "both", hasPartnerPresence else { return }
        complete = true
        pair?.peerDone()
    }

    private func recordError(_ stanza: XMLElement) {
        stats.errors += 1
        if stats.firstError == nil { stats.firstError = "<\(stanza.name)> " + PEPStanzas.errorDescription(stanza) }
    }

    private func send(_ text: String, context: ChannelHandlerContext) {
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(string: text)), promise: nil)
    }
}

/// After the login handler: hands every stanza to its peer.
final class RosterClientHandler: ChannelInboundHandler {
    typealias InboundIn = XMLStreamEvent

    private let peer: RosterPeer

    init(_ peer: RosterPeer) { self.peer = peer }

    func handlerAdded(context: ChannelHandlerContext) { peer.context = context }

    func handlerRemoved(context: ChannelHandlerContext) { peer.context = nil }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .stanza(let stanza) = unwrapInboundIn(data) else { return }
        peer.received(stanza, context: context)
    }
}
