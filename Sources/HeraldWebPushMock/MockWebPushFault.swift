/// Something the mock push service does instead of (or before) accepting a push request that
/// passed every check, scripted with ``MockWebPushServer/script(_:for:)`` for one subscription or
/// ``MockWebPushServer/scriptAll(_:)`` for every request.
///
/// Faults with `times` apply to that many requests, then are spent; the others apply to every
/// request until ``MockWebPushServer/clearScripts()``. A subscription's own faults come before the
/// global ones, each list in the order it was scripted; one request meets at most one fault.
public enum MockWebPushFault: Sendable, Hashable {
    /// 410 `Unregistered`: the subscription is gone (the user revoked it). Every request.
    case gone
    /// 404 `NotFound`: no such subscription (RFC 8030 §7.3 uses 404 for an expired one). Every request.
    case notFound
    /// 429 `TooManyRequests` with `Retry-After: retryAfterSeconds`, for the next `times` requests.
    case tooManyRequests(retryAfterSeconds: Int, times: Int)
    /// `status` (5xx: 503 answers `ServiceUnavailable`, any other `InternalServerError`), for the
    /// next `times` requests.
    case serverError(status: Int, times: Int)
    /// 413 `PayloadTooLarge`, whatever the size. Every request.
    case tooLarge
    /// Waits, then goes on as if nothing was scripted, for the next `times` requests.
    case delay(Duration, times: Int)
    /// Answers `status` with `{"reason": reason}`, for the next `times` requests. A status outside
    /// 100...599 is answered as 500.
    case reject(status: Int, reason: String, times: Int)

    /// How many requests it applies to; `nil`: every request.
    var times: Int? {
        switch self {
        case .gone, .notFound, .tooLarge: nil
        case .tooManyRequests(_, let times), .serverError(_, let times), .delay(_, let times), .reject(_, _, let times): times
        }
    }
}
