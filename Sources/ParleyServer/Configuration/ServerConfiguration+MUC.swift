import ParleyCore

extension ServerConfiguration {
    /// Multi-user chat (XEP-0045, `muc`): a hosted service at its own domain that `parleyd`
    /// starts when enabled. ParleyServer only carries these settings; the service is ParleyMUC.
    public struct MUC: Sendable, Hashable {
        public enum RoomCreation: String, Sendable, Hashable, CaseIterable {
            /// Any account of this server may create a room by joining it.
            case local
            /// Only the accounts listed in `admins`.
            case admins
        }

        public var enabled = true
        /// nil: `conference.<domain>`.
        public var domain: String?
        public var roomCreation = RoomCreation.local
        /// Bare JIDs that may create rooms when `roomCreation` is `admins`.
        public var admins: [String] = []
        /// Rooms the service holds at most.
        public var maxRooms = 10_000
        /// Occupants one room holds at most (its owners and admins still get in).
        public var maxOccupantsPerRoom = 1_000
        /// Rooms one account may own.
        public var maxRoomsPerAccount = 100
        /// The largest message sent to a room or an occupant, in bytes of XML.
        public var maxMessageBytes = 16_384
        /// The longest nickname in bytes (jid-malformed beyond).
        public var maxNickBytes = 128
        /// Who may register with a room (XEP-0045 §7.10) and so reserve a nickname.
        public var registration = Registration.open
        /// Registered users always enter under their reserved nickname (Prosody's option).
        public var enforceRegisteredNickname = false
        /// Each occupant's groupchat rate in the long run, and the burst allowed at once.
        public var messagesPerMinute = 120
        public var messageBurst = 10

        public enum Registration: String, Sendable, Hashable, CaseIterable {
            /// Anyone not banned may register with an open room and becomes a member.
            case open
            /// Only members, admins and owners may (to reserve a nickname).
            case affiliated
        }

        /// Whether a new room keeps an archive (XEP-0313) until its owner turns it off.
        public var archiveByDefault = true
        /// Messages one room's archive keeps (the oldest go first); 0: no limit.
        public var archiveMaxMessagesPerRoom = 10_000
        /// Room messages older than this many days are deleted; 0 keeps them.
        public var archiveRetentionDays = 0
        public init() {}
    }

    /// The domain the MUC service serves.
    public var mucDomain: String { muc.domain ?? "conference.\(domain)" }
}

extension ServerConfiguration {
    static func readMUC(_ values: ConfigurationValues, into config: inout ServerConfiguration) throws(ConfigurationError) {
        config.muc.enabled = try values.bool("muc.enabled", default: config.muc.enabled)
        config.muc.domain = values.optionalString("muc.domain")
        config.muc.roomCreation = try values.choice("muc.room_creation", default: config.muc.roomCreation)
        config.muc.admins = try values.stringList("muc.admins", default: config.muc.admins)
        config.muc.maxRooms = try values.positiveInt("muc.max_rooms", default: config.muc.maxRooms)
        config.muc.maxOccupantsPerRoom = try values.positiveInt("muc.max_occupants_per_room", default: config.muc.maxOccupantsPerRoom)
        config.muc.maxRoomsPerAccount = try values.positiveInt("muc.max_rooms_per_account", default: config.muc.maxRoomsPerAccount)
        config.muc.maxMessageBytes = try values.positiveInt("muc.max_message_bytes", default: config.muc.maxMessageBytes)
        config.muc.maxNickBytes = try values.int(
            "muc.max_nick_bytes", default: config.muc.maxNickBytes, in: 1...1023, expected: "a length in bytes from 1 to 1023")
        config.muc.registration = try values.choice("muc.registration", default: config.muc.registration)
        config.muc.enforceRegisteredNickname = try values.bool(
            "muc.enforce_registered_nickname", default: config.muc.enforceRegisteredNickname)
        config.muc.messagesPerMinute = try values.positiveInt("muc.messages_per_minute", default: config.muc.messagesPerMinute)
        config.muc.messageBurst = try values.positiveInt("muc.message_burst", default: config.muc.messageBurst)
        config.muc.archiveByDefault = try values.bool("muc.archive_by_default", default: config.muc.archiveByDefault)
        config.muc.archiveMaxMessagesPerRoom = try values.int(
            "muc.archive_max_messages_per_room", default: config.muc.archiveMaxMessagesPerRoom, in: 0...Int.max,
            expected: "a count (0 for unlimited)")
        config.muc.archiveRetentionDays = try values.int(
            "muc.archive_retention_days", default: config.muc.archiveRetentionDays, in: 0...1_000_000,
            expected: "a number of days (0 to keep messages)")
        for admin in config.muc.admins {
            guard let jid = try? JID(admin), jid.localpart != nil, !jid.isFull else {
                throw ConfigurationError(key: "muc.admins", reason: "expected bare JIDs such as admin@example.org, got \"\(admin)\"")
            }
        }
        if let domain = config.muc.domain {
            guard let jid = try? JID(domain), jid.isDomain, jid.domainpart != config.domain else {
                throw ConfigurationError(
                    key: "muc.domain", reason: "expected a domain of its own such as conference.\(config.domain), got \"\(domain)\"")
            }
        }
    }
}
