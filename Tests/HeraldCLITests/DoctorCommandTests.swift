import Foundation
import HeraldAPNSMock
import HeraldCore
import HeraldTestSupport
import HeraldWebPush
import NIOCore
import NIOPosix
import Testing
import X509

/// `herald doctor` as a process: a healthy configuration passes with every row ok, and each thing
/// that would fail in production (an unopenable database path, a broken key, an expired
/// certificate, a trust store without Apple's root, a port in use, a file that does not parse)
/// is an error row that says what to do, and exit status 1.
@Suite("herald doctor", .timeLimit(.minutes(3)))
struct DoctorCommandTests {
    /// A configuration in a scratch directory: app `shop` sends to Apple's production host with a
    /// provider key, app `news` with a push certificate, app `web` to browsers.
    struct Setup {
        let scratch: ScratchDirectory
        let key = ProviderKey.generate(keyID: "ABC123DEFG", teamID: "DEF123GHIJ")

        init() throws {
            scratch = try ScratchDirectory()
        }

        /// Writes the configuration and its files; returns the configuration's path.
        /// - Parameters:
        ///   - keyText: the .p8 file's text (the generated key by default).
        ///   - certificateValidFor: how long the `news` certificate is valid from now (negative: expired).
        ///   - certificateTopic: the `news` certificate's topic (its subject UID).
        func write(
            database: String? = nil, listen: String = "127.0.0.1:0", keyText: String? = nil, certificateValidFor: TimeInterval = 365 * 86400,
            certificateTopic: String = "com.example.news"
        ) throws -> String {
            try scratch.write("AuthKey_ABC123DEFG.p8", keyText ?? key.pemRepresentation)
            let identity = try MockCertificateAuthority(name: "Herald Doctor Test CA")
                .issuePushCertificate(topic: certificateTopic, validFor: certificateValidFor)
            try scratch.write("news.pem", try identity.certificate.serializeAsPEM().pemString)
            try scratch.write("news-key.pem", try identity.privateKey.serializeAsPEM().pemString)
            try scratch.write("vapid.pem", VAPIDKey.generate().pemRepresentation)
            return try scratch.write(
                "herald.json",
                """
                { "listen": "\(listen)", "database": "\(database ?? "sqlite:" + scratch.file("data/herald.db"))",
                  "apps": [
                    { "id": "shop", "apns": { "topic": "com.example.shop", "environment": "production",
                      "authKey": { "file": "AuthKey_ABC123DEFG.p8", "keyID": "ABC123DEFG", "teamID": "DEF123GHIJ" } } },
                    { "id": "news", "apns": { "topic": "com.example.news", "environment": "production",
                      "certificate": { "file": "news.pem", "keyFile": "news-key.pem" } } },
                    { "id": "web", "webPush": { "vapidKeyFile": "vapid.pem", "subject": "mailto:ops@example.com", "defaultURL": "https://example.com/" } } ],
                  "apiKeys": [ { "name": "backend", "sha256": "\(String(repeating: "ab", count: 32))", "apps": ["shop", "news", "web"] } ] }
                """
            )
        }

        /// Makes the directory the default database lives in.
        func makeDataDirectory() throws {
            try FileManager.default.createDirectory(atPath: scratch.file("data"), withIntermediateDirectories: true)
        }
    }

    /// The table's rows (not its header or its count line) whose check's name contains `name`.
    static func rows(_ result: HeraldProcess.Result, _ name: String) -> [String] {
        result.stdoutLines.dropFirst().filter { $0.contains(name) && !$0.hasPrefix("STATUS") }
    }

