/// Something the mock FCM does instead of (or before) accepting a message that passed every
/// check, scripted with ``MockFCMServer/script(_:for:)`` for one registration token or
/// ``MockFCMServer/scriptAll(_:)`` for every message.
///
/// Faults with `times` apply to that many requests, then are spent; the others apply to every
/// request until ``MockFCMServer/clearScripts()``. A token's own faults come before the global
/// ones, each list in the order it was scripted; one request meets at most one fault.
public enum MockFCMFault: Sendable, Hashable {
    /// 404 `NOT_FOUND` with `FcmError` `UNREGISTERED`: the app instance is gone. Every request.
    case unregistered
    /// 400 `INVALID_ARGUMENT` with `FcmError` `INVALID_ARGUMENT`: FCM calls the token malformed. Every request.
    case invalidToken
    /// 403 `PERMISSION_DENIED` with `FcmError` `SENDER_ID_MISMATCH`. Every request.
    case senderIDMismatch
    /// 401 `UNAUTHENTICATED` with `FcmError` `THIRD_PARTY_AUTH_ERROR` (FCM's APNs credentials are
    /// wrong). Every request.
    case thirdPartyAuthError
    /// 429 `RESOURCE_EXHAUSTED` with `FcmError` `QUOTA_EXCEEDED`, with `Retry-After` when
    /// `retryAfterSeconds` is given, for the next `times` requests.
    case quotaExceeded(retryAfterSeconds: Int?, times: Int)
    /// 503 `UNAVAILABLE` with `FcmError` `UNAVAILABLE`, for the next `times` requests.
    case unavailable(times: Int)
    /// 500 `INTERNAL` with `FcmError` `INTERNAL`, for the next `times` requests.
    case internalError(times: Int)
    /// Waits, then goes on as if nothing was scripted, for the next `times` requests.
    case delay(Duration, times: Int)
    /// Answers `status` with `body` as it is, for the next `times` requests: a hostile or broken
    /// server (a huge body, not JSON). A status outside 100...599 is answered as 500.
    case answer(status: Int, body: [UInt8], times: Int)
    /// Lets `afterRequests` requests pass, then ends the next one's connection as a server
    /// going down for maintenance does: GOAWAY with `NO_ERROR` whose last stream ID is the last
    /// one answered (RFC 9113 §6.8), so that request and any later ones on that connection are
    /// not processed; the client sends them again on another. What was started below it is
    /// still answered, then the connection closes. Once. HTTP/1.1 has no GOAWAY: there the
    /// request is answered 503 `UNAVAILABLE` with `connection: close`, not processed either.
    case goAway(afterRequests: Int)

    /// How many requests it applies to; `nil`: every request.
    var times: Int? {
        switch self {
        case .unregistered, .invalidToken, .senderIDMismatch, .thirdPartyAuthError: nil
        case .quotaExceeded(_, let times), .unavailable(let times), .internalError(let times), .delay(_, let times), .answer(_, _, let times): times
        case .goAway: 1
        }
    }

    /// Requests it lets pass before it applies.
    var passes: Int {
        if case .goAway(let afterRequests) = self { return max(0, afterRequests) }
        return 0
    }
}
