import NIOConcurrencyHelpers
import NIOCore
import ParleyCore

/// One occupant of the MUC benchmark's room (`MUCBenchmark`): a logged-in session that joins
/// under the nickname `o<index>`, keeps count of who is in the room, checks that every
/// groupchat message arrives exactly once, and, when it is one of the senders, sends them.
/// Each object is confined to the event loop of its connection: every method must run there.
enum MUCNamespace {
    static let muc = "http://jabber.org/protocol/muc"
    static let user = "http://jabber.org/protocol/muc#user"
    static let owner = "http://jabber.org/protocol/muc#owner"
}

/// Counts shared by all occupants, so the run can wait for them without visiting a thousand
/// event loops every few milliseconds (which would steal the CPU it is measuring).
final class MUCProgress: Sendable {
    private let counts = NIOLockedValueBox<(joined: Int, arrived: Int)>((0, 0))

    var joined: Int { counts.withLockedValue { $0.joined } }
    var arrived: Int { counts.withLockedValue { $0.arrived } }

    func didJoin() { counts.withLockedValue { $0.joined += 1 } }
    func didArrive() { counts.withLockedValue { $0.arrived += 1 } }
    func resetArrivals() { counts.withLockedValue { $0.arrived = 0 } }
}

final class MUCBenchOccupant: @unchecked Sendable {
    struct Stats: Sendable {
        var received = 0
        var duplicates = 0
        /// Messages from before the phase, from a slot that is not a sender, or that do not parse.
        var stray = 0
        var errors = 0
        var firstError: String?
        var lastReceived = NIODeadline.uptimeNanoseconds(0)
    }

    /// What this occupant sent in the phase, when it is a sender.
    struct Sent: Sendable {
        var sent = 0
        /// Its own messages that came back from the room (the room's "answer").
        var reflected = 0
    }

    let loop: any EventLoop
    let index: Int
    let room: String
    /// Slot among the senders, or nil.
    let senderSlot: Int?
    let body: String
    let progress: MUCProgress
    var context: ChannelHandlerContext?
    /// Reads room traffic from the bytes once the occupant enters (set on its loop at connect).
    var skimmer: MUCStanzaSkimmer?
    /// Set when the room sent this occupant its own presence (status 110).
    private(set) var joinedAt: NIODeadline?
    /// The room said it created the room for us (status 201).
    private(set) var created = false
    /// The answer to the instant-room configuration: true result, false error, nil none yet.
    private(set) var configured: Bool?
    /// Which nicknames (`o<k>`) this occupant sees in the room, itself included.
    private var present: [Bool]
    private(set) var presentCount = 0
    private(set) var stats = Stats()
    private(set) var sent = Sent()
    /// Per sender slot, per sequence number from that slot's base: has it arrived?
    private(set) var seen: [[Bool]]
    private var bases: [Int]
    private var latencies: [Int64] = []
    /// Which message each latency is for (`messageKey`): the spread of one message's arrivals
    /// over the occupants.
    private var latencyKeys: [Int] = []

    /// A message as one number: its sender's slot in the high half, its index in the phase in
    /// the low.
    static func messageKey(slot: Int, index: Int) -> Int { slot << 32 | index }
    static func slotAndIndex(of key: Int) -> (slot: Int, index: Int) { (key >> 32, key & 0xFFFF_FFFF) }
    private var nextSequence = 0
    private var window = 0
    private var phaseEnd = NIODeadline.now()

    init(loop: any EventLoop, index: Int, occupants: Int, room: String, senderSlot: Int?, senders: Int, body: String, progress: MUCProgress) {
        self.loop = loop
        self.progress = progress
        self.index = index
        self.room = room
        self.senderSlot = senderSlot
        self.body = body
        present = Array(repeating: false, count: occupants)
        seen = Array(repeating: [], count: senders)
        bases = Array(repeating: 0, count: senders)
    }

    var nick: String { "o\(index)" }

    /// Enters the room, asking for no history (the phases count every message).
    func join() {
        guard let context else { return }
        skimmer?.activate()
        writeMUCText(
            "<presence to='\(room)/\(nick)'><x xmlns='\(MUCNamespace.muc)'><history maxstanzas='0'/></x></presence>",
            context: context, flush: true)
    }

    /// §10.1.2: the owner accepts the default configuration (an instant room), unlocking it.
    func configureInstantRoom() {
        guard let context else { return }
        writeMUCText(
            "<iq type='set' id='instant' to='\(room)'><query xmlns='\(MUCNamespace.owner)'>"
                + "<x xmlns='jabber:x:data' type='submit'/></query></iq>",
            context: context, flush: true)
    }

    /// The next sequence number this sender will use: the receivers' base for the phase.
    var sequenceBase: Int { nextSequence }

    func beginPhase(bases: [Int]) {
        self.bases = bases
        seen = Array(repeating: [], count: bases.count)
        stats = Stats()
        sent = Sent()
        latencies = []
        latencyKeys = []
        window = 0
    }

