import Logging
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The embedded database: one SQLite file (WAL journal), one connection used by one transaction
/// at a time, on a thread of its own (``SQLiteExecutor``). Workers of one process share it;
/// several processes need PostgreSQL.
final class SQLiteDatabase: SQLDatabase {
    let dialect: any SQLDialect = SQLiteDialect()
    let work = WorkSignal()
    private let path: String
    private let logger: Logger
    private let access = SerialAccess()
    private let executor = SQLiteExecutor(label: "herald.sqlite")
    private let connection = Mutex<SQLiteLink?>(nil)

    /// One database per file in a process: stores opened on the same file share its connection,
    /// its transactions' order and its work signal, so they behave as one.
    private static let open = Mutex<[String: SQLiteDatabase]>([:])

    static func shared(path: String, logger: Logger) -> SQLiteDatabase {
        let key = path == ":memory:" ? ":memory:\(UUID().uuidString)" : URL(fileURLWithPath: path).standardizedFileURL.path
        return open.withLock { databases in
            if let database = databases[key] { return database }
            let database = SQLiteDatabase(path: path, logger: logger)
            databases[key] = database
            return database
        }
    }

    private init(path: String, logger: Logger) {
        self.path = path
        self.logger = logger
    }

    func run() async {}

    /// Closes the connection once no transaction is running; the next use opens it again.
    func close() async throws {
        try await access.run {
            let open = connection.withLock { connection in
                defer { connection = nil }
                return connection
            }
            open?.close()
        }
    }

    private func open() throws -> SQLiteLink {
        if let open = connection.withLock({ $0 }) { return open }
        try Self.checkDirectory(of: path)
        let opened: SQLiteLink
        do {
            opened = try SQLiteLink(path: path)
        } catch {
            throw Self.openError(error, path: path, doing: "open")
        }
        do {
            // WAL: readers do not wait for the writer; NORMAL: a commit survives the process being
            // killed (not a power cut). Foreign keys are not used.
            // busy_timeout: another process holding the write lock is waited for (sleeping, up to
            // 10 s), not spun on.
            // wal_autocheckpoint: the WAL is copied back into the database every 8,192 pages
            // (32 MiB), not every 1,000: a bulk import's commit dirties most pages of the devices
            // table, so checkpointing after each commit copied the whole table back each time.
            let pragmas = [
                "PRAGMA busy_timeout = 10000", "PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL", "PRAGMA temp_store = MEMORY",
                "PRAGMA cache_size = -32000", "PRAGMA wal_autocheckpoint = 8192",
            ]
            for pragma in pragmas {
                _ = try opened.query(pragma, [], spell: { $0 })
            }
        } catch {
            opened.close()
            throw Self.openError(error, path: path, doing: "set up")
        }
        connection.withLock { $0 = opened }
        return opened
    }

    /// What opening the file failed with. Another process holding a lock (SQLITE_BUSY,
    /// SQLITE_LOCKED) or the disk full passes; a path SQLite cannot open (SQLITE_CANTOPEN, a
    /// directory among them), a file that is not a database or is damaged (SQLITE_NOTADB,
    /// SQLITE_CORRUPT) or one this user may not write (SQLITE_PERM, SQLITE_READONLY) does not:
    /// those are said at once, with what to do (https://www.sqlite.org/rescode.html).
    static func openError(_ error: any Error, path: String, doing: String) -> StoreError {
        guard let failure = error as? SQLiteFailure else { return StoreError(.unavailable, "cannot \(doing) the SQLite database \(path): \(error)") }
        let advice: String? =
            switch failure.code & 0xFF {
            case 14: "check that it is a file, not a directory, and that this user may create files in its directory"
            case 26, 11: "it is not an SQLite database, or it is damaged: point database at Herald's file, or a path that does not exist yet"
            case 3, 8: "this user may not write it: chown or chmod the file and its directory"
            default: nil
            }
        guard let advice else { return StoreError(.unavailable, "cannot \(doing) the SQLite database \(path): \(failure)") }
        return StoreError(.cannotOpen, "cannot \(doing) the SQLite database \(path): \(failure.message); \(advice)")
    }

    /// Refuses a database file whose directory does not exist: SQLite would fail to open it every
    /// time, so it is not a database that is not up yet (which start-up waits for) but a wrong
    /// path, said at once with what to do.
    static func checkDirectory(of path: String) throws(StoreError) {
        guard path != ":memory:", !path.hasPrefix("file:") else { return }
        let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        guard !directory.isEmpty else { return }  // the working directory
        // `dir/.` exists only when `dir` is a directory.
        if FileManager.default.fileExists(atPath: directory + "/.") { return }
        throw StoreError(
            .invalidURL,
            "cannot open the SQLite database \(path): its directory \(directory) does not exist; create it (mkdir -p \(directory)) or point database at a file in an existing directory"
        )
    }

