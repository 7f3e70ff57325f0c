import HeraldCore

/// What to do with one answer from Push Kit: a pure function of the answer, the tokens sent, the
/// attempt and the policy, so every HTTP status and result code is tested as a value.
///
/// Push Kit answers `{"code": "80000000", "msg": "Success", "requestId": "…"}`; the result code
/// decides first, then the HTTP status (Push Kit's "下行消息" error tables,
/// https://developer.huawei.com/consumer/cn/doc/HMSCore-References/https-send-api-0000001050986197,
/// and v3's "响应参数", https://developer.huawei.com/consumer/cn/doc/harmonyos-references/push-scenariozed-api-response).
/// docs/hms.md has the table.
enum HMSDecision: Sendable, Hashable {
    /// 80000000, or 80100000 with the tokens that failed.
    case accepted(requestID: String?, failedTokens: [HMSFailedToken], failureCount: Int)
    case retry(after: Duration)
    /// The bearer was refused (401, 80200001, 80200003, 80200005, 80600003): make a fresh one
    /// and send again, once.
    case refreshTokenAndRetry
    case fail(HMSSendError)

    /// What an attempt ended with.
    enum Attempt: Sendable, Hashable {
        /// An answer: its status, `Retry-After` and body (bounded by the transport).
        case answered(status: Int, retryAfter: String?, body: [UInt8])
        case timedOut
        case unreachable(String)
        /// The server's certificate is not trusted; nothing was sent.
        case untrusted(String)

        /// The jitter for deciding on it: drawn only when a retry may need it.
        var jitter: Double {
            if case .answered(let status, _, _) = self, (200..<300).contains(status) { return 0.5 }
            return Double.random(in: 0..<1)
        }
    }

    /// The most of an answer parsed: the transport keeps 32 KiB of a body, enough for a partial
    /// success naming about 200 tokens; a longer list is read as far as it parses.
    static let maximumBodyCount = 32 << 10

