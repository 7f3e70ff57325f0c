import Foundation
import HeraldCore
import HeraldHostilePeers
import HeraldTestSupport
import Testing

/// `herald push` against a server that sends what APNs never would: numbers out of range and
/// text with escape sequences. The command neither crashes nor lets the server write to the terminal.
@Suite("herald push against a hostile server", .timeLimit(.minutes(6)))
struct HostileServerCommandTests {
    static let forged = "\u{1B}[2K\r\u{1B}[32maaaa accepted apns-id=x\u{1B}[0m"

    /// Answers every request with 410, a timestamp of 1e300, and a reason with escape sequences.
    static func server() throws -> HostileHTTP2Server {
        try HostileHTTP2Server { event, writer in
            switch event {
            case .connected:
                writer.bytes.writeHTTP2Settings([(.maxConcurrentStreams, 100)])
            case .request(let request):
                let reason = forged.unicodeScalars.map { $0.value < 0x20 ? String(format: "\\u%04x", $0.value) : String($0) }.joined()
                writer.rejection(#"{"reason":"\#(reason)","timestamp":1e300}"#, status: 410, streamID: request.streamID, apnsID: "\u{1B}]0;title\u{7}")
            case .frame:
                break
            }
        }
    }

    @Test("JSON and text output: no crash, the timestamp null, nothing a terminal would act on", arguments: ["json", "text"])
    func hostileAnswers(format: String) async throws {
        let files = try ScratchDirectory()
        let server = try Self.server()
        let port = try await server.start()
        let ca = try files.write("ca.pem", server.authority.certificatePEM)
        let key = ProviderKey.generate()
        let keyFile = try files.write("AuthKey_\(key.keyID).p8", key.pemRepresentation)
        let token = String(repeating: "ab", count: 32)
        let result = try await HeraldProcess.run([
            "push", token, "--host", "https://127.0.0.1:\(port)", "--ca-file", ca, "--topic", "com.example.cli", "--alert", "Hi",
            "--auth-key", keyFile, "--key-id", key.keyID, "--team-id", key.teamID, "--output", format,
        ])
        #expect(result.status == 1, "rejected: \(result.stdout) \(result.stderr)")
        let output = result.stdout + result.stderr
        #expect(!output.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x0D }, "\(output.debugDescription)")
        if format == "json" {
            let line = try JSONValue(parsing: Array(result.stdoutLines.first!.utf8))
            #expect(line["timestamp"] == .null)
            #expect(line["status"] == 410)
            #expect(line["reason"]?.stringValue?.contains("accepted") == true)
        } else {
            #expect(result.stdout.contains("rejected 410"), "\(result.stdout)")
            #expect(!result.stdout.contains("since"), "no date is made up from the timestamp")
        }
        try await server.stop()
    }
}
