import Foundation
import GRDB

extension SQLiteStorage: PEPStore {
    public func pepNodes(of user: String) async throws -> [PEPNode] {
        try await pool.read { db in
            guard let accountID = try Self.accountID(of: user, in: db) else { return [] }
            let rows = try Row.fetchAll(
                db, sql: "SELECT node, configuration FROM pep_nodes WHERE account_id = ? ORDER BY node", arguments: [accountID])
            return try rows.map { try PEPNode(name: $0["node"], configuration: Self.decodeConfiguration($0["configuration"])) }
        }
    }

    public func pepNode(_ node: String, of user: String) async throws -> PEPNode? {
        try await pool.read { db in
            guard let accountID = try Self.accountID(of: user, in: db),
                let text = try String.fetchOne(
                    db, sql: "SELECT configuration FROM pep_nodes WHERE account_id = ? AND node = ?", arguments: [accountID, node])
            else { return nil }
            return PEPNode(name: node, configuration: try Self.decodeConfiguration(text))
        }
    }

    public func createPEPNode(_ node: String, of user: String, configuration: PEPNodeConfiguration, maxNodes: Int) async throws -> Bool {
        let text = try Self.encodeConfiguration(configuration)
        return try await pool.write { db in
            let accountID = try Self.existingAccountID(of: user, in: db)
            if try Self.nodeID(node, accountID: accountID, in: db) != nil { return false }
            let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM pep_nodes WHERE account_id = ?", arguments: [accountID]) ?? 0
            guard count < maxNodes else { throw StorageError.quotaExceeded(limit: maxNodes) }
            try db.execute(
                sql: "INSERT INTO pep_nodes (account_id, node, configuration) VALUES (?, ?, ?)", arguments: [accountID, node, text])
            return true
        }
    }

    public func configurePEPNode(_ node: String, of user: String, configuration: PEPNodeConfiguration, keepItems: Int) async throws -> Bool {
        let text = try Self.encodeConfiguration(configuration)
        return try await pool.write { db in
            guard let accountID = try Self.accountID(of: user, in: db), let nodeID = try Self.nodeID(node, accountID: accountID, in: db)
            else { return false }
            try db.execute(sql: "UPDATE pep_nodes SET configuration = ? WHERE id = ?", arguments: [text, nodeID])
            _ = try Self.trim(nodeID: nodeID, keeping: keepItems, in: db)
            return true
        }
    }

    public func deletePEPNode(_ node: String, of user: String) async throws -> Bool {
        try await pool.write { db in
            guard let accountID = try Self.accountID(of: user, in: db) else { return false }
            // The items go with the node (ON DELETE CASCADE).
            try db.execute(sql: "DELETE FROM pep_nodes WHERE account_id = ? AND node = ?", arguments: [accountID, node])
            return db.changesCount > 0
        }
    }

    public func publishPEPItem(_ item: PEPItem, node: String, of user: String, keepItems: Int) async throws -> [String] {
        try await pool.write { db in
            guard let accountID = try Self.accountID(of: user, in: db), let nodeID = try Self.nodeID(node, accountID: accountID, in: db)
            else { throw StorageError.itemNotFound("PEP node \(node) of \(user)") }
            // Delete then insert, so a republished id gets a new sequence number: it is the
            // newest item now, the one sent as "last published".
            try db.execute(sql: "DELETE FROM pep_items WHERE node_id = ? AND item_id = ?", arguments: [nodeID, item.id])
            try db.execute(
                sql: "INSERT INTO pep_items (node_id, item_id, payload, publisher, published_at) VALUES (?, ?, ?, ?, ?)",
                arguments: [nodeID, item.id, item.payload, item.publisher, Int64(item.publishedAt.timeIntervalSince1970 * 1000)])
            return try Self.trim(nodeID: nodeID, keeping: keepItems, in: db)
        }
    }

    public func pepItems(node: String, of user: String, ids: [String]?, newest: Int?) async throws -> [PEPItem] {
        try await pool.read { db in
            guard let accountID = try Self.accountID(of: user, in: db), let nodeID = try Self.nodeID(node, accountID: accountID, in: db)
            else { return [] }
            if let ids {
                let statement = try db.cachedStatement(
                    sql: "SELECT item_id, payload, publisher, published_at FROM pep_items WHERE node_id = ? AND item_id = ?")
                return try ids.compactMap { id in try Row.fetchOne(statement, arguments: [nodeID, id]).map(Self.item) }
            }
            let rows = try Row.fetchAll(
                db,
                sql: "SELECT item_id, payload, publisher, published_at FROM pep_items WHERE node_id = ? ORDER BY seq DESC LIMIT ?",
                arguments: [nodeID, newest ?? -1])
            return rows.reversed().map(Self.item)
        }
    }

    public func retractPEPItem(_ id: String, node: String, of user: String) async throws -> Bool {
        try await pool.write { db in
            guard let accountID = try Self.accountID(of: user, in: db), let nodeID = try Self.nodeID(node, accountID: accountID, in: db)
            else { return false }
            try db.execute(sql: "DELETE FROM pep_items WHERE node_id = ? AND item_id = ?", arguments: [nodeID, id])
            return db.changesCount > 0
        }
    }

    public func purgePEPNode(_ node: String, of user: String) async throws -> Bool {
        try await pool.write { db in
            guard let accountID = try Self.accountID(of: user, in: db), let nodeID = try Self.nodeID(node, accountID: accountID, in: db)
            else { return false }
            try db.execute(sql: "DELETE FROM pep_items WHERE node_id = ?", arguments: [nodeID])
            return true
        }
    }

    // MARK: Helpers

    private static func nodeID(_ node: String, accountID: Int64, in db: Database) throws -> Int64? {
        try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT id FROM pep_nodes WHERE account_id = ? AND node = ?"), arguments: [accountID, node])
    }

    /// Deletes all but the newest `keeping` items; returns the ids deleted, oldest first.
    private static func trim(nodeID: Int64, keeping: Int, in db: Database) throws -> [String] {
        let doomed = try Row.fetchAll(
            db, sql: "SELECT seq, item_id FROM pep_items WHERE node_id = ? ORDER BY seq DESC LIMIT -1 OFFSET ?",
            arguments: [nodeID, max(keeping, 0)])
        guard let newestDoomed: Int64 = doomed.first?["seq"] else { return [] }
        try db.execute(sql: "DELETE FROM pep_items WHERE node_id = ? AND seq <= ?", arguments: [nodeID, newestDoomed])
        return doomed.reversed().map { $0["item_id"] }
    }

    private static func item(_ row: Row) -> PEPItem {
        PEPItem(
            id: row["item_id"], payload: row["payload"], publisher: row["publisher"],
            publishedAt: Date(timeIntervalSince1970: Double(row["published_at"] as Int64) / 1000))
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
