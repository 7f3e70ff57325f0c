import Crypto
import Foundation
import HeraldTestSupport
import HeraldCore
import HeraldAPNSMock
import Testing

@Suite("herald mock, push, demo and bench, end to end", .timeLimit(.minutes(6)))
struct SendingCommandsTests {
    let files: ScratchDirectory
    let key: ProviderKey

    init() throws {
        files = try ScratchDirectory()
        key = ProviderKey.generate(keyID: "CLIKEY0001", teamID: "CLITEAM001")
    }

    static let good = String(repeating: "a1", count: 32)
    static let gone = String(repeating: "b2", count: 32)
    static let bad = String(repeating: "c3", count: 32)

    /// `herald mock` with the test key registered, one token unregistered and one failing.
    func startMock(extra: [String] = []) async throws -> (mock: BackgroundHerald, url: String, ca: String) {
        let publicKey = try files.write("key.pub.pem", key.publicKey.pemRepresentation)
        let ca = files.path + "/mock-ca.pem"
        let mock = try BackgroundHerald([
            "mock", "--port", "0", "--write-ca", ca, "--auth-key-public", "\(key.keyID)=\(publicKey)", "--team-id", key.teamID,
            "--unregistered", Self.gone, "--fail", "\(Self.bad)=BadDeviceToken", "--record-limit", "100",
        ] + extra)
        let url = try await mock.wait(for: #"https://127\.0\.0\.1:\d+"#)
        return (mock, url, ca)
    }

    var tokenAuth: [String] {
        get throws {
            let path = try files.write("AuthKey_\(key.keyID).p8", key.pemRepresentation)
            return ["--auth-key", path, "--key-id", key.keyID, "--team-id", key.teamID]
        }
    }

    @Test("push sends to the mock: one JSON object per token with status, apns-id, reason, timestamp; exit 1 when some are rejected")
    func pushJSON() async throws {
        let (mock, url, ca) = try await startMock()
        defer { mock.terminate() }
        let result = try await HeraldProcess.run(["push", Self.good, Self.gone, Self.bad, "--host", url, "--ca-file", ca, "--topic", "com.example.cli", "--alert", "Hello", "--output", "json"] + tokenAuth)
        #expect(result.status == 1, "\(result.stderr)")
        let lines = try result.stdoutLines.map { try JSONValue(parsing: $0) }
        let byToken = Dictionary(uniqueKeysWithValues: lines.compactMap { line in line["token"]?.stringValue.map { ($0, line) } })
        #expect(byToken.count == 3)
        #expect(byToken[Self.good]?["status"] == 200)
        #expect(byToken[Self.good]?["apns_id"]?.stringValue?.count == 36)
        #expect(byToken[Self.good]?["reason"] == .null)
        #expect(byToken[Self.gone]?["status"] == 410)
        #expect(byToken[Self.gone]?["reason"] == "Unregistered")
        #expect(byToken[Self.gone]?["timestamp"]?.intValue != nil)
        #expect(byToken[Self.bad]?["status"] == 400)
        #expect(byToken[Self.bad]?["reason"] == "BadDeviceToken")
        #expect(result.stderr.contains("summary: 3 sent, 1 accepted, 2 rejected (BadDeviceToken 1, Unregistered 1)"), "\(result.stderr)")
    }

    @Test("push exits 0 when every notification is accepted; text lines and a summary")
    func pushText() async throws {
        let (mock, url, ca) = try await startMock()
        defer { mock.terminate() }
        let tokens = try files.write("tokens.txt", (1...50).map { String(format: "%064x", $0) }.joined(separator: "\n"))
        let result = try await HeraldProcess.run(["push", "--tokens-file", tokens, "--host", url, "--ca-file", ca, "--topic", "com.example.cli", "--title", "T", "--body", "B", "--connections", "2", "--concurrency", "10"] + tokenAuth)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdoutLines.filter { $0.contains(" accepted apns-id=") }.count == 50)
        #expect(result.stdoutLines.last == "summary: 50 sent, 50 accepted")
        // The mock runs until interrupted, then says what it saw.
        #expect(await mock.stop() == 0)
        #expect(mock.text.contains("mock APNs stopped: 50 accepted, 0 rejected"))
    }

