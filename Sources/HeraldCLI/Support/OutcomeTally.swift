import ArgumentParser

/// The counts behind a sending command's summary line, shared by `push` and `legacy push`.
struct OutcomeTally {
    var total = 0
    var accepted = 0
    /// Rejections by reason (HTTP/2) or status (legacy).
    var rejected: [String: Int] = [:]
    /// Failures by code.
    var failed: [String: Int] = [:]
    var retried = 0

    /// `summary: N sent, A accepted, R rejected (…), F failed (…)`: on stdout after text lines, on
    /// stderr after JSON lines (which stay pure JSON).
    func printSummary(badTokens: Int, format: OutputFormat, retriesLabel: String = "retries") {
        var parts = ["\(total) sent", "\(accepted) accepted"]
        let rejectedCount = rejected.values.reduce(0, +)
        if rejectedCount > 0 {
            parts.append("\(rejectedCount) rejected (" + rejected.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")")
        }
        let failedCount = failed.values.reduce(0, +)
        if failedCount > 0 {
            parts.append("\(failedCount) failed (" + failed.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")")
        }
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
