import Foundation
import ParleyStorage
import PostgresNIO

extension PostgresStorage: MUCRoomStore {
    public func mucRooms(of service: String) async throws -> [StoredMUCRoom] {
        let logger = logger
        return try await transaction { connection in
            var affiliations: [String: [StoredMUCRoom.Affiliation]] = [:]
            for row in try await connection.rows(
                "SELECT room, jid, affiliation, nick FROM muc_affiliations WHERE service = \(service) ORDER BY room, jid", logger: logger)
            {
                let (room, jid, affiliation, nick) = try row.decode((String, String, String, String?).self)
                affiliations[room, default: []].append(.init(jid: jid, username: nil, affiliation: affiliation, nick: nick))
            }
            var vCards: [String: (String, String?)] = [:]
            for row in try await connection.rows(
                "SELECT room, vcard, photo_hash FROM muc_vcards WHERE service = \(service)", logger: logger)
            {
                let (room, vCard, hash) = try row.decode((String, String, String?).self)
                vCards[room] = (vCard, hash)
            }
            return try await connection.rows(
                """
                SELECT name, title, description, is_public, whois, occupants_change_subject, members_only, password, subject,
                    subject_from, occupant_id_key, moderated, archiving, allow_pm, max_occupants, members_may_invite
                FROM muc_rooms WHERE service = \(service) ORDER BY name
                """, logger: logger
            ).map { row in
                let (name, title, description, isPublic, whois, occupantsChangeSubject, membersOnly, password, subject, subjectFrom, key,
                    moderated, archiving, allowPM, maxOccupants, membersMayInvite) = try row.decode(
                        (String, String, String, Bool, String, Bool, Bool, String?, String?, String?, Data, Bool, Bool, String, Int, Bool).self)
                var room = StoredMUCRoom(
                    service: service, name: name, title: title, description: description, isPublic: isPublic, whois: whois,
                    occupantsMayChangeSubject: occupantsChangeSubject, membersOnly: membersOnly, password: password, subject: subject,
                    subjectFrom: subjectFrom, occupantIDKey: Array(key), affiliations: affiliations[name] ?? [])
                room.moderated = moderated
                room.archiving = archiving
                room.allowPrivateMessages = allowPM
                room.maxOccupants = maxOccupants
                room.membersMayInvite = membersMayInvite
                room.vCard = vCards[name]?.0
                room.photoHash = vCards[name]?.1
                return room
            }
        }
    }

    public func saveMUCRoom(_ room: StoredMUCRoom) async throws {
        let logger = logger
        try await transaction { connection in
            try await connection.run(
                """
                INSERT INTO muc_rooms (service, name, title, description, is_public, whois, occupants_change_subject,
                    members_only, password, subject, subject_from, occupant_id_key, moderated, archiving, allow_pm, max_occupants,
                    members_may_invite)
                VALUES (\(room.service), \(room.name), \(room.title), \(room.description), \(room.isPublic), \(room.whois),
                    \(room.occupantsMayChangeSubject), \(room.membersOnly), \(room.password), \(room.subject), \(room.subjectFrom),
                    \(Data(room.occupantIDKey)), \(room.moderated), \(room.archiving), \(room.allowPrivateMessages),
                    \(room.maxOccupants), \(room.membersMayInvite))
                ON CONFLICT (service, name) DO UPDATE SET title = excluded.title, description = excluded.description,
                    is_public = excluded.is_public, whois = excluded.whois,
                    occupants_change_subject = excluded.occupants_change_subject, members_only = excluded.members_only,
                    password = excluded.password, subject = excluded.subject, subject_from = excluded.subject_from,
                    moderated = excluded.moderated, archiving = excluded.archiving, allow_pm = excluded.allow_pm,
                    max_occupants = excluded.max_occupants, members_may_invite = excluded.members_may_invite
                """, logger: logger)
            try await connection.run(
                "DELETE FROM muc_affiliations WHERE service = \(room.service) AND room = \(room.name)", logger: logger)
            for affiliation in room.affiliations {
                var accountID: Int64? = nil
                if let username = affiliation.username {
                    guard let id = try await connection.accountID(of: username, lock: true, logger: logger) else { continue }
                    accountID = id
                }
                try await connection.run(
                    """
                    INSERT INTO muc_affiliations (service, room, jid, account_id, affiliation, nick)
                    VALUES (\(room.service), \(room.name), \(affiliation.jid), \(accountID), \(affiliation.affiliation), \(affiliation.nick))
                    """, logger: logger)
            }
            if let vCard = room.vCard {
                // Most saves change something else (the subject, an affiliation): the vCard, up
                // to tens of kilobytes, is rewritten only when it changed.
                try await connection.run(
                    """
                    INSERT INTO muc_vcards (service, room, vcard, photo_hash) VALUES (\(room.service), \(room.name), \(vCard), \(room.photoHash))
                    ON CONFLICT (service, room) DO UPDATE SET vcard = excluded.vcard, photo_hash = excluded.photo_hash
                    WHERE muc_vcards.vcard IS DISTINCT FROM excluded.vcard
                    """, logger: logger)
            } else {
                try await connection.run(
                    "DELETE FROM muc_vcards WHERE service = \(room.service) AND room = \(room.name)", logger: logger)
            }
        }
    }

    public func deleteMUCRoom(service: String, name: String) async throws {
        let logger = logger
        try await transaction { connection in
            try await connection.run("DELETE FROM muc_rooms WHERE service = \(service) AND name = \(name)", logger: logger)
        }
    }
}
