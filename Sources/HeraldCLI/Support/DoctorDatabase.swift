import HeraldStore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `herald doctor`'s checks of the database: for SQLite its directory and file, for both
/// whether it answers and its schema against this build's, and the clock. Nothing is written and
/// nothing migrated: an SQLite file that does not exist yet is not created.
enum DoctorDatabase {
    /// How long the database may take to answer (PostgreSQL's own wait for a connection is 5 s).
    static let answerBound: Duration = .seconds(10)

    /// The rows for `url`.
    static func check(_ url: StoreURL) async -> [DoctorCheck] {
        switch url {
        case .sqlite(let path):
            return await checkSQLite(path: path, url: url)
        case .postgres:
            return await inspect(url, name: "database \(url)").rows
        }
    }

    private static func checkSQLite(path: String, url: StoreURL) async -> [DoctorCheck] {
        let name = "database \(url)"
        let clock = DoctorCheck.ok("clock", "SQLite is a file on this machine: the database's clock is this machine's")
        if path == ":memory:" { return [.warning(name, "in memory: nothing survives a restart; give a file (sqlite:/var/lib/herald/herald.db)"), clock] }
        var rows: [DoctorCheck] = []
        if !path.hasPrefix("file:") {
            let directory = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
            let shown = directory.isEmpty ? "/" : directory
            let directoryName = "database directory \(shown)"
            if !FileManager.default.fileExists(atPath: (directory.isEmpty ? "" : directory) + "/.") {
                return [.error(directoryName, "does not exist: create it (mkdir -p \(shown)) or point database at a file in an existing directory")]
            }
            // SQLite writes its journal (the -wal and -shm files) beside the database.
            guard access(directory.isEmpty ? "/" : directory, W_OK | X_OK) == 0 else {
                return [.error(directoryName, "not writable by this user (uid \(getuid())): SQLite keeps its journal beside the database; chown or chmod it")]
            }
            rows.append(.ok(directoryName, "exists and is writable"))
            var status = stat()
            if stat(path, &status) != 0 {
                rows.append(.ok(name, "no file yet: herald serve creates it and makes its schema at start"))
                return rows + [clock]
            }
            if status.st_mode & S_IFMT == S_IFDIR {
                return rows + [.error(name, "\(path) is a directory: point database at a file (sqlite:\(path)/herald.db)")]
            }
            guard access(path, R_OK | W_OK) == 0 else {
                return rows + [.error(name, "cannot be read and written by this user (uid \(getuid())): chown or chmod \(path)")]
            }
            if status.st_size == 0 {
                return rows + [.ok(name, "an empty file: herald serve makes its schema at start"), clock]
            }
        }
        return rows + (await inspect(url, name: name).rows) + [clock]
    }

    /// Whether the database answers, its schema against this build's (newer is an error, older is
    /// migrated at start), whether it takes writes, and for PostgreSQL its clock. Read through
    /// ``HeraldStore/inspect()``, which writes and migrates nothing.
    private static func inspect(_ url: StoreURL, name: String) async -> (rows: [DoctorCheck], answered: Bool) {
        let store = HeraldStore(configuration: HeraldStore.Configuration(url: url))
        let outcome: Result<StoreInspection, any Error> = await withTaskGroup(of: Result<StoreInspection, any Error>?.self) { group in
            // The store's connections live while its run() does (PostgreSQL's pool).
            group.addTask {
                try? await store.run()
                return nil
            }
            group.addTask {
                do {
                    return .success(try await store.inspect())
                } catch {
                    return .failure(error)
                }
            }
            group.addTask {
                try? await Task.sleep(for: answerBound)
                return .failure(StoreError(.unavailable, "no answer within \(answerBound.components.seconds) s"))
            }
            defer { group.cancelAll() }
            // Bounded: the first of the inspection and the deadline ends it.
            for await result in group {
                if let result { return result }
            }
            return .failure(StoreError(.unavailable, "no answer"))
        }
        let hint = switch url {
        case .sqlite: "check the file, its permissions and that no other program holds it locked"
        case .postgres: "check that the database runs and the URL, user and password (PGPASSWORD) are right"
        }
        let found: StoreInspection
        switch outcome {
        case .success(let inspection):
            found = inspection
        case .failure(let error as StoreError) where error.code == .refused:
            // Its message says what to correct.
            return ([.error(name, error.message)], false)
        case .failure(let error as StoreError):
            if error.message.contains("file is not a database") {
                return ([.error(name, "is not an SQLite database: point database at Herald's file")], false)
            }
            return ([.error(name, "\(error.message): \(hint)")], false)
        case .failure(let error):
            return ([.error(name, "\(error): \(hint)")], false)
        }
        let server = found.serverVersion.map { "PostgreSQL \($0); " } ?? ""
        var rows: [DoctorCheck] = []
        if found.schema > found.known {
            rows.append(.error(name, "\(server)schema \(found.schema), newer than this herald's \(found.known): this herald is older than the database; upgrade herald"))
        } else if found.schema == 0 {
            rows.append(.ok(name, "\(server)answers; no Herald schema yet: herald serve makes it at start"))
        } else if found.schema < found.known {
            let steps = found.known - found.schema
            rows.append(.ok(name, "\(server)answers; schema \(found.schema): herald serve will migrate \(steps) step\(steps == 1 ? "" : "s") at start"))
        } else {
            rows.append(.ok(name, "\(server)answers; its schema is this herald's"))
        }
        if found.isReadOnly {
            rows.append(.error(name + ": writes", "the database refuses writes (a standby in recovery, or default_transaction_read_only): point database at the primary"))
        }
        if case .postgres = url { rows.append(clock(database: found.databaseTime, local: Date())) }
        return (rows, true)
    }

    /// How far the clocks may drift apart before it matters: scheduled sends, leases and retries
    /// are stamped by one process and read by another.
    static let clockTolerance: Double = 2

    /// The database's clock against this machine's (the inspection's round trip is within the bound).
    static func clock(database: Date, local: Date) -> DoctorCheck {
        let skew = local.timeIntervalSince(database)
        let shown = (abs(skew) * 10).rounded() / 10
        guard abs(skew) > clockTolerance else { return .ok("clock", "within \(shown) s of the database's") }
        return .warning(
            "clock",
            "\(shown) s \(skew > 0 ? "ahead of" : "behind") the database's: scheduled sends and leases need them within \(Int(clockTolerance)) s; run NTP (chrony, systemd-timesyncd) on both"
        )
    }
}
