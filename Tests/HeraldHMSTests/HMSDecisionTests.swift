import HeraldCore
@testable import HeraldHMS
import Testing

/// Every answer Push Kit gives, as a value: what the client does with it.
@Suite("Push Kit answers as decisions", .timeLimit(.minutes(2)))
struct HMSDecisionTests {
    static let policy = HMSRetryPolicy(maximumAttempts: 3, backoff: Backoff(initial: .seconds(1), maximum: .seconds(8), jitter: 0), maximumRetryAfterSeconds: 60)
    static let tokens = ["tokenA", "tokenB", "tokenC"]

    static func body(_ code: String, _ message: String = "why") -> [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("code")
        writer.string(code)
        writer.key("msg")
        writer.string(message)
        writer.key("requestId")
        writer.string("r1")
        writer.endObject()
        return writer.bytes
    }

    static func decide(_ status: Int, _ body: [UInt8], retryAfter: String? = nil, attempts: Int = 1, refreshed: Bool = false) -> HMSDecision {
        HMSDecision.decide(
            .answered(status: status, retryAfter: retryAfter, body: body), tokens: tokens, attempts: attempts, refreshed: refreshed, policy: policy, random: 0.5)
    }

    static func code(of decision: HMSDecision) -> HMSSendError.Code? {
        if case .fail(let error) = decision { return error.code }
        return nil
    }

    @Test("80000000 is accepted with its request id")
    func success() {
        #expect(Self.decide(200, Self.body("80000000", "Success")) == .accepted(requestID: "r1", failedTokens: [], failureCount: 0))
    }

