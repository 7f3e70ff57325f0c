import VaporCSQLite

#if canImport(Dispatch)
import Dispatch
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What SQLite said went wrong: its (extended) result code and its message, and the operating
/// system's error number behind an I/O error (`sqlite3_system_errno`; 0 when there was none).
struct SQLiteFailure: Error, CustomStringConvertible {
    let code: Int32
    let message: String
    var systemError: Int32 = 0

    var description: String { "\(message) (SQLite result code \(code))" }

    /// Whether the disk is full: `SQLITE_FULL`, or an I/O error on `ENOSPC` (SQLite says
    /// `SQLITE_FULL` for a write that ran out of space, and an I/O error for some of the files
    /// beside the database: https://www.sqlite.org/rescode.html#full).
    var isDiskFull: Bool {
        code & 0xFF == SQLITE_FULL || (code & 0xFF == SQLITE_IOERR && systemError == ENOSPC)
    }
}

/// One SQLite connection, driven through SQLite's C API (the copy sqlite-nio builds), each
/// statement prepared once and kept for the next time.
///
/// Preparing was most of what the queue's statements cost (docs/performance.md, "Measurements
/// behind the code"). sqlite-nio prepares every query again, and runs each on
/// a thread pool, its answer passed through an event loop back to the caller: three thread hops a
/// statement. Here a transaction's statements run one after another on the thread its task runs
/// on (``SQLiteExecutor``).
///
/// Not safe to share by itself: ``SQLiteDatabase`` runs one transaction at a time on it.
final class SQLiteLink: @unchecked Sendable {
    private var handle: OpaquePointer?
    /// Prepared statements by their text as the engine wrote it (before ``SQLDialect/spell(_:)``).
    private var prepared: [String: OpaquePointer] = [:]
    /// The most statements kept. The queue's are a fixed set of texts (lists are bound as JSON,
    /// never spelled into the text), a little over a hundred; past this bound, all are dropped
    /// and prepared again as they come.
    static let maximumPrepared = 256

    /// The largest text or blob a kept statement holds on to between runs, in bytes.
    static let largestValueKept = 16 << 10

    /// How many statements are kept now.
    var preparedCount: Int { prepared.count }
    /// How many times SQLite prepared a kept statement again before running it.
    var preparedAgain: Int {
        prepared.values.reduce(0) { $0 + Int(sqlite_nio_sqlite3_stmt_status($1, SQLITE_STMTSTATUS_REPREPARE, 0)) }
    }

