import ParleyCore
import Synchronization

/// A room's occupants' presences as most of the room sees them (no status codes, their
/// current roles), each serialized once but for its `to`: a newcomer gets every occupant's
/// presence and every occupant gets the newcomer's, so filling a room of N sends about N² of
/// them, which differ only in `to`. One table per room, shared by the room's copies and
/// guarded by the service's lock like the room; an entry is the occupant's as long as the
/// occupant's `revision` is the one it was made for (any change makes a new revision), and
/// what else it depends on (the affiliation, whether the recipient may see real JIDs) is
/// checked at each use.
///
/// Kept only while it is used: a room that nobody entered for a while lets the whole table go
/// (`MUCRoom.releaseShownPresences`), and the next newcomer makes the entries again. Both
/// templates of an occupant (an element tree and its bytes each) were about 2.5 KB, most of
/// what an occupant of a quiet room held (bench/README.md, MUC memory, fifth round). The
/// table replaces a box per occupant, made at its entry and at every change even when no
/// template was ever put in it: a heap block per occupant left amid the fill's churn (seventh
/// round).
final class MUCShownPresences: @unchecked Sendable {
    struct Built {
        var affiliation: MUCAffiliation
        /// `<presence from='room/nick'>` and its children, serialized.
        var template: XMLStanzaTemplate
    }

    struct Entry {
        /// The occupant's revision these were made of.
        var revision: UInt64
        /// `room/nick`, the copies' `from`, for the router (see `MUCAddressedRun`).
        var from: JID
        /// For recipients that do not see real JIDs, and for those that do.
        var plain: Built?
        var withRealJID: Built?
    }

    /// By nickname.
    private(set) var entries: [String: Entry] = [:]
    /// A template was used since the room last looked (see `MUCRoom.releaseShownPresences`).
    var recently = false

    /// Some occupant has a template kept.
    var kept: Bool { !entries.isEmpty }

    /// `occupant`'s template for recipients that see real JIDs or not, if one was made of its
    /// current revision for its current affiliation, and its `from`.
    func template(of occupant: MUCOccupant, withRealJID: Bool, affiliation: MUCAffiliation) -> (XMLStanzaTemplate, from: JID)? {
        guard let entry = entries[occupant.nick], entry.revision == occupant.revision,
            let built = withRealJID ? entry.withRealJID : entry.plain, built.affiliation == affiliation
        else { return nil }
        return (built.template, entry.from)
    }

    func keep(
        _ template: XMLStanzaTemplate, from: JID, of occupant: MUCOccupant, withRealJID: Bool, affiliation: MUCAffiliation
    ) {
        var entry =
            entries[occupant.nick].flatMap { $0.revision == occupant.revision ? $0 : nil }
            ?? Entry(revision: occupant.revision, from: from)
        let built = Built(affiliation: affiliation, template: template)
        if withRealJID { entry.withRealJID = built } else { entry.plain = built }
        entries[occupant.nick] = entry
    }

    /// Forgets `nick`'s templates (it left, or goes by another nickname now).
    func forget(_ nick: String) {
        entries[nick] = nil
        if entries.isEmpty { entries = [:] }
    }

    func release() {
        entries = [:]
    }

    private static let revisions = Atomic<UInt64>(0)

    /// A revision no occupant had before, in any room.
    static func nextRevision() -> UInt64 {
        revisions.wrappingAdd(1, ordering: .relaxed).newValue
    }
}
