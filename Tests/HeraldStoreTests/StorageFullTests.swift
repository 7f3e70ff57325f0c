import Foundation
@testable import HeraldStore
import HeraldTestSupport
import Testing

/// A database whose disk is full refuses writes with ``StoreError/Code/storageFull`` (the API's
/// 507), on both databases, and keeps everything stored before; once space is freed, writes
/// work again. Before, SQLite's `SQLITE_FULL` and PostgreSQL's `disk_full` were a
/// `databaseError` (a 500 saying only "internal").
@Suite("A full disk", .timeLimit(.minutes(3)))
struct StorageFullTests {
    /// How many devices the app has.
    static func total(_ store: HeraldStore) async throws -> Int {
        try await store.deviceCounts(app: app).reduce(0) { $0 + $1.count }
    }

    /// Registers devices `numbers` in one streamed call, in batches of `batchSize`: the error it
    /// stopped with, and how many devices it said were registered.
    static func importDevices(_ store: HeraldStore, _ numbers: Range<Int>, batchSize: Int) async -> (error: StoreError?, registered: Int) {
        var registered = 0
        let stream = AsyncThrowingStream<DeviceRegistration, any Error> { continuation in
            for number in numbers { continuation.yield(try! registration(number, user: "user-\(number)")) }
            continuation.finish()
        }
        do {
            try await store.register(contentsOf: stream, app: app, batchSize: batchSize, progress: { registered = $0 })
            return (nil, registered)
        } catch {
            return (error as? StoreError ?? StoreError(.databaseError, "not a StoreError: \(error)"), registered)
        }
    }

    /// Expects `error` to be the disk full, saying so.
    static func expectFull(_ error: StoreError?, _ comment: Comment? = nil) {
        #expect(error?.code == .storageFull, "\(String(describing: error)) \(comment?.rawValue ?? "")")
        #expect(error?.message.contains("disk is full") == true, "\(String(describing: error))")
    }

    // MARK: SQLite

    @Test("SQLite: an import that fills the database stops with storageFull; the batches before stay, and it goes on once there is room")
    func sqliteFull() async throws {
        try await withStore(.sqlite) { store in
            try await registerAll(store, 100) { try registration($0) }
            // SQLite's own limit on the file's size, a real SQLITE_FULL: the file at its size
            // now and 40 pages (160 KiB) more, where 500 devices take about 25.
            try await store.backend.database.read { connection in
                let pages = try await connection.query("PRAGMA page_count").first?.int(0) ?? 0
                try await connection.query("PRAGMA max_page_count = \(pages + 40)")
            }
            let (error, registered) = await Self.importDevices(store, 100..<20_100, batchSize: 500)
            Self.expectFull(error)
            #expect(registered > 0 && registered < 20_000 && registered % 500 == 0, "whole batches were registered before the disk filled: \(registered)")
            #expect(try await Self.total(store) == 100 + registered, "what was registered before stays, nothing of the failed batch does")
            #expect(try await store.device(app: app, token: token(0)) != nil)
            #expect(try await store.device(app: app, token: token(100 + registered - 1))?.user == "user-\(100 + registered - 1)")
            #expect(try await store.device(app: app, token: token(100 + registered)) == nil)

            _ = try await store.backend.database.read { connection in try await connection.query("PRAGMA max_page_count = 1073741823") }
            let (again, all) = await Self.importDevices(store, 100..<20_100, batchSize: 500)
            #expect(again == nil && all == 20_000, "with room again, the import is registered whole: \(String(describing: again))")
            #expect(try await Self.total(store) == 20_100)
        }
    }

    @Test("SQLite on a real full disk (a 1 MiB tmpfs): storageFull, what was stored stays, and writes work once the disk grows")
    func sqliteDiskFull() async throws {
        let scratch = try ScratchDirectory()
        let disk = try await Self.mountTmpfs(scratch.file("disk"), size: "1m")
        defer { Self.unmount(disk) }
        let configuration = try HeraldStore.Configuration(url: "sqlite:" + disk + "/store.db")
        try await withHeraldStore(configuration: configuration) { store in
            var stored = 0
            var failure: StoreError?
            for round in 0..<200 where failure == nil {
                let (error, registered) = await Self.importDevices(store, (round * 500)..<((round + 1) * 500), batchSize: 500)
                stored += registered
                failure = error
            }
            Self.expectFull(failure, "the disk fills within 100,000 devices")
            #expect(stored > 0)
            #expect(try await Self.total(store) == stored, "everything registered before the disk filled stays")
            #expect(try await store.device(app: app, token: token(0))?.user == "user-0")

            try await runCommand("mount", ["-o", "remount,size=64m", disk])
            try await store.register(try registration(1_000_000), app: app)
            #expect(try await store.device(app: app, token: token(1_000_000)) != nil, "with room again, a write works at once")
        }
    }

    // MARK: PostgreSQL

