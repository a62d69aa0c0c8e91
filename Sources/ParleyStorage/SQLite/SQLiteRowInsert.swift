import GRDB
import GRDBSQLite

/// One execution of a cached INSERT, its values bound and the statement stepped through
/// SQLite's C API. GRDB's `execute(arguments:)` boxes every value (a `StatementArguments`
/// of `DatabaseValue`s), validates them against the statement, nests a closure per string
/// and runs its observation hooks before and after: for the archive's rows (a body and two
/// entries per message) that was half as much CPU again as SQLite's own inserts took
/// (bench/README.md, issue 17, "Ninth round"). Only for statements GRDB need not see run:
/// INSERTs inside a transaction it opened, on a connection with no observers.
struct SQLiteRowInsert {
    private let statement: Statement
    private var parameter: CInt = 0
    /// The first value SQLite refused since the last run (a text over its length limit, no
    /// memory): thrown by `execute` as the row's error, like a refused row, rather than
    /// stopping the server on the writer's thread.
    private var bindFailure: CInt = SQLITE_OK

    init(_ statement: Statement) {
        self.statement = statement
    }

    mutating func bind(_ value: String?) {
        parameter += 1
        let handle = statement.sqliteStatement
        let index = parameter
        guard var value else {
            sqlite3_bind_null(handle, index)
            return
        }
        // Copied by SQLite (SQLITE_TRANSIENT): the bytes are only ours inside withUTF8.
        let code = value.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { text in
                // An empty buffer may have no address, which SQLite would bind as NULL.
                guard let start = text.baseAddress else { return sqlite3_bind_text(handle, index, "", 0, Self.transient) }
                return sqlite3_bind_text(handle, index, start, CInt(text.count), Self.transient)
            }
        }
        noteBound(code)
    }

    mutating func bind(_ value: Int64?) {
        parameter += 1
        let handle = statement.sqliteStatement
        let index = parameter
        let code = value.map { sqlite3_bind_int64(handle, index, $0) } ?? sqlite3_bind_null(handle, index)
        noteBound(code)
    }

    /// Runs the statement with the values bound since the last run, and makes it ready for
    /// the next; a failure throws the error GRDB would have (and the caller's transaction
    /// rolls back).
    mutating func execute(in db: Database) throws {
        let handle = statement.sqliteStatement
        precondition(parameter == sqlite3_bind_parameter_count(handle), "\(parameter) values bound for: \(statement.sql)")
        parameter = 0
        let refused = bindFailure
        bindFailure = SQLITE_OK
        guard refused == SQLITE_OK else {
            let message = String(cString: sqlite3_errstr(refused))
            sqlite3_clear_bindings(handle)
            throw DatabaseError(resultCode: ResultCode(rawValue: refused), message: message, sql: statement.sql)
        }
        let code = sqlite3_step(handle)
        guard code == SQLITE_DONE else {
            let message = db.lastErrorMessage
            sqlite3_reset(handle)
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: statement.sql)
        }
        sqlite3_reset(handle)
    }

    private mutating func noteBound(_ code: CInt) {
        if code != SQLITE_OK, bindFailure == SQLITE_OK { bindFailure = code }
    }

    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
}
