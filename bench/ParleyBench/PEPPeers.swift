import NIOCore
import ParleyCore

/// The two kinds of client in the PEP benchmark (`PEPBenchmark`): the account that publishes,
/// and its contacts (or strangers) that receive. Each object is confined to the event loop of
/// its connection: every method must run there.

enum PEPNamespace {
    static let pubsub = "http://jabber.org/protocol/pubsub"
    static let event = "http://jabber.org/protocol/pubsub#event"
}

/// The publisher: subscribes to its contacts (and approves theirs), then publishes items whose
/// id carries a sequence number and the send time (this process's monotonic clock), either
/// keeping `window` publishes unanswered or at a fixed pace.
final class PEPPublisher: @unchecked Sendable {
    struct Stats: Sendable {
        var sent = 0
        var published = 0
        var errors = 0
        var firstError: String?
        var ownNotifications = 0
        var settled: Bool { published + errors >= sent }
    }

    let loop: any EventLoop
    let bareJID: String
    let node: String
    let payload: String
    var context: ChannelHandlerContext?
    /// Contacts whose roster item here says subscription='both'.
    private(set) var mutualContacts: Set<String> = []
    private(set) var stats = Stats()
    /// Per sequence number of this phase (from `phaseBase`): was it acknowledged?
    private(set) var acknowledged: [Bool] = []
    private(set) var phaseBase = 0
    private var nextSequence = 0
    private var refill = false
    private var phaseEnd = NIODeadline.now()

    init(loop: any EventLoop, bareJID: String, node: String, payload: String) {
        self.loop = loop
        self.bareJID = bareJID
        self.node = node
        self.payload = payload
    }

    func subscribe(to contacts: [String]) {
        guard let context else { return }
        for contact in contacts {
            writeText("<presence to='\(contact)' type='subscribe'/>", context: context, flush: false)
        }
        context.flush()
    }

    func beginPhase() {
        phaseBase = nextSequence
        acknowledged = []
        stats = Stats()
        refill = false
    }

    func startWindow(_ window: Int, at start: NIODeadline, until end: NIODeadline) {
        phaseEnd = end
        loop.scheduleTask(deadline: start) { [self] in
            refill = true
            for _ in 0..<window { publish() }
        }
    }

    func startPaced(first: NIODeadline, interval: Int64, until end: NIODeadline) {
        phaseEnd = end
        @Sendable func tick(_ deadline: NIODeadline) {
            guard deadline < end else { return }
            loop.scheduleTask(deadline: deadline) { [self] in
                // A refused publish stops the pacing too: the server says it cannot do this.
                guard stats.errors == 0 else { return }
                publish()
                tick(deadline + .nanoseconds(interval))
            }
        }
        tick(first)
    }

    private func publish() {
        guard let context else { return }
        let sequence = nextSequence
        nextSequence += 1
        acknowledged.append(false)
        stats.sent += 1
        let now = NIODeadline.now().uptimeNanoseconds
        writeText(
            "<iq type='set' id='p\(sequence)'><pubsub xmlns='\(PEPNamespace.pubsub)'><publish node='\(node)'>"
                + "<item id='\(sequence)-\(now)'>\(payload)</item></publish></pubsub></iq>",
            context: context, flush: true)
    }

    func received(_ stanza: XMLElement, context: ChannelHandlerContext) {
        switch stanza.name {
        case "iq":
            if let id = stanza.id, id.hasPrefix("p"), let sequence = Int(id.dropFirst()),
                stanza.type == "result" || stanza.type == "error"
            {
                return answered(sequence: sequence, stanza)
            }
            if let items = PEPStanzas.rosterItems(stanza) {
                for (jid, subscription) in items {
                    if subscription == "both" { mutualContacts.insert(jid) } else { mutualContacts.remove(jid) }
                }
            }
            PEPStanzas.answerIQ(stanza, caps: nil, context: context)
        case "presence":
            // Every contact asks back; approving is what makes the subscription mutual.
            if stanza.type == "subscribe", let from = stanza.from {
                writeText("<presence to='\(escaped(from))' type='subscribed'/>", context: context, flush: true)
            }
        case "message":
            if !PEPStanzas.notificationItemIDs(stanza).isEmpty { stats.ownNotifications += 1 }
        default:
            return
        }
    }

