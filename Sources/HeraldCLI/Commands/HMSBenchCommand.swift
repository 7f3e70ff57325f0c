import ArgumentParser
import Foundation
import HeraldCore
import HeraldFCMMock
import HeraldHMSMock

/// `herald bench hms`: Huawei Push Kit messages/s and CPU per message against the mock Push Kit,
/// beside Herald's FCM client sending as many to the mock FCM, in one run.
struct HMSBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hms",
        abstract: "Measure Huawei Push Kit sending (OAuth, HTTP/2) against the mock Push Kit, beside Herald's FCM client.",
        discussion: """
            Starts the mock Push Kit and the mock FCM in this process (TLS, HTTP/2 on 127.0.0.1, \
            records off). Herald's Push Kit client sends --count Android (v1) messages, one token \
            each (as FCM's messages are), over --tokens push tokens, --concurrency in flight; then \
            its FCM client sends as many to the mock FCM the same way, and it prints the Push Kit \
            ÷ FCM rate (the goal: at least 0.8). Both mocks check each request's bearer but \
            neither validates the message (validatesMessages off); their CPU is in the figures. \
            Then, with --batch above 0, the Push Kit client sends --count tokens again in \
            requests of --batch tokens each (Push Kit takes up to 1,000 a request: its natural \
            use), and prints tokens/s.
            """
    )

    @Option(help: "How many messages (one token each) Herald sends to Push Kit, and to FCM.")
    var count: Int = 20_000
    @Option(help: "How many push tokens (and FCM registration tokens) the messages are spread over.")
    var tokens: Int = 1000
    @Option(help: "The most HTTP/2 connections each client opens.")
    var connections: Int = 2
    @Option(help: "Messages (requests) in flight at once.")
    var concurrency: Int = 200
    @Option(help: "Tokens per request in the batched Push Kit run, 1 to 1,000 and at most --tokens (0: skip it).")
    var batch: Int = 100
    @Option(help: "Output format: text or json.")
    var output: OutputFormat = .text

    func validate() throws {
        guard count >= 1, tokens >= 1, connections >= 1, concurrency >= 1 else {
            throw ValidationError("--count, --tokens, --connections and --concurrency must be at least 1")
        }
        guard (0...1000).contains(batch), batch <= tokens else {
            throw ValidationError("--batch must be 0 to 1,000 and at most --tokens (a request names each token once)")
        }
    }

    func run() async throws {
        DemoCommand.noteDebugBench()
        var hmsMock = MockHMSServer.Configuration()
        hmsMock.maximumRecords = 0
        hmsMock.validatesMessages = false
        var fcmMock = MockFCMServer.Configuration()
        fcmMock.maximumRecords = 0
        fcmMock.validatesMessages = false
        let (hms, batched) = try await withMockHMSServer(configuration: hmsMock) { server in
            let hms = try await sendHMS(to: server)
            let batched = batch > 0 ? try await sendHMSBatched(to: server) : nil
            return (hms, batched)
        }
        let fcm = try await withMockFCMServer(configuration: fcmMock) { server in
            try await sendFCM(to: server)
        }
        let usage = ProcessStats.now()
        switch output {
        case .text:
            Terminal.line("herald bench hms: \(count) messages (one token each) to \(tokens) push tokens at the in-process mock Push Kit, \(connections) connection(s), \(concurrency) in flight")
            Terminal.line("hms         \(hms.summary(unit: "messages", mockIncluded: true)) (Android API v1, one token a request)")
            Terminal.line("fcm         \(fcm.summary(unit: "messages", mockIncluded: true))")
            Terminal.line("ratio       \(format(hms.ratio(to: fcm)))× FCM (goal ≥ 0.8)")
            if let batched {
                Terminal.line(
                    "hms batched accepted \(batched.accepted) tokens\(batched.failed > 0 ? ", failed \(batched.failed)" : "") in \(requests) requests of \(batch) tokens; "
                        + "\(Int(batched.rate)) tokens/s in \(format(batched.seconds)) s; cpu \(format(batched.cpuMicrosPerMessage)) µs per token"
                        + (batched.firstFailure.map { "; first failure: \($0)" } ?? ""))
            }
            Terminal.line("peak memory \(format(Double(usage.peakResidentBytes) / 1_048_576)) MiB")
            Terminal.line("note        both mocks check each bearer but neither validates messages; their CPU is in the figures")
        case .json:
            var writer = JSONWriter()
            writer.beginObject()
            writer.key("count"); writer.int(count)
            writer.key("tokens"); writer.int(tokens)
            writer.key("connections"); writer.int(connections)
            writer.key("concurrency"); writer.int(concurrency)
            writer.key("tokens_per_message"); writer.int(1)
            writer.key("hms"); hms.write(into: &writer)
            writer.key("fcm"); fcm.write(into: &writer)
            writer.key("hms_to_fcm"); writer.double(hms.ratio(to: fcm))
            writer.key("goal"); writer.double(0.8)
            if let batched {
                writer.key("hms_batched")
                writer.value(.object([
                    "tokens_per_request": .int(batch), "requests": .int(requests), "accepted_tokens": .int(batched.accepted),
                    "failed_tokens": .int(batched.failed), "seconds": .double(batched.seconds), "tokens_per_second": .double(batched.rate.rounded()),
                    "cpu_us_per_token": .double(batched.cpuMicrosPerMessage),
                ]))
            }
            writer.key("peak_memory_bytes"); writer.int(usage.peakResidentBytes)
            writer.endObject()
            Terminal.line(bytes: writer.bytes)
        }
        Terminal.flush()
        guard hms.accepted == count, fcm.accepted == count, batched.map({ $0.accepted == count }) ?? true else { throw ExitCode(1) }
    }

    /// Requests of the batched run: `count` tokens, `batch` a request.
    var requests: Int { batch > 0 ? (count + batch - 1) / batch : 0 }
}
