import Logging
import NIOConcurrencyHelpers
import ParleyCore
import ParleyServer
import ParleyStorage

/// The multi-user chat service (XEP-0045) at its own domain, such as `conference.example.org`.
///
/// Rooms live in memory under one lock. Each stanza changes them and queues what it causes;
/// whoever finds the queue idle sends it, outside the lock, in order. So the occupants see
/// every room's events in the order they happened, and a stanza the router hands straight
/// back (an error for an occupant whose session is gone) waits its turn instead of taking
/// the lock a second time.
public final class MUCService: HostedService {
    public struct Settings: Sendable {
        public var domain: String
        public var name = "Chatrooms"
        /// The domain of the server's accounts: only they may create rooms.
        public var serverDomain: String
        /// Bare JIDs that may create rooms; nil: every local account.
        public var creators: Set<JID>?
        /// Rooms the service holds at most; creating one more is `resource-constraint`.
        public var maxRooms = 10_000
        /// Occupants one room holds at most; one more is `service-unavailable` (§7.2.10).
        public var maxOccupantsPerRoom = 1_000
        /// Rooms one account may own; creating one more is `resource-constraint`.
        public var maxRoomsPerAccount = 100
        /// The largest message an occupant may send to the room, in bytes of XML: each is
        /// copied to every occupant, so the room's limit is far below the stream's.
        public var maxMessageBytes = 16_384
        /// Nicknames' rules and who may register with rooms (XEP-0045 §7.10).
        public var nicknames = MUCNicknamePolicy()
        /// Each occupant's groupchat rate; over it a message is refused (`policy-violation`).
        public var rateLimit = MUCRateLimit()
        /// Whether a new room keeps an archive (XEP-0313) until its owner says otherwise.
        public var archiveByDefault = true
        /// Messages a room's archive keeps; the oldest go first (up to 1 % more between the
        /// cuts, see `MUCArchiveWriter.trimStep`). 0: no limit.
        public var archiveMaxMessagesPerRoom = 10_000
        /// Room messages older than this many days are deleted (checked hourly). 0: kept.
        public var archiveRetentionDays = 0
        /// The largest room vCard (its avatar), in bytes as serialized.
        public var maxVCardBytes = 65_536
        /// How often quiet rooms' shown presences are let go (MUCService+ShownPresences);
        /// nil: never by themselves (scenarios that look at it step by step).
        var shownPresenceReleasePeriod: Duration? = .seconds(2)

        public init(domain: String, serverDomain: String, creators: Set<JID>? = nil) {
            self.domain = domain
            self.serverDomain = serverDomain
            self.creators = creators
        }
    }

    struct State: Sendable {
        var rooms: [String: MUCRoom] = [:]
        /// The rooms each local session is in, so its end is handled without a scan: the
        /// first inline (a set of one was a heap block per session), each the key instance
        /// of `rooms`, not a copy parsed from a stanza.
        var roomsBySession: [JID: MUCCompactList<String>] = [:]
        var outbox: [XMLElement] = []
        /// Runs of `outbox` whose addresses the room had at hand, by index.
        var addressed: [MUCAddressedRun] = []
        /// Runs queued by the change under way, by index into its `out`; `perform` moves them
        /// to `addressed`.
        var addressedOut: [MUCAddressedRun] = []
        var draining = false
        /// Where persistent rooms are kept, and the last write queued to it.
        var store: (any MUCRoomStore)?
        var storeTail: Task<Void, Never>?
        /// Where rooms' archives are written, and the task that expires old messages.
        var archive: MUCArchiveWriter?
        var archiveExpiry: Task<Void, Never>?
        /// Lets quiet rooms' shown presences go (MUCService+ShownPresences).
        var shownPresenceRelease: Task<Void, Never>?
        /// Run once what was queued before them is sent (`afterSends`).
        var barriers: [@Sendable () -> Void] = []

        /// The instance of `key` that `rooms` holds (one string for the room, however many
        /// sessions are in it), or `key` itself when there is no such room.
        func roomKey(_ key: String) -> String {
            rooms.index(forKey: key).map { rooms[$0].key } ?? key
        }
    }