    private func answered(sequence: Int, _ iq: XMLElement) {
        if iq.type == "result" {
            stats.published += 1
            let index = sequence - phaseBase
            if index >= 0, index < acknowledged.count { acknowledged[index] = true }
        } else {
            stats.errors += 1
            if stats.firstError == nil { stats.firstError = PEPStanzas.errorDescription(iq) }
            refill = false  // a server that refuses once will refuse the next one as fast
        }
        guard refill else { return }
        if NIODeadline.now() < phaseEnd { publish() } else { refill = false }
    }
}

/// A receiving session: a contact of the publisher (subscription both) or, with `entitled`
/// false, a stranger that sends the publisher directed presence with the same caps and must
/// get nothing. Answers the server's disco#info and the publisher's subscription request, and
/// checks that every item arrives exactly once.
final class PEPContact: @unchecked Sendable {
    struct Stats: Sendable {
        var received = 0
        var duplicates = 0
        /// Items from before the phase, or that do not parse.
        var stray = 0
        var errors = 0
        var lastReceived = NIODeadline.uptimeNanoseconds(0)
    }

    let loop: any EventLoop
    let bareJID: String
    let entitled: Bool
    let publisherJID: String
    let caps: BenchEntityCaps
    var context: ChannelHandlerContext?
    private(set) var subscription = "none"
    private(set) var stats = Stats()
    private(set) var discoQueries = 0
    /// Per sequence number from `phaseBase`: has it arrived?
    private(set) var seen: [Bool] = []
    private var phaseBase = 0
    private var latencies: [Int64] = []
    private var askedBack = false

    init(loop: any EventLoop, bareJID: String, entitled: Bool, publisherJID: String, caps: BenchEntityCaps) {
        self.loop = loop
        self.bareJID = bareJID
        self.entitled = entitled
        self.publisherJID = publisherJID
        self.caps = caps
    }

    /// Presence again once the roster is in place (contacts: broadcast; strangers: directed
    /// to the publisher), so the publisher's server sees the caps of an entitled contact.
    func announce() {
        guard let context else { return }
        let to = entitled ? "" : " to='\(publisherJID)'"
        writeText("<presence\(to)>\(caps.presenceElement)</presence>", context: context, flush: true)
    }

    func beginPhase(base: Int) {
        phaseBase = base
        seen = []
        stats = Stats()
        latencies = []
    }

    func takeLatencies() -> [Int64] {
        defer { latencies = [] }
        return latencies
    }

    func received(_ stanza: XMLElement, context: ChannelHandlerContext) {
        switch stanza.name {
        case "message":
            if stanza.type == "error" { return stats.errors += 1 }
            let now = NIODeadline.now()
            for id in PEPStanzas.notificationItemIDs(stanza) { notified(id, at: now) }
        case "iq":
            if stanza.type == "error" { stats.errors += 1 }
            if let items = PEPStanzas.rosterItems(stanza) {
                for (jid, subscription) in items where jid == publisherJID { self.subscription = subscription }
            }
            if PEPStanzas.answerIQ(stanza, caps: caps, context: context) { discoQueries += 1 }
        case "presence":
            guard stanza.type == "subscribe", let from = stanza.from, from == publisherJID, entitled else { return }
            var text = "<presence to='\(publisherJID)' type='subscribed'/>"
            if !askedBack { text += "<presence to='\(publisherJID)' type='subscribe'/>" }
            askedBack = true
            writeText(text, context: context, flush: true)
        default:
            return
        }
    }

    private func notified(_ id: String, at now: NIODeadline) {
        let parts = id.split(separator: "-")
        guard parts.count == 2, let sequence = Int(parts[0]), let sent = UInt64(parts[1]), sequence >= phaseBase else {
            return stats.stray += 1
        }
        let index = sequence - phaseBase
        if index >= seen.count { seen += repeatElement(false, count: index + 1 - seen.count) }
        if seen[index] { return stats.duplicates += 1 }
        seen[index] = true
        stats.received += 1
        stats.lastReceived = now
        latencies.append(Int64(now.uptimeNanoseconds &- sent))
    }
}