    /// - Parameters:
    ///   - tokens: the tokens the request carried: only these are reported as failed.
    ///   - attempts: how many times the message was sent, this one included.
    ///   - refreshed: whether a refused bearer was already replaced for this message.
    ///   - random: a value in 0..<1 for the back-off's jitter.
    static func decide(_ attempt: Attempt, tokens: [String], attempts: Int, refreshed: Bool, policy: HMSRetryPolicy, random: Double) -> HMSDecision {
        let canRetry = attempts < policy.maximumAttempts
        var backoff: Duration { policy.backoff.delay(afterAttempt: attempts, random: random) }
        switch attempt {
        case .timedOut:
            guard canRetry else { return .fail(HMSSendError(.timedOut, reason: "no answer within the deadline", attempts: attempts)) }
            return .retry(after: backoff)
        case .unreachable(let why):
            guard canRetry else { return .fail(HMSSendError(.connectionFailed, reason: why, attempts: attempts)) }
            return .retry(after: backoff)
        case .untrusted(let why):
            return .fail(HMSSendError(.untrusted, reason: why, attempts: attempts))
        case .answered(let status, let retryAfter, let body):
            let answer = HMSAnswer(body)
            func failure(_ code: HMSSendError.Code, _ fallback: String, failed: [HMSFailedToken] = [], retryAfter asked: Duration? = nil) -> HMSDecision {
                .fail(
                    HMSSendError(
                        code, status: status, resultCode: answer.code, reason: answer.message ?? fallback, attempts: attempts, failedTokens: failed,
                        retryAfter: asked))
            }
            func retryOrFail(_ code: HMSSendError.Code, _ fallback: String) -> HMSDecision {
                // The last failure reports the wait asked for, for the caller's own.
                guard canRetry else { return failure(code, fallback, retryAfter: RetryAfter.asked(retryAfter, ceilingSeconds: policy.maximumRetryAfterSeconds)) }
                return .retry(after: RetryAfter.delay(retryAfter, backoff: backoff, ceilingSeconds: policy.maximumRetryAfterSeconds))
            }
            func refreshOrFail(_ code: HMSSendError.Code, _ fallback: String) -> HMSDecision {
                refreshed ? failure(code, fallback) : .refreshTokenAndRetry
            }
            // Flow control first, whatever the body says: 429, and 503, which Push Kit's table
            // names "流量控制" (traffic control). Retry-After is followed when sent (Huawei does
            // not document one).
            if status == 429 || status == 503 { return retryOrFail(.rateLimited, "Push Kit is limiting the sending rate") }
            switch answer.code {
            case "80000000"?:
                return .accepted(requestID: answer.requestID, failedTokens: [], failureCount: 0)
            case "80100000"?:
                let failed = answer.failedTokens(among: tokens)
                return .accepted(requestID: answer.requestID, failedTokens: failed.tokens, failureCount: max(failed.count ?? 0, failed.tokens.count))
            case "80100001"?: return failure(.invalidParameter, "a request parameter is invalid")
            case "80100003"?: return failure(.invalidMessage, "the message structure is invalid")
            case "80100004"?: return failure(.expired, "the message's expiry is already past")
            case "80100013"?: return failure(.invalidCollapseKey, "collapse_key is invalid")
            case "80100016"?: return failure(.sensitiveContent, "the message holds sensitive content")
            case "80100017"?: return retryOrFail(.tooManyTopicTasks, "more than 100 topic tasks at once")
            case "80100018"?: return failure(.reviewMismatch, "the third-party review does not match the message")
            case "80200001"?, "80200003"?, "80200005"?:
                return refreshOrFail(.unauthenticated, "the bearer was refused after a fresh one")
            case "80300002"?: return failure(.noPermission, "the app may not send push messages")
            case "80300007"?:
                let failed = answer.failedTokens(among: tokens).tokens
                // Nothing parseable names them: the Android API's meaning, every token invalid.
                let named = failed.isEmpty ? tokens.prefix(HMSPushToken.maximumPerRequest).map { HMSFailedToken(token: $0, isTokenInvalid: true) } : failed
                return failure(.allTokensInvalid, "all the tokens are invalid", failed: named)
            case "80300008"?: return failure(.messageTooBig, "the message body is over 4096 bytes")
            case "80300010"?: return failure(.tooManyTokens, "the number of tokens is over the limit")
            case "80300011"?: return failure(.noHighPriorityPermission, "no permission for high-priority notifications")
            case "80300013"?: return failure(.invalidReceipt, "the receipt address is wrong")
            case "80600003"?: return refreshOrFail(.oauthFailed, "Push Kit's OAuth check failed")
            case "81000001"?: return retryOrFail(.internal, "Push Kit failed")
            default:
                break
            }
            switch status {
            case 200..<300:
                // A 2xx without a known code is not an acceptance Herald can vouch for.
                return failure(.rejected, answer.code == nil ? "the answer has no result code" : "an undocumented result code")
            case 401:
                return refreshOrFail(.unauthenticated, "the bearer was refused after a fresh one")
            case 404:
                return failure(.notFound, "not found: check the client ID, project ID and endpoint")
            case 500:
                return retryOrFail(.internal, "Push Kit failed")
            case 501..<600:
                return retryOrFail(.unavailable, "Push Kit is unavailable")
            default:
                return failure(.rejected, "refused")
            }
        }
    }
}

/// How the Push Kit client retries: 429 and 503 (traffic control), 500, 502, 504 and 81000001,
/// timeouts and unreachable servers. One retry with a fresh bearer is due even past
/// `maximumAttempts`, and with `.none`.
public typealias HMSRetryPolicy = HTTPRetryPolicy

/// Push Kit's answer body, `{"code", "msg", "requestId"}`: every string escaped and bounded; an
/// unparseable or oversized body gives its start as the message and no code.
struct HMSAnswer: Sendable, Hashable {
    var code: String?
    var message: String?
    var requestID: String?
    /// The raw `msg` (unescaped, bounded by the body), for a partial success's token list.
    private var rawMessage: String?

