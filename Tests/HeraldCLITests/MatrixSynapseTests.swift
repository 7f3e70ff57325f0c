import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

/// `herald serve` as a real Synapse's push gateway (docs/matrix.md): Synapse, offline on SQLite,
/// pushes a room message through Herald to the APNs mock, and drops a pusher Herald rejects.
@Suite("herald serve as a Matrix push gateway for Synapse", .serialized, .timeLimit(.minutes(6)))
struct MatrixSynapseTests {
    static let synapse = PythonPeers.Module("synapse", package: "matrix-synapse==1.163.2")

    @Test("Synapse pushes a message through Herald to the device; a pushkey Herald rejects makes Synapse drop its pusher")
    func synapsePushes() async throws {
        try await PythonPeers.require(Self.synapse)
        let scratch = try ScratchDirectory()
        defer { withExtendedLifetime(scratch) {} }
        let setup = try await ServeCommandTests.Setup(database: "sqlite:" + scratch.file("matrix.db"), delay: .milliseconds(1))
        let text = String(decoding: try FileContents.read(setup.configFile), as: UTF8.self).replacingOccurrences(
            of: #""connections": 1,"#, with: #""connections": 1, "matrix": {"appIds": {"com.example.chat.ios": "apns"}},"#
        )
        _ = try setup.scratch.write("herald.json", text)
        let (herald, base) = try await setup.serve()
        let pushkey = ServeCommandTests.token(4242)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Matrix/synapse_test.py").path
        let message = "Ground control to Major Tom"
        let output: CommandOutput
        do {
            output = try await runCommand("python3", [
                script, "--notify-url", "\(base)/_matrix/push/v1/notify", "--app-id", "com.example.chat.ios", "--pushkey", pushkey,
                "--message", message, "--rejected-app-id", "org.example.unknown",
            ])
        } catch {
            Issue.record("\(error)\nherald said:\n\(herald.text.suffix(3000))")
            await herald.stop()
            try await setup.mock.shutdown()
            return
        }
        #expect(output.standardOutput.contains("rejected pusher removed"), "\(output.all)")
        let reached = await eventually(within: .seconds(30), every: .milliseconds(50)) {
            setup.mock.accepted.contains { $0.token == pushkey && String(decoding: $0.payload, as: UTF8.self).contains(message) }
        }
        #expect(reached, "the message reached the device: \(setup.mock.accepted.map { String(decoding: $0.payload, as: UTF8.self) })")
        let payload = try #require(setup.mock.accepted.first { $0.token == pushkey }.map { try JSONValue(parsing: $0.payload) })
        #expect(payload["aps"]?["alert"]?["title"] == "alice" && payload["aps"]?["alert"]?["subtitle"] == "Mission Control", "\(payload.jsonString)")
        #expect(payload["aps"]?["badge"]?.intValue != nil && payload["event_id"]?.stringValue?.hasPrefix("$") == true, "\(payload.jsonString)")
        #expect(await herald.stop() == 0)
        try await setup.mock.shutdown()
    }
}