    public let settings: Settings
    public var domain: String { settings.domain }
    public var name: String { settings.name }
    let logger: Logger
    private let state = NIOLockedValueBox(State())
    let outlet = NIOLockedValueBox<HostedServiceOutlet?>(nil)
    /// Addresses of stanzas sent, parsed: see `send(_:through:)`.
    let addresses = NIOLockedValueBox(MUCParsedAddresses())

    /// In a cluster, where each room is served (MUCService+Cluster); nil on a single node.
    let placement = NIOLockedValueBox<(any ServicePlacement)?>(nil)

    public init(settings: Settings, logger: Logger) {
        self.settings = settings
        self.logger = logger
    }

    /// Loads the persistent rooms; what a previous start left in memory is dropped, as a
    /// restarted process would have lost it.
    public func start(_ outlet: HostedServiceOutlet) async throws {
        var rooms = try await load(from: outlet.storage)
        try await loadArchives(into: &rooms, from: outlet.storage)
        self.outlet.withLockedValue { $0 = outlet }
        withLockedState { state in
            state.archiveExpiry?.cancel()
            state.shownPresenceRelease?.cancel()
            state = State()
            state.rooms = rooms
            state.store = outlet.storage
            startArchive(outlet.storage, state: &state)
            startReleasingShownPresences(state: &state)
        }
    }

    func withLockedState<T>(_ body: (inout State) -> T) -> T {
        state.withLockedValue(body)
    }

    public func receive(_ stanza: XMLElement, from sender: JID) {
        _ = receiveDurably(stanza, from: sender)
    }

    /// One stanza's change, under the lock.
    func dispatch(_ stanza: XMLElement, from sender: JID, to: JID, state: inout State, out: inout [XMLElement]) {
        guard let room = to.localpart else { return serviceStanza(stanza, from: sender, state: state, out: &out) }
        switch stanza.name {
        case "presence": presence(stanza, from: sender, room: room, nick: to.resourcepart, state: &state, out: &out)
        case "message": message(stanza, from: sender, room: room, nick: to.resourcepart, state: &state, out: &out)
        default: iq(stanza, from: sender, room: room, nick: to.resourcepart, state: &state, out: &out)
        }
    }

    /// A session that ended leaves every room it was in; the others see it go.
    public func sessionEnded(_ session: JID) {
        perform { state, out in
            let rooms = state.roomsBySession.removeValue(forKey: session) ?? []
            for room in rooms {
                state.rooms[room]?.leave(session, stanza: nil, out: &out)
                self.closeIfEmpty(room, state: &state)
            }
            if !rooms.isEmpty { self.recordDepartures(of: session, from: rooms, state: state) }
        }
    }

    // MARK: Presence

