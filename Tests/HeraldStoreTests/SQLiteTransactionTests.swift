import Foundation
@testable import HeraldStore
import HeraldTestSupport
import Logging
import Testing

/// A transaction on the SQLite connection always ends, whatever happens to the task that runs it.
/// sqlite-nio skips a query whose task is cancelled (it throws `CancellationError` without
/// running it): a ROLLBACK or COMMIT skipped that way left the one connection inside its
/// transaction, and every later transaction of the process failed with "cannot start a
/// transaction within a transaction" (seen in CI: a worker's lease renewal, cancelled as its
/// batch ended, wedged a restarted gateway).
@Suite("SQLite transactions", .timeLimit(.minutes(2)))
struct SQLiteTransactionTests {
    /// A database on a fresh file with one table `t (n INTEGER)`.
    static func database(_ scratch: ScratchDirectory) async throws -> SQLiteDatabase {
        let database = SQLiteDatabase.shared(path: scratch.file("store.db"), logger: Logger(label: "test"))
        try await Self.insert(database, "CREATE TABLE t (n INTEGER)")
        return database
    }

    /// Runs one statement in its own durable transaction.
    static func insert(_ database: SQLiteDatabase, _ sql: String) async throws {
        try await database.write(.durable) { connection in
            try await connection.query(sql)
            return ()
        }
    }

    static func count(_ database: SQLiteDatabase) async throws -> Int64 {
        try await database.read { connection in try await connection.query("SELECT COUNT(*) FROM t").first?.int(0) ?? -1 }
    }

    /// Cancels the task running it: what a caller's cancellation does mid-transaction.
    static func cancelSelf() {
        withUnsafeCurrentTask { $0?.cancel() }
    }

    @Test("a task cancelled between two statements: the transaction is rolled back, and the next one runs")
    func cancelledMidway() async throws {
        let scratch = try ScratchDirectory()
        let database = try await Self.database(scratch)
        let cut = await Task {
            try await database.write(.durable) { connection in
                try await connection.query("INSERT INTO t VALUES (1)")
                Self.cancelSelf()
                try await connection.query("INSERT INTO t VALUES (2)")
            }
        }.result
        #expect(throws: (any Error).self, "the cancelled write fails") { try cut.get() }
        #expect(try await Self.count(database) == 0, "neither row of the cut transaction is kept")

        try await Self.insert(database, "INSERT INTO t VALUES (3)")
        #expect(try await Self.count(database) == 1, "the next transaction runs and commits")
        try await database.close()
    }

    @Test("a task cancelled after its last statement: the transaction commits, and its result is returned")
    func cancelledAtTheEnd() async throws {
        let scratch = try ScratchDirectory()
        let database = try await Self.database(scratch)
        let result = try await Task {
            try await database.write(.bookkeeping) { connection in
                try await connection.query("INSERT INTO t VALUES (1)")
                Self.cancelSelf()
                return "written"
            }
        }.value
        #expect(result == "written")
        #expect(try await Self.count(database) == 1, "the finished transaction is committed")

        try await Self.insert(database, "INSERT INTO t VALUES (2)")
        #expect(try await Self.count(database) == 2, "the next transaction runs and commits")
        try await database.close()
    }

    @Test("a transaction left open by a bug is rolled back at the next one, which runs")
    func orphanedTransaction() async throws {
        let scratch = try ScratchDirectory()
        let database = try await Self.database(scratch)
        // Statements run on their own: a BEGIN among them is left open, as a bug would leave it.
        try await database.write(.statements) { connection in
            try await connection.query("BEGIN")
            try await connection.query("INSERT INTO t VALUES (1)")
            return ()
        }
        try await Self.insert(database, "INSERT INTO t VALUES (2)")
        #expect(try await Self.count(database) == 1, "the orphan's row is rolled back, the new transaction's kept")
        try await Self.insert(database, "INSERT INTO t VALUES (3)")
        #expect(try await Self.count(database) == 2)
        try await database.close()
    }

    @Test("a body that fails: rolled back, and the connection is usable; many in a row, each alone")
    func failedBodies() async throws {
        let scratch = try ScratchDirectory()
        let database = try await Self.database(scratch)
        for round in 0..<20 {
            await #expect(throws: (any Error).self) {
                try await database.write(.durable) { connection in
                    try await connection.query("INSERT INTO t VALUES ($1)", [.int(round)])
                    try await connection.query("INSERT INTO no_such_table VALUES (1)")
                }
            }
        }
        #expect(try await Self.count(database) == 0)
        try await Self.insert(database, "INSERT INTO t VALUES (1)")
        #expect(try await Self.count(database) == 1)
        try await database.close()
    }
}
