import Foundation
import ParleyStorage
import PostgresNIO

extension PostgresStorage: PEPStore {
    public func pepNodes(of user: String) async throws -> [PEPNode] {
        let logger = logger
        return try await read { connection in
            try await connection.rows(
                """
                SELECT node, configuration FROM pep_nodes JOIN accounts ON accounts.id = pep_nodes.account_id
                WHERE accounts.username = \(user) ORDER BY node
                """, logger: logger
            ).map { row in
                let (node, configuration) = try row.decode((String, String).self)
                return PEPNode(name: node, configuration: try Self.decodeConfiguration(configuration))
            }
        }
    }

    public func pepNode(_ node: String, of user: String) async throws -> PEPNode? {
        let logger = logger
        return try await read { connection in
            guard
                let text = try await connection.value(
                    """
                    SELECT configuration FROM pep_nodes JOIN accounts ON accounts.id = pep_nodes.account_id
                    WHERE accounts.username = \(user) AND node = \(node)
                    """, as: String.self, logger: logger)
            else { return nil }
            return PEPNode(name: node, configuration: try Self.decodeConfiguration(text))
        }
    }

    public func createPEPNode(_ node: String, of user: String, configuration: PEPNodeConfiguration, maxNodes: Int) async throws -> Bool {
        let text = try Self.encodeConfiguration(configuration)
        let logger = logger
        return try await transaction { connection in
            // The account's row lock: two creations for one account count one after the other.
            guard
                let accountID = try await connection.value(
                    "SELECT id FROM accounts WHERE username = \(user) FOR NO KEY UPDATE", as: Int64.self, logger: logger)
            else { throw StorageError.accountNotFound(username: user) }
            if try await Self.nodeID(node, accountID: accountID, connection, logger: logger) != nil { return false }
            let count = try await connection.value(
                "SELECT COUNT(*) FROM pep_nodes WHERE account_id = \(accountID)", as: Int64.self, logger: logger) ?? 0
            guard count < maxNodes else { throw StorageError.quotaExceeded(limit: maxNodes) }
            try await connection.run(
                "INSERT INTO pep_nodes (account_id, node, configuration) VALUES (\(accountID), \(node), \(text))", logger: logger)
            return true
        }
    }

    public func configurePEPNode(_ node: String, of user: String, configuration: PEPNodeConfiguration, keepItems: Int) async throws -> Bool {
        let text = try Self.encodeConfiguration(configuration)
        let logger = logger
        return try await transaction { connection in
            guard let nodeID = try await Self.nodeID(node, of: user, lock: true, connection, logger: logger) else { return false }
            try await connection.run("UPDATE pep_nodes SET configuration = \(text) WHERE id = \(nodeID)", logger: logger)
            _ = try await Self.trim(nodeID: nodeID, keeping: keepItems, connection, logger: logger)
            return true
        }
    }

    public func deletePEPNode(_ node: String, of user: String) async throws -> Bool {
        let logger = logger
        return try await transaction { connection in
            // The items go with the node (ON DELETE CASCADE).
            try await connection.rows(
                """
                DELETE FROM pep_nodes USING accounts
                WHERE accounts.id = pep_nodes.account_id AND accounts.username = \(user) AND pep_nodes.node = \(node)
                RETURNING pep_nodes.id
                """, logger: logger
            ).count > 0
        }
    }

    public func publishPEPItem(_ item: PEPItem, node: String, of user: String, keepItems: Int) async throws -> [String] {
        let logger = logger
        return try await transaction { connection in
            guard let nodeID = try await Self.nodeID(node, of: user, lock: true, connection, logger: logger) else {
                throw StorageError.itemNotFound("PEP node \(node) of \(user)")
            }
            // Delete then insert, so a republished id gets a new sequence number: it is the
            // newest item now, the one sent as "last published".
            try await connection.run("DELETE FROM pep_items WHERE node_id = \(nodeID) AND item_id = \(item.id)", logger: logger)
            try await connection.run(
                """
                INSERT INTO pep_items (node_id, item_id, payload, publisher, published_at)
                VALUES (\(nodeID), \(item.id), \(item.payload), \(item.publisher), \(Milliseconds.from(item.publishedAt)))
                """, logger: logger)
            return try await Self.trim(nodeID: nodeID, keeping: keepItems, connection, logger: logger)
        }
    }