    private func presence(_ stanza: XMLElement, from sender: JID, room key: String, nick: String?, state: inout State, out: inout [XMLElement]) {
        switch stanza.type {
        case nil:
            guard let nick else {
                return refuse(stanza, StanzaError(.jidMalformed, text: "Enter a room as room@\(domain)/nickname."), out: &out)
            }
            let rewritten: Bool
            do throws(StanzaError) { rewritten = try checkNickname(nick, in: stanza) } catch { return refuse(stanza, error, out: &out) }
            var created = false
            if state.rooms[key] == nil {
                guard mayCreateRooms(sender) else {
                    return refuse(stanza, StanzaError(.notAllowed, text: "You may not create rooms on this service."), out: &out)
                }
                let owned = state.rooms.values.reduce(0) { $0 + ($1.affiliation(of: sender) == .owner ? 1 : 0) }
                guard owned < settings.maxRoomsPerAccount else {
                    return refuse(
                        stanza,
                        StanzaError(.resourceConstraint, text: "An account may own at most \(settings.maxRoomsPerAccount) rooms here."),
                        out: &out)
                }
                guard state.rooms.count < settings.maxRooms else {
                    return refuse(
                        stanza, StanzaError(.resourceConstraint, text: "This service holds no more than \(settings.maxRooms) rooms."),
                        out: &out)
                }
                do {
                    // §7.2.1: a client that does not speak the MUC protocol gets an open room
                    // at once; one that does must configure it (or accept an instant room).
                    let speaksMUC = stanza.firstChild("x", namespace: MUCNamespace.muc) != nil
                    state.rooms[key] = try MUCRoom(jid: JID(localpart: key, domainpart: domain), locked: speaksMUC, owner: sender)
                    state.rooms[key]?.configuration.archiving = settings.archiveByDefault
                    created = true
                } catch {
                    return refuse(stanza, StanzaError(.internalServerError, text: "The room could not be created."), out: &out)
                }
            }
            do {
                let resolved = try state.rooms[key]?.resolve(nick, for: sender, enforce: settings.nicknames.enforceRegistered)
                let limit = min(state.rooms[key]?.configuration.maxOccupants ?? .max, settings.maxOccupantsPerRoom)
                let runs = try state.rooms[key]?.available(
                    stanza, from: sender, nick: resolved?.nick ?? nick, created: created, maxOccupants: limit,
                    assignedNick: rewritten || resolved?.assigned == true, out: &out)
                state.addressedOut.append(contentsOf: runs ?? [])
                state.roomsBySession[sender, default: []].insert(state.roomKey(key))
            } catch {
                refuse(stanza, error, out: &out)
                closeIfEmpty(key, state: &state)
            }
        case "unavailable", "error":
            // A presence error from an occupant's client means it is no longer there (as
            // Prosody treats it); it gets no self-presence in answer to an error.
            if stanza.type == "error" {
                state.rooms[key]?.removeForTechnicalReason(sender, out: &out)
            } else {
                state.rooms[key]?.leave(sender, stanza: stanza, out: &out)
            }
            forget(sender, in: key, state: &state)
        default:
            // Subscriptions and probes mean nothing to a room.
            return
        }
    }

    /// After `session` left room `key`: the index forgets it, and an empty temporary room goes.
    private func forget(_ session: JID, in key: String, state: inout State) {
        state.roomsBySession[session]?.remove(key)
        if state.roomsBySession[session]?.isEmpty == true { state.roomsBySession[session] = nil }
        closeIfEmpty(key, state: &state)
    }

    /// A temporary room goes away with its last occupant (XEP-0045 §10.1.3's "destroyed
    /// automatically"); a persistent one stays.
    func closeIfEmpty(_ key: String, state: inout State) {
        guard let room = state.rooms[key], room.isEmpty, !room.configuration.persistent || room.locked else { return }
        state.rooms[key] = nil
        forgetArchive(of: key, state: &state)
    }

    private func mayCreateRooms(_ sender: JID) -> Bool {
        guard sender.domainpart == settings.serverDomain else { return false }
        return settings.creators?.contains(sender.bare) ?? true
    }

    // MARK: Messages

