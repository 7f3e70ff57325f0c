import HeraldAPNS
import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Prints one line per outcome of `herald push` (text, or JSON objects `{"token","status",
/// "apns_id","reason","timestamp"}`), keeps the counts, and prints the summary.
final class OutcomePrinter {
    private let format: OutputFormat
    private var tally = OutcomeTally()
    var total: Int { tally.total }
    var accepted: Int { tally.accepted }

    init(format: OutputFormat) {
        self.format = format
    }

    func print(_ outcome: APNSOutcome) {
        tally.add(outcome)
        let token = outcome.notification.token.hex
        switch format {
        case .text:
            switch outcome.result {
            case .accepted(let response):
                var line = "\(token) accepted apns-id=\(response.apnsID)"
                if let unique = response.apnsUniqueID { line += " apns-unique-id=\(unique)" }
                Terminal.line(line)
            case .rejected(let error):
                var line = "\(token) rejected \(error.status.map(String.init) ?? "-") \(error.reason.rawValue)"
                if let timestamp = error.timestamp { line += " since \(timestamp.formatted(.iso8601))" }
                if let detail = error.detail { line += ": \(detail)" }
                if let apnsID = error.apnsID { line += " apns-id=\(apnsID)" }
                Terminal.line(line)
            case .failed(let error):
                Terminal.line("\(token) failed \(error.code): \(error.message)")
            }
        case .json:
            var writer = JSONWriter(capacity: 160)
            writer.beginObject()
            writer.key("token")
            writer.string(token)
            switch outcome.result {
            case .accepted(let response):
                writer.key("status"); writer.int(200)
                writer.key("apns_id"); writer.string(response.apnsID)
                if let unique = response.apnsUniqueID { writer.key("apns_unique_id"); writer.string(unique) }
                writer.key("reason"); writer.null()
                writer.key("timestamp"); writer.null()
            case .rejected(let error):
                writer.key("status")
                if let status = error.status { writer.int(status) } else { writer.null() }
                writer.key("apns_id")
                if let apnsID = error.apnsID { writer.string(apnsID) } else { writer.null() }
                writer.key("reason"); writer.string(error.reason.rawValue)
                writer.key("timestamp")
                // Milliseconds since the epoch, as APNs sends it (apns-spec §1.6).
                if let milliseconds = error.timestampMilliseconds { writer.int(milliseconds) } else { writer.null() }
                if let detail = error.detail { writer.key("detail"); writer.string(detail) }
            case .failed(let error):
                writer.key("status"); writer.null()
                writer.key("apns_id"); writer.null()
                writer.key("reason"); writer.string(error.code.description)
                writer.key("timestamp"); writer.null()
                writer.key("detail"); writer.string(error.message)
            }
            writer.key("attempts"); writer.int(outcome.attempts)
            writer.endObject()
            Terminal.line(bytes: writer.bytes)
        }
    }

    /// The summary and the exit status; see ``OutcomeTally/finish(badTokens:format:retriesLabel:)``.
    func finish(badTokens: Int) throws {
        try tally.finish(badTokens: badTokens, format: format)
    }
}
