import NIOCore
import ParleyCore

/// The handler's state that most sessions hold only for a moment, or never: the login's
/// timer and lookups, a refusal, the work a message burst waits on (storage commits,
/// deferred XEP-0198 answers), server pings, the acknowledgement request timer.
///
/// Stored inline it made every idle session about 200 bytes larger for good. Here it is one
/// object, made by the first write that needs it and dropped (`releaseOccasionalIfIdle`) once
/// everything in it is back at rest; reading a field of a session without one costs nothing.
extension C2SSessionHandler {
    final class Occasional {
        var unauthenticatedTimer: Scheduled<Void>?
        var refusal: StreamError?
        var scramAccountID: Int64?
        var pendingSession: BoundSession?
        var pendingDurability: [Task<Void, Never>] = []
        var archiveUnconfirmed: [UInt64] = []
        var deferredAcknowledgements: [(h: UInt32, rows: ClosedRange<UInt64>?, forwards: Int?)] = []
        var unfinishedForwards: Set<Int> = []
        var nextForwardsTicket = 0
        var durabilityGeneration = 0
        var pendingDurabilityPruned = 0
        var awaitsArchiveWake = false
        var pendingServerPings: Set<String> = []
        var unackedSinceRequest = 0
        var ackRequestTimer: Scheduled<Void>?

        /// Nothing in it that a later event would need. The counters that only tell apart
        /// waits of one burst (`durabilityGeneration`, `nextForwardsTicket`) may restart at
        /// zero then: no wait of an earlier burst is still out.
        var isIdle: Bool {
            unauthenticatedTimer == nil && refusal == nil && scramAccountID == nil && pendingSession == nil
                && pendingDurability.isEmpty && archiveUnconfirmed.isEmpty && deferredAcknowledgements.isEmpty
                && unfinishedForwards.isEmpty && !awaitsArchiveWake && pendingServerPings.isEmpty
                && unackedSinceRequest == 0 && ackRequestTimer == nil
        }
    }

    /// The side object, made on first use.
    var occasionalState: Occasional {
        if let occasional { return occasional }
        let made = Occasional()
        occasional = made
        return made
    }

    /// Gives the side object back once nothing in it is in use.
    func releaseOccasionalIfIdle() {
        if let occasional, occasional.isIdle { self.occasional = nil }
    }

    var unauthenticatedTimer: Scheduled<Void>? {
        get { occasional?.unauthenticatedTimer }
        set { if newValue != nil || occasional != nil { occasionalState.unauthenticatedTimer = newValue } }
    }
    /// Why this connection was refused at accept time, sent once the header arrives.
    var refusal: StreamError? {
        get { occasional?.refusal }
        set { if newValue != nil || occasional != nil { occasionalState.refusal = newValue } }
    }
    /// The id of the account looked up for a SCRAM exchange still in progress.
    var scramAccountID: Int64? {
        get { occasional?.scramAccountID }
        set { if newValue != nil || occasional != nil { occasionalState.scramAccountID = newValue } }
    }
    /// Made for a bind that has not completed yet.
    var pendingSession: BoundSession? {
        get { occasional?.pendingSession }
        set { if newValue != nil || occasional != nil { occasionalState.pendingSession = newValue } }
    }
    /// Messages handed to storage (offline, archive backpressure) whose commit is not yet
    /// known: the stream goes on with further messages, but nothing else, until they are.
    var pendingDurability: [Task<Void, Never>] {
        get { occasional?.pendingDurability ?? [] }
        _modify { yield &occasionalState.pendingDurability }
    }
    /// Archive sequence numbers of this session's messages not yet known to be committed,
    /// oldest first (`C2SSessionHandler+ArchiveDurability`).
    var archiveUnconfirmed: [UInt64] {
        get { occasional?.archiveUnconfirmed ?? [] }
        _modify { yield &occasionalState.archiveUnconfirmed }
    }
    /// XEP-0198 answers waiting for archive commits, in the order they were asked for: the
    /// `h` each reports, the rows it covers (`C2SSessionHandler+ArchiveDurability`), and the
    /// ticket of the `pendingDurability` it waits for (`C2SSessionHandler+ForwardDurability`).
    var deferredAcknowledgements: [(h: UInt32, rows: ClosedRange<UInt64>?, forwards: Int?)] {
        get { occasional?.deferredAcknowledgements ?? [] }
        _modify { yield &occasionalState.deferredAcknowledgements }
    }
    /// Tickets of acknowledgements whose `pendingDurability` is not all done yet.
    var unfinishedForwards: Set<Int> {
        get { occasional?.unfinishedForwards ?? [] }
        _modify { yield &occasionalState.unfinishedForwards }
    }
    var nextForwardsTicket: Int {
        get { occasional?.nextForwardsTicket ?? 0 }
        set { occasionalState.nextForwardsTicket = newValue }
    }
    /// Bumped whenever `pendingDurability` is taken whole, so a wait that finishes later
    /// does not prune the newer tasks in it.
    var durabilityGeneration: Int {
        get { occasional?.durabilityGeneration ?? 0 }
        set { occasionalState.durabilityGeneration = newValue }
    }
    /// How many finished tasks were taken off the front of `pendingDurability` in this generation.
    var pendingDurabilityPruned: Int {
        get { occasional?.pendingDurabilityPruned ?? 0 }
        set { if newValue != 0 || occasional != nil { occasionalState.pendingDurabilityPruned = newValue } }
    }
    /// The archive writer will call back for the oldest of `deferredAcknowledgements`: one
    /// wake-up at a time, not one per `<r/>`.
    var awaitsArchiveWake: Bool {
        get { occasional?.awaitsArchiveWake ?? false }
        set { if newValue || occasional != nil { occasionalState.awaitsArchiveWake = newValue } }
    }
    /// Ids of the pings this server sent to a silent client (`pingIdlePeer`).
    var pendingServerPings: Set<String> {
        get { occasional?.pendingServerPings ?? [] }
        _modify { yield &occasionalState.pendingServerPings }
    }
    /// XEP-0198: stanzas sent since the server last asked for an acknowledgement.
    var unackedSinceRequest: Int {
        get { occasional?.unackedSinceRequest ?? 0 }
        set { if newValue != 0 || occasional != nil { occasionalState.unackedSinceRequest = newValue } }
    }
    var ackRequestTimer: Scheduled<Void>? {
        get { occasional?.ackRequestTimer }
        set { if newValue != nil || occasional != nil { occasionalState.ackRequestTimer = newValue } }
    }
}
