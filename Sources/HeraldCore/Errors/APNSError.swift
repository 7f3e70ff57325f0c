#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A rejected notification: by APNs (status, reason, the 410 timestamp, the apns-id), or by Herald's
/// local validation before sending (the reason APNs would have given, and what was wrong).
public struct APNSError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Where the rejection came from.
    public enum Origin: Sendable, Hashable {
        /// APNs (or the server at the other end) answered with this error.
        case server
        /// Herald refused the notification before sending it, as APNs would have.
        case local
    }

    /// The APNs reason.
    public var reason: APNSReason
    /// The HTTP status: as received, or for a local rejection the status APNs gives this reason.
    public var status: Int?
    /// For 410: when APNs last confirmed the token was no longer valid (sent as milliseconds).
    public var timestamp: Date?
    /// The notification's apns-id as the server returned it (lower-cased), when known.
    public var apnsID: String?
    /// Where the rejection came from.
    public var origin: Origin
    /// What exactly was wrong, for local rejections and unparsable responses. Never holds secrets.
    public var detail: String?

    /// A rejection received from a server.
    public init(status: Int?, reason: APNSReason, timestamp: Date? = nil, apnsID: String? = nil, detail: String? = nil) {
        self.reason = reason
        self.status = status
        self.timestamp = timestamp
        self.apnsID = apnsID?.lowercased()
        self.origin = .server
        self.detail = detail
    }

    /// A local rejection: what APNs would have said, and why.
    public init(local reason: APNSReason, _ detail: String) {
        self.reason = reason
        self.status = reason.status
        self.timestamp = nil
        self.apnsID = nil
        self.origin = .local
        self.detail = detail
    }

    /// Parses an APNs error response: `{"reason":"…"}`, and for 410 `"timestamp"` in milliseconds
    /// since the epoch (apns-spec §1.6). A body that is not such JSON still yields an error, with
    /// the reason implied by the status where there is one.
    ///
    /// What the server sent is checked here, where it is parsed: a timestamp that is not a time
    /// between 1970 and 9999 is dropped (and said so in ``detail``), an unknown reason is kept
    /// with its control characters escaped and cut at 128 characters, and an apns-id that is not
    /// a UUID likewise, so nothing a server sends can crash a printer or reach a terminal raw.
    public init(status: Int, responseBody: some Collection<UInt8>, apnsID: String? = nil) {
        let json = try? JSONValue(parsing: responseBody)
        var timestamp: Date?
        var detail: String?
        if let value = json?["timestamp"] {
            timestamp = (value.doubleValue ?? value.stringValue.flatMap(Double.init)).flatMap(Self.date(milliseconds:))
            if timestamp == nil { detail = "the timestamp is not a time from 1970 to 9999 and was ignored" }
        }
        let apnsID = apnsID.map(Self.sanitizedID)
        if let text = json?["reason"]?.stringValue {
            var reason = APNSReason(rawValue: text)
            if case .unknown(let unknown) = reason, unknown.utf8.count > 128 || !PeerText.isSafe(unknown) {
                reason = .unknown(PeerText(unknown, limit: 128).description)
            }
            self.init(status: status, reason: reason, timestamp: timestamp, apnsID: apnsID, detail: detail)
        } else {
            let missing = responseBody.isEmpty ? "empty response body" : "response body has no reason"
            self.init(
                status: status, reason: Self.impliedReason(status: status), timestamp: timestamp, apnsID: apnsID,
                detail: detail.map { missing + "; " + $0 } ?? missing
            )
        }
    }

    /// The latest time a timestamp may name: 9999-12-31T23:59:59.999Z, in milliseconds.
    static let latestTimestamp = 253_402_300_799_999.0

    /// A time from milliseconds since the epoch, if it is one between 1970 and 9999.
    static func date(milliseconds: Double) -> Date? {
        guard milliseconds.isFinite, milliseconds >= 0, milliseconds <= latestTimestamp else { return nil }
        return Date(timeIntervalSince1970: milliseconds / 1000)
    }

    /// An apns-id as a server sent it: a UUID in lower case, or the text made safe to print.
    static func sanitizedID(_ text: String) -> String {
        if let uuid = UUID(uuidString: text) { return uuid.uuidString.lowercased() }
        return PeerText(text, limit: 64).description
    }

    /// ``timestamp`` in milliseconds since the epoch, as APNs sends it (`nil` for a time no
    /// integer can hold, which a parsed response never has).
    public var timestampMilliseconds: Int? {
        guard let milliseconds = timestamp.map({ ($0.timeIntervalSince1970 * 1000).rounded() }),
            milliseconds.isFinite, milliseconds.magnitude < 9e15
        else { return nil }
        return Int(milliseconds)
    }

    /// What to do next. Unknown reasons fall back on the status: 5xx with back-off, 429 after a delay.
    public var retry: RetryAdvice {
        guard case .unknown = reason else { return reason.retry }
        switch status {
        case .some(500...599): return .withBackoff
        case .some(429): return .afterDelay
        default: return .afterFix
        }
    }

    /// Whether sending the same notification again can succeed.
    public var isRetryable: Bool { retry.isRetryable }

    public var description: String {
        var text = reason.rawValue.isEmpty ? "unknown reason" : reason.rawValue
        if let status { text += " (\(status))" }
        if let detail { text += ": \(detail)" }
        if let timestamp { text += "; token invalid since \(timestamp.formatted(.iso8601))" }
        if let apnsID { text += " [apns-id \(apnsID)]" }
        return text
    }

    private static func impliedReason(status: Int) -> APNSReason {
        switch status {
        case 404: .badPath
        case 405: .methodNotAllowed
        case 413: .payloadTooLarge
        case 500: .internalServerError
        case 503: .serviceUnavailable
        default: .unknown("")
        }
    }
}