    /// Runs `body` alone on the connection, on the database's own thread.
    private func exclusive<Result: Sendable>(_ body: (SQLiteSQLConnection) async throws -> Result) async throws -> Result {
        try await access.run {
            try await withTaskExecutorPreference(executor) {
                let connection = SQLiteSQLConnection(link: try open(), dialect: dialect)
                do {
                    return try await body(connection)
                } catch let error as StoreError {
                    throw error
                } catch {
                    throw Self.storeError(error, path: path)
                }
            }
        }
    }

    /// What SQLite's error means for the caller: a full disk is ``StoreError/Code/storageFull``
    /// (the statement and its transaction were rolled back; what was committed before stays),
    /// anything else a database error.
    static func storeError(_ error: any Error, path: String) -> StoreError {
        if let failure = error as? SQLiteFailure, failure.isDiskFull {
            return StoreError(.storageFull, "SQLite \(path): the disk is full (\(failure)); nothing of this write was stored: free space on its disk")
        }
        return StoreError(.databaseError, "SQLite \(path): \(error)")
    }

    func read<Result: Sendable>(_ body: @escaping @Sendable (any SQLConnection) async throws -> Result) async throws -> Result {
        try await exclusive { connection in try await body(connection) }
    }

    /// A bulk statement runs best on its own (autocommit): inside an explicit transaction SQLite
    /// copies every page a multi-row statement touches into a statement journal, which for
    /// random tokens is nearly every page.
    func write<Result: Sendable>(_ kind: WriteKind, _ body: @escaping @Sendable (any SQLConnection) async throws -> Result) async throws -> Result {
        try await exclusive { connection in
            if kind == .statements { return try await body(connection) }
            try await begin(connection)
            let result: Result
            do {
                result = try await body(connection)
            } catch {
                await end(connection, "ROLLBACK")
                throw error
            }
            do {
                try await Self.unstoppable("COMMIT", on: connection)
            } catch {
                await end(connection, "ROLLBACK")
                throw error
            }
            return result
        }
    }

    /// Begins a transaction. One found still open is an orphan (transactions run one at a time,
    /// and none is running now): a bug, which must not stop the store for good. It is rolled
    /// back, logged as an error, and the transaction begun again.
    private func begin(_ connection: SQLiteSQLConnection) async throws {
        do {
            try await connection.query("BEGIN IMMEDIATE")
        } catch let error as SQLiteFailure where error.message.contains("within a transaction") {
            logger.error("an SQLite transaction was left open; rolled back", metadata: ["database": "\(path)"])
            try await Self.unstoppable("ROLLBACK", on: connection)
            try await connection.query("BEGIN IMMEDIATE")
        }
    }

    /// Ends the connection's transaction with `statement`; when even that fails, closes the
    /// connection (which rolls back what is open), and the next use opens it again. Whatever
    /// happened, no transaction is left open for the next caller.
    private func end(_ connection: SQLiteSQLConnection, _ statement: String) async {
        // SQLite may have rolled the transaction back itself (a full disk does): nothing to end.
        if statement == "ROLLBACK", !connection.link.isInTransaction { return }
        do {
            try await Self.unstoppable(statement, on: connection)
        } catch {
            logger.warning("cannot end an SQLite transaction; opening the database again", metadata: ["database": "\(path)", "error": "\(error)"])
            let dropped = self.connection.withLock { open -> Bool in
                guard open === connection.link else { return false }
                open = nil
                return true
            }
            if dropped { connection.link.close() }
        }
    }

    /// Runs `statement` even when the calling task is cancelled. A cancelled task's query is
    /// skipped (``SQLiteSQLConnection/query(_:_:)``): a COMMIT or ROLLBACK skipped that way would
    /// leave the one connection inside its transaction, and every later `BEGIN` would fail.
    /// Skipped, it runs again in a task of its own, which is not cancelled with the caller.
    private static func unstoppable(_ statement: String, on connection: SQLiteSQLConnection) async throws {
        do {
            try await connection.query(statement)
        } catch is CancellationError {
            try await Task { _ = try await connection.query(statement) }.value
        }
    }

    /// Workers of other processes do not share an SQLite file's queue: nothing to announce.
    func announceWork(on connection: any SQLConnection) async throws {}

    /// A broadcast reads the devices table itself, in key order: nothing to ready.
    func settleDevices() async {}