    public func pepItems(node: String, of user: String, ids: [String]?, newest: Int?) async throws -> [PEPItem] {
        let logger = logger
        return try await read { connection in
            guard let nodeID = try await Self.nodeID(node, of: user, lock: false, connection, logger: logger) else { return [] }
            let columns = "item_id, payload, publisher, published_at"
            if let ids {
                var byID: [String: PEPItem] = [:]
                for row in try await connection.rows(
                    "SELECT \(unescaped: columns) FROM pep_items WHERE node_id = \(nodeID) AND item_id = ANY(\(ids))", logger: logger)
                {
                    let item = try Self.pepItem(row)
                    byID[item.id] = item
                }
                return ids.compactMap { byID[$0] }
            }
            let limit = newest.map { Int64(max($0, 0)) }
            return try await connection.rows(
                """
                SELECT \(unescaped: columns) FROM pep_items WHERE node_id = \(nodeID) ORDER BY seq DESC
                LIMIT \(limit)
                """, logger: logger
            ).reversed().map(Self.pepItem)
        }
    }

    public func retractPEPItem(_ id: String, node: String, of user: String) async throws -> Bool {
        let logger = logger
        return try await transaction { connection in
            guard let nodeID = try await Self.nodeID(node, of: user, lock: true, connection, logger: logger) else { return false }
            return try await connection.rows(
                "DELETE FROM pep_items WHERE node_id = \(nodeID) AND item_id = \(id) RETURNING seq", logger: logger
            ).count > 0
        }
    }

    public func purgePEPNode(_ node: String, of user: String) async throws -> Bool {
        let logger = logger
        return try await transaction { connection in
            guard let nodeID = try await Self.nodeID(node, of: user, lock: true, connection, logger: logger) else { return false }
            try await connection.run("DELETE FROM pep_items WHERE node_id = \(nodeID)", logger: logger)
            return true
        }
    }

    // MARK: Helpers

    private static func nodeID(_ node: String, accountID: Int64, _ connection: PostgresConnection, logger: Logger) async throws -> Int64? {
        try await connection.value(
            "SELECT id FROM pep_nodes WHERE account_id = \(accountID) AND node = \(node)", as: Int64.self, logger: logger)
    }

    /// The node's id; `lock` takes its row, so writers of one node take turns (its items are
    /// trimmed by count).
    private static func nodeID(
        _ node: String, of user: String, lock: Bool, _ connection: PostgresConnection, logger: Logger
    ) async throws -> Int64? {
        try await connection.value(
            """
            SELECT pep_nodes.id FROM pep_nodes JOIN accounts ON accounts.id = pep_nodes.account_id
            WHERE accounts.username = \(user) AND pep_nodes.node = \(node) \(unescaped: lock ? "FOR NO KEY UPDATE OF pep_nodes" : "")
            """, as: Int64.self, logger: logger)
    }

    /// Deletes all but the newest `keeping` items; returns the ids deleted, oldest first.
    private static func trim(nodeID: Int64, keeping: Int, _ connection: PostgresConnection, logger: Logger) async throws -> [String] {
        let doomed = try await connection.rows(
            """
            DELETE FROM pep_items WHERE seq IN (
                SELECT seq FROM pep_items WHERE node_id = \(nodeID) ORDER BY seq DESC OFFSET \(Int64(max(keeping, 0))))
            RETURNING seq, item_id
            """, logger: logger
        ).map { try $0.decode((Int64, String).self) }
        return doomed.sorted { $0.0 < $1.0 }.map(\.1)
    }

    private static func pepItem(_ row: PostgresRow) throws -> PEPItem {
        let (id, payload, publisher, publishedAt) = try row.decode((String, String, String, Int64).self)
        return PEPItem(id: id, payload: payload, publisher: publisher, publishedAt: Milliseconds.date(publishedAt))
    }

    private static func encodeConfiguration(_ configuration: PEPNodeConfiguration) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(configuration), as: UTF8.self)
    }

    private static func decodeConfiguration(_ text: String) throws -> PEPNodeConfiguration {
        try JSONDecoder().decode(PEPNodeConfiguration.self, from: Data(text.utf8))
    }
}