    @Test("80100000 is accepted, naming the failed tokens of the request only (v1 and v3 shapes)")
    func partialSuccess() {
        let v1 = Self.decide(200, Self.body("80100000", #"{"success":2,"failure":2,"illegal_tokens":["tokenB","notSent"]}"#))
        #expect(v1 == .accepted(requestID: "r1", failedTokens: [HMSFailedToken(token: "tokenB", isTokenInvalid: true)], failureCount: 2))
        let v3 = Self.decide(
            200, Self.body("80100000", #"{"failure":2,"illegalTokens":{"tokenFormatError":["tokenA"],"noPushTypeRight":["tokenC"]}}"#))
        #expect(
            v3
                == .accepted(
                    requestID: "r1",
                    failedTokens: [
                        HMSFailedToken(token: "tokenC", reason: "noPushTypeRight", isTokenInvalid: false),
                        HMSFailedToken(token: "tokenA", reason: "tokenFormatError", isTokenInvalid: true),
                    ], failureCount: 2))
        // An unparseable msg: accepted, nothing named.
        #expect(Self.decide(200, Self.body("80100000", "partly")) == .accepted(requestID: "r1", failedTokens: [], failureCount: 0))
    }

    @Test("80300007 fails naming every token invalid, or those the msg names")
    func allInvalid() throws {
        guard case .fail(let error) = Self.decide(400, Self.body("80300007", "All the tokens are invalid")) else { Issue.record("not a failure"); return }
        #expect(error.code == .allTokensInvalid && error.failedTokens.map(\.token) == Self.tokens && error.isTokenInvalid)
        guard case .fail(let named) = Self.decide(200, Self.body("80300007", #"{"failure":1,"illegalTokens":{"noRight":["tokenA"]}}"#)) else {
            Issue.record("not a failure")
            return
        }
        #expect(named.failedTokens == [HMSFailedToken(token: "tokenA", reason: "noRight", isTokenInvalid: true)])
    }

    @Test("every documented failure code is its own value", arguments: [
        ("80100001", HMSSendError.Code.invalidParameter), ("80100003", .invalidMessage), ("80100004", .expired), ("80100013", .invalidCollapseKey),
        ("80100016", .sensitiveContent), ("80100018", .reviewMismatch), ("80300002", .noPermission), ("80300008", .messageTooBig),
        ("80300010", .tooManyTokens), ("80300011", .noHighPriorityPermission), ("80300013", .invalidReceipt), ("80999999", .rejected),
    ])
    func failures(code: String, expected: HMSSendError.Code) {
        let decision = Self.decide(400, Self.body(code))
        #expect(Self.code(of: decision) == expected)
        if case .fail(let error) = decision {
            #expect(error.resultCode == code && error.status == 400 && error.failedTokens.isEmpty && error.reason == "why")
        }
    }

    @Test("a refused bearer gets one fresh one, then fails", arguments: ["80200001", "80200003", "80200005", "80600003"])
    func refresh(code: String) {
        #expect(Self.decide(401, Self.body(code)) == .refreshTokenAndRetry)
        let after = Self.code(of: Self.decide(401, Self.body(code), refreshed: true))
        #expect(after == (code == "80600003" ? .oauthFailed : .unauthenticated))
        #expect(Self.decide(401, []) == .refreshTokenAndRetry)
    }

    @Test("429 and 503 are retried after Retry-After, or the back-off; then rate limited")
    func rateLimited() {
        #expect(Self.decide(429, [], retryAfter: "7") == .retry(after: .seconds(7)))
        #expect(Self.decide(503, Self.body("80300010"), retryAfter: "2") == .retry(after: .seconds(2)))
        #expect(Self.decide(429, []) == .retry(after: .seconds(1)))
        #expect(Self.code(of: Self.decide(429, [], attempts: 3)) == .rateLimited)
    }

    @Test("5xx and 81000001 are retried; then internal or unavailable")
    func serverErrors() {
        #expect(Self.decide(500, Self.body("81000001")) == .retry(after: .seconds(1)))
        #expect(Self.decide(200, Self.body("81000001")) == .retry(after: .seconds(1)))
        #expect(Self.decide(502, []) == .retry(after: .seconds(1)))
        #expect(Self.code(of: Self.decide(500, [], attempts: 3)) == .internal)
        #expect(Self.code(of: Self.decide(504, [], attempts: 3)) == .unavailable)
        #expect(Self.code(of: Self.decide(500, Self.body("81000001"), attempts: 3)) == .internal)
        #expect(Self.decide(200, Self.body("80100017")) == .retry(after: .seconds(1)))
    }

    @Test("404, a 2xx without a known code, and other statuses fail without touching tokens")
    func otherStatuses() {
        #expect(Self.code(of: Self.decide(404, [])) == .notFound)
        #expect(Self.code(of: Self.decide(200, Array("{}".utf8))) == .rejected)
        #expect(Self.code(of: Self.decide(200, Array("not json".utf8))) == .rejected)
        #expect(Self.code(of: Self.decide(418, [])) == .rejected)
    }

    @Test("timeouts and unreachable servers are retried, then fail; an untrusted certificate fails at once")
    func noAnswer() {
        let policy = Self.policy
        #expect(HMSDecision.decide(.timedOut, tokens: [], attempts: 1, refreshed: false, policy: policy, random: 0.5) == .retry(after: .seconds(1)))
        if case .fail(let error) = HMSDecision.decide(.unreachable("x"), tokens: [], attempts: 3, refreshed: false, policy: policy, random: 0.5) {
            #expect(error.code == .connectionFailed)
        } else {
            Issue.record("not a failure")
        }
        if case .fail(let error) = HMSDecision.decide(.untrusted("x"), tokens: [], attempts: 1, refreshed: false, policy: policy, random: 0.5) {
            #expect(error.code == .untrusted)
        } else {
            Issue.record("not a failure")
        }
    }

    @Test("hostile text is escaped and bounded")
    func hostileText() {
        let hostile = "\u{1B}[31mred\u{1B}[0m" + String(repeating: "x", count: 1000)
        guard case .fail(let error) = Self.decide(400, Self.body("80100003", hostile)) else { Issue.record("not a failure"); return }
        #expect(!error.reason.contains("\u{1B}"))
        #expect(error.reason.count <= 300)
        guard case .fail(let raw) = Self.decide(400, Array(("\u{1B}]0;title\u{07}" + String(repeating: "y", count: 40_000)).utf8)) else {
            Issue.record("not a failure")
            return
        }
        #expect(!raw.reason.contains("\u{1B}") && !raw.reason.contains("\u{07}") && raw.reason.count <= 300)
    }

    @Test("Push Kit's usual success is read without a parse, exactly as the parse reads it; any other form of it is parsed")
    func plainSuccess() {
        let usual = Array(#"{"code":"80000000","msg":"Success","requestId":"157440955549500001002006"}"#.utf8)
        #expect(HMSAnswer.plainSuccess(usual) == "157440955549500001002006")
        #expect(HMSAnswer(usual) == HMSAnswer(Array(#"{"msg":"Success","requestId":"157440955549500001002006","code":"80000000"}"#.utf8)), "the same fields, whichever way read")
        let spaced = Array("{ \"code\" : \"80000000\",\n \"msg\": \"Success\", \"requestId\": \"r-1.a:b_c\" }\n".utf8)
        #expect(HMSAnswer.plainSuccess(spaced) == "r-1.a:b_c")
        for other in [
            #"{"msg":"Success","code":"80000000","requestId":"r1"}"#,  // another order: parsed
            #"{"code":"80000000","msg":"Success","requestId":"\#(String(repeating: "x", count: 65))"}"#,  // a request ID past 64
            #"{"code":"80000000","msg":"Success","requestId":"a\u001bb"}"#,  // an escape
            #"{"code":"80000000","msg":"Success","requestId":"r1"}x"#,  // trailing bytes
            #"{"code":"80100000","msg":"Success","requestId":"r1"}"#,  // another code
        ] {
            #expect(HMSAnswer.plainSuccess(Array(other.utf8)) == nil, "\(other)")
        }
        // A long request ID parsed is kept bounded, as before.
        let long = HMSAnswer(Array(#"{"code":"80000000","msg":"Success","requestId":"\#(String(repeating: "x", count: 200))"}"#.utf8))
        #expect(long.code == "80000000" && (long.requestID?.count ?? 0) <= 70)
    }
}
