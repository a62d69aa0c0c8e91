import ParleyCore
import ParleyStorage

/// Persistent rooms (XEP-0045 §10.2 `muc#roomconfig_persistentroom`): their configuration,
/// subject, affiliations and occupant-id key are stored and loaded at start-up, so a restart
/// keeps them. Writes run off the lock and off the event loop, one after another, in the
/// order the changes were made.
extension MUCService {
    func load(from store: any MUCRoomStore) async throws -> [String: MUCRoom] {
        var rooms: [String: MUCRoom] = [:]
        for stored in try await store.mucRooms(of: domain) {
            guard let room = try? MUCRoom(stored: stored, domain: domain) else {
                logger.error("a stored room has an invalid name or JID; skipped", metadata: ["room": "\(stored.name)"])
                continue
            }
            rooms[stored.name] = room
        }
        return rooms
    }

    /// Queues the write that makes the stored copy of room `key` match memory: saved if it
    /// is persistent, deleted if it is not (or no longer exists).
    func persist(_ key: String, wasPersistent: Bool, state: inout State) {
        guard let store = state.store else { return }
        let room = state.rooms[key]
        let snapshot = room.flatMap { $0.configuration.persistent && !$0.locked ? $0.stored(service: domain, serverDomain: settings.serverDomain) : nil }
        guard snapshot != nil || wasPersistent else { return }
        let previous = state.storeTail
        let service = domain
        let logger = logger
        state.storeTail = Task {
            await previous?.value
            do {
                if let snapshot {
                    try await store.saveMUCRoom(snapshot)
                } else {
                    try await store.deleteMUCRoom(service: service, name: key)
                }
            } catch {
                logger.error("cannot store a room", metadata: ["room": "\(key)@\(service)", "error": "\(error)"])
            }
        }
    }

    public func shutdown() async {
        withLockedState { $0.shownPresenceRelease?.cancel() }
        await waitUntilStored()
        await stopArchive()
    }

    /// Waits for every room write queued so far.
    public func waitUntilStored() async {
        let tail = withLockedState { $0.storeTail }
        await tail?.value
    }
}

extension MUCRoom {
    init(stored: StoredMUCRoom, domain: String) throws {
        jid = try JID(localpart: stored.name, domainpart: domain)
        locked = false
        occupantIDKey = stored.occupantIDKey
        configuration.name = stored.title
        configuration.description = stored.description
        configuration.persistent = true
        configuration.isPublic = stored.isPublic
        configuration.whois = MUCRoomConfiguration.Whois(rawValue: stored.whois) ?? .moderators
        configuration.occupantsMayChangeSubject = stored.occupantsMayChangeSubject
        configuration.membersOnly = stored.membersOnly
        configuration.password = stored.password
        configuration.archiving = stored.archiving
        configuration.privateMessages = MUCRoomConfiguration.PrivateMessages(rawValue: stored.allowPrivateMessages) ?? .anyone
        configuration.maxOccupants = stored.maxOccupants > 0 ? stored.maxOccupants : nil
        configuration.membersMayInvite = stored.membersMayInvite
        avatar = stored.vCard.map { MUCRoomAvatar(vCard: $0, photoHash: stored.photoHash) }
        if let text = stored.subject {
            subject = (text, stored.subjectFrom.flatMap { try? JID($0) } ?? jid)
        }
        for item in stored.affiliations {
            guard let account = try? JID(item.jid), let affiliation = MUCAffiliation(rawValue: item.affiliation) else { continue }
            affiliations[account.bare] = affiliation
            if let nick = item.nick { reservedNicks[account.bare] = nick }
        }
        configuration.moderated = stored.moderated
    }

    func stored(service: String, serverDomain: String) -> StoredMUCRoom {
        var stored = StoredMUCRoom(
            service: service, name: jid.localpart ?? "", title: configuration.name, description: configuration.description,
            isPublic: configuration.isPublic, whois: configuration.whois.rawValue,
            occupantsMayChangeSubject: configuration.occupantsMayChangeSubject, membersOnly: configuration.membersOnly,
            password: configuration.password, subject: subject?.text,
            subjectFrom: subject?.from.description, occupantIDKey: occupantIDKey,
            affiliations: affiliations.sorted { $0.key < $1.key }.map { account, affiliation in
                StoredMUCRoom.Affiliation(
                    jid: account.description, username: account.domainpart == serverDomain ? account.localpart : nil,
                    affiliation: affiliation.rawValue, nick: reservedNicks[account])
            })
        stored.moderated = configuration.moderated
        stored.archiving = configuration.archiving
        stored.allowPrivateMessages = configuration.privateMessages.rawValue
        stored.maxOccupants = configuration.maxOccupants ?? 0
        stored.membersMayInvite = configuration.membersMayInvite
        stored.vCard = avatar?.vCard
        stored.photoHash = avatar?.photoHash
        return stored
    }
}