    private func message(_ stanza: XMLElement, from sender: JID, room key: String, nick: String?, state: inout State, out: inout [XMLElement]) {
        let type = stanza.type ?? "normal"
        guard state.rooms[key] != nil, state.rooms[key]?.locked != true || state.rooms[key]?.nick(of: sender) != nil else {
            return refuse(stanza, StanzaError(.itemNotFound, text: "There is no room \(key)@\(domain)."), out: &out)
        }
        if type == "error" {
            // An occupant's client refusing room traffic is treated as gone (as Prosody does).
            if state.rooms[key]?.nick(of: sender) != nil {
                state.rooms[key]?.removeForTechnicalReason(sender, out: &out)
                forget(sender, in: key, state: &state)
            }
            return
        }
        do throws(StanzaError) {
            if type == "groupchat" || nick != nil, stanza.xmlString().utf8.count > settings.maxMessageBytes {
                throw StanzaError(
                    .policyViolation, text: "Messages in this room are at most \(settings.maxMessageBytes) bytes of XML.")
            }
            switch (nick, type) {
            case (nil, "groupchat"):
                try state.rooms[key]?.charge(sender, settings.rateLimit)
                let first = out.count
                if let sent = try state.rooms[key]?.groupchat(stanza, from: sender, out: &out) {
                    state.addressedOut.append(MUCAddressedRun(start: first, addresses: .fanOut(from: sent.from, to: sent.sessions)))
                    archive(sent.message, in: key, from: sender, state: &state)
                }
                if stanza.firstChild("subject") != nil, state.rooms[key]?.configuration.persistent == true {
                    persist(key, wasPersistent: true, state: &state)
                }
            case (nil, _):
                if let x = stanza.firstChild("x", namespace: MUCNamespace.user) {
                    if try state.rooms[key]?.relayInvitations(x, from: sender, out: &out) == true {
                        persist(key, wasPersistent: state.rooms[key]?.configuration.persistent == true, state: &state)
                    }
                } else if let form = stanza.firstChild("x", namespace: XMLNamespace.dataForms) {
                    try state.rooms[key]?.charge(sender, settings.rateLimit)
                    try state.rooms[key]?.voiceRequest(form, from: sender, out: &out)
                } else {
                    throw StanzaError(.notAcceptable, text: "Messages to the room are of type groupchat.")
                }
            case (_, "groupchat"):
                throw StanzaError(.badRequest, text: "Groupchat messages go to the room's bare JID, not to an occupant.")
            case (let nick?, _):
                try privateMessage(stanza, from: sender, room: key, to: nick, state: state, out: &out)
            }
        } catch {
            refuse(stanza, error, out: &out)
        }
    }

    // MARK: Sending

    /// The error reply to `stanza`, from the address it was sent to.
    func refuse(_ stanza: XMLElement, _ error: StanzaError, out: inout [XMLElement]) {
        guard var reply = stanza.errorReply(error) else { return }
        // XEP-0045 §7.2: a refused entry carries the MUC <x/> back, as Prosody sends it; that
        // is how clients (slixmpp's join) tell it from other presence errors.
        if stanza.name == "presence", stanza.firstChild("x", namespace: MUCNamespace.muc) != nil {
            // Before the <error/>, which RFC 6120's schema puts last.
            reply.children.insert(.element(XMLElement("x", namespace: MUCNamespace.muc)), at: max(0, reply.children.count - 1))
        }
        out.append(reply)
    }

    /// Runs `change` under the lock, then sends what it queued unless another thread is
    /// already sending (it will send this too, in order).
    func perform(_ change: (inout State, inout [XMLElement]) -> Void) {
        let drain = state.withLockedValue { state -> Bool in
            var out: [XMLElement] = []
            change(&state, &out)
            for run in state.addressedOut { state.addressed.append(run.shifted(by: state.outbox.count)) }
            state.addressedOut = []
            state.outbox.append(contentsOf: out)
            guard !state.draining, !state.outbox.isEmpty else { return false }
            state.draining = true
            return true
        }
        guard drain else { return }
        guard let outlet = outlet.withLockedValue({ $0 }) else {
            let barriers = state.withLockedValue { state in
                state.outbox = []
                state.addressed = []
                state.draining = false
                defer { state.barriers = [] }
                return state.barriers
            }
            for barrier in barriers { barrier() }
            return
        }
        while true {
            let (batch, addressed, barriers) = state.withLockedValue {
                state -> ([XMLElement], [MUCAddressedRun], [@Sendable () -> Void]) in
                let batch = state.outbox
                let addressed = state.addressed
                state.outbox = []
                state.addressed = []
                if batch.isEmpty { state.draining = false }
                defer { state.barriers = [] }
                return (batch, addressed, state.barriers)
            }
            defer { for barrier in barriers { barrier() } }
            guard !batch.isEmpty else { return }
            // In slices: while a room fills, hundreds of entries land here at once, each
            // sending its list to the newcomer and the newcomer to everyone (N² stanzas for a
            // room of N). Their parsed and batched forms for the whole backlog at once were
            // most of the join's peak heap. But each slice is one batch, and a batch writes
            // each session once: with slices of 4,096 a 1,000 fill made 166,000 writes (a
            // newcomer's presence a write for each occupant), with 65,536 13,000–18,000, and
            // took 3.0–4.1 s instead of 4.2–6.5 (bench/README.md, MUC, thirteenth round). The
            // larger slices' arrays raise the fill's peak by ~15–30 MB, which the allocator
            // hands back once the room is quiet (the settled figure did not move).
            var start = batch.startIndex
            var runs = addressed[...]
            while start < batch.endIndex {
                let end = min(batch.endIndex, start + Self.sendSlice)
                send(batch[start..<end], addressed: &runs, through: outlet)
                start = end
            }
        }
    }

