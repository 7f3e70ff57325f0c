import Foundation
import HeraldTestSupport
import HeraldCore
import Testing

@Suite("herald mock --legacy-port, legacy push, feedback and bench, end to end", .timeLimit(.minutes(6)))
struct LegacyCommandsTests {
    let files: ScratchDirectory

    init() throws {
        files = try ScratchDirectory()
    }

    static let good = String(repeating: "a1", count: 32)
    static let gone = String(repeating: "b2", count: 32)
    static let tooBig = String(repeating: "c3", count: 32)
    static let reported = String(repeating: "d4", count: 32)

    struct Mock {
        var process: BackgroundHerald
        var gateway: String
        var feedback: String
        var ca: String
        var certificate: String
    }

    /// `herald mock` with the legacy gateway and feedback service, a push certificate for clients,
    /// one token gone (status 8), one answered with status 7 and one token on the feedback list.
    func startMock() async throws -> Mock {
        let ca = files.path + "/mock-ca.pem"
        let certificate = files.path + "/push.pem"
        let mock = try BackgroundHerald([
            "mock", "--port", "0", "--legacy-port", "0", "--feedback-port", "0", "--write-ca", ca, "--write-client-cert", certificate,
            "--unregistered", Self.gone, "--legacy-fail", "\(Self.tooBig)=7", "--feedback", "\(Self.reported)@1700000000",
        ])
        let gateway = try await mock.wait(for: #"legacy gateway listening on 127\.0\.0\.1:\d+"#).split(separator: " ").last.map(String.init)!
        let feedback = try await mock.wait(for: #"feedback service listening on 127\.0\.0\.1:\d+"#).split(separator: " ").last.map(String.init)!
        _ = try await mock.wait(for: "push certificate for com.example.app")
        return Mock(process: mock, gateway: gateway, feedback: feedback, ca: ca, certificate: certificate)
    }

    @Test("legacy push: one JSON object per token, status 8 marks the token for removal, exit 1 when some are rejected")
    func pushJSON() async throws {
        let mock = try await startMock()
        defer { mock.process.terminate() }
        let result = try await HeraldProcess.run([
            "legacy", "push", Self.good, Self.gone, Self.tooBig, "--gateway", mock.gateway, "--ca-file", mock.ca, "--cert", mock.certificate,
            "--alert", "Hello", "--settle", "0.5", "--output", "json",
        ])
        #expect(result.status == 1, "\(result.stderr)")
        let lines = try result.stdoutLines.map { try JSONValue(parsing: $0) }
        let byToken = Dictionary(uniqueKeysWithValues: lines.compactMap { line in line["token"]?.stringValue.map { ($0, line) } })
        #expect(byToken.count == 3)
        #expect(byToken[Self.good]?["result"] == "accepted")
        #expect(byToken[Self.good]?["status"] == .null)
        #expect(byToken[Self.gone]?["result"] == "rejected")
        #expect(byToken[Self.gone]?["status"] == 8)
        #expect(byToken[Self.gone]?["invalidates_token"] == true)
        #expect(byToken[Self.tooBig]?["status"] == 7)
        #expect(byToken[Self.tooBig]?["invalidates_token"] == false)
        // The gateway dropped what followed the failing notification; the client sent it again.
        #expect(byToken[Self.tooBig]?["attempts"] == 2)
        #expect(result.stderr.contains("summary: 3 sent, 1 accepted, 2 rejected"), "\(result.stderr)")

        #expect(await mock.process.stop() == 0)
        #expect(mock.process.text.contains("legacy gateway stopped: 1 accepted, 2 rejected"), "\(mock.process.text)")
    }

    @Test("legacy push exits 0 when every notification is accepted, with every command")
    func pushText() async throws {
        let mock = try await startMock()
        defer { mock.process.terminate() }
        let tokens = try files.write("tokens.txt", (1...40).map { String(format: "%064x", $0) }.joined(separator: "\n"))
        for command in ["0", "1", "2"] {
            let result = try await HeraldProcess.run([
                "legacy", "push", "--tokens-file", tokens, "--gateway", mock.gateway, "--ca-file", mock.ca, "--cert", mock.certificate,
                "--title", "T", "--body", "B", "--settle", "0.3", "--command", command,
            ])
            #expect(result.status == 0, "command \(command): \(result.stderr)")
            #expect(result.stdoutLines.filter { $0.hasSuffix(" accepted") && !$0.hasPrefix("summary") }.count == 40)
            #expect(result.stdoutLines.last == "summary: 40 sent, 40 accepted")
        }
        #expect(await mock.process.stop() == 0)
        #expect(mock.process.text.contains("legacy gateway stopped: 120 accepted, 0 rejected"), "\(mock.process.text)")
    }

    @Test("legacy usage errors: one line, exit 2", arguments: [
        (["legacy", "push", good, "--gateway", "127.0.0.1:1", "--alert", "a"], "needs a certificate"),
        (["legacy", "push", good, "--alert", "a", "--cert", "/dev/null"], "--gateway"),
        (["legacy", "push", good, "--gateway", "nope", "--alert", "a", "--cert", "/dev/null"], "HOST:PORT"),
        (["legacy", "push", good, "--gateway", "127.0.0.1:1", "--alert", "a", "--cert", "/nonexistent.pem"], "/nonexistent.pem"),
        (["legacy", "feedback", "--server", "127.0.0.1:1"], "needs the push certificate"),
        (["legacy", "push", good, "--gateway", "127.0.0.1:1", "--alert", "a", "--cert", "/dev/null", "--settle", "1e300"], "--settle must be"),
        (["legacy", "feedback", "--server", "127.0.0.1:1", "--cert", "/dev/null", "--timeout", "nan"], "--timeout must be"),
        (["mock", "--feedback", good], "--feedback-port"),
        (["mock", "--legacy-fail", "\(good)=x"], "--legacy-fail takes TOKEN=STATUS"),
        (["mock", "--feedback-port", "0", "--feedback", "\(good)@yesterday"], "UNIX time"),
    ])
    func usageErrors(arguments: [String], message: String) async throws {
        let result = try await HeraldProcess.run(arguments)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderrLines.count == 1, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }

    @Test("a token that is not 32 bytes is reported on one line, the others are sent; exit 2")
    func shortToken() async throws {
        let mock = try await startMock()
        defer { mock.process.terminate() }
        let result = try await HeraldProcess.run([
            "legacy", "push", Self.good, "abcd", "--gateway", mock.gateway, "--ca-file", mock.ca, "--cert", mock.certificate, "--alert", "a", "--settle", "0.3",
        ])
        #expect(result.status == 2)
        #expect(result.stdoutLines.first == "\(Self.good) accepted")
        #expect(result.stderr.contains("argument 2"), "\(result.stderr)")
        #expect(result.stderr.contains("32-byte tokens"), "\(result.stderr)")
    }

    @Test("legacy feedback prints TIMESTAMP TOKEN lines; the list is empty once read")
    func feedback() async throws {
        let mock = try await startMock()
        defer { mock.process.terminate() }
        let arguments = ["legacy", "feedback", "--server", mock.feedback, "--ca-file", mock.ca, "--cert", mock.certificate]
        let first = try await HeraldProcess.run(arguments)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdoutLines == ["2023-11-14T22:13:20Z \(Self.reported)"])
        let second = try await HeraldProcess.run(arguments + ["--output", "json"])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdoutLines.isEmpty)
        #expect(second.stderr.contains("feedback: 0 tokens"))
    }

