import ArgumentParser
import HeraldAPNS
import HeraldCore
import HeraldLegacy

/// The counts of a sending command (`push`, `legacy push`, `bench`, `legacy bench`, `demo`): by
/// result, rejections by reason or status, failures by code.
struct OutcomeTally {
    var total = 0
    var accepted = 0
    /// Rejections by reason (HTTP/2) or status (legacy).
    var rejected: [String: Int] = [:]
    /// Failures by code.
    var failed: [String: Int] = [:]
    var retried = 0

    var rejectedCount: Int { rejected.values.reduce(0, +) }
    var failedCount: Int { failed.values.reduce(0, +) }

    mutating func add(_ outcome: APNSOutcome) {
        total += 1
        retried += max(0, outcome.attempts - 1)
        switch outcome.result {
        case .accepted: accepted += 1
        case .rejected(let error): rejected[error.reason.rawValue, default: 0] += 1
        case .failed(let error): failed[error.code.description, default: 0] += 1
        }
    }

    mutating func add(_ outcome: LegacyOutcome) {
        total += 1
        retried += max(0, outcome.attempts - 1)
        switch outcome.result {
        case .accepted: accepted += 1
        case .rejected(let status): rejected[status.description, default: 0] += 1
        case .failed(let error): failed[error.code.description, default: 0] += 1
        }
    }

    /// `KEY N, KEY N`, sorted by key.
    static func breakdown(_ counts: [String: Int]) -> String {
        counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    }

    /// A benchmark's count lines: the totals, then one line per reason and per failure code.
    func printCounts() {
        Terminal.line("accepted \(accepted), rejected \(rejectedCount), failed \(failedCount)")
        for (reason, n) in rejected.sorted(by: { $0.key < $1.key }) { Terminal.line("  rejected \(reason): \(n)") }
        for (code, n) in failed.sorted(by: { $0.key < $1.key }) { Terminal.line("  failed \(code): \(n)") }
    }

    /// A benchmark's counts as JSON keys: `accepted`, `rejected` and `failed` (objects by key).
    func writeCounts(into writer: inout JSONWriter) {
        writer.key("accepted"); writer.int(accepted)
        writer.key("rejected"); writer.value(.object(rejected.mapValues { .int($0) }))
        writer.key("failed"); writer.value(.object(failed.mapValues { .int($0) }))
    }

    /// `summary: N sent, A accepted, R rejected (…), F failed (…)`: on stdout after text lines, on
    /// stderr after JSON lines (which stay pure JSON).
    func printSummary(badTokens: Int, format: OutputFormat, retriesLabel: String = "retries") {
        var parts = ["\(total) sent", "\(accepted) accepted"]
        if rejectedCount > 0 { parts.append("\(rejectedCount) rejected (\(Self.breakdown(rejected)))") }
        if failedCount > 0 { parts.append("\(failedCount) failed (\(Self.breakdown(failed)))") }
        if retried > 0 { parts.append("\(retried) \(retriesLabel)") }
        if badTokens > 0 { parts.append("\(badTokens) bad token\(badTokens == 1 ? "" : "s") skipped") }
        let line = "summary: " + parts.joined(separator: ", ")
        if format == .text {
            Terminal.line(line)
            Terminal.flush()
        } else {
            Terminal.flush()
            Terminal.error(line)
        }
        // A certificate not trusted fails every send the same way, and at once: say what mends it.
        if failed[APNSClientError.Code.tlsFailed.description] != nil { Terminal.error("TLS failed: " + CommandFailure.trustAdvice) }
    }

    /// Ends a sending command: the summary, then its exit status (0 all accepted, 1 some not,
    /// 2 when tokens were bad or there were none).
    func finish(badTokens: Int, format: OutputFormat, retriesLabel: String = "retries") throws {
        guard total + badTokens > 0 else {
            throw CommandFailure.usage("no device tokens: give them as arguments or with --tokens-file FILE")
        }
        printSummary(badTokens: badTokens, format: format, retriesLabel: retriesLabel)
        if badTokens > 0 { throw ExitCode(CommandFailure.usageStatus) }
        if accepted < total { throw ExitCode(1) }
    }
}