    init(_ body: [UInt8]) {
        if let requestID = Self.plainSuccess(body) {
            (code, rawMessage, message, self.requestID) = ("80000000", "Success", "Success", requestID)
            return
        }
        guard !body.isEmpty, body.count <= HMSDecision.maximumBodyCount, let json = try? JSONValue(parsing: body), json.objectValue != nil else {
            if !body.isEmpty { message = PeerText(body.prefix(HMSDecision.maximumBodyCount), limit: 200).description }
            return
        }
        // Huawei writes the code as a string; a number is read the same.
        if let text = json["code"]?.stringValue {
            code = PeerText(text, limit: 32).description
        } else if let number = json["code"]?.intValue {
            code = String(number)
        }
        rawMessage = json["msg"]?.stringValue
        message = rawMessage.map { PeerText($0, limit: 200).description }
        requestID = (json["requestId"]?.stringValue ?? json["request_id"]?.stringValue).map { PeerText($0, limit: 64).description }
    }

    /// Push Kit's usual answer, `{"code": "80000000", "msg": "Success", "requestId": "…"}` (any
    /// spacing, in that order), read without a JSON parse when the request ID is 1 to 64 of
    /// letters, digits and `- _ . :` (nothing to escape or cut): its request ID; `nil` for any
    /// other body, which is parsed. The same fields the parse gives (docs/hms.md, "Speed", says
    /// what it saves).
    static func plainSuccess(_ body: [UInt8]) -> String? {
        var index = 0
        func skipSpace() { while index < body.count, body[index] == 0x20 || body[index] == 0x0A || body[index] == 0x0D || body[index] == 0x09 { index += 1 } }
        func expect(_ text: StaticString) -> Bool {
            skipSpace()
            let count = text.utf8CodeUnitCount
            guard body.count - index >= count else { return false }
            let matches = text.withUTF8Buffer { $0.elementsEqual(body[index..<(index + count)]) }
            if matches { index += count }
            return matches
        }
        guard expect("{"), expect("\"code\""), expect(":"), expect("\"80000000\""), expect(","), expect("\"msg\""), expect(":"), expect("\"Success\""),
            expect(","), expect("\"requestId\""), expect(":"), expect("\"")
        else { return nil }
        let start = index
        while index < body.count, index - start <= 64, Self.isPlainIDByte(body[index]) { index += 1 }
        let end = index
        guard end > start, end - start <= 64, expect("\""), expect("}") else { return nil }
        skipSpace()
        guard index == body.count else { return nil }
        return String(decoding: body[start..<end], as: UTF8.self)
    }

    private static func isPlainIDByte(_ byte: UInt8) -> Bool {
        Base64URL.isAlphabet(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: ":")
    }

    /// The tokens `msg` names as failed, kept only when they are among `sent` (a hostile answer
    /// cannot retire a token that was not in the request), each once, in the order named.
    ///
    /// The Android API's `msg` is a JSON text `{"success": 3, "failure": 1, "illegal_tokens": […]}`;
    /// v3's `{"failure": 1, "illegalTokens": {"tokenFormatError": […], …}}` (an array is read too).
    func failedTokens(among sent: [String]) -> (tokens: [HMSFailedToken], count: Int?) {
        guard let rawMessage, let detail = try? JSONValue(parsing: rawMessage), detail.objectValue != nil else { return ([], nil) }
        let known = Set(sent)
        var seen = Set<String>()
        var failed: [HMSFailedToken] = []
        func add(_ list: JSONValue?, reason: String?, invalid: Bool) {
            guard case .array(let items)? = list else { return }
            for item in items.prefix(HMSPushToken.maximumPerRequest) {
                guard failed.count < HMSPushToken.maximumPerRequest, let token = item.stringValue, known.contains(token), seen.insert(token).inserted else { continue }
                failed.append(HMSFailedToken(token: token, reason: reason, isTokenInvalid: invalid))
            }
        }
        add(detail["illegal_tokens"], reason: nil, invalid: true)
        switch detail["illegalTokens"] {
        case .array?:
            add(detail["illegalTokens"], reason: nil, invalid: true)
        case .object(let groups)?:
            // Sorted: the same answer gives the same order.
            for (reason, list) in groups.sorted(by: { $0.key < $1.key }).prefix(64) {
                add(list, reason: PeerText(reason, limit: 64).description, invalid: HMSFailedToken.tokenInvalidReasons.contains(reason))
            }
        default:
            break
        }
        let count = detail["failure"]?.intValue.map { min(max(0, $0), HMSPushToken.maximumPerRequest) }
        return (failed, count)
    }
}