    @Test("the feedback service refuses a connection without the push certificate")
    func feedbackNeedsTheCertificate() async throws {
        let mock = try await startMock()
        defer { mock.process.terminate() }
        let stranger = files.path + "/stranger.pem"
        let other = try BackgroundHerald(["mock", "--port", "0", "--write-ca", files.path + "/other-ca.pem", "--write-client-cert", stranger])
        _ = try await other.wait(for: "push certificate for")
        await other.stop()
        let result = try await HeraldProcess.run(["legacy", "feedback", "--server", mock.feedback, "--ca-file", mock.ca, "--cert", stranger, "--timeout", "10"])
        #expect(result.status == 1, "\(result.stdout) \(result.stderr)")
        #expect(result.stdoutLines.isEmpty)
        #expect(!result.stderr.isEmpty)
    }

    @Test("legacy bench reports accepted notifications and a rate as JSON")
    func bench() async throws {
        let result = try await HeraldProcess.run(["legacy", "bench", "--count", "5000", "--output", "json"], timeout: .seconds(240))
        #expect(result.status == 0, "\(result.stderr)")
        let json = try JSONValue(parsing: result.stdout)
        #expect(json["accepted"] == 5000)
        #expect((json["rate"]?.doubleValue ?? 0) > 0)
    }
}
