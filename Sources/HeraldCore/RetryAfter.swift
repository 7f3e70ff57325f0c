/// HTTP's `Retry-After` (RFC 9110 §10.2.3), as the Web Push and FCM clients follow it.
package enum RetryAfter {
    /// `Retry-After` in seconds: a whole number (an HTTP-date is not followed: the back-off
    /// applies); `nil` for anything else.
    package static func seconds(_ value: String) -> Int? {
        let trimmed = value.utf8.drop(while: isSpace).reversed().drop(while: isSpace)
        guard !trimmed.isEmpty, trimmed.count <= 9, trimmed.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return Int(String(decoding: trimmed.reversed(), as: UTF8.self))
    }

    /// The server's `Retry-After` (whole seconds), cut to `ceilingSeconds`; `nil` without one:
    /// what a client reports with a failure, so its caller waits as long before trying again.
    package static func asked(_ header: String?, ceilingSeconds: Int) -> Duration? {
        header.flatMap(seconds).map { Duration.seconds(min($0, max(0, ceilingSeconds))) }
    }

    /// The wait before a retry: the server's `Retry-After`, cut to `ceilingSeconds`, but never
    /// less than the back-off's `backoff`; the back-off alone without one.
    package static func delay(_ header: String?, backoff: Duration, ceilingSeconds: Int) -> Duration {
        let asked = header.flatMap(seconds).map { Duration.seconds(min($0, max(0, ceilingSeconds))) }
        return max(asked ?? backoff, backoff)
    }

    private static func isSpace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
}
