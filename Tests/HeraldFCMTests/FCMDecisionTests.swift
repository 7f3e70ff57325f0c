import HeraldCore
@testable import HeraldFCM
import Testing

/// Every answer FCM gives, as a value: what the client does with it.
@Suite("FCM answers as decisions", .timeLimit(.minutes(6)))
struct FCMDecisionTests {
    static let policy = FCMRetryPolicy(maximumAttempts: 3, backoff: Backoff(initial: .seconds(1), maximum: .seconds(8)), maximumRetryAfterSeconds: 60)

    /// Google's error JSON, with an `FcmError` detail when `errorCode` is given and a
    /// `BadRequest` when `field` is.
    static func googleError(_ code: Int, _ status: String, errorCode: String? = nil, field: String? = nil, message: String = "why") -> String {
        var details: [String] = []
        if let errorCode { details.append(#"{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#(errorCode)"}"#) }
        if let field {
            details.append(#"{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"\#(field)","description":"bad"}]}"#)
        }
        return #"{"error":{"code":\#(code),"message":"\#(message)","status":"\#(status)","details":[\#(details.joined(separator: ","))]}}"#
    }

    static func decide(_ status: Int, _ body: String = "", retryAfter: String? = nil, attempts: Int = 1, refreshed: Bool = false) -> FCMDecision {
        FCMDecision.decide(.answered(status: status, retryAfter: retryAfter, body: Array(body.utf8)), attempts: attempts, refreshed: refreshed, policy: policy, random: 0)
    }

    static func failure(_ decision: FCMDecision) -> FCMSendError? {
        if case .fail(let error) = decision { return error }
        return nil
    }

    @Test("a 200's message name is read as it is when plain, and through the JSON parser (escaped, bounded) otherwise")
    func acceptedNames() {
        func name(_ text: String) -> String?? {
            guard case .accepted(let name) = FCMDecision.decide(.answered(status: 200, retryAfter: nil, body: Array(text.utf8)), attempts: 1, refreshed: false, policy: .default, random: 0.5) else { return .none }
            return .some(name)
        }
        #expect(name(#"{"name": "projects/p/messages/0:123%abc"}"#) == .some("projects/p/messages/0:123%abc"), "not plain: parsed, the same")
        #expect(name(#"{"name":"projects/p/messages/0:1234"}"#) == .some("projects/p/messages/0:1234"))
        #expect(name(" {\n  \"name\": \"projects/p/messages/1\"\n}\n") == .some("projects/p/messages/1"))
        #expect(FCMDecision.plainName(Array(#"{"name": "a\u0041"}"#.utf8)) == nil && name(#"{"name": "a\u0041"}"#) == .some("aA"))
        #expect(FCMDecision.plainName(Array(#"{"name": "x", "more": 1}"#.utf8)) == nil && name(#"{"name": "x", "more": 1}"#) == .some("x"))
        #expect(FCMDecision.plainName(Array(("{\"name\": \"" + String(repeating: "a", count: 201) + "\"}").utf8)) == nil)
        #expect(FCMDecision.plainName(Array(#"{"name": ""}"#.utf8)) == nil && FCMDecision.plainName([]) == nil)
        #expect(name("not json") == .some(nil))
    }

    @Test("200 is accepted with FCM's message name")
    func accepted() {
        #expect(Self.decide(200, #"{"name":"projects/p/messages/0:123%abc"}"#) == .accepted(name: "projects/p/messages/0:123%abc"))
        #expect(Self.decide(200, "not json") == .accepted(name: nil))
    }

    /// One row per FCM error code (FCM HTTP v1 `ErrorCode`) and the statuses FCM pairs it with.
    struct Row: Sendable, CustomTestStringConvertible {
        var status: Int
        var googleStatus: String
        var errorCode: String?
        var field: String?
        var code: FCMSendError.Code
        var gone = false
        var tokenInvalid = false
        var testDescription: String { "\(status) \(errorCode ?? googleStatus)\(field.map { " field \($0)" } ?? "")" }
    }

    static let permanent: [Row] = [
        Row(status: 404, googleStatus: "NOT_FOUND", errorCode: "UNREGISTERED", code: .unregistered, gone: true),
        Row(status: 400, googleStatus: "INVALID_ARGUMENT", errorCode: "UNREGISTERED", code: .unregistered, gone: true),
        Row(status: 400, googleStatus: "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT", code: .invalidArgument, tokenInvalid: true),
        Row(status: 400, googleStatus: "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT", field: "message.android.ttl", code: .invalidArgument),
        Row(status: 400, googleStatus: "INVALID_ARGUMENT", field: "message.data[0].value", code: .invalidArgument),
        Row(status: 400, googleStatus: "INVALID_ARGUMENT", code: .invalidArgument),
        Row(status: 403, googleStatus: "PERMISSION_DENIED", errorCode: "SENDER_ID_MISMATCH", code: .senderIDMismatch, tokenInvalid: true),
        Row(status: 403, googleStatus: "PERMISSION_DENIED", code: .permissionDenied),
        Row(status: 401, googleStatus: "UNAUTHENTICATED", errorCode: "THIRD_PARTY_AUTH_ERROR", code: .thirdPartyAuthError),
        Row(status: 401, googleStatus: "UNAUTHENTICATED", errorCode: "APNS_AUTH_ERROR", code: .thirdPartyAuthError),
        Row(status: 404, googleStatus: "NOT_FOUND", code: .notFound),
        Row(status: 409, googleStatus: "ABORTED", code: .rejected),
    ]

    @Test("permanent answers: never retried, typed, with FCM's message and code; only UNREGISTERED is gone, only a token INVALID_ARGUMENT or SENDER_ID_MISMATCH is invalid", arguments: permanent)
    func permanentAnswers(row: Row) {
        let error = Self.failure(Self.decide(row.status, Self.googleError(row.status, row.googleStatus, errorCode: row.errorCode, field: row.field, message: "FCM says no")))
        #expect(error?.code == row.code)
        #expect(error?.isTokenGone == row.gone)
        #expect(error?.isTokenInvalid == row.tokenInvalid)
        #expect(error?.status == row.status && error?.reason == "FCM says no")
        #expect(error?.errorCode == (row.errorCode ?? row.googleStatus))
    }

    @Test("401 for the access token: one refresh and retry, then unauthenticated; THIRD_PARTY_AUTH_ERROR is never a refresh")
    func unauthenticated() {
        let expired = Self.googleError(401, "UNAUTHENTICATED")
        #expect(Self.decide(401, expired) == .refreshTokenAndRetry)
        #expect(Self.decide(401, "", attempts: 3) == .refreshTokenAndRetry, "a refresh is due even on the last attempt")
        #expect(Self.failure(Self.decide(401, expired, attempts: 2, refreshed: true))?.code == .unauthenticated)
        #expect(Self.failure(Self.decide(401, Self.googleError(401, "UNAUTHENTICATED", errorCode: "THIRD_PARTY_AUTH_ERROR")))?.code == .thirdPartyAuthError)
    }

    @Test("QUOTA_EXCEEDED (429) and UNAVAILABLE/INTERNAL (5xx): retried after Retry-After (capped) or the back-off, whichever is longer; then typed")
    func transient() {
        let quota = Self.googleError(429, "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED")
        #expect(Self.decide(429, quota, retryAfter: "5") == .retry(after: .seconds(5)))
        #expect(Self.decide(429, quota) == .retry(after: .seconds(1)), "no Retry-After: the back-off")
        #expect(Self.decide(429, quota, retryAfter: "0") == .retry(after: .seconds(1)), "never sooner than the back-off")
        #expect(Self.decide(429, quota, retryAfter: "86400") == .retry(after: .seconds(60)), "capped")
        #expect(Self.decide(429, quota, retryAfter: "Wed, 21 Oct 2026 07:28:00 GMT", attempts: 2) == .retry(after: .seconds(2)))
        #expect(Self.decide(503, Self.googleError(503, "UNAVAILABLE", errorCode: "UNAVAILABLE")) == .retry(after: .seconds(1)))
        #expect(Self.decide(500, Self.googleError(500, "INTERNAL", errorCode: "INTERNAL"), attempts: 2) == .retry(after: .seconds(2)))
        #expect(Self.decide(502, "<html>bad gateway</html>") == .retry(after: .seconds(1)))
        let lastQuota = Self.failure(Self.decide(429, quota, attempts: 3))
        #expect(lastQuota?.code == .quotaExceeded && lastQuota?.errorCode == "QUOTA_EXCEEDED" && lastQuota?.attempts == 3)
        #expect(Self.failure(Self.decide(503, Self.googleError(503, "UNAVAILABLE", errorCode: "UNAVAILABLE"), attempts: 3))?.code == .unavailable)
        #expect(Self.failure(Self.decide(500, Self.googleError(500, "INTERNAL", errorCode: "INTERNAL"), attempts: 3))?.code == .internal)
        #expect(Self.failure(Self.decide(502, "<html>bad gateway</html>", attempts: 3))?.reason == "<html>bad gateway</html>")
    }

    @Test("timeouts and unreachable servers are retried, then fail naming what happened")
    func noAnswer() {
        #expect(FCMDecision.decide(.timedOut, attempts: 1, refreshed: false, policy: Self.policy, random: 0) == .retry(after: .seconds(1)))
        #expect(Self.failure(FCMDecision.decide(.timedOut, attempts: 3, refreshed: false, policy: Self.policy, random: 0))?.code == .timedOut)
        let unreachable = Self.failure(FCMDecision.decide(.unreachable("FCM: connection refused"), attempts: 3, refreshed: false, policy: Self.policy, random: 0))
        #expect(unreachable?.code == .connectionFailed && unreachable?.reason == "FCM: connection refused")
        // A certificate not trusted: at the first attempt, never retried.
        let untrusted = Self.failure(FCMDecision.decide(.untrusted("FCM: not trusted"), attempts: 1, refreshed: false, policy: Self.policy, random: 0))
        #expect(untrusted?.code == .untrusted && untrusted?.attempts == 1)
    }

    @Test("a hostile body: control characters escaped, strings bounded, an oversized body not parsed")
    func hostileBodies() {
        let escaped = Self.failure(Self.decide(400, Self.googleError(400, "INVALID_ARGUMENT", message: #"evil\u001b[31m"#)))
        #expect(escaped?.reason == "evil\\u{1b}[31m")
        let long = Self.failure(Self.decide(400, Self.googleError(400, "INVALID_ARGUMENT", message: String(repeating: "x", count: 5000))))
        #expect((long?.reason.count ?? 0) <= 201)
        let huge = Self.googleError(404, "NOT_FOUND", errorCode: "UNREGISTERED", message: String(repeating: "y", count: FCMDecision.maximumBodyCount))
        let error = Self.failure(Self.decide(404, huge))
        #expect(error?.isTokenGone == false, "an oversized body is not read for its code: a 404 alone retires nothing")
        #expect((error?.reason.count ?? 0) <= 201)
    }
}
