import Foundation
import ParleyStorage
import PostgresNIO

extension PostgresStorage: LastActivityStore {
    public func lastActivity(of user: String) async throws -> LastActivity? {
        let logger = logger
        return try await read { connection in
            try await connection.rows(
                """
                SELECT logged_out_at, status FROM last_activity
                JOIN accounts ON accounts.id = last_activity.account_id WHERE accounts.username = \(user)
                """, logger: logger
            ).first.map { row in
                let (at, status) = try row.decode((Int64, String?).self)
                return LastActivity(loggedOutAt: Milliseconds.date(at), status: status)
            }
        }
    }

    public func setLastActivity(_ activity: LastActivity, for user: String) async throws {
        let logger = logger
        try await transaction { connection in
            let accountID = try await connection.existingAccountID(of: user, logger: logger)
            try await connection.run(
                """
                INSERT INTO last_activity (account_id, logged_out_at, status)
                VALUES (\(accountID), \(Milliseconds.from(activity.loggedOutAt)), \(activity.status))
                ON CONFLICT (account_id) DO UPDATE SET logged_out_at = excluded.logged_out_at, status = excluded.status
                """, logger: logger)
        }
    }
}

extension PostgresStorage: VCardStore {
    public func vCard(of user: String) async throws -> StoredVCard? {
        let logger = logger
        return try await read { connection in
            try await connection.rows(
                """
                SELECT vcard, photo_hash, updated_at FROM vcards
                JOIN accounts ON accounts.id = vcards.account_id WHERE accounts.username = \(user)
                """, logger: logger
            ).first.map { row in
                let (xml, hash, updatedAt) = try row.decode((String, String?, Int64).self)
                return StoredVCard(xml: xml, photoHash: hash, updatedAt: Milliseconds.date(updatedAt))
            }
        }
    }

    public func setVCard(_ vCard: StoredVCard, for user: String) async throws {
        let logger = logger
        try await transaction { connection in
            let accountID = try await connection.existingAccountID(of: user, logger: logger)
            try await connection.run(
                """
                INSERT INTO vcards (account_id, vcard, photo_hash, updated_at)
                VALUES (\(accountID), \(vCard.xml), \(vCard.photoHash), \(Milliseconds.from(vCard.updatedAt)))
                ON CONFLICT (account_id) DO UPDATE SET
                    vcard = excluded.vcard, photo_hash = excluded.photo_hash, updated_at = excluded.updated_at
                """, logger: logger)
        }
    }

    public func deleteVCard(of user: String) async throws -> Bool {
        let logger = logger
        return try await transaction { connection in
            guard let accountID = try await connection.accountID(of: user, logger: logger) else { return false }
            return try await connection.rows(
                "DELETE FROM vcards WHERE account_id = \(accountID) RETURNING account_id", logger: logger
            ).count > 0
        }
    }
}

extension PostgresStorage: PrivateXMLStore {
    public func privateXML(of user: String, _ keys: [(name: String, namespace: String)]) async throws -> [String?] {
        let logger = logger
        let names = keys.map(\.name), namespaces = keys.map(\.namespace)
        return try await read { connection in
            guard let accountID = try await connection.accountID(of: user, logger: logger) else { return names.map { _ in nil } }
            var found: [String: String] = [:]
            for row in try await connection.rows(
                """
                SELECT namespace, name, xml FROM private_xml
                WHERE account_id = \(accountID) AND (namespace, name) IN (SELECT * FROM unnest(\(namespaces)::text[], \(names)::text[]))
                """, logger: logger)
            {
                let (namespace, name, xml) = try row.decode((String, String, String).self)
                found[Self.privateKey(namespace, name)] = xml
            }
            return zip(namespaces, names).map { found[Self.privateKey($0, $1)] }
        }
    }

    public func setPrivateXML(_ elements: [PrivateXMLElement], for user: String, maxElements: Int) async throws -> Bool {
        let logger = logger
        do {
            try await transaction { connection in
                let accountID = try await connection.existingAccountID(of: user, logger: logger)
                for element in elements {
                    if let xml = element.xml {
                        try await connection.run(
                            """
                            INSERT INTO private_xml (account_id, namespace, name, xml)
                            VALUES (\(accountID), \(element.namespace), \(element.name), \(xml))
                            ON CONFLICT (account_id, namespace, name) DO UPDATE SET xml = excluded.xml
                            """, logger: logger)
                    } else {
                        try await connection.run(
                            """
                            DELETE FROM private_xml
                            WHERE account_id = \(accountID) AND namespace = \(element.namespace) AND name = \(element.name)
                            """, logger: logger)
                    }
                }
                // Counted after the writes, inside the transaction: replacing an element never
                // trips the limit, and a refused write leaves nothing behind.
                let count = try await connection.value(
                    "SELECT COUNT(*) FROM private_xml WHERE account_id = \(accountID)", as: Int64.self, logger: logger) ?? 0
                if count > maxElements { throw PrivateXMLLimitReached() }
            }
            return true
        } catch is PrivateXMLLimitReached {
            return false
        }
    }

    private static func privateKey(_ namespace: String, _ name: String) -> String { namespace + "\u{0}" + name }
}

private struct PrivateXMLLimitReached: Error {}