    @Test("push with a legacy .p12 client certificate, the password from HERALD_CERT_PASSWORD")
    func pushWithCertificate() async throws {
        let authority = try MockCertificateAuthority(name: "CLI test CA")
        let identity = try authority.issuePushCertificate(topic: "com.example.certcli")
        let p12 = try await files.p12(
            certificatePEM: identity.certificate.serializeAsPEM().pemString, keyPEM: identity.privateKey.serializeAsPEM().pemString,
            legacy: true, password: "topsecret", name: "cert"
        )
        let clientCA = try files.write("client-ca.pem", authority.certificatePEM)
        let (mock, url, ca) = try await startMock(extra: ["--client-ca", clientCA])
        defer { mock.terminate() }
        setenv("HERALD_CERT_PASSWORD", "topsecret", 1)
        defer { unsetenv("HERALD_CERT_PASSWORD") }
        let result = try await HeraldProcess.run(["push", Self.good, "--host", url, "--ca-file", ca, "--alert", "hi", "--cert", p12])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("accepted"))
        #expect(!result.stdout.contains("topsecret") && !result.stderr.contains("topsecret"))

        let wrong = try await HeraldProcess.run(["push", Self.good, "--host", url, "--ca-file", ca, "--alert", "hi", "--cert", p12, "--cert-password", "nope"])
        #expect(wrong.status == 2)
        #expect(wrong.stderrLines.count == 1)
        #expect(wrong.stderr.contains("wrong password"))
        #expect(!wrong.stderr.contains("nope"))
    }

    @Test("push without credentials, or with both kinds, is a usage error")
    func pushCredentialErrors() async throws {
        let none = try await HeraldProcess.run(["push", Self.good, "--sandbox", "--topic", "com.x", "--alert", "a"])
        #expect(none.status == 2)
        #expect(none.stderr.contains("sending needs credentials"))
        let both = try await HeraldProcess.run(["push", Self.good, "--sandbox", "--topic", "com.x", "--alert", "a", "--cert", "/dev/null"] + tokenAuth)
        #expect(both.status == 2)
        #expect(both.stderr.contains("not both"))
    }

    @Test("demo: the mock, the real client, scripted faults, every outcome as expected")
    func demo() async throws {
        let result = try await HeraldProcess.run(["demo", "--count", "3000"], timeout: .seconds(240))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("rejected    5 (BadDeviceToken 2, Unregistered 3)"))
        #expect(result.stdout.contains("accepted    2995"))
        #expect(result.stdout.contains("every notification got its expected outcome"))
    }

    @Test("demo --gateway --exit: the whole gateway imports, sends to a user, a tag and everyone, retires what APNs refused")
    func gatewayDemo() async throws {
        let result = try await HeraldProcess.run(["demo", "--gateway", "--exit", "--devices", "10000"], timeout: .seconds(240))
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        func line(_ prefix: String) -> String { lines.first { $0.hasPrefix(prefix) } ?? "no line \(prefix)" }
        #expect(line("imported ").contains("10000 devices with users and tags"))
        #expect(line("to user-21 ").contains("done: 2 targeted, 2 accepted"))
        // Every 10th device is tagged beta; every 200th uninstalled the app after the import.
        #expect(line("to tag beta ").contains("done: 1000 targeted, 950 accepted, rejected Unregistered 50"))
        // The 50 were retired, so everyone is 9,950; every 1000th (offset 7) has a bad token.
        #expect(line("to everyone ").contains("done: 9950 targeted, 9940 accepted, rejected BadDeviceToken 10"))
        #expect(line("devices ").contains("9940 active, 50 unregistered (Apple said gone), 10 invalid (Apple said bad)"))
        #expect(lines.contains("every notification got its expected outcome"))
        #if DEBUG
        #expect(result.stdout.contains("swift run -c release herald demo"), "a debug build says how to get real figures")
        #endif
    }

    @Test("bench reports rate, latency, CPU and memory as JSON")
    func bench() async throws {
        let result = try await HeraldProcess.run(["bench", "--count", "3000", "--connections", "2", "--concurrency", "50", "--output", "json"], timeout: .seconds(240))
        #expect(result.status == 0, "\(result.stderr)")
        let json = try JSONValue(parsing: result.stdout)
        #expect(json["accepted"] == 3000)
        #expect((json["rate"]?.doubleValue ?? 0) > 0)
        #expect((json["latency_ms"]?["p99"]?.doubleValue ?? 0) > 0)
        #expect((json["peak_memory_bytes"]?.intValue ?? 0) > 0)
        #expect((json["context_switches"]?.intValue ?? -1) >= 0)
        #if os(Linux)
        // CPU by thread group: the event loops' among them, none negative, together no more than
        // the process's (each group's figure counts whole clock ticks: 10 ms at most over).
        let threads = try #require(json["cpu_seconds_by_thread"]?.objectValue, "\(result.stdout)")
        #expect(threads.keys.contains { $0.hasPrefix("NIO-") }, "\(threads.keys.sorted())")
        let seconds = threads.values.map { $0.doubleValue ?? -1 }
        #expect(seconds.allSatisfy { $0 >= 0 })
        #expect(seconds.reduce(0, +) <= (json["cpu_seconds"]?.doubleValue ?? 0) + 0.01 * Double(threads.count))
        #endif
    }

    @Test("bench --devices takes a device per notification, and refuses a count it cannot hold")
    func benchDevices() async throws {
        // Each of the 2,000 notifications to a device of its own: the in-process mock accepts every one.
        let result = try await HeraldProcess.run(["bench", "--count", "2000", "--devices", "2000", "--output", "json"], timeout: .seconds(240))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try JSONValue(parsing: result.stdout)["accepted"] == 2000)
        for bad in ["0", "10000001"] {
            let refused = try await HeraldProcess.run(["bench", "--devices", bad])
            #expect(refused.status == 2)
            #expect(refused.stderr.contains("--devices must be from 1 to 10000000"), "\(refused.stderr)")
        }
    }

    @Test("mock usage errors exit 2 with one line")
    func mockErrors() async throws {
        let result = try await HeraldProcess.run(["mock", "--tls-cert", "/dev/null"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("--tls-cert and --tls-key go together"))
        let typo = try await HeraldProcess.run(["mock", "--fail", "\(Self.bad)=BadDeviceTokn"])
        #expect(typo.status == 2)
        #expect(typo.stderr.contains("'BadDeviceTokn' is not an APNs reason; use one of BadCollapseId, BadDeviceToken"), "\(typo.stderr)")
        let noAPNs = try await HeraldProcess.run(["mock", "--webpush-port", "0", "--fail", "\(Self.bad)=BadDeviceToken"])
        #expect(noAPNs.status == 2 && noAPNs.stderr.contains("--fail is for the APNs mock, which this command does not open; add --port"), "\(noAPNs.stderr)")
    }

    @Test(
        "as an unprivileged user (no capabilities, as systemd and containers run it): herald mock serves and herald push sends through it",
        .enabled("needs to run as root, to drop to uid 65534 with setpriv") { getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") }
    )
    func unprivileged() async throws {
        // The socket options of every connection must be ones a user may set (TCP_NODELAY at
        // IPPROTO_TCP; at SOL_SOCKET the same number is SO_DEBUG, which needs CAP_NET_ADMIN).
        let setpriv = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"]
        let shared = try ScratchDirectory()
        chmod(shared.path, 0o777)
        let publicKey = try shared.write("key.pub.pem", key.publicKey.pemRepresentation)
        let keyFile = try shared.write("AuthKey_\(key.keyID).p8", key.pemRepresentation)
        chmod(keyFile, 0o644)
        chmod(publicKey, 0o644)
        let ca = shared.path + "/mock-ca.pem"
        // The build's directory may be one the user cannot enter (CI's clone is in a 0700 temporary
        // directory): the binary is linked (or copied) into the shared one.
        let herald = shared.path + "/herald"
        do {
            try FileManager.default.linkItem(atPath: HeraldProcess.executable.path, toPath: herald)
        } catch {
            try FileManager.default.copyItem(atPath: HeraldProcess.executable.path, toPath: herald)
        }
        let launcher = setpriv + [herald]
        let mock = try BackgroundHerald(
            ["mock", "--port", "0", "--write-ca", ca, "--auth-key-public", "\(key.keyID)=\(publicKey)", "--team-id", key.teamID], launcher: launcher)
        defer { mock.terminate() }
        let url = try await mock.wait(for: #"https://127\.0\.0\.1:\d+"#)
        let output = try await runCommand(
            setpriv[0],
            Array(setpriv.dropFirst()) + [
                herald, "push", Self.good, "--host", url, "--ca-file", ca, "--topic", "com.example.app", "--alert", "Hi",
                "--auth-key", keyFile, "--key-id", key.keyID, "--team-id", key.teamID,
            ])
        #expect(output.standardOutput.contains("summary: 1 sent, 1 accepted"), "\(output.all)\n\(mock.text)")
        #expect(await mock.stop() == 0, "\(mock.text)")
    }

    @Test("herald mock --hms-port: a Push Kit mock alone, its client secret (0600) and service account written for a gateway's hms entry")
    func mockPushKit() async throws {
        let secret = files.path + "/hms-secret"
        let account = files.path + "/hms-account.json"
        let mock = try BackgroundHerald(["mock", "--hms-port", "0", "--hms-write-secret", secret, "--hms-write-service-account", account])
        defer { mock.terminate() }
        _ = try await mock.wait(for: "mock Push Kit listening on https://127.0.0.1:")
        #expect(!mock.text.contains("mock APNs"), "\(mock.text)")
        let written = try String(contentsOfFile: secret, encoding: .utf8)
        #expect(written.count >= 32 && !mock.text.contains(written), "the secret is in its file, not in the output")
        let attributes = try FileManager.default.attributesOfItem(atPath: secret)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let json = try JSONValue(parsing: Array(try Data(contentsOf: URL(fileURLWithPath: account))))
        #expect(json["project_id"]?.stringValue != nil && json["private_key"]?.stringValue?.contains("PRIVATE KEY") == true)
        #expect(await mock.stop() == 0)
        let alone = try await HeraldProcess.run(["mock", "--hms-write-secret", secret])
        #expect(alone.status == 2 && alone.stderr.contains("add --hms-port"), "\(alone.stderr)")
    }

    @Test("herald mock --auth-key-scope: a key scoped to the sandbox is refused by a production mock with BadEnvironmentKeyIdInToken; to a topic, elsewhere with TopicDisallowed")
    func mockKeyScopes() async throws {
        for (scope, reason) in [("sandbox", "BadEnvironmentKeyIdInToken"), ("com.example.other", "TopicDisallowed")] {
            let (mock, url, ca) = try await startMock(extra: ["--auth-key-scope", "\(key.keyID)=\(scope)"])
            defer { mock.terminate() }
            let result = try await HeraldProcess.run(
                ["push", Self.good, "--host", url, "--ca-file", ca, "--topic", "com.example.app", "--alert", "Hi"] + (try tokenAuth))
            #expect(result.status == 1 && result.stdout.contains(reason), "\(scope): \(result.stdout)\(result.stderr)")
            #expect(await mock.stop() == 0)
        }
        let unknown = try await HeraldProcess.run(["mock", "--auth-key-scope", "NOSUCHKEY1=sandbox"])
        #expect(unknown.status == 2 && unknown.stderr.contains("no --auth-key-public NOSUCHKEY1"), "\(unknown.stderr)")
    }

    @Test("herald mock opens only the services whose ports are given: two Web Push and FCM mocks run side by side; a port in use is one line")
    func mockServices() async throws {
        let first = try BackgroundHerald(["mock", "--webpush-port", "0", "--fcm-port", "0"])
        defer { first.terminate() }
        let second = try BackgroundHerald(["mock", "--webpush-port", "0", "--fcm-port", "0"])
        defer { second.terminate() }
        for mock in [first, second] {
            _ = try await mock.wait(for: "mock FCM listening on https://127.0.0.1:")
            #expect(mock.text.contains("mock Web Push listening on https://127.0.0.1:"))
            #expect(!mock.text.contains("mock APNs"), "no APNs mock was asked for: \(mock.text)")
        }
        // An APNs mock on a port another holds: what is wrong and what to do, not a system call's name.
        let apns = try BackgroundHerald(["mock", "--port", "0"])
        defer { apns.terminate() }
        let url = try await apns.wait(for: #"https://127\.0\.0\.1:\d+"#)
        let port = try #require(url.split(separator: ":").last.map(String.init))
        let taken = try await HeraldProcess.run(["mock", "--port", port])
        #expect(taken.status == 2, "\(taken.stderr)")
        #expect(taken.stderr.contains("--port cannot listen on 127.0.0.1:\(port): the address is already in use: stop what listens there, or pick another port (0 picks a free one)"), "\(taken.stderr)")
        #expect(!taken.stderr.contains("errno") && !taken.stderr.contains("bind("), "\(taken.stderr)")
        let stopped = (await first.stop(), await second.stop())
        #expect(stopped == (0, 0))
    }
}