    @Test("a healthy configuration: exit 0, every row ok, and no secret in the output")
    func healthy() async throws {
        let setup = try Setup()
        try setup.makeDataDirectory()
        let config = try setup.write()
        let result = try await HeraldProcess.run(["doctor", "--config", config])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let rows = result.stdoutLines.dropFirst().dropLast()
        #expect(rows.count >= 9)
        for row in rows { #expect(row.hasPrefix("ok "), "\(row)") }
        #expect(result.stdout.contains("app shop: APNs provider key ABC123DEFG"))
        #expect(result.stdout.contains("app news: APNs certificate 'com.example.news'"))
        #expect(result.stdout.contains("trust store: APNs roots"))
        #expect(result.stdout.contains("trust store: Google roots"))
        #expect(result.stdout.contains("no file yet"))
        // Doctor creates nothing.
        #expect(!FileManager.default.fileExists(atPath: setup.scratch.file("data/herald.db")))
        let keyLine = setup.key.pemRepresentation.split(separator: "\n")[1]
        #expect(!result.stdout.contains(keyLine) && !result.stderr.contains(keyLine))
    }

    @Test("--output json: one document with every check")
    func json() async throws {
        let setup = try Setup()
        try setup.makeDataDirectory()
        let result = try await HeraldProcess.run(["doctor", "--config", try setup.write(), "--output", "json"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let document = try JSONValue(parsing: Array(result.stdout.utf8))
        #expect(document["ok"] == .bool(true))
        guard case .array(let checks)? = document["checks"] else {
            Issue.record("no checks in \(result.stdout)")
            return
        }
        #expect(checks.count >= 9)
        #expect(checks.allSatisfy { $0["status"]?.stringValue == "ok" })
    }

    @Test("an SQLite database in a directory that does not exist: an error row that says mkdir -p")
    func unopenableDatabase() async throws {
        let setup = try Setup()
        let config = try setup.write()
        let result = try await HeraldProcess.run(["doctor", "--config", config])
        #expect(result.status == 1)
        let rows = Self.rows(result, "database directory")
        #expect(rows.count == 1)
        #expect(rows.first?.hasPrefix("error") == true)
        #expect(rows.first?.contains("does not exist: create it (mkdir -p \(setup.scratch.file("data"))") == true, "\(result.stdout)")
    }

    @Test("an SQLite database a newer herald migrated is an error; an older one will be migrated at start")
    func sqliteSchemaVersions() async throws {
        let setup = try Setup()
        let config = try setup.write()
        // Made with Python's sqlite3, as an older or a newer herald would leave them.
        func database(_ name: String, version: Int) async throws -> String {
            let path = setup.scratch.file(name)
            try await runCommand("python3", [
                "-c",
                "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
                    + "c.execute('CREATE TABLE herald_schema (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)'); "
                    + "c.execute('INSERT INTO herald_schema VALUES (?, 0)', (int(sys.argv[2]),)); c.commit()",
                path, String(version),
            ])
            return "sqlite:" + path
        }
        let newer = try await HeraldProcess.run(["doctor", "--config", config, "--database", try await database("newer.db", version: 999)])
        #expect(newer.status == 1)
        #expect(Self.rows(newer, "database sqlite:").first?.contains("this herald is older than the database; upgrade herald") == true, "\(newer.stdout)")
        let older = try await HeraldProcess.run(["doctor", "--config", config, "--database", try await database("older.db", version: 1)])
        #expect(older.status == 0, "\(older.stdout)")
        #expect(Self.rows(older, "database sqlite:").first?.contains("answers; schema 1: herald serve will migrate") == true, "\(older.stdout)")
    }

    @Test("a .p8 that is not a key: the file's error row names the field and what the file should hold")
    func brokenKey() async throws {
        let setup = try Setup()
        try setup.makeDataDirectory()
        let config = try setup.write(keyText: "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n")
        let result = try await HeraldProcess.run(["doctor", "--config", config])
        #expect(result.status == 1)
        let rows = Self.rows(result, "configuration")
        #expect(rows.count == 1)
        #expect(rows.first?.hasPrefix("error") == true)
        #expect(rows.first?.contains("apps[0].apns.authKey.file") == true, "\(result.stdout)")
        #expect(rows.first?.contains("correct it and run herald doctor again") == true)
    }

    @Test("an expired push certificate: an error row that says to make a new one")
    func expiredCertificate() async throws {
        let setup = try Setup()
        try setup.makeDataDirectory()
        let config = try setup.write(certificateValidFor: -86400)
        let result = try await HeraldProcess.run(["doctor", "--config", config])
        #expect(result.status == 1)
        let rows = Self.rows(result, "app news: APNs certificate")
        #expect(rows.count == 1)
        #expect(rows.first?.hasPrefix("error") == true)
        #expect(rows.first?.contains("expired on") == true && rows.first?.contains("make a new one in Apple's developer account") == true, "\(result.stdout)")
    }

    @Test("a certificate that expires within 30 days is a warning, and warnings alone exit 0")
    func expiringCertificate() async throws {
        let setup = try Setup()
        try setup.makeDataDirectory()
        let config = try setup.write(certificateValidFor: 10 * 86400)
        let result = try await HeraldProcess.run(["doctor", "--config", config])
        #expect(result.status == 0)
        let rows = Self.rows(result, "app news: APNs certificate")
        #expect(rows.first?.hasPrefix("warning") == true)
        #expect(rows.first?.contains("renew it in Apple's developer account") == true, "\(result.stdout)")
    }

    @Test("a certificate for another topic is an error, and its subject's text is escaped for the terminal")
    func certificateForAnotherTopic() async throws {
        let setup = try Setup()
        try setup.makeDataDirectory()
        let config = try setup.write(certificateTopic: "com.example.other\u{1b}[2J")
        let result = try await HeraldProcess.run(["doctor", "--config", config])
        #expect(result.status == 1)
        let rows = Self.rows(result, "app news: APNs certificate")
        #expect(rows.first?.hasPrefix("error") == true)
        #expect(rows.first?.contains("does not carry the topic com.example.news") == true, "\(result.stdout)")
        #expect(rows.first?.contains("com.example.other\\u{1b}[2J") == true, "\(result.stdout)")
        #expect(!result.stdout.contains("\u{1b}"))
    }

    @Test("a trust store without USERTrust RSA: an error row for APNs that says to update ca-certificates")
    func missingAppleRoot() async throws {
        let setup = try Setup()
        try setup.makeDataDirectory()
        let config = try setup.write()
        // A bundle with Google's roots only (Debian's ca-certificates files).
        let mozilla = "/usr/share/ca-certificates/mozilla/"
        let google = try ["GTS_Root_R1", "GTS_Root_R2", "GTS_Root_R3", "GTS_Root_R4", "GlobalSign_Root_CA"].map { name in
            try String(contentsOfFile: mozilla + name + ".crt", encoding: .utf8)
        }
        let bundle = try setup.scratch.write("bundle.pem", google.joined(separator: "\n"))
        let result = try await HeraldProcess.run(["doctor", "--config", config, "--trust-store", bundle])
        #expect(result.status == 1)
        let apple = Self.rows(result, "trust store: APNs roots")
        #expect(apple.first?.hasPrefix("error") == true)
        #expect(apple.first?.contains("USERTrust RSA Certification Authority missing") == true, "\(result.stdout)")
        #expect(apple.first?.contains("apt-get install ca-certificates") == true)
        #expect(Self.rows(result, "trust store: Google roots").first?.hasPrefix("ok") == true)
    }

    @Test("an app pointed at a mock needs no Apple root")
    func mockNeedsNoAppleRoot() async throws {
        let setup = try Setup()
        try setup.makeDataDirectory()
        let text = try String(contentsOfFile: try setup.write(), encoding: .utf8)
            .replacingOccurrences(of: "\"environment\": \"production\"", with: "\"environment\": \"https://127.0.0.1:2197\"")
        let config = try setup.scratch.write("mock.json", text)
        let empty = try setup.scratch.write("empty.pem", try MockCertificateAuthority(name: "Herald Doctor Other CA").certificatePEM)
        let result = try await HeraldProcess.run(["doctor", "--config", config, "--trust-store", empty])
        #expect(Self.rows(result, "trust store: APNs roots").isEmpty, "\(result.stdout)")
        // The browsers' app still needs Google's roots (Chrome's endpoints).
        #expect(Self.rows(result, "trust store: Google roots").first?.hasPrefix("error") == true)
    }

    @Test("a listen address in use: an error row that says to stop what holds it or pick another")
    func portInUse() async throws {
        let setup = try Setup()
        try setup.makeDataDirectory()
        let holder = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(holder.localAddress?.port)
        let result: HeraldProcess.Result
        do {
            result = try await HeraldProcess.run(["doctor", "--config", try setup.write(listen: "127.0.0.1:\(port)")])
        } catch {
            try await holder.close()
            throw error
        }
        try await holder.close()
        #expect(result.status == 1)
        let rows = Self.rows(result, "listen 127.0.0.1:\(port)")
        #expect(rows.first?.hasPrefix("error") == true)
        #expect(rows.first?.contains("stop what holds it or pick another with --listen") == true, "\(result.stdout)")
    }

    @Test("a configuration file that does not parse: one error row, exit 1")
    func unparsableFile() async throws {
        let setup = try Setup()
        let config = try setup.scratch.write("herald.json", "{ \"database\": ")
        let result = try await HeraldProcess.run(["doctor", "--config", config])
        #expect(result.status == 1)
        #expect(result.stdoutLines.count == 3, "\(result.stdout)")
        let rows = Self.rows(result, "configuration \(config)")
        #expect(rows.first?.hasPrefix("error") == true)
        #expect(rows.first?.contains("not valid JSON") == true, "\(result.stdout)")
    }

    @Test("PostgreSQL: an empty database answers and will be migrated at start, its clock compared; a read-only one and a newer schema are errors")
    func postgres() async throws {
        if let reason = PostgresCluster.unavailableReason, !PostgresCluster.isRequired { try Test.cancel(Comment(rawValue: reason)) }
        let cluster = try await PostgresCluster.shared()
        let url = try await cluster.createDatabase()
        let setup = try Setup()
        let config = try setup.write(database: url)
        let fresh = try await HeraldProcess.run(["doctor", "--config", config])
        #expect(fresh.status == 0, "\(fresh.stdout)\(fresh.stderr)")
        #expect(Self.rows(fresh, "database postgres://").first?.contains("no Herald schema yet") == true, "\(fresh.stdout)")
        #expect(Self.rows(fresh, "clock").first?.hasPrefix("ok") == true && Self.rows(fresh, "clock").first?.contains("of the database's") == true, "\(fresh.stdout)")
        #expect(Self.rows(fresh, "database postgres://").first?.contains("PostgreSQL ") == true, "the server's version: \(fresh.stdout)")
        // A database that does not exist: the server's reason, and what to correct.
        let missing = try await HeraldProcess.run(["doctor", "--config", config, "--database", url.replacingOccurrences(of: "/herald_", with: "/nothere_")])
        #expect(missing.status == 1)
        #expect(Self.rows(missing, "database postgres://").first?.contains("does not exist; correct the user, the password (PGPASSWORD) or the database name") == true, "\(missing.stdout)")
        // A database a newer herald migrated.
        try await cluster.psql("CREATE TABLE herald_schema (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL); INSERT INTO herald_schema VALUES (999, 0)", database: url)
        let newer = try await HeraldProcess.run(["doctor", "--config", config])
        #expect(newer.status == 1)
        #expect(Self.rows(newer, "database postgres://").first?.contains("this herald is older than the database; upgrade herald") == true, "\(newer.stdout)")
        // A database that refuses writes (as a standby does): herald serve could not queue a thing.
        let name = try #require(url.split(separator: "/").last.map { String($0.prefix { $0 != "?" }) })
        try await cluster.psql("ALTER DATABASE \(name) SET default_transaction_read_only = on", database: url)
        let readOnly = try await HeraldProcess.run(["doctor", "--config", config])
        #expect(readOnly.status == 1)
        #expect(Self.rows(readOnly, "database postgres://").contains { $0.hasPrefix("error") && $0.contains("refuses writes") }, "\(readOnly.stdout)")
    }

    @Test("PostgreSQL that does not answer: an error row within the bound, and the password never shown")
    func postgresUnreachable() async throws {
        let setup = try Setup()
        // A port that was free a moment ago: nothing listens there.
        let probe = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(probe.localAddress?.port)
        try await probe.close()
        let config = try setup.write(database: "postgres://herald@127.0.0.1:\(port)/herald?sslmode=disable")
        let result = try await HeraldProcess.run(["doctor", "--config", config], environment: ["PGPASSWORD": "doctor-secret-pw"])
        #expect(result.status == 1)
        let rows = Self.rows(result, "database postgres://")
        #expect(rows.first?.hasPrefix("error") == true)
        #expect(rows.first?.contains("check that the database runs") == true, "\(result.stdout)")
        #expect(Self.rows(result, "clock").isEmpty)
        #expect(!result.stdout.contains("doctor-secret-pw") && !result.stderr.contains("doctor-secret-pw"))
    }

    @Test("a Huawei app: its client named and its secret never shown; the API it has no credential for is a warning")
    func huawei() async throws {
        let setup = try Setup()
        try setup.makeDataDirectory()
        let config = try setup.scratch.write(
            "huawei.json",
            """
            { "listen": "127.0.0.1:0", "database": "sqlite:\(setup.scratch.file("data/herald.db"))",
              "apps": [ { "id": "hua", "hms": { "clientID": "104567891", "clientSecretEnv": "HERALD_TEST_HMS_SECRET" } } ],
              "apiKeys": [] }
            """)
        let secret = "hms-secret-\(UUID().uuidString)"
        let result = try await HeraldProcess.run(["doctor", "--config", config], environment: ["HERALD_TEST_HMS_SECRET": secret])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(Self.rows(result, "app hua: Huawei Push Kit client 104567891").first?.hasPrefix("ok") == true, "\(result.stdout)")
        #expect(Self.rows(result, "app hua: Huawei Push Kit (HarmonyOS NEXT)").first?.hasPrefix("warning") == true, "\(result.stdout)")
        #expect(!result.stdout.contains(secret) && !result.stderr.contains(secret))
    }

    @Test("a usage error exits 2")
    func usage() async throws {
        let setup = try Setup()
        let result = try await HeraldProcess.run(["doctor", "--config", try setup.write(), "--output", "xml"])
        #expect(result.status == 2)
    }
}
