import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

/// `herald bench hms` end to end: the built binary as a subprocess, with its in-process mocks on
/// 127.0.0.1. Shapes and counts only: timings belong to the benchmark.
@Suite("herald bench hms", .timeLimit(.minutes(4)))
struct HMSBenchCommandTests {
    /// Runs herald under coreutils' `timeout`, so a hung run ends; throws if it exits non-zero
    /// (which it does when any message was not accepted).
    static func bench(_ arguments: [String]) async throws -> CommandOutput {
        try await runCommand("timeout", ["180", HeraldProcess.executable.path, "bench", "hms", "--count", "200"] + arguments)
    }

    @Test("text: every message accepted by the mock Push Kit and the mock FCM; rates, CPU per message, the ratio and the batched line printed")
    func text() async throws {
        let output = try await Self.bench([])
        let lines = output.standardOutput.split(separator: "\n").map(String.init)
        func line(_ prefix: String) -> String { lines.first { $0.hasPrefix(prefix) } ?? "" }
        #expect(line("herald bench hms: ").hasPrefix("herald bench hms: 200 messages (one token each) to 1000 push tokens at the in-process mock Push Kit"), "\(output.all)")
        #expect(line("hms ").contains("accepted 200; ") && line("hms ").contains(" messages/s in ") && line("hms ").contains(" µs per message"))
        #expect(line("hms ").hasSuffix("(Android API v1, one token a request)"))
        #expect(line("fcm ").contains("accepted 200; ") && line("fcm ").contains(" messages/s in "))
        #expect(lines.filter { $0.hasPrefix("ratio ") }.map { $0.split(separator: "×").last.map(String.init) ?? "" } == [" FCM (goal ≥ 0.8)"])
        #expect(line("hms batched ").hasPrefix("hms batched accepted 200 tokens in 2 requests of 100 tokens; ") && line("hms batched ").contains(" tokens/s in "))
        #expect(!output.all.contains("DQEDA-mock") && !output.all.contains("PRIVATE KEY"), "no access token, no key")
    }

    @Test("json: counts, rates, CPU and the ratio as one object; --batch 0 skips the batched run")
    func json() async throws {
        let output = try await Self.bench(["--output", "json", "--tokens", "7", "--concurrency", "50", "--batch", "0"])
        let json = try JSONValue(parsing: Array(output.standardOutput.utf8))
        #expect(json["count"] == 200 && json["tokens"] == 7 && json["concurrency"] == 50 && json["tokens_per_message"] == 1)
        for side in ["hms", "fcm"] {
            #expect(json[side]?["accepted"] == 200 && json[side]?["failed"] == 0, "\(side): \(output.all)")
            #expect((json[side]?["rate"]?.doubleValue ?? 0) > 0 && (json[side]?["cpu_us_per_message"]?.doubleValue ?? 0) > 0)
        }
        #expect((json["hms_to_fcm"]?.doubleValue ?? 0) > 0 && json["goal"]?.doubleValue == 0.8)
        #expect(json["hms_batched"] == nil)
    }

    @Test("json with a batch: tokens, requests and tokens per second")
    func batched() async throws {
        let output = try await Self.bench(["--output", "json", "--tokens", "50", "--batch", "30"])
        let json = try JSONValue(parsing: Array(output.standardOutput.utf8))
        let batched = json["hms_batched"]
        #expect(batched?["tokens_per_request"] == 30 && batched?["requests"] == 7, "\(output.all)")
        #expect(batched?["accepted_tokens"] == 200 && batched?["failed_tokens"] == 0)
        #expect((batched?["tokens_per_second"]?.doubleValue ?? 0) > 0 && (batched?["cpu_us_per_token"]?.doubleValue ?? 0) > 0)
    }

    @Test("a batch larger than the tokens is refused before anything is sent")
    func refusesBatchOverTokens() async throws {
        let failure = await #expect(throws: CommandFailed.self) {
            try await runCommand("timeout", ["60", HeraldProcess.executable.path, "bench", "hms", "--tokens", "10", "--batch", "20"])
        }
        #expect(failure?.description.contains("--batch must be 0 to 1,000 and at most --tokens") == true, "\(String(describing: failure))")
    }
}
