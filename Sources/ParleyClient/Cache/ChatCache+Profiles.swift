import Foundation
import GRDB
import ParleyCore

extension ChatCache {
    public func profile(of jid: JID) async throws -> ContactProfile? {
        try await database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM profile WHERE jid = ?", arguments: [jid.bare.description]).flatMap(Self.profile)
        }
    }

    func profiles() async throws -> [ContactProfile] {
        try await database.read { db in try Row.fetchAll(db, sql: "SELECT * FROM profile").compactMap(Self.profile) }
    }

    /// Changes one contact's profile, creating the row if needed; returns whether anything
    /// changed.
    func updateProfile(of jid: JID, _ change: @escaping @Sendable (inout ContactProfile) -> Void) async throws -> Bool {
        try await database.write { db in
            let before = try Row.fetchOne(db, sql: "SELECT * FROM profile WHERE jid = ?", arguments: [jid.bare.description])
                .flatMap(Self.profile) ?? ContactProfile(jid: jid.bare)
            var after = before
            change(&after)
            guard after != before else { return false }
            try db.execute(
                sql: """
                    INSERT OR REPLACE INTO profile (jid, nickname, avatar_hash, vcard_photo_hash, vcard_full_name, vcard_nickname)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    jid.bare.description, after.nickname, after.avatarHash, after.vcardPhotoHash, after.vcardFullName,
                    after.vcardNickname,
                ])
            return true
        }
    }

    public func avatar(hash: String) async throws -> Avatar? {
        try await database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM avatar WHERE hash = ?", arguments: [hash]).map {
                Avatar(hash: $0["hash"], type: $0["type"], data: [UInt8]($0["data"] as Data))
            }
        }
    }

    func storeAvatar(_ avatar: Avatar) async throws {
        try await database.write { db in
            try db.execute(
                sql: "INSERT OR REPLACE INTO avatar (hash, type, data) VALUES (?, ?, ?)",
                arguments: [avatar.hash, avatar.type, Data(avatar.data)])
        }
    }

    private static func profile(_ row: Row) -> ContactProfile? {
        guard let jid = try? JID(row["jid"] as String) else { return nil }
        var profile = ContactProfile(jid: jid)
        profile.nickname = row["nickname"]
        profile.avatarHash = row["avatar_hash"]
        profile.vcardPhotoHash = row["vcard_photo_hash"]
        profile.vcardFullName = row["vcard_full_name"]
        profile.vcardNickname = row["vcard_nickname"]
        return profile
    }
}
