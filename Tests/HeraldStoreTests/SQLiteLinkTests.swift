@testable import HeraldStore
import HeraldTestSupport
import Testing

/// The SQLite connection the store drives through SQLite's C API: values in and out as they are,
/// statements kept and reused, a bound on how many, and SQLite's own errors.
@Suite("SQLite connection")
struct SQLiteLinkTests {
    static func query(_ link: SQLiteLink, _ sql: String, _ binds: [SQLValue] = []) throws -> [SQLRow] {
        try link.query(sql, binds, spell: SQLiteDialect().spell)
    }

    @Test("each kind of value goes in and comes back as it was; an empty blob is a blob, not NULL")
    func values() throws {
        let link = try SQLiteLink(path: ":memory:")
        let long = String(repeating: "é🚀x", count: 100_000)
        let binds: [SQLValue] = [.null, .int(Int64.min), .int(Int64.max), .real(-0.5), .text(""), .text(long), .blob([]), .blob([0, 255, 0])]
        let row = try #require(try Self.query(link, "SELECT $1, $2, $3, $4, $5, $6, $7, $8, typeof($7)", binds).first)
        #expect(row.values.count == 9)
        #expect(Array(row.values.prefix(8)) == binds)
        #expect(row.text(8) == "blob")
    }

    @Test("a statement kept runs again with new values, none of the last run's left bound")
    func reuse() throws {
        let link = try SQLiteLink(path: ":memory:")
        _ = try Self.query(link, "CREATE TABLE t (n INTEGER, s TEXT)")
        for n in 0..<3 { _ = try Self.query(link, "INSERT INTO t VALUES ($1, $2)", [.int(Int64(n)), .text("row \(n)")]) }
        _ = try Self.query(link, "INSERT INTO t VALUES ($1, $2)", [.int(3)])
        let rows = try Self.query(link, "SELECT n, s FROM t ORDER BY n")
        #expect(rows.map { $0.int(0) } == [0, 1, 2, 3])
        #expect(rows.map { $0.text(1) } == ["row 0", "row 1", "row 2", nil], "the fourth insert's second parameter was not bound: NULL")
        #expect(link.preparedCount == 3, "three statements, each prepared once")
    }

    @Test("a statement whose plan reads a bound value (a LIMIT in a subquery, as a claim's) is not prepared again on each run")
    func notPreparedAgain() throws {
        let link = try SQLiteLink(path: ":memory:")
        _ = try Self.query(link, "CREATE TABLE t (n INTEGER PRIMARY KEY, s TEXT)")
        _ = try Self.query(link, "INSERT INTO t SELECT value, 'row ' || value FROM json_each($1)", [.text("[" + (0..<100).map(String.init).joined(separator: ",") + "]")])
        let sql = "UPDATE t SET s = $2 WHERE n IN (SELECT n FROM (SELECT n FROM t WHERE n >= $3 ORDER BY n LIMIT $1)) RETURNING n"
        // SQLite 3.54 compiles a LIMIT's bound value into the statement, and prepares it again
        // when a different one is bound: a claim's limit is the batch size, the same each time.
        for run in 0..<20 {
            let rows = try Self.query(link, sql, [.int(3), .text("run \(run)"), .int(Int64(run * 4))])
            #expect(rows.map { $0.int(0) } == [Int64(run * 4), Int64(run * 4 + 1), Int64(run * 4 + 2)])
        }
        // Once, on its first run: SQLite prepares it without values, then with the first bound.
        #expect(link.preparedAgain == 1)
        // Another limit is still obeyed.
        #expect(try Self.query(link, sql, [.int(5), .text("last"), .int(90)]).count == 5)
        #expect(try Self.query(link, "SELECT s FROM t WHERE n IN (78, 94) ORDER BY n").map { $0.text(0) } == ["run 19", "last"])
    }

    @Test("statements kept are bounded: past maximumPrepared they are dropped and prepared again as they come")
    func bounded() throws {
        let link = try SQLiteLink(path: ":memory:")
        for n in 0..<(SQLiteLink.maximumPrepared * 2 + 5) {
            let row = try Self.query(link, "SELECT \(n) + $1", [.int(1)]).first
            #expect(row?.int(0) == Int64(n + 1))
            #expect(link.preparedCount <= SQLiteLink.maximumPrepared)
        }
    }

    @Test("SQLite's errors come with its message; a statement that failed runs again")
    func errors() throws {
        let link = try SQLiteLink(path: ":memory:")
        #expect {
            try Self.query(link, "SELECT * FROM missing")
        } throws: { error in
            (error as? SQLiteFailure)?.message.contains("no such table: missing") == true
        }
        _ = try Self.query(link, "CREATE TABLE t (n INTEGER PRIMARY KEY)")
        let insert = "INSERT INTO t VALUES ($1)"
        _ = try Self.query(link, insert, [.int(1)])
        #expect {
            try Self.query(link, insert, [.int(1)])
        } throws: { error in
            (error as? SQLiteFailure)?.message.contains("UNIQUE constraint failed") == true
        }
        _ = try Self.query(link, insert, [.int(2)])
        #expect(try Self.query(link, "SELECT COUNT(*) FROM t").first?.int(0) == 2)
        #expect(throws: SQLiteFailure.self, "a value for a parameter the statement does not have") {
            try Self.query(link, "SELECT $1", [.int(1), .int(2)])
        }
    }

    @Test("one statement a query: a second is refused, not left unrun; a trailing semicolon is fine")
    func oneStatement() throws {
        let link = try SQLiteLink(path: ":memory:")
        _ = try Self.query(link, "CREATE TABLE t (n INTEGER)")
        #expect {
            try Self.query(link, "INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)")
        } throws: { error in
            (error as? SQLiteFailure)?.message == "more than one statement in one query"
        }
        #expect(try Self.query(link, "SELECT COUNT(*) FROM t").first?.int(0) == 0, "neither ran")
        #expect(try Self.query(link, "SELECT 7;\n").first?.int(0) == 7)
        #expect(throws: SQLiteFailure.self, "nothing to run") { try Self.query(link, " ") }
    }

    @Test("a closed connection refuses queries")
    func closed() throws {
        let link = try SQLiteLink(path: ":memory:")
        _ = try Self.query(link, "SELECT 1")
        link.close()
        #expect(link.preparedCount == 0)
        #expect(throws: SQLiteFailure.self) { try Self.query(link, "SELECT 1") }
        #expect(throws: SQLiteFailure.self) { try Self.query(link, "SELECT 2") }
    }

    @Test("a file that cannot be opened is refused with SQLite's reason")
    func unopenable() throws {
        let scratch = try ScratchDirectory()
        #expect(throws: SQLiteFailure.self) { try SQLiteLink(path: scratch.file("no/such/directory/store.db")) }
    }
}
