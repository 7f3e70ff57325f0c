import Foundation
@testable import HeraldStore
import HeraldTestSupport
import Logging
import Testing

/// A transaction on the SQLite connection always ends, whatever happens to the task that runs it.
/// A cancelled task's query is skipped (it throws `CancellationError` without running it, as
/// sqlite-nio's did and `SQLiteSQLConnection`'s does): a ROLLBACK or COMMIT skipped that way left
/// the one connection inside its transaction, and every later transaction of the process failed
/// with "cannot start a transaction within a transaction" (seen in CI: a worker's lease renewal,
/// cancelled as its batch ended, wedged a restarted gateway).
@Suite("SQLite transactions", .timeLimit(.minutes(2)))
struct SQLiteTransactionTests {
    /// Runs `body` with a database on a fresh file with one table `t (n INTEGER)`, closed after.
    static func withDatabase(_ body: (SQLiteDatabase) async throws -> Void) async throws {
        let scratch = try ScratchDirectory()
        let database = SQLiteDatabase.shared(path: scratch.file("store.db"), logger: Logger(label: "test"))
        try await insert(database, "CREATE TABLE t (n INTEGER)")
        try await body(database)
        try await database.close()
    }

    /// A write after what the test did runs and commits: the table then holds `rows` rows.
    static func expectNextWriteCommits(_ database: SQLiteDatabase, rows: Int64, _ comment: Comment? = nil) async throws {
        try await insert(database, "INSERT INTO t VALUES (0)")
        #expect(try await count(database) == rows, comment)
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
        try await Self.withDatabase { database in
            let cut = await Task {
                try await database.write(.durable) { connection in
                    try await connection.query("INSERT INTO t VALUES (1)")
                    Self.cancelSelf()
                    try await connection.query("INSERT INTO t VALUES (2)")
                }
            }.result
            #expect(throws: (any Error).self, "the cancelled write fails") { try cut.get() }
            #expect(try await Self.count(database) == 0, "neither row of the cut transaction is kept")
            try await Self.expectNextWriteCommits(database, rows: 1, "the next transaction runs and commits")
        }
    }

    @Test("a task cancelled after its last statement: the transaction commits, and its result is returned")
    func cancelledAtTheEnd() async throws {
        try await Self.withDatabase { database in
            let result = try await Task {
                try await database.write(.bookkeeping) { connection in
                    try await connection.query("INSERT INTO t VALUES (1)")
                    Self.cancelSelf()
                    return "written"
                }
            }.value
            #expect(result == "written")
            #expect(try await Self.count(database) == 1, "the finished transaction is committed")
            try await Self.expectNextWriteCommits(database, rows: 2, "the next transaction runs and commits")
        }
    }

    @Test("a transaction left open by a bug is rolled back at the next one, which runs")
    func orphanedTransaction() async throws {
        try await Self.withDatabase { database in
            // Statements run on their own: a BEGIN among them is left open, as a bug would leave it.
            try await database.write(.statements) { connection in
                try await connection.query("BEGIN")
                try await connection.query("INSERT INTO t VALUES (1)")
                return ()
            }
            try await Self.expectNextWriteCommits(database, rows: 1, "the orphan's row is rolled back, the new transaction's kept")
            try await Self.expectNextWriteCommits(database, rows: 2)
        }
    }

    @Test("a body that fails: rolled back, and the connection is usable; many in a row, each alone")
    func failedBodies() async throws {
        try await Self.withDatabase { database in
            for round in 0..<20 {
                await #expect(throws: (any Error).self) {
                    try await database.write(.durable) { connection in
                        try await connection.query("INSERT INTO t VALUES ($1)", [.int(round)])
                        try await connection.query("INSERT INTO no_such_table VALUES (1)")
                    }
                }
            }
            #expect(try await Self.count(database) == 0)
            try await Self.expectNextWriteCommits(database, rows: 1)
        }
    }
}