    static let sendSlice = 65536

    /// Runs `body` once everything queued so far has been handed to the router: at once if
    /// nothing is, else after the sender that is sending it (another thread, maybe).
    func afterSends(_ body: @escaping @Sendable () -> Void) {
        let now = state.withLockedValue { state -> Bool in
            if !state.draining, state.outbox.isEmpty { return true }
            state.barriers.append(body)
            return false
        }
        if now { body() }
    }

    /// Sends in order, the addresses parsed once per distinct string (a room's stanzas go to
    /// the same few hundred sessions from the same few hundred occupant JIDs, again and again),
    /// so the router batches the hops to the sessions' event loops.
    ///
    /// Stanzas in a run of `addressed` (the first runs, in order of `start`; those that end
    /// in this slice are taken off) carry their addresses already.
    private func send(_ batch: ArraySlice<XMLElement>, addressed: inout ArraySlice<MUCAddressedRun>, through outlet: HostedServiceOutlet) {
        var deliveries: [HostedDelivery] = []
        deliveries.reserveCapacity(batch.count)
        // Stanzas whose addresses do not parse go the usual way (the router refuses and logs
        // them), after the deliveries before them.
        var unparsed: [(after: Int, stanza: XMLElement)] = []
        addresses.withLockedValue { addresses in
            if addresses.jids.count > 100_000 { addresses.jids = [:] }
            func parse(_ text: String?) -> JID? {
                guard let text else { return nil }
                addresses.used = true
                if let known = addresses.jids[text] { return known }
                guard let jid = try? JID(text) else { return nil }
                addresses.jids[text] = jid
                return jid
            }
            // Outside the runs (a nickname change's copies, a departure's): the copies of one
            // stanza come from one occupant JID, a list to one session goes to one session,
            // each parsed, or looked up, once per run of them (the room shares one string for
            // such a run, so comparing it is a pointer comparison).
            var lastFrom: (text: String, jid: JID)?
            var lastTo: (text: String, jid: JID)?
            func parse(_ text: String?, remembering last: inout (text: String, jid: JID)?) -> JID? {
                guard let text else { return nil }
                if let last, last.text == text { return last.jid }
                guard let jid = parse(text) else { return nil }
                last = (text, jid)
                return jid
            }
            // The current run, in locals: a copy costs an index comparison and an array read.
            var run = addressed.first
            var runStart = run?.start ?? .max
            var runEnd = run?.end ?? .max
            for (index, stanza) in zip(batch.indices, batch) {
                while index >= runEnd {
                    addressed.removeFirst()
                    run = addressed.first
                    runStart = run?.start ?? .max
                    runEnd = run?.end ?? .max
                }
                if index >= runStart, let run {
                    let (from, to) = run.addresses(at: index - runStart)
                    assert(stanza.from == from.description && stanza.to == to.description, "a copy's addresses do not match its run")
                    deliveries.append(HostedDelivery(stanza, from: from, to: to))
                    continue
                }
                // Unparsable addresses: the router refuses and logs it, in its turn.
                guard let from = parse(stanza.from, remembering: &lastFrom), let to = parse(stanza.to, remembering: &lastTo) else {
                    unparsed.append((deliveries.count, stanza))
                    continue
                }
                deliveries.append(HostedDelivery(stanza, from: from, to: to))
            }
        }
        var sent = 0
        for (after, stanza) in unparsed {
            if after > sent { outlet.send(Array(deliveries[sent..<after])) }
            outlet.send(stanza)
            sent = after
        }
        if sent < deliveries.count { outlet.send(sent == 0 ? deliveries : Array(deliveries[sent...])) }
    }
}
