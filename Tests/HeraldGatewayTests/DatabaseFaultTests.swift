import Foundation
import HeraldCore
import HeraldGateway
@testable import HeraldStore
import HeraldTestSupport
import Hummingbird
import Logging
import NIOCore
import Testing

/// Faults of the database, answered so that a client and a probe can tell what happened: a
/// full disk is a 507 that says so (it was a 500 "internal"), and a database that does not
/// answer is a 503 within a probe's timeout (it took 5 s, or 20 s for a host that accepts
/// connections and never answers), with everything working again once it is back.
@Suite("Database faults answered clearly", .timeLimit(.minutes(5)))
struct DatabaseFaultTests {
    /// A probe's timeout: every answer during an outage must come before it (the target is 1 s).
    static let probeTimeout: Duration = .milliseconds(2500)

    static func ndjson(_ numbers: Range<Int>) -> [UInt8] {
        Array(numbers.map { #"{"token": "\#(token($0))", "user": "u\#($0)"}"# }.joined(separator: "\n").utf8)
    }

    // MARK: A full disk

    @Test("an import that fills SQLite's disk: 507 storageFull saying how many devices were registered; they and everything before stay; with room again it goes on")
    func importIntoFullDisk() async throws {
        try await GatewayHarness.prepare(.sqlite) { configuration, mock, key in
            guard case .sqlite(let path) = configuration.database else { throw CancellationError() }
            try await GatewayHarness.run(configuration, mock: mock, key: key) { harness in
                // The gateway's own connection (one per file in a process): SQLite's limit on the
                // file's size set on it makes a real SQLITE_FULL.
                let database = SQLiteDatabase.shared(path: path, logger: Logger(label: "test"))
                let pages = { try await database.read { connection in try await connection.query("PRAGMA page_count").first?.int(0) ?? 0 } }
                let empty = try await pages()
                let first = try await harness.raw(.post, "/v1/apps/\(appID)/devices", Self.ndjson(0..<12_500), key: harness.key, contentType: "application/x-ndjson")
                #expect(first.status == 200 && first.json?.count("upserted") == 12_500, "\(first.json?.jsonString ?? "")")
                // Room for about one and a half more batches of 12,500.
                let batch = try await pages() - empty
                _ = try await database.read { connection in try await connection.query("PRAGMA max_page_count = \(empty + batch * 5 / 2)") }

                let full = try await harness.raw(.post, "/v1/apps/\(appID)/devices", Self.ndjson(12_500..<62_500), key: harness.key, contentType: "application/x-ndjson")
                #expect(full.status == 507, "\(full.json?.jsonString ?? "")")
                #expect(full.json?["error"]?["code"]?.stringValue == "storageFull")
                let message = full.json?["error"]?["message"]?.stringValue ?? ""
                #expect(message.contains("disk is full") && message.contains("free space"), "\(message)")
                let registered = Int(message.split(separator: "the first ").dropFirst().first?.split(separator: " ").first ?? "")
                #expect(registered == 12_500, "the message says how far the import got: \(message)")
                let summary = try await harness.call(.get, "/v1/apps/\(appID)/summary")
                #expect(summary.json?["devices"]?["total"]?.intValue == 12_500 + (registered ?? -1), "those devices, and every one before, stay: \(summary.json?.jsonString ?? "")")
                #expect(try await harness.call(.get, "/v1/apps/\(appID)/devices/\(token(0))").status == 200)
                #expect(try await harness.call(.get, "/v1/apps/\(appID)/devices/\(token(24_999))").status == 200)
                #expect(try await harness.call(.get, "/v1/apps/\(appID)/devices/\(token(25_000))").status == 404)

                // One device at a time, on a file that may not grow at all: a 507 too, and nothing of it stored.
                _ = try await database.read { connection in try await connection.query("PRAGMA max_page_count = 1") }
                var refused: (number: Int, answer: (status: Int, json: JSONValue?, headers: HTTPFields))?
                for number in 100_000..<100_500 where refused == nil {
                    let answer = try await harness.call(.put, "/v1/apps/\(appID)/devices/\(token(number))", ["user": "someone", "tags": ["a", "b", "c"]])
                    if answer.status != 201 { refused = (number, answer) }
                }
                let single = try #require(refused, "a file that may not grow refuses a new device within 500")
                #expect(single.answer.status == 507 && single.answer.json?["error"]?["code"]?.stringValue == "storageFull", "\(single.answer.json?.jsonString ?? "")")
                #expect(single.answer.json?["error"]?["message"]?.stringValue?.contains("nothing of this request was stored") == true)
                #expect(try await harness.call(.get, "/v1/apps/\(appID)/devices/\(token(single.number))").status == 404)

                // Space freed: the rest goes in.
                _ = try await database.read { connection in try await connection.query("PRAGMA max_page_count = 1073741823") }
                let rest = try await harness.raw(.post, "/v1/apps/\(appID)/devices", Self.ndjson(25_000..<62_500), key: harness.key, contentType: "application/x-ndjson")
                #expect(rest.status == 200 && rest.json?.count("upserted") == 37_500, "\(rest.json?.jsonString ?? "")")
            }
        }
    }

    // MARK: A database that does not answer

    @Test("PostgreSQL stopped: readyz and the API answer 503 within a probe's timeout; once it is back, all works again at once")
    func postgresStopped() async throws {
        if let reason = PostgresCluster.unavailableReason, !PostgresCluster.isRequired { try Test.cancel(Comment(rawValue: reason)) }
        let cluster = try await PostgresCluster.dedicated()
        defer { cluster.stop() }
        let database = try await cluster.createDatabase()
        try await GatewayHarness.run(.sqlite, gateway: { $0.database = try StoreURL(database) }) { harness in
            try await harness.register([1])
            #expect(try await harness.raw(.get, "/readyz", nil, key: nil).status == 200)
            cluster.halt()
            // Long enough for postgres-nio's pool to back its reconnection off for seconds.
            try await Self.expectOutage(harness, for: .seconds(30))
            try await cluster.resume()
            try await Self.expectRecovery(harness)
        }
    }

    @Test("PostgreSQL's host accepts connections and never answers: readyz and the API answer 503 within a probe's timeout; once it answers, all works again at once")
    func postgresBlackHole() async throws {
        if let reason = PostgresCluster.unavailableReason, !PostgresCluster.isRequired { try Test.cancel(Comment(rawValue: reason)) }
        let cluster = try await PostgresCluster.shared()
        let direct = try await cluster.createDatabase()
        let relay = BlackHoleRelay(to: try SocketAddress(ipAddress: "127.0.0.1", port: cluster.port))
        let port = try await relay.start()
        let database = direct.replacingOccurrences(of: "127.0.0.1:\(cluster.port)/", with: "127.0.0.1:\(port)/")
        do {
            try await GatewayHarness.run(.sqlite, gateway: { $0.database = try StoreURL(database) }) { harness in
                try await harness.register([1])
                #expect(try await harness.raw(.get, "/readyz", nil, key: nil).status == 200)
                relay.blackHole()
                // The API first: a request on a connection that will never be answered.
                try await Self.expectOutage(harness, for: .seconds(8), readinessFirst: false)
                relay.restore()
                try await Self.expectRecovery(harness)
            }
        } catch {
            await relay.stop()
            throw error
        }
        await relay.stop()
    }

    /// For `duration`, round after round: readyz, a notification and a device's read each answer
    /// 503 (the API's with `Retry-After`) before ``probeTimeout``; readyz first, or last.
    static func expectOutage(_ harness: GatewayHarness, for duration: Duration, readinessFirst: Bool = true) async throws {
        let clock = ContinuousClock()
        let end = clock.now + duration
        repeat {
            let readiness: (HTTPRequest.Method, String, JSONValue?, String?) = (.get, "/readyz", nil, nil)
            let api: [(HTTPRequest.Method, String, JSONValue?, String?)] = [
                (.get, "/v1/apps/\(appID)/devices/\(token(1))", nil, harness.key),
                (.post, "/v1/apps/\(appID)/notifications", ["to": ["all": true], "payload": ["aps": ["alert": "during"]]], harness.key),
            ]
            let requests = readinessFirst ? [readiness] + api : api + [readiness]
            for (method, path, body, key) in requests {
                let start = clock.now
                let answer = try await harness.raw(method, path, body.map { Array($0.jsonString.utf8) }, key: key)
                let elapsed = clock.now - start
                #expect(answer.status == 503, "\(method) \(path): \(answer.json?.jsonString ?? "")")
                #expect(elapsed < probeTimeout, "\(method) \(path) answered after \(elapsed), past a probe's timeout")
                #expect(answer.headers[.retryAfter] != nil, "\(method) \(path)")
                if key != nil { #expect(answer.json?["error"]?["code"]?.stringValue == "unavailable", "\(answer.json?.jsonString ?? "")") }
            }
            try await Task.sleep(for: .seconds(1))
        } while clock.now < end
    }

    /// readyz says ready soon after the database is back; from then on the API answers at once,
    /// and the workers send.
    static func expectRecovery(_ harness: GatewayHarness) async throws {
        let ready = try await eventually(within: .seconds(30), every: .milliseconds(100)) {
            try await harness.raw(.get, "/readyz", nil, key: nil).status == 200
        }
        #expect(ready, "ready again within 30 s of the database's return")
        let clock = ContinuousClock()
        let start = clock.now
        let sent = try await harness.call(.post, "/v1/apps/\(appID)/notifications", ["to": ["all": true], "payload": ["aps": ["alert": "after"]]])
        #expect(sent.status == 202, "\(sent.json?.jsonString ?? "")")
        let read = try await harness.call(.get, "/v1/apps/\(appID)/devices/\(token(1))")
        #expect(read.status == 200, "\(read.json?.jsonString ?? "")")
        #expect(clock.now - start < probeTimeout, "once ready, the API answers at once: \(clock.now - start)")
        let id = try #require(sent.json?["id"]?.stringValue)
        let done = try await harness.waitUntilDone(id)
        #expect(done.count("accepted") == 1, "\(done.jsonString)")
    }
}
