import Foundation

/// How many rows each table of a store's database holds, read from outside the store (Python's
/// sqlite3 for SQLite, psql for PostgreSQL): every table the schema has, including any added
/// after the test was written. `url` is the store's URL.
public func tableRowCounts(url: String) async throws -> [String: Int] {
    let lines: [Substring]
    if url.hasPrefix("sqlite:") {
        let script = """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1], timeout=10)
            for (name,) in c.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").fetchall():
                print(name + "|" + str(c.execute('SELECT COUNT(*) FROM "' + name + '"').fetchone()[0]))
            """
        let output = try await runCommand("python3", ["-c", script, String(url.dropFirst("sqlite:".count))])
        lines = output.standardOutput.split(separator: "\n")
    } else {
        // One statement: a count per table, each by its own query (query_to_xml runs it).
        let sql = """
            SELECT table_name || '|' || (xpath('/row/c/text()', query_to_xml(format('SELECT COUNT(*) AS c FROM %I', table_name), false, true, '')))[1]::text
            FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name
            """
        lines = try await PostgresCluster.shared().psql(sql, database: url).split(separator: "\n")
    }
    var counts: [String: Int] = [:]
    for line in lines {
        let parts = line.split(separator: "|")
        guard parts.count == 2, let count = Int(parts[1].trimmingCharacters(in: .whitespaces)) else { continue }
        counts[String(parts[0])] = count
    }
    return counts
}