    func migrate() async throws {
        try await write(.durable) { [path, logger] connection in
            try await connection.query(SQLiteSchema.createVersions)
            let current = Int(try await connection.query(SQLiteSchema.currentVersion).first?.int(0) ?? 0)
            let known = SQLiteSchema.migrations.count
            guard current <= known else {
                throw StoreError(
                    .newerSchema,
                    "the database \(path) was migrated by a newer Herald (schema \(current); this one knows up to \(known)): upgrade Herald"
                )
            }
            for version in (current + 1)...max(known, current + 1) where version <= known {
                if version == 6 { try await SQLiteSchema.keyDevices(on: connection) }
                for statement in SQLiteSchema.migrations[version - 1] { try await connection.query(statement) }
                try await connection.query(SQLiteSchema.recordVersion, [.int(version), .int(Date().milliseconds)])
                logger.debug("store migration applied", metadata: ["schema": "\(version)", "database": "\(path)"])
            }
            // One line for the whole upgrade, not one per step (a fresh database takes every step).
            if current < known { logger.info("store migrated", metadata: ["from": "\(current)", "schema": "\(known)", "database": "\(path)"]) }
        }
    }

    func inspect() async throws -> StoreInspection {
        try await read { connection in
            let tables = try await connection.query("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'herald_schema'")
            let hasSchema = (tables.first?.int(0) ?? 0) > 0
            let version = hasSchema ? Int(try await connection.query(SQLiteSchema.currentVersion).first?.int(0) ?? 0) : 0
            return StoreInspection(schema: version, known: SQLiteSchema.migrations.count, databaseTime: Date(), isReadOnly: false, serverVersion: nil)
        }
    }

    func checkReady() async throws {
        try await read { [path] connection in
            let version = Int(try await connection.query(SQLiteSchema.currentVersion).first?.int(0) ?? 0)
            guard version == SQLiteSchema.migrations.count else {
                throw StoreError(.unavailable, "the database \(path) is at schema \(version), not \(SQLiteSchema.migrations.count): migrate it")
            }
        }
    }
}

/// An SQLite connection as the engine runs statements on it.
struct SQLiteSQLConnection: SQLConnection {
    let link: SQLiteLink
    let dialect: any SQLDialect

    /// Runs at once, on the calling thread (the database's own, in a transaction). As sqlite-nio
    /// did before, a cancelled task's statement does not run: it throws `CancellationError`, and
    /// its transaction is rolled back (``SQLiteDatabase/unstoppable(_:on:)`` still ends it).
    @discardableResult
    func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
        try Task.checkCancellation()
        return try link.query(sql, binds, spell: dialect.spell)
    }
}

/// How SQLite spells the queue's statements: one writer at a time, so nothing to lock; JSON
/// arrays read with `json_each`.
struct SQLiteDialect: SQLDialect {
    func parameter(_ index: Int, _ type: SQLType) -> String { "$\(index)" }
    func list(_ index: Int, _ type: SQLType) -> String { "SELECT value FROM json_each($\(index))" }
    func rows(_ index: Int) -> String { "json_each($\(index))" }
    func element(_ row: String, _ index: Int, _ type: SQLType) -> String { "\(row).value ->> \(index)" }
    func skipLocked(of table: String?) -> String { "" }
    var forUpdate: String { "" }
    func greatest(_ a: String, _ b: String) -> String { "MAX(\(a), \(b))" }
    func least(_ a: String, _ b: String) -> String { "MIN(\(a), \(b))" }
    /// The separator is a newline in a literal, not `char(10)`: `group_concat` evaluates its
    /// separator for every row, a call a device.
    func joinLines(_ expression: String, orderBy order: String?) -> String {
        "group_concat(\(expression), '\n'\(order.map { " ORDER BY \($0)" } ?? ""))"
    }
    /// Devices are kept by `(app, hash, token)` (``SQLiteSchema``, migration 6).
    var devicesInKeyOrder: Bool { true }
    var deviceKey: String { "(app, hash, token)" }
    func devices(_ alias: String, in index: Int, hashAt: Int) -> String {
        "(\(alias).hash, \(alias).token) IN (SELECT \(element("l", hashAt, .bigint)), \(element("l", 0, .text)) FROM \(rows(index)) AS l)"
    }

    /// `$1` becomes `?1` (SQLite's numbered parameter); nothing else in the queue's SQL holds a `$`
    /// followed by a digit.
    func spell(_ sql: String) -> String {
        var bytes = Array(sql.utf8)
        for index in bytes.indices.dropLast() where bytes[index] == UInt8(ascii: "$") && (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index + 1]) {
            bytes[index] = UInt8(ascii: "?")
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