/// After the login handler: hands every stanza to its publisher or contact.
final class PEPClientHandler: ChannelInboundHandler {
    typealias InboundIn = XMLStreamEvent

    enum Peer {
        case publisher(PEPPublisher)
        case contact(PEPContact)
    }

    private let peer: Peer

    init(_ peer: Peer) { self.peer = peer }

    func handlerAdded(context: ChannelHandlerContext) {
        switch peer {
        case .publisher(let publisher): publisher.context = context
        case .contact(let contact): contact.context = context
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        switch peer {
        case .publisher(let publisher): publisher.context = nil
        case .contact(let contact): contact.context = nil
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .stanza(let stanza) = unwrapInboundIn(data) else { return }
        switch peer {
        case .publisher(let publisher): publisher.received(stanza, context: context)
        case .contact(let contact): contact.received(stanza, context: context)
        }
    }
}

/// Reading the few payloads the benchmark cares about, and answering iqs like a polite client.
enum PEPStanzas {
    /// The items of a roster result or push, as (bare JID, subscription).
    static func rosterItems(_ iq: XMLElement) -> [(String, String)]? {
        guard iq.type == "result" || iq.type == "set",
            let query = iq.firstChild("query", namespace: XMLNamespace.roster)
        else { return nil }
        return query.children("item").compactMap { item in
            guard let jid = item[attribute: "jid"] else { return nil }
            return (jid, item[attribute: "subscription"] ?? "none")
        }
    }

    /// The ids of the items a pubsub event notification carries.
    static func notificationItemIDs(_ message: XMLElement) -> [String] {
        guard let items = message.firstChild("event", namespace: PEPNamespace.event)?.firstChild("items") else {
            return []
        }
        return items.children("item").compactMap { $0[attribute: "id"] }
    }

    /// Answers a roster push, a disco#info get (with `caps`) or any other get/set (with an
    /// error, as RFC 6120 §8.2.3 asks); true if it was a disco#info get.
    @discardableResult
    static func answerIQ(_ iq: XMLElement, caps: BenchEntityCaps?, context: ChannelHandlerContext) -> Bool {
        guard iq.type == "get" || iq.type == "set", let id = iq.id else { return false }
        let to = iq.from.map { " to='\(escaped($0))'" } ?? ""
        if iq.type == "get", let caps, let query = iq.firstChild("query", namespace: XMLNamespace.discoInfo) {
            writeText(caps.discoInfoResult(to: iq.from, id: id, node: query[attribute: "node"]), context: context, flush: true)
            return true
        }
        if iq.type == "set", iq.firstChild("query", namespace: XMLNamespace.roster) != nil {
            writeText("<iq type='result' id='\(escaped(id))'\(to)/>", context: context, flush: true)
        } else {
            writeText(
                "<iq type='error' id='\(escaped(id))'\(to)><error type='cancel'>"
                    + "<service-unavailable xmlns='\(XMLNamespace.stanzaErrors)'/></error></iq>",
                context: context, flush: true)
        }
        return false
    }

    /// "condition (type): text" of an error stanza.
    static func errorDescription(_ stanza: XMLElement) -> String {
        guard let error = stanza.firstChild("error") else { return "error without <error/>" }
        let condition = error.elements.first { $0.namespace == XMLNamespace.stanzaErrors && $0.name != "text" }
        let text = error.firstChild("text", namespace: XMLNamespace.stanzaErrors)?.text
        return "\(condition?.name ?? "?") (\(error[attribute: "type"] ?? "?"))" + (text.map { ": \($0)" } ?? "")
    }
}

private func writeText(_ text: String, context: ChannelHandlerContext, flush: Bool) {
    let buffer = NIOAny(context.channel.allocator.buffer(string: text))
    if flush { context.writeAndFlush(buffer, promise: nil) } else { context.write(buffer, promise: nil) }
}
