import Foundation
import GRDB
import GRDBSQLite
import Testing

@testable import ParleyStorage

/// The archive writer's inserts bypass GRDB's argument handling (`SQLiteRowInsert`): what
/// they store, and what a failed row leaves behind, must be what GRDB's `execute` gives.
@Suite struct SQLiteRowInsertTests {
    private func withTable(_ body: (Database) throws -> Void) throws {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (name TEXT NOT NULL, note TEXT, number INTEGER UNIQUE)")
            try body(db)
        }
    }

    @Test func storesTextNullsAndIntegersAsBound() throws {
        try withTable { db in
            var insert = SQLiteRowInsert(try db.cachedStatement(sql: "INSERT INTO t (name, note, number) VALUES (?, ?, ?)"))
            let long = String(repeating: "é<x/>", count: 500)
            for (name, note, number) in [("", nil, 1), (long, "", nil), ("juliet@capulet.lit/balcony", "n", Int64.max)] as [(String, String?, Int64?)] {
                insert.bind(name)
                insert.bind(note)
                insert.bind(number)
                try insert.execute(in: db)
            }
            let rows = try Row.fetchAll(db, sql: "SELECT name, note, number, typeof(note) FROM t ORDER BY rowid")
            #expect(rows.map { $0[0] as String } == ["", long, "juliet@capulet.lit/balcony"])
            // An empty string stays text, not NULL.
            #expect(rows.map { $0[3] as String } == ["null", "text", "text"])
            #expect(rows.map { $0[2] as Int64? } == [1, nil, Int64.max])
        }
    }

    /// A refused row throws SQLite's error (the writer's transaction then rolls back and is
    /// retried), and the statement takes the next row as if nothing had happened.
    @Test func aRefusedRowThrowsAndTheStatementGoesOn() throws {
        try withTable { db in
            var insert = SQLiteRowInsert(try db.cachedStatement(sql: "INSERT INTO t (name, note, number) VALUES (?, ?, ?)"))
            insert.bind("first")
            insert.bind(nil as String?)
            insert.bind(7)
            try insert.execute(in: db)
            insert.bind("duplicate")
            insert.bind(nil as String?)
            insert.bind(7)
            let error = try #require(throws: DatabaseError.self) { try insert.execute(in: db) }
            #expect(error.resultCode == .SQLITE_CONSTRAINT)
            #expect(error.sql?.hasPrefix("INSERT INTO t") == true)
            insert.bind("second")
            insert.bind("kept")
            insert.bind(8)
            try insert.execute(in: db)
            #expect(try String.fetchAll(db, sql: "SELECT name FROM t ORDER BY rowid") == ["first", "second"])
        }
    }

    /// A value SQLite refuses to bind (here a text over the connection's length limit) fails
    /// that row like a refused row, instead of stopping the process, and the next row goes in.
    @Test func aValueSQLiteRefusesToBindFailsOnlyItsRow() throws {
        try withTable { db in
            sqlite3_limit(db.sqliteConnection, SQLITE_LIMIT_LENGTH, 100)
            var insert = SQLiteRowInsert(try db.cachedStatement(sql: "INSERT INTO t (name, note, number) VALUES (?, ?, ?)"))
            insert.bind(String(repeating: "x", count: 1000))
            insert.bind(nil as String?)
            insert.bind(1)
            let error = try #require(throws: DatabaseError.self) { try insert.execute(in: db) }
            #expect(error.resultCode == .SQLITE_TOOBIG)
            insert.bind("short")
            insert.bind(nil as String?)
            insert.bind(2)
            try insert.execute(in: db)
            #expect(try String.fetchAll(db, sql: "SELECT name FROM t ORDER BY rowid") == ["short"])
        }
    }
}