    func takeLatencies() -> (latencies: [Int64], messages: [Int]) {
        defer {
            latencies = []
            latencyKeys = []
        }
        return (latencies, latencyKeys)
    }

    /// Keeps `window` of its messages unanswered (not yet back from the room) until `end`.
    func startWindow(_ window: Int, at start: NIODeadline, until end: NIODeadline) {
        phaseEnd = end
        loop.scheduleTask(deadline: start) { [self] in
            self.window = window
            for _ in 0..<window { send() }
        }
    }

    /// Sends at `first`, then every `interval` nanoseconds until `end`.
    func startPaced(first: NIODeadline, interval: Int64, until end: NIODeadline) {
        @Sendable func tick(_ deadline: NIODeadline) {
            guard deadline < end else { return }
            loop.scheduleTask(deadline: deadline) { [self] in
                guard stats.errors == 0 else { return }
                send()
                tick(deadline + .nanoseconds(interval))
            }
        }
        tick(first)
    }

    private func send() {
        guard let context, let slot = senderSlot else { return }
        let sequence = nextSequence
        nextSequence += 1
        sent.sent += 1
        let now = NIODeadline.now().uptimeNanoseconds
        writeMUCText(
            "<message to='\(room)' type='groupchat' id='m\(slot)-\(sequence)'><body>\(slot) \(sequence) \(now) \(body)</body></message>",
            context: context, flush: true)
    }

    func received(_ stanza: XMLElement, context: ChannelHandlerContext) {
        if stanza.type == "error" {
            stats.errors += 1
            if stats.firstError == nil { stats.firstError = "<\(stanza.name)/>: " + PEPStanzas.errorDescription(stanza) }
            if stanza.name == "iq", stanza.id == "instant" { configured = false }
            return
        }
        switch stanza.name {
        case "message":
            guard stanza.type == "groupchat", let text = stanza.firstChild("body")?.text else { return }
            groupchat(text, at: NIODeadline.now())
        case "presence":
            let codes = stanza.firstChild("x", namespace: MUCNamespace.user)?.children("status").compactMap {
                $0[attribute: "code"].map { Substring($0) }
            }
            presence(from: stanza.from ?? "", type: stanza.type, statusCodes: codes ?? [])
        case "iq":
            if stanza.id == "instant", stanza.type == "result" { configured = true }
            PEPStanzas.answerIQ(stanza, caps: nil, context: context)
        default:
            return
        }
    }

    /// What the skimmer read from the bytes (`MUCStanzaSkimmer`).
    func skimmed(_ stanza: MUCStanzaSkimmer.Skimmed) {
        switch stanza {
        case .presence(let from, let type, let codes): presence(from: from, type: type, statusCodes: codes)
        case .groupchat(_, let body): groupchat(body, at: NIODeadline.now())
        }
    }

    private func presence(from: String, type: String?, statusCodes codes: [Substring]) {
        guard from.hasPrefix(room + "/"), let other = Int(from.dropFirst(room.utf8.count + 2)), other >= 0, other < present.count
        else { return }
        let available = type == nil
        if present[other] != available {
            present[other] = available
            presentCount += available ? 1 : -1
        }
        guard other == index, available else { return }
        if codes.contains("201") { created = true }
        if codes.contains("110"), joinedAt == nil {
            joinedAt = .now()
            progress.didJoin()
        }
    }

    private func groupchat(_ text: String, at now: NIODeadline) {
        let parts = text.split(separator: " ", maxSplits: 3)
        guard parts.count >= 3, let slot = Int(parts[0]), let sequence = Int(parts[1]), let sentAt = UInt64(parts[2]),
            slot >= 0, slot < seen.count, sequence >= bases[slot]
        else { return stats.stray += 1 }
        let index = sequence - bases[slot]
        if index >= seen[slot].count { seen[slot] += repeatElement(false, count: index + 1 - seen[slot].count) }
        progress.didArrive()
        if seen[slot][index] { return stats.duplicates += 1 }
        seen[slot][index] = true
        stats.received += 1
        stats.lastReceived = now
        latencies.append(Int64(now.uptimeNanoseconds &- sentAt))
        latencyKeys.append(Self.messageKey(slot: slot, index: index))
        guard slot == senderSlot else { return }
        sent.reflected += 1
        if window > 0 {
            if now < phaseEnd { send() } else { window = 0 }
        }
    }
}

/// After the login handler: hands every stanza to its occupant.
final class MUCClientHandler: ChannelInboundHandler {
    typealias InboundIn = XMLStreamEvent

    private let occupant: MUCBenchOccupant

    init(_ occupant: MUCBenchOccupant) { self.occupant = occupant }

    func handlerAdded(context: ChannelHandlerContext) { occupant.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { occupant.context = nil }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .stanza(let stanza) = unwrapInboundIn(data) else { return }
        occupant.received(stanza, context: context)
    }
}

private func writeMUCText(_ text: String, context: ChannelHandlerContext, flush: Bool) {
    let buffer = NIOAny(context.channel.allocator.buffer(string: text))
    if flush { context.writeAndFlush(buffer, promise: nil) } else { context.write(buffer, promise: nil) }
}
