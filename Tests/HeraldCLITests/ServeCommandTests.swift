import Crypto
import Foundation
import HeraldCore
import HeraldAPNSMock
import HeraldTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `herald serve` as a process, the way it is deployed: killed with SIGKILL mid-broadcast and
/// started again, two processes sharing one PostgreSQL, a configuration error, SIGTERM.
@Suite("herald serve as a process", .serialized, .timeLimit(.minutes(6)))
struct ServeCommandTests {
    static let apiKey = "hk_cli-tests-\(UUID().uuidString)"
    static let topic = "com.example.shop"

    /// A mock APNs that answers slowly enough (10 ms a request, 100 streams) that a broadcast of
    /// thousands takes seconds, and the files a configuration for it needs.
    struct Setup {
        let mock: MockAPNSServer
        let scratch: ScratchDirectory
        let configFile: String

        /// - Parameters:
        ///   - delay: how long the mock takes to answer each request.
        ///   - streams: the mock's SETTINGS_MAX_CONCURRENT_STREAMS (its answers a connection waits for at once).
        ///   - app: more fields of the app's entry (`, "categories": {…}`).
        init(database: String, leaseSeconds: Int = 2, delay: Duration = .milliseconds(10), streams: Int = 100, app: String = "") async throws {
            scratch = try ScratchDirectory()
            let key = ProviderKey.generate()
            var configuration = MockAPNSServer.Configuration()
            configuration.registerProviderKey(key.publicKey, keyID: key.keyID, teamID: key.teamID)
            configuration.recordLimit = 100_000
            configuration.maximumConcurrentStreams = streams
            configuration.script.randomFaults = .init(rate: 1, seed: 7, faults: [.delay(delay)])
            mock = try MockAPNSServer(configuration: configuration)
            try await mock.start()
            let ca = try scratch.write("ca.pem", mock.certificateAuthorityPEM ?? "")
            let keyFile = try scratch.write("AuthKey_\(key.keyID).p8", key.pemRepresentation)
            let digest = SHA256.hash(data: Data(ServeCommandTests.apiKey.utf8)).map { String(format: "%02x", $0) }.joined()
            configFile = try scratch.write(
                "herald.json",
                """
                { "listen": "127.0.0.1:0", "database": "\(database)",
                  "apps": [ { "id": "shop", "topic": "\(ServeCommandTests.topic)", "environment": "\(mock.url)", "caFile": "\(ca)", "connections": 1,
                              "authKey": { "file": "\(keyFile)", "keyID": "\(key.keyID)", "teamID": "\(key.teamID)" }\(app) } ],
                  "apiKeys": [ { "name": "tests", "sha256": "\(digest)", "apps": ["shop"] } ],
                  "queue": { "leaseSeconds": \(leaseSeconds), "retryInitialSeconds": 1, "retryMaximumSeconds": 2 },
                  "workers": { "count": 2, "batchSize": 250 } }
                """
            )
        }

        /// Starts `herald serve`; returns it and its base URL once it listens.
        func serve(_ extra: [String] = []) async throws -> (BackgroundHerald, String) {
            let process = try BackgroundHerald(["serve", "--config", configFile] + extra)
            let line = try await process.wait(for: "listening on http://127\\.0\\.0\\.1:[0-9]+")
            return (process, String(line.split(separator: " ").last!))
        }

        /// How many times the mock accepted each token, for notifications whose alert is `alert`.
        func received(alert: String) -> [String: Int] {
            var counts: [String: Int] = [:]
            for record in mock.accepted where (try? JSONValue(parsing: record.payload))?["aps"]?["alert"]?.stringValue == alert {
                counts[record.token, default: 0] += 1
            }
            return counts
        }
    }

