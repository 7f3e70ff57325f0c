import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

/// `herald bench fcm` end to end: the built binary as a subprocess, with its in-process mocks on
/// 127.0.0.1 and firebase-admin in Python. Shapes and counts only: timings belong to the benchmark.
@Suite("herald bench fcm", .timeLimit(.minutes(6)))
struct FCMBenchCommandTests {
    /// Runs herald under coreutils' `timeout`, so a hung run ends; throws if it exits non-zero
    /// (which it does when any message was not accepted).
    static func bench(_ arguments: [String]) async throws -> CommandOutput {
        try await runCommand("timeout", ["240", HeraldProcess.executable.path, "bench", "fcm", "--count", "200", "--firebase-admin-count", "20"] + arguments)
    }

    @Test("text: every message accepted by the mock FCM, the mock APNs and firebase-admin; rates, CPU per message and both ratios printed")
    func text() async throws {
        try await PythonPeers.require(.firebaseAdmin)
        let output = try await Self.bench([])
        let lines = output.standardOutput.split(separator: "\n").map(String.init)
        func line(_ prefix: String) -> String { lines.first { $0.hasPrefix(prefix) } ?? "" }
        #expect(line("herald bench fcm: ").hasPrefix("herald bench fcm: 200 messages to 1000 registration tokens at the in-process mock FCM"))
        #expect(line("fcm ").contains("accepted 200; ") && line("fcm ").contains(" messages/s in ") && line("fcm ").contains(" µs per message"))
        #expect(line("apns ").contains("accepted 200; ") && line("apns ").contains(" notifications/s in "))
        #expect(line("firebase-admin ").hasPrefix("firebase-admin accepted 20; ") && line("firebase-admin ").contains(" messages/s in "), "\(output.all)")
        #expect(lines.filter { $0.hasPrefix("ratio ") }.map { $0.split(separator: "×").last.map(String.init) ?? "" } == [" APNs (goal ≥ 0.8)", " firebase-admin (goal ≥ 20)"])
        #expect(!output.all.contains("ya29.") && !output.all.contains("PRIVATE KEY"), "no access token, no key")
    }

    @Test("json: counts, rates, CPU and ratios as one object")
    func json() async throws {
        try await PythonPeers.require(.firebaseAdmin)
        let output = try await Self.bench(["--output", "json", "--tokens", "7", "--concurrency", "50"])
        let json = try JSONValue(parsing: Array(output.standardOutput.utf8))
        #expect(json["count"] == 200 && json["tokens"] == 7 && json["concurrency"] == 50 && json["mock"] == "in-process")
        for side in ["fcm", "apns"] {
            #expect(json[side]?["accepted"] == 200 && json[side]?["failed"] == 0, "\(side): \(output.all)")
            #expect((json[side]?["rate"]?.doubleValue ?? 0) > 0 && (json[side]?["cpu_us_per_message"]?.doubleValue ?? 0) > 0)
        }
        #expect(json["firebase_admin"]?["accepted"] == 20 && json["firebase_admin"]?["failed"] == 0)
        #expect((json["fcm_to_apns"]?.doubleValue ?? 0) > 0 && (json["herald_to_firebase_admin"]?.doubleValue ?? 0) > 0)
    }
}