    /// SQLite's `SQLITE_TRANSIENT`: SQLite copies a bound value before the call returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    init(path: String) throws(SQLiteFailure) {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_CREATE | SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_EXRESCODE
        let code = sqlite_nio_sqlite3_open_v2(path, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite_nio_sqlite3_errmsg($0)) } ?? "cannot allocate a connection"
            sqlite_nio_sqlite3_close_v2(handle)
            throw SQLiteFailure(code: code, message: message)
        }
        self.handle = handle
    }

    deinit { close() }

    /// Finalizes the kept statements and closes the connection (which rolls back a transaction
    /// left open). Later queries fail.
    func close() {
        for statement in prepared.values { sqlite_nio_sqlite3_finalize(statement) }
        prepared = [:]
        sqlite_nio_sqlite3_close_v2(handle)
        handle = nil
    }

    /// Runs one statement with `binds` (parameter N takes `binds[N - 1]`) and returns its rows.
    func query(_ sql: String, _ binds: [SQLValue], spell: (String) -> String) throws(SQLiteFailure) -> [SQLRow] {
        let statement = try statement(for: sql, spell: spell)
        defer {
            sqlite_nio_sqlite3_reset(statement)
            // SQLite keeps a copy of each value bound until the next run: not a large one (a
            // batch of devices as JSON), which would stay held while the statement is kept.
            for (offset, value) in binds.enumerated() where value.byteCount > Self.largestValueKept {
                sqlite_nio_sqlite3_bind_null(statement, Int32(offset + 1))
            }
        }
        for (offset, value) in binds.enumerated() {
            let code = bind(value, at: Int32(offset + 1), of: statement)
            guard code == SQLITE_OK else { throw failure(code) }
        }
        // A parameter not given is NULL, not what the last run bound. Not with
        // `sqlite3_clear_bindings`: SQLite 3.54 compiles a `LIMIT $n`'s bound value into the
        // statement, and clearing expires such a statement, which SQLite then prepares again
        // on its next run. A claim's delivery and range statements were so prepared anew every
        // time (`SQLITE_STMTSTATUS_REPREPARE`).
        let parameters = sqlite_nio_sqlite3_bind_parameter_count(statement)
        if Int(parameters) > binds.count {
            for index in Int32(binds.count + 1)...parameters { sqlite_nio_sqlite3_bind_null(statement, index) }
        }
        let columns = sqlite_nio_sqlite3_column_count(statement)
        var rows: [SQLRow] = []
        while true {
            let code = sqlite_nio_sqlite3_step(statement)
            if code == SQLITE_DONE { return rows }
            guard code == SQLITE_ROW else { throw failure(code) }
            var values: [SQLValue] = []
            values.reserveCapacity(Int(columns))
            for column in 0..<columns { values.append(value(at: column, of: statement)) }
            rows.append(SQLRow(values: values))
        }
    }

    private func statement(for sql: String, spell: (String) -> String) throws(SQLiteFailure) -> OpaquePointer {
        if let statement = prepared[sql] { return statement }
        guard let handle else { throw SQLiteFailure(code: SQLITE_MISUSE, message: "the connection is closed") }
        if prepared.count >= Self.maximumPrepared {
            for statement in prepared.values { sqlite_nio_sqlite3_finalize(statement) }
            prepared = [:]
        }
        var statement: OpaquePointer?
        var code: Int32 = SQLITE_OK
        var rest = ""
        spell(sql).withCString { text in
            var tail: UnsafePointer<CChar>?
            code = sqlite_nio_sqlite3_prepare_v3(handle, text, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, &tail)
            if let tail { rest = String(cString: tail) }
        }
        guard code == SQLITE_OK else { throw failure(code) }
        guard let statement else { throw SQLiteFailure(code: SQLITE_MISUSE, message: "no statement in the query") }
        // One statement a query: SQLite prepares only the first, and what follows would be left
        // unrun without a word.
        guard rest.allSatisfy({ $0.isWhitespace || $0 == ";" }) else {
            sqlite_nio_sqlite3_finalize(statement)
            throw SQLiteFailure(code: SQLITE_MISUSE, message: "more than one statement in one query")
        }
        prepared[sql] = statement
        return statement
    }

    private func bind(_ value: SQLValue, at index: Int32, of statement: OpaquePointer) -> Int32 {
        switch value {
        case .null:
            sqlite_nio_sqlite3_bind_null(statement, index)
        case .int(let int):
            sqlite_nio_sqlite3_bind_int64(statement, index, int)
        case .real(let real):
            sqlite_nio_sqlite3_bind_double(statement, index, real)
        case .text(let text):
            // A native string's bytes as they are (it keeps a terminating NUL): no copy.
            text.withCString { sqlite_nio_sqlite3_bind_text64(statement, index, $0, UInt64(text.utf8.count), Self.transient, UInt8(SQLITE_UTF8)) }
        case .blob(let bytes):
            // An empty blob has no address, which SQLite would take for NULL.
            bytes.isEmpty
                ? sqlite_nio_sqlite3_bind_zeroblob(statement, index, 0)
                : bytes.withUnsafeBytes { sqlite_nio_sqlite3_bind_blob64(statement, index, $0.baseAddress, UInt64($0.count), Self.transient) }
        }
    }

    private func value(at column: Int32, of statement: OpaquePointer) -> SQLValue {
        switch sqlite_nio_sqlite3_column_type(statement, column) {
        case SQLITE_INTEGER:
            return .int(sqlite_nio_sqlite3_column_int64(statement, column))
        case SQLITE_FLOAT:
            return .real(sqlite_nio_sqlite3_column_double(statement, column))
        case SQLITE_TEXT:
            // The text first, then its length (SQLite's order: asking for the text may convert it).
            guard let text = sqlite_nio_sqlite3_column_text(statement, column) else { return .text("") }
            let count = Int(sqlite_nio_sqlite3_column_bytes(statement, column))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite_nio_sqlite3_column_bytes(statement, column))
            guard let bytes = sqlite_nio_sqlite3_column_blob(statement, column), count > 0 else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: bytes, count: count)))
        default:
            return .null
        }
    }

    private func failure(_ code: Int32) -> SQLiteFailure {
        guard let handle else { return SQLiteFailure(code: code, message: "the connection is closed") }
        return SQLiteFailure(code: code, message: String(cString: sqlite_nio_sqlite3_errmsg(handle)), systemError: sqlite_nio_sqlite3_system_errno(handle))
    }

    /// Whether a transaction is open (SQLite ends one by itself after some errors, a full disk
    /// among them: https://www.sqlite.org/lang_transaction.html, "Response To Errors Within A
    /// Transaction").
    var isInTransaction: Bool {
        guard let handle else { return false }
        return sqlite_nio_sqlite3_get_autocommit(handle) == 0
    }
}

/// Where a database's transactions run: a serial dispatch queue of its own, preferred by the
/// task that holds the connection (`withTaskExecutorPreference`). SQLite's calls block (a
/// statement; a wait of up to `busy_timeout` for another process's write lock), and so never
/// hold one of Swift's cooperative threads; a transaction's statements and the engine's code
/// between them run on it one after another, a hop onto it and one off it a transaction.
final class SQLiteExecutor: TaskExecutor {
    private let queue: DispatchQueue

    init(label: String) {
        queue = DispatchQueue(label: label)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}

extension SQLValue {
    /// The bytes of a text or blob; 0 for the others.
    fileprivate var byteCount: Int {
        switch self {
        case .text(let text): text.utf8.count
        case .blob(let bytes): bytes.count
        case .null, .int, .real: 0
        }
    }
}