    @Test("PostgreSQL's SQLSTATEs: disk_full is storageFull; lack of memory, connections or a server shutting down is unavailable")
    func sqlStates() {
        #expect(PostgresDatabase.code(ofSQLState: "53100") == .storageFull)
        for state in ["53000", "53200", "53300", "57P01", "57P02", "57P03", "08006", "08001"] {
            #expect(PostgresDatabase.code(ofSQLState: state) == .unavailable, "\(state)")
        }
        for state in ["53400", "23505", "42P01", "40001", ""] {
            #expect(PostgresDatabase.code(ofSQLState: state) == .databaseError, "\(state)")
        }
    }

    @Test("PostgreSQL: a server's disk_full (SQLSTATE 53100) on a write is storageFull; what was stored stays")
    func postgresDiskFullError() async throws {
        let scratch = try ScratchDirectory()
        let url = try await Backend.postgres.storeURL(scratch: scratch)
        let cluster = try await PostgresCluster.shared()
        try await withHeraldStore(configuration: try HeraldStore.Configuration(url: url)) { store in
            try await store.register(try registration(1), app: app)
            // The server's own error, as it raises it when a table cannot grow (could not extend file).
            try await cluster.psql(
                """
                CREATE FUNCTION full_disk() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
                RAISE EXCEPTION 'could not extend file "base/1/2": No space left on device' USING ERRCODE = 'disk_full'; END $$;
                CREATE TRIGGER full_disk BEFORE INSERT OR UPDATE ON devices FOR EACH ROW EXECUTE FUNCTION full_disk();
                """, database: url)
            let error = await #expect(throws: StoreError.self) { try await store.register(try registration(2), app: app) }
            Self.expectFull(error)
            #expect(error?.message.contains("No space left on device") == true, "the server's words are kept: \(String(describing: error))")
            let (imported, registered) = await Self.importDevices(store, 10..<20, batchSize: 5)
            Self.expectFull(imported)
            #expect(registered == 0)
            #expect(try await store.device(app: app, token: token(1)) != nil, "what was stored before stays")
            #expect(try await store.device(app: app, token: token(2)) == nil)

            try await cluster.psql("DROP TRIGGER full_disk ON devices", database: url)
            try await store.register(try registration(2), app: app)
            #expect(try await store.device(app: app, token: token(2)) != nil)
        }
    }

    @Test("PostgreSQL on a real full disk (its tables in a tablespace on a 2 MiB tmpfs): storageFull, and what was stored stays")
    func postgresTablespaceFull() async throws {
        let scratch = try ScratchDirectory()
        let url = try await Backend.postgres.storeURL(scratch: scratch)
        let cluster = try await PostgresCluster.shared()
        let disk = try await Self.mountTmpfs(scratch.file("tablespace"), size: "2m")
        defer { Self.unmount(disk) }
        try await runCommand("chown", ["postgres:postgres", disk])
        let name = "full_" + UUID().uuidString.prefix(8).lowercased()
        let database = String(url.split(separator: "/").last!.split(separator: "?")[0])
        try await cluster.psql("CREATE TABLESPACE \(name) LOCATION '\(disk)'", database: url)
        try await cluster.psql("ALTER DATABASE \(database) SET default_tablespace = \(name)", database: url)
        let outcome = await Task { try await Self.fill(url) }.result
        try await cluster.psql("DROP DATABASE \(database) WITH (FORCE)", database: "postgres")
        try await cluster.psql("DROP TABLESPACE \(name)", database: "postgres")
        try outcome.get()
    }

    /// Registers devices into the store at `url`, 500 at a time, until its disk is full.
    static func fill(_ url: String) async throws {
        try await withHeraldStore(configuration: try HeraldStore.Configuration(url: url)) { store async throws in
            var stored = 0
            var failure: StoreError?
            for round in 0..<200 where failure == nil {
                let (error, registered) = await Self.importDevices(store, (round * 500)..<((round + 1) * 500), batchSize: 500)
                stored += registered
                failure = error
            }
            Self.expectFull(failure, "the disk fills within 100,000 devices")
            #expect(stored > 0)
            #expect(try await Self.total(store) == stored, "everything registered before the disk filled stays")
            #expect(try await store.device(app: app, token: token(0))?.user == "user-0")
        }
    }

    // MARK: Disks

    /// Mounts a tmpfs of `size` at `path` (made here); the test is skipped, saying why, where
    /// this process may not mount (not root, or a container without the capability).
    static func mountTmpfs(_ path: String, size: String) async throws -> String {
        guard getuid() == 0 else { try Test.cancel("a full disk needs a tmpfs of its own, which only root may mount") }
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        do {
            try await runCommand("mount", ["-t", "tmpfs", "-o", "size=\(size),mode=0777", "tmpfs", path])
        } catch {
            try Test.cancel("cannot mount a tmpfs here: \(error)")
        }
        return path
    }

    static func unmount(_ path: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/umount")
        process.arguments = ["-l", path]
        try? process.run()
        process.waitUntilExit()
    }
}
