/// A failure the mock Push Kit answers instead of accepting a send, scripted with
/// ``MockHMSServer/script(_:)``: each answers the next `times` sends (v1 or v3), in order.
public enum MockHMSFault: Sendable, Hashable {
    /// 429 Too Many Requests, with `Retry-After` when `retryAfterSeconds` is given.
    case rateLimited(retryAfterSeconds: Int?, times: Int)
    /// 503 with Push Kit's traffic control (the HTTP status its table calls "流量控制").
    case trafficControl(retryAfterSeconds: Int?, times: Int)
    /// 500 with `{"code": "81000001", "msg": "Internal error"}`.
    case internalError(times: Int)
    /// 502, no body (a proxy in front of Push Kit).
    case badGateway(times: Int)
    /// Any answer: a status and body as given (for hostile answers).
    case answer(status: Int, body: [UInt8], times: Int)

    var times: Int {
        switch self {
        case .rateLimited(_, let times), .trafficControl(_, let times), .internalError(let times), .badGateway(let times), .answer(_, _, let times): times
        }
    }
}

/// A message the mock Push Kit accepted.
public struct MockHMSMessage: Sendable, Hashable {
    /// `1` for the Android API (`/v1/…`), `3` for HarmonyOS NEXT's (`/v3/…`).
    public var apiVersion: Int
    /// The tokens it was sent to (those the mock does not treat as invalid).
    public var tokens: [String]
    /// v3's `push-type`, `nil` for v1.
    public var pushType: Int?
    /// The request's JSON body.
    public var body: [UInt8]
    /// The `requestId` answered.
    public var requestID: String
}