    /// A token like APNs's: 32 bytes that look random, so a broadcast spreads over all 16 of
    /// its key ranges (one per first hex digit), as with real devices.
    static func token(_ number: Int) -> String {
        SHA256.hash(data: Data("device \(number)".utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// One HTTP request with the API key; the status and the JSON answer.
    static func call(
        _ method: String, _ url: String, body: String? = nil, contentType: String = "application/json", key: String = apiKey
    ) async throws -> (Int, JSONValue?) {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
        request.setValue(contentType, forHTTPHeaderField: "Content-Type")
        request.httpBody = body.map { Data($0.utf8) }
        request.timeoutInterval = 30
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        return (status, data.isEmpty ? nil : try? JSONValue(parsing: Array(data)))
    }

    /// Registers `count` devices with one NDJSON import and queues a broadcast; returns its ID.
    static func importAndBroadcast(_ base: String, count: Int, alert: String) async throws -> String {
        let lines = (0..<count).map { #"{"token": "\#(token($0))"}"# }.joined(separator: "\n")
        let (imported, report) = try await call("POST", "\(base)/v1/apps/shop/devices", body: lines, contentType: "application/x-ndjson")
        #expect(imported == 200 && report?["upserted"]?.intValue == count, "\(report?.jsonString ?? "")")
        let (queued, answer) = try await call("POST", "\(base)/v1/apps/shop/notifications", body: #"{"to": {"all": true}, "payload": {"aps": {"alert": "\#(alert)"}}}"#)
        #expect(queued == 202, "\(answer?.jsonString ?? "")")
        return try #require(answer?["id"]?.stringValue)
    }

    /// Polls (at most `timeout`) until the notification is done; returns it.
    static func waitUntilDone(_ base: String, _ id: String, timeout: Duration = .seconds(120)) async throws -> JSONValue? {
        var last: JSONValue?
        let done = try await eventually(within: timeout, every: .milliseconds(100)) {
            last = try await call("GET", "\(base)/v1/notifications/\(id)").1
            return last?["status"]?.stringValue == "done"
        }
        if !done { Issue.record("notification \(id) not done within \(timeout): \(last?.jsonString ?? "nil")") }
        return last
    }

    @Test("SIGKILL mid-broadcast, then started again: every device receives it at least once, and it ends done", arguments: Backend.allCases)
    func killedMidBroadcast(backend: Backend) async throws {
        if backend == .postgres, let reason = PostgresCluster.unavailableReason, !PostgresCluster.isRequired { try Test.cancel(Comment(rawValue: reason)) }
        let scratch = try ScratchDirectory()
        // 30 ms an answer, 20 at a time on the gateway's one connection: the broadcast takes 6 s,
        // so the kill lands mid-way on a loaded machine too. (With 10 ms one CI run sent all 4,000
        // between the look and the kill; with 100 streams, 1.2 s in all, another did.)
        let setup = try await Setup(database: try await backend.storeURL(scratch: scratch), delay: .milliseconds(30), streams: 20)
        let devices = 4000
        let (first, base) = try await setup.serve()
        let id = try await Self.importAndBroadcast(base, count: devices, alert: "crash")
        // Bounded wait for the broadcast to be under way, then kill -9: no chance to record anything.
        try await setup.mock.accepted(atLeast: 500)
        first.kill()
        let sentBeforeKill = setup.mock.acceptedCount
        #expect(sentBeforeKill >= 500 && sentBeforeKill < devices, "killed mid-broadcast (\(sentBeforeKill) sent)")

        let (second, again) = try await setup.serve()
        let done = try await Self.waitUntilDone(again, id)
        #expect(done?["accepted"]?.intValue == devices && done?["failed"]?.intValue == 0, "\(done?.jsonString ?? "")")
        if done?["status"]?.stringValue != "done" {
            Issue.record("the first process said:\n\(first.text.suffix(4000))\nthe second:\n\(second.text.suffix(4000))")
        }
        let received = setup.received(alert: "crash")
        #expect(received.count == devices, "every device at least once: \(received.count) of \(devices)")
        #expect(await second.stop() == 0, "SIGTERM ends it cleanly")
        try await setup.mock.shutdown()
    }

    @Test("SIGKILL during a paced broadcast and with a notification scheduled: started again, every device receives both, paced still", arguments: Backend.allCases)
    func killedWhilePacedAndScheduled(backend: Backend) async throws {
        if backend == .postgres, let reason = PostgresCluster.unavailableReason, !PostgresCluster.isRequired { try Test.cancel(Comment(rawValue: reason)) }
        let scratch = try ScratchDirectory()
        let setup = try await Setup(database: try await backend.storeURL(scratch: scratch))
        let devices = 1500
        let (first, base) = try await setup.serve()
        let lines = (0..<devices).map { #"{"token": "\#(Self.token($0))"}"# }.joined(separator: "\n")
        let (imported, _) = try await Self.call("POST", "\(base)/v1/apps/shop/devices", body: lines, contentType: "application/x-ndjson")
        #expect(imported == 200)
        // 1,500 devices at 250 a second: six seconds; and one to all, three seconds ahead.
        let queued = Date()
        let (paced, pacedAnswer) = try await Self.call("POST", "\(base)/v1/apps/shop/notifications", body: #"{"to": {"all": true}, "payload": {"aps": {"alert": "paced"}}, "ratePerSecond": 250}"#)
        let sendAt = Date().addingTimeInterval(3).formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        let (later, laterAnswer) = try await Self.call("POST", "\(base)/v1/apps/shop/notifications", body: #"{"to": {"all": true}, "payload": {"aps": {"alert": "later"}}, "sendAt": "\#(sendAt)"}"#)
        #expect(paced == 202 && later == 202 && laterAnswer?["status"]?.stringValue == "scheduled", "\(pacedAnswer?.jsonString ?? "") \(laterAnswer?.jsonString ?? "")")
        try await setup.mock.accepted(atLeast: 100)
        first.kill()
        let sentBeforeKill = setup.received(alert: "paced").count
        #expect(sentBeforeKill < devices, "killed mid-way (\(sentBeforeKill) sent)")

        let (second, again) = try await setup.serve()
        for id in [pacedAnswer?["id"]?.stringValue, laterAnswer?["id"]?.stringValue].compactMap({ $0 }) {
            let done = try await Self.waitUntilDone(again, id)
            #expect(done?["accepted"]?.intValue == devices, "\(done?.jsonString ?? "")")
        }
        #expect(setup.received(alert: "paced").count == devices, "every device the paced one at least once")
        #expect(setup.received(alert: "later").count == devices, "every device the scheduled one at least once")
        // What the second process sent of the paced one still came at its pace, not at once.
        let times = setup.mock.accepted.filter { (try? JSONValue(parsing: $0.payload))?["aps"]?["alert"]?.stringValue == "paced" }.map(\.receivedAt).sorted()
        if let last = times.last { #expect(last.timeIntervalSince(queued) >= 5, "the last received \(last.timeIntervalSince(queued)) s after queueing") }
        #expect(await second.stop() == 0, "SIGTERM ends it cleanly")
        try await setup.mock.shutdown()
    }

    @Test("two processes on one PostgreSQL share one broadcast, each device sent once")
    func twoProcessesShareWork() async throws {
        if let reason = PostgresCluster.unavailableReason, !PostgresCluster.isRequired { try Test.cancel(Comment(rawValue: reason)) }
        let scratch = try ScratchDirectory()
        // 30 ms an answer, 20 at a time on each process's connection: the broadcast takes 3 s or
        // more, so the second process has time to take part on a loaded machine (with 10 ms and
        // 100 streams the first once sent all 4,000 alone in CI; a wake-up sent before the second
        // process listened went unheard until its idle poll, which listening now covers by
        // looking once).
        let setup = try await Setup(database: try await Backend.postgres.storeURL(scratch: scratch), leaseSeconds: 30, delay: .milliseconds(30), streams: 20)
        let (one, base) = try await setup.serve()
        let (two, other) = try await setup.serve(["--workers-only"])
        let id = try await Self.importAndBroadcast(base, count: 4000, alert: "shared")
        let done = try await Self.waitUntilDone(base, id)
        #expect(done?["accepted"]?.intValue == 4000, "\(done?.jsonString ?? "")")
        let received = setup.received(alert: "shared")
        #expect(received.count == 4000 && received.values.allSatisfy { $0 == 1 }, "each device exactly once while no lease runs out")
        // Both sent part of it: each process counts its own deliveries.
        for (process, base) in [(one, base), (two, other)] {
            let metrics = try String(contentsOf: URL(string: "\(base)/metrics")!, encoding: .utf8)
            let sent = metrics.split(separator: "\n").filter { $0.hasPrefix("herald_deliveries_total{") && $0.contains(#"outcome="accepted""#) }
                .compactMap { Double($0.split(separator: " ").last ?? "") }.reduce(0, +)
            #expect(sent > 0 && sent < 4000, "\(process.arguments): \(sent) sent")
            #expect(await process.stop() == 0)
        }
        try await setup.mock.shutdown()
    }

    @Test("two processes on one PostgreSQL, 20 notifications at once to one user whose category allows 2 in 10 minutes: exactly 2 reach each of the user's devices")
    func capAcrossProcesses() async throws {
        if let reason = PostgresCluster.unavailableReason, !PostgresCluster.isRequired { try Test.cancel(Comment(rawValue: reason)) }
        let scratch = try ScratchDirectory()
        let setup = try await Setup(
            database: try await Backend.postgres.storeURL(scratch: scratch), leaseSeconds: 30, delay: .milliseconds(5),
            app: #", "categories": {"marketing": {"commercial": true, "caps": [{"count": 2, "windowSeconds": 600}]}}"#)
        let (one, base) = try await setup.serve()
        let (two, other) = try await setup.serve()
        for number in 0..<2 {
            let (status, answer) = try await Self.call("PUT", "\(base)/v1/apps/shop/devices/\(Self.token(number))", body: #"{"user": "ann"}"#)
            #expect(status == 201, "\(answer?.jsonString ?? "")")
        }
        let ids = try await withThrowingTaskGroup(of: String?.self) { group in
            for round in 0..<20 {
                group.addTask {
                    let (status, answer) = try await Self.call(
                        "POST", "\(round.isMultiple(of: 2) ? base : other)/v1/apps/shop/notifications",
                        body: #"{"to": {"users": ["ann"]}, "category": "marketing", "payload": {"aps": {"alert": "offer \#(round)"}}}"#)
                    #expect(status == 202, "\(answer?.jsonString ?? "")")
                    return answer?["id"]?.stringValue
                }
            }
            return try await group.reduce(into: [String]()) { if let id = $1 { $0.append(id) } }
        }
        #expect(ids.count == 20)
        var accepted = 0
        var capped = 0
        for id in ids {
            let done = try await Self.waitUntilDone(base, id)
            accepted += done?["accepted"]?.intValue ?? 0
            capped += done?["capped"]?.intValue ?? 0
        }
        #expect(accepted == 4 && capped == 36, "2 notifications × 2 devices sent, the other 18 capped on both: \(accepted) accepted, \(capped) capped")
        let sent = Dictionary(grouping: setup.mock.accepted, by: \.token).mapValues(\.count)
        #expect(sent == [Self.token(0): 2, Self.token(1): 2], "\(sent)")
        // Each device's payload has its own receipt (`herald`); without it, both got the same two.
        let payloads = setup.mock.accepted.compactMap { record -> String? in
            guard let members = (try? JSONValue(parsing: record.payload))?.objectValue else { return nil }
            return JSONValue.object(members.filter { $0.key != "herald" }).jsonString
        }
        #expect(payloads.count == 4 && Set(payloads).count == 2, "both devices got the same two")
        #expect(await one.stop() == 0)
        #expect(await two.stop() == 0)
        try await setup.mock.shutdown()
    }

    @Test("a configuration error is refused at start with the file, the field and what is wrong")
    func configurationError() async throws {
        let scratch = try ScratchDirectory()
        let file = try scratch.write("herald.json", #"{ "database": "sqlite:x.db", "apps": [ { "id": "shop", "topic": "com.example.shop", "environment": "staging" } ], "apiKeys": [] }"#)
        let result = try await HeraldProcess.run(["serve", "--config", file], timeout: .seconds(60))
        #expect(result.status != 0)
        #expect(result.stderr.contains(file) && result.stderr.contains("apps[0].environment") && result.stderr.contains("staging"), "\(result.stderr)")
    }

    @Test("an SQLite database in a directory that does not exist is refused at start, naming the path and what to do, not waited for")
    func missingSQLiteDirectory() async throws {
        let scratch = try ScratchDirectory()
        let path = scratch.file("missing/dir/herald.db")
        let setup = try await Setup(database: "sqlite:" + path)
        // Bounded well under the minute start-up waits for a database that is not up yet.
        let result = try await HeraldProcess.run(["serve", "--config", setup.configFile], timeout: .seconds(30))
        #expect(result.status != 0)
        #expect(result.stderr.contains(path) && result.stderr.contains("does not exist") && result.stderr.contains("mkdir -p"), "\(result.stderr)")
        try await setup.mock.shutdown()
    }

    @Test("an SQLite path that is a directory, or a file that is not SQLite, is refused at start with what to do, not waited for")
    func unopenableSQLite() async throws {
        let scratch = try ScratchDirectory()
        let directory = scratch.file("a-directory")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let notDatabase = try scratch.write("notes.db", "not a database, but a text file long enough to have a header that SQLite reads\n")
        let setup = try await Setup(database: "sqlite:" + scratch.file("unused.db"))
        for (path, advice) in [(directory, "not a directory"), (notDatabase, "it is not an SQLite database, or it is damaged")] {
            let result = try await HeraldProcess.run(["serve", "--config", setup.configFile, "--database", "sqlite:" + path], timeout: .seconds(30))
            #expect(result.status != 0)
            #expect(result.stderr.contains("cannotOpen") && result.stderr.contains(path) && result.stderr.contains(advice), "\(result.stderr)")
        }
        try await setup.mock.shutdown()
    }

    @Test("a PostgreSQL database that does not exist is refused at start with the server's reason, not waited out for a minute as one that is down")
    func postgresRefusedAtStart() async throws {
        if let reason = PostgresCluster.unavailableReason, !PostgresCluster.isRequired { try Test.cancel(Comment(rawValue: reason)) }
        let scratch = try ScratchDirectory()
        let existing = try await Backend.postgres.storeURL(scratch: scratch)
        let setup = try await Setup(database: existing)
        let missing = try #require(existing.range(of: "/", options: .backwards)).lowerBound
        let url = existing[..<missing] + "/herald_no_such_database?sslmode=disable"
        let result = try await HeraldProcess.run(["serve", "--config", setup.configFile, "--database", String(url)], timeout: .seconds(30))
        #expect(result.status != 0)
        #expect(result.stderr.contains("refused this gateway: database \"herald_no_such_database\" does not exist; correct the user"), "\(result.stderr)")
        try await setup.mock.shutdown()
    }

    @Test("--log-format json: every log record one JSON object per line; a fresh database's migration is one record, not one per step")
    func jsonLogs() async throws {
        let scratch = try ScratchDirectory()
        let setup = try await Setup(database: "sqlite:" + scratch.file("json-logs.db"))
        let (process, _) = try await setup.serve(["--log-format", "json"])
        _ = try await process.wait(for: "store migrated")
        #expect(await process.stop() == 0)
        let records = process.text.split(separator: "\n").filter { $0.hasPrefix("{") }.compactMap { try? JSONValue(parsing: Array($0.utf8)) }
        let logLines = process.text.split(separator: "\n").filter { !$0.hasPrefix("herald serve ") }
        #expect(!records.isEmpty && records.count == logLines.count, "every log line is a JSON object: \(process.text)")
        for record in records {
            #expect(record["time"]?.stringValue?.hasSuffix("Z") == true && record["level"]?.stringValue != nil, "\(record)")
            #expect(record["label"]?.stringValue?.hasPrefix("herald") == true || record["label"]?.stringValue == "Hummingbird", "\(record)")
        }
        // One start-up line on stdout: where, the database, and what the process serves.
        #expect(process.text.contains(" app") && process.text.contains("APNs); API and workers)"), "\(process.text)")
        let migrated = records.filter { $0["message"]?.stringValue == "store migrated" }
        #expect(migrated.count == 1 && migrated.first?["from"] == "0", "\(migrated)")
        #expect(migrated.first?["schema"]?.stringValue.flatMap(Int.init).map { $0 > 1 } == true, "\(migrated)")
        let refused = try await HeraldProcess.run(["serve", "--config", setup.configFile, "--log-format", "yaml"])
        #expect(refused.status == 2 && refused.stderr.contains("--log-format must be text or json"), "\(refused.stderr)")
        try await setup.mock.shutdown()
    }

    @Test("the database URL from --database-file or HERALD_DATABASE_URL: used over the file's, its errors name the source, never the password")
    func databaseURLSources() async throws {
        let scratch = try ScratchDirectory()
        let setup = try await Setup(database: "sqlite:" + scratch.file("from-config.db"))
        let urlFile = try scratch.write("database-url", "sqlite:\(scratch.file("from-file.db"))\n")
        let (process, _) = try await setup.serve(["--database-file", urlFile])
        #expect(process.text.contains("from-file.db"), "\(process.text)")
        #expect(await process.stop() == 0)

        let secret = "s3cret-\(UUID().uuidString)"
        let badFile = try scratch.write("bad-url", "postgres://herald:\(secret)@db.internal/push?sslmode=bogus")
        let fromFile = try await HeraldProcess.run(["serve", "--config", setup.configFile, "--database-file", badFile], timeout: .seconds(60))
        #expect(fromFile.status != 0 && fromFile.stderr.contains("--database-file") && fromFile.stderr.contains("sslmode"), "\(fromFile.stderr)")
        let fromEnvironment = try await HeraldProcess.run(
            ["serve", "--config", setup.configFile], environment: ["HERALD_DATABASE_URL": "postgres://herald:\(secret)@db.internal/push?sslmode=bogus"],
            timeout: .seconds(60)
        )
        #expect(fromEnvironment.status != 0 && fromEnvironment.stderr.contains("HERALD_DATABASE_URL"), "\(fromEnvironment.stderr)")
        for result in [fromFile, fromEnvironment] {
            #expect(!result.stderr.contains(secret) && !result.stdout.contains(secret), "the password is never shown")
        }
        try await setup.mock.shutdown()
    }

    @Test("with tls in the file it serves HTTPS, and SIGHUP makes it read a renewed certificate without a restart")
    func tlsReloadOnSIGHUP() async throws {
        let scratch = try ScratchDirectory()
        let setup = try await Setup(database: "sqlite:" + scratch.file("tls.db"))
        let first = try MockCertificateAuthority(name: "Herald First Test CA")
        let second = try MockCertificateAuthority(name: "Herald Second Test CA")
        let firstCA = try scratch.write("first-ca.pem", first.certificatePEM)
        let secondCA = try scratch.write("second-ca.pem", second.certificatePEM)
        func install(_ authority: MockCertificateAuthority) throws {
            let identity = try authority.issueServerIdentity()
            _ = try scratch.write("api.pem", try identity.certificate.serializeAsPEM().pemString)
            _ = try scratch.write("api-key.pem", try identity.privateKey.serializeAsPEM().pemString)
        }
        try install(first)
        let text = try String(contentsOfFile: setup.configFile, encoding: .utf8)
        let config = try scratch.write(
            "herald-tls.json",
            "{ \"tls\": { \"certificateFile\": \"\(scratch.file("api.pem"))\", \"keyFile\": \"\(scratch.file("api-key.pem"))\" }," + text.drop { $0 != "{" }.dropFirst()
        )
        let process = try BackgroundHerald(["serve", "--config", config])
        let line = try await process.wait(for: "listening on https://127\\.0\\.0\\.1:[0-9]+")
        let port = String(line.split(separator: ":").last!)
        // openssl s_client as an independent TLS peer: the chain verifies against one CA only.
        @Sendable func verifies(_ caFile: String) async throws -> Bool {
            try await onOwnThread { try verifiesBlocking(caFile) }
        }
        @Sendable func verifiesBlocking(_ caFile: String) throws -> Bool {
            let openssl = Process()
            openssl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            openssl.arguments = ["openssl", "s_client", "-connect", "127.0.0.1:\(port)", "-CAfile", caFile, "-verify_return_error", "-brief"]
            let output = Pipe()
            openssl.standardInput = FileHandle.nullDevice
            openssl.standardOutput = output
            openssl.standardError = output
            try openssl.run()
            let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            openssl.waitUntilExit()
            return openssl.terminationStatus == 0 && printed.contains("Verification: OK")
        }
        #expect(try await verifies(firstCA))
        #expect(try await !verifies(secondCA))
        try install(second)
        process.send(SIGHUP)
        let reloaded = await eventually(within: .seconds(20), every: .milliseconds(200)) { (try? await verifies(secondCA)) == true }
        #expect(reloaded, "\(process.text.suffix(2000))")
        #expect(try await !verifies(firstCA))
        #expect(process.text.contains("reloaded the TLS certificate"))
        #expect(await process.stop() == 0)
        try await setup.mock.shutdown()
    }

    @Test("SIGHUP reads the configuration again: a broken file is refused with its error and the running one stays; a new API key works at once, a removed one no longer")
    func configurationReloadOnSIGHUP() async throws {
        let scratch = try ScratchDirectory()
        let setup = try await Setup(database: "sqlite:" + scratch.file("reload.db"))
        let (process, base) = try await setup.serve()
        let original = try String(contentsOfFile: setup.configFile, encoding: .utf8)
        #expect(try await Self.call("GET", "\(base)/v1/apps").0 == 200)

        // A mistake: refused with the field and what is wrong, as at start; the old key still works.
        try original.replacingOccurrences(of: #""connections": 1"#, with: #""connections": "many""#).write(toFile: setup.configFile, atomically: true, encoding: .utf8)
        process.send(SIGHUP)
        _ = try await process.wait(for: "the configuration was not reloaded", timeout: .seconds(20))
        #expect(process.text.contains("apps[0].connections"), "\(process.text.suffix(2000))")
        #expect(try await Self.call("GET", "\(base)/v1/apps").0 == 200)

        // A new key in place of the old one.
        let newKey = "hk_reloaded-\(UUID().uuidString)"
        let digest = SHA256.hash(data: Data(newKey.utf8)).map { String(format: "%02x", $0) }.joined()
        let oldDigest = SHA256.hash(data: Data(Self.apiKey.utf8)).map { String(format: "%02x", $0) }.joined()
        try original.replacingOccurrences(of: oldDigest, with: digest).replacingOccurrences(of: #""name": "tests""#, with: #""name": "rotated""#)
            .write(toFile: setup.configFile, atomically: true, encoding: .utf8)
        process.send(SIGHUP)
        _ = try await process.wait(for: "configuration reloaded", timeout: .seconds(20))
        #expect(try await Self.call("GET", "\(base)/v1/apps", key: newKey).0 == 200)
        #expect(try await Self.call("GET", "\(base)/v1/apps").0 == 401, "the key taken out no longer works")
        #expect(!process.text.contains(newKey), "a key never reaches the log")
        #expect(await process.stop() == 0)
        try await setup.mock.shutdown()
    }

    @Test("herald api-key prints a fresh key and the configuration entry holding only its SHA-256")
    func apiKey() async throws {
        let result = try await HeraldProcess.run(["api-key", "--name", "backend", "--app", "shop"], timeout: .seconds(60))
        #expect(result.status == 0, "\(result.stderr)")
        let key = try #require(result.stdout.firstMatch(of: /hk_[A-Za-z0-9_-]{20,}/).map { String($0.output) })
        let digest = SHA256.hash(data: Data(key.utf8)).map { String(format: "%02x", $0) }.joined()
        #expect(result.stdout.contains(digest), "\(result.stdout)")
        #expect(result.stdout.contains(#""apps""#) && result.stdout.contains("shop"))
    }
}
