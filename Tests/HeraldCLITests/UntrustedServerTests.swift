import Foundation
import HeraldAPNSMock
import HeraldCore
import HeraldFCMMock
import HeraldTestSupport
import HeraldWebPushMock
import Testing

/// A push service whose certificate the client does not trust: every sending command stops at
/// the first attempt (another cannot mend it) and says which flag supplies a CA, with no TLS
/// library's dump. The mocks' CAs are not given, so their certificates are not trusted.
@Suite("Sending to a server whose certificate is not trusted", .timeLimit(.minutes(4)))
struct UntrustedServerTests {
    static let token = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

    /// What was printed, checked alike for every command: one hint, no BoringSSL text.
    static func expectAdvice(_ result: HeraldProcess.Result, _ command: String) {
        let output = result.stdout + result.stderr
        #expect(result.status == 1, "\(command): \(output)")
        #expect(output.contains("is not trusted"), "\(command): \(output)")
        #expect(output.contains("--ca-file FILE.pem"), "\(command): \(output)")
        #expect(!output.contains("BoringSSL") && !output.contains("OPENSSL_internal"), "\(command): \(output)")
    }

    @Test("herald webpush send: not retried, one line naming --ca-file")
    func webPush() async throws {
        try await withMockWebPushServer { server in
            let scratch = try ScratchDirectory()
            var writer = JSONWriter()
            writer.value(server.subscribe().json)
            let subscription = try scratch.write("subscription.json", writer.bytes)
            let key = scratch.file("vapid.pem")
            #expect(try await HeraldProcess.run(["webpush", "keygen", "--out", key]).status == 0)
            let result = try await HeraldProcess.run([
                "webpush", "send", "--subscription", subscription, "--vapid-key", key, "--subject", "mailto:ops@example.com",
                "--payload", "hello", "--allow-private-addresses",
            ])
            Self.expectAdvice(result, "webpush send")
            #expect(!(result.stdout + result.stderr).contains("attempts"), "one attempt: \(result.stderr)")
            #expect(server.requestCount == 0)
        }
    }

    @Test("herald fcm send: the token endpoint's certificate not trusted stops it at once, naming --ca-file")
    func fcm() async throws {
        try await withMockFCMServer { server in
            let scratch = try ScratchDirectory()
            let account = try scratch.write("sa.json", server.serviceAccountJSON)
            let result = try await HeraldProcess.run([
                "fcm", "send", "device:APA91b" + String(repeating: "c", count: 50), "--title", "x", "--service-account", account, "--endpoint", server.origin,
            ])
            Self.expectAdvice(result, "fcm send")
            #expect(server.receivedCount == 0 && server.tokenRequestCount == 0)
        }
    }

    @Test("herald push: tlsFailed in the summary, then the hint")
    func apns() async throws {
        try await withMockAPNSServer { server in
            let scratch = try ScratchDirectory()
            let key = ProviderKey.generate()
            let keyFile = try scratch.write("AuthKey_\(key.keyID).p8", key.pemRepresentation)
            let result = try await HeraldProcess.run([
                "push", Self.token, "--host", server.url, "--topic", "com.example.app", "--alert", "Hi",
                "--auth-key", keyFile, "--key-id", key.keyID, "--team-id", key.teamID,
            ])
            Self.expectAdvice(result, "push")
            #expect(result.stdout.contains("failed tlsFailed"), "\(result.stdout)")
            #expect(server.requestCount == 0)
        }
    }
}
