import Foundation
import HeraldCore
import HeraldFCMMock
import HeraldTestSupport
import Testing

/// `herald fcm send` end to end: the built binary as a subprocess against the mock FCM.
@Suite("herald fcm send", .timeLimit(.minutes(6)))
struct FCMCommandTests {
    static let token = "cli-device:APA91b" + String(repeating: "c", count: 50)

    /// Runs herald (``HeraldProcess``); returns its exit status and all it printed.
    static func herald(_ arguments: [String]) async -> (status: Int32, output: String) {
        do {
            let result = try await HeraldProcess.run(arguments)
            return (result.status, result.stdout + result.stderr)
        } catch {
            return (-1, "\(error)")
        }
    }

    @Test("a notification is accepted; an unregistered token exits 1 saying to forget it; bad input exits 2 naming the field; the key never printed")
    func send() async throws {
        try await withMockFCMServer { server in
            server.unregister("gone:APA91b")
            let scratch = try ScratchDirectory()
            let account = try scratch.write("sa.json", server.serviceAccountJSON)
            let ca = try scratch.write("ca.pem", server.certificateAuthorityPEM)
            let common = ["--service-account", account, "--endpoint", server.origin, "--ca-file", ca]

            let accepted = await Self.herald(
                ["fcm", "send", Self.token, "--title", "Hello", "--body", "from the CLI", "--data", "a=1", "--priority", "high", "--ttl", "30"] + common)
            #expect(accepted.status == 0 && accepted.output == "accepted: projects/herald-mock/messages/1\n", "\(accepted.output)")
            let message = try #require(server.received.first)
            #expect(message.title == "Hello" && message.body == "from the CLI" && message.data == ["a": "1"])
            #expect(message.message["android"] == ["priority": "high", "ttl": "30s"])

            let raw = await Self.herald(["fcm", "send", Self.token, "--message", #"{"data":{"n":2},"android":{"collapse_key":"k"}}"#] + common)
            #expect(raw.status == 0, "\(raw.output)")
            #expect(server.received.last?.data == ["n": "2"])

            let gone = await Self.herald(["fcm", "send", "gone:APA91b", "--title", "x"] + common)
            #expect(gone.status == 1 && gone.output.contains("UNREGISTERED") && gone.output.contains("forget it"), "\(gone.output)")

            let reserved = await Self.herald(["fcm", "send", Self.token, "--data", "from=x"] + common)
            #expect(reserved.status == 2 && reserved.output.contains("\"from\" is reserved"), "\(reserved.output)")
            let spaced = await Self.herald(["fcm", "send", "has space", "--title", "x"] + common)
            #expect(spaced.status == 2 && spaced.output.contains("message.token"), "\(spaced.output)")

            var broken = try JSONValue(parsing: server.serviceAccountJSON).objectValue ?? [:]
            broken["private_key"] = "-----BEGIN PRIVATE KEY-----\nMIIBroken\n-----END PRIVATE KEY-----\n"
            var writer = JSONWriter()
            writer.value(.object(broken))
            let brokenFile = try scratch.write("broken.json", writer.bytes)
            let brokenKey = await Self.herald(["fcm", "send", Self.token, "--title", "x", "--service-account", brokenFile, "--endpoint", server.origin])
            #expect(brokenKey.status == 2 && brokenKey.output.contains("private_key is not an RSA private key"), "\(brokenKey.output)")

            let pem = try #require(try JSONValue(parsing: server.serviceAccountJSON)["private_key"]?.stringValue)
            let material = pem.split(separator: "\n")[1]
            for run in [accepted, raw, gone, reserved, spaced, brokenKey] {
                #expect(!run.output.contains("ya29.") && !run.output.contains(material), "no access token, no key material")
            }
            #expect(server.receivedCount == 2 && server.tokenRequestCount == 3)
        }
    }
}
