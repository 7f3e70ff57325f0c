import Foundation
import HeraldCore
import HeraldStore
import HeraldTestSupport
import Testing

/// Migrations, readiness, and many workers on one database.
@Suite("Store schema and concurrency", .timeLimit(.minutes(6)))
struct SchemaTests {
    @Test("migrating twice is a no-op; a database migrated by a newer Herald is refused, saying so", arguments: Backend.allCases)
    func migrations(backend: Backend) async throws {
        let scratch = try ScratchDirectory()
        let url = try await backend.storeURL(scratch: scratch)
        let configuration = try HeraldStore.Configuration(url: url)
        try await withHeraldStore(configuration: configuration) { store in
            try await store.migrate()
            try await store.checkReady()
            try await store.register(try registration(1), app: app)
            // What herald doctor reads: this build's schema, the database's clock, and that it takes writes.
            let inspection = try await store.inspect()
            #expect(inspection.schema == inspection.known && inspection.known > 10, "\(inspection)")
            #expect(abs(inspection.databaseTime.timeIntervalSinceNow) < 5 && !inspection.isReadOnly, "\(inspection)")
            #expect((inspection.serverVersion != nil) == (backend == .postgres), "\(inspection)")
        }
        // A newer Herald recorded schema 999.
        switch backend {
        case .sqlite: try await runCommand("python3", ["-c", "import sqlite3; c = sqlite3.connect('\(scratch.file("store.db"))'); c.execute('INSERT INTO herald_schema VALUES (999, 0)'); c.commit()"])
        case .postgres: try await PostgresCluster.shared().psql("INSERT INTO herald_schema VALUES (999, 0)", database: url)
        }
        let error = await #expect(throws: StoreError.self) {
            try await withHeraldStore(configuration: configuration) { _ in }
        }
        #expect(error?.code == .newerSchema)
        #expect(error?.message.contains("upgrade Herald") == true)
    }

    @Test("ten processes' stores starting at once on one PostgreSQL migrate it once")
    func concurrentMigrations() async throws {
        let scratch = try ScratchDirectory()
        let url = try await Backend.postgres.storeURL(scratch: scratch)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    try await withHeraldStore(configuration: try HeraldStore.Configuration(url: url)) { store in try await store.checkReady() }
                }
            }
            try await group.waitForAll()
        }
        // One row per migration: each applied once, as many rows as the last version's number.
        let applied = try await PostgresCluster.shared().psql("SELECT COUNT(*) || ' ' || MAX(version) FROM herald_schema", database: url)
            .trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ").compactMap { Int($0) }
        #expect(applied.count == 2 && applied[0] == applied[1] && applied[0] >= 11, "\(applied)")
    }

    @Test("workers claiming one broadcast at once: every device exactly once, no batch claimed twice while its lease lives", arguments: Backend.allCases)
    func concurrentClaims(backend: Backend) async throws {
        let scratch = try ScratchDirectory()
        let url = try await backend.storeURL(scratch: scratch)
        let devices = 20_000
        let sent = try await withHeraldStore(configuration: try HeraldStore.Configuration(url: url)) { store -> [String] in
            let stream = AsyncStream<DeviceRegistration> { continuation in
                for number in 0..<devices { continuation.yield(try! DeviceRegistration(token: String(format: "%064x", number &* 2_654_435_761 % 1_000_000_007))) }
                continuation.finish()
            }
            try await store.register(contentsOf: stream, app: app)
            let (queued, _) = try await store.enqueue(NotificationRequest(app: app, audience: .all, payload: payload))
            // Four workers, each with a store of its own (as separate processes would have).
            let sent = try await withThrowingTaskGroup(of: [String].self) { group in
                for worker in 0..<4 {
                    group.addTask {
                        try await withHeraldStore(configuration: try HeraldStore.Configuration(url: url)) { own in
                            var tokens: [String] = []
                            for _ in 0..<1000 {
                                let batches = try await own.claim(owner: "worker-\(worker)", limit: 500)
                                if batches.isEmpty { break }
                                for batch in batches {
                                    tokens += batch.items.map(\.token)
                                    try await acceptAll(own, batch)
                                }
                            }
                            return tokens
                        }
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            let done = try #require(try await store.notification(id: queued.id))
            #expect(done.status == .done && done.counts.accepted == devices, "\(done.counts)")
            return sent
        }
        #expect(sent.count == devices, "no device twice")
        #expect(Set(sent).count == devices, "every device")
    }

    @Test("on PostgreSQL a bulk registration leaves a broadcast's ranges readable from the index alone, without a table page per device")
    func rangesFromTheIndex() async throws {
        if let reason = PostgresCluster.unavailableReason, !PostgresCluster.isRequired { try Test.cancel(Comment(rawValue: reason)) }
        // A cluster with PostgreSQL's durable defaults: each import commit is on disk when it
        // returns, as users run it. (The shared test cluster commits with synchronous_commit
        // off, where the WAL writer decides when VACUUM may mark a page: under load, seconds.)
        let cluster = try await PostgresCluster.dedicated()
        defer { cluster.stop() }
        let url = try await cluster.createDatabase()
        try await withHeraldStore(configuration: try HeraldStore.Configuration(url: url)) { store in
            let stream = AsyncStream<DeviceRegistration> { continuation in
                for number in 0..<12_000 { continuation.yield(try! registration(number)) }
                continuation.finish()
            }
            let registered = try await store.register(contentsOf: stream, app: app, batchSize: 5000)
            #expect(registered == 12_000)
        }
        // Every page of the table marked all-visible by the registration's VACUUM.
        let visible = try await cluster.psql("SELECT relpages || ' ' || relallvisible FROM pg_class WHERE relname = 'devices'", database: url)
        let pages = visible.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ").compactMap { Int($0) }
        #expect(pages.count == 2 && pages[0] > 0 && pages[0] == pages[1], "relpages, relallvisible: \(visible)")
        // The range a broadcast reads (QueueStatements.rangeOfAll), as the planner runs it.
        let plan = try await cluster.psql(
            """
            EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT hash, token, environment FROM devices
            WHERE app = '\(app)' AND status = 0 AND kind = 0 AND (hash, token) > (-9223372036854775807, '') AND hash < 9223372036854775807
            ORDER BY hash, token LIMIT 5000
            """, database: url)
        #expect(plan.contains("Index Only Scan using devices_hash") && plan.contains("Heap Fetches: 0") && plan.contains("rows=5000"), "\(plan)")
    }
}
