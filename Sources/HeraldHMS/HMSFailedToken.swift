/// A token Push Kit did not send to, as its answer named it: in an 80100000 ("partial success")
/// or 80300007 ("all the tokens are invalid") answer.
public struct HMSFailedToken: Sendable, Hashable {
    /// The token, one of those sent.
    public var token: String
    /// Why, when Push Kit said (HarmonyOS NEXT's v3 groups tokens by reason: `tokenFormatError`,
    /// `noRight`, `noPushTypeRight`, …); `nil` for the Android API's `illegal_tokens`.
    public var reason: String?
    /// Whether the token itself is bad and should not be sent to again: every `illegal_tokens`
    /// entry of the Android API, and v3's `tokenFormatError` and `noRight` (a token of an app
    /// outside the project). Other v3 reasons (`noPushTypeRight`, `countryNotSupport`, a
    /// penalty, …) are about the sender or the message, and keep the token.
    public var isTokenInvalid: Bool

    public init(token: String, reason: String? = nil, isTokenInvalid: Bool) {
        self.token = token
        self.reason = reason
        self.isTokenInvalid = isTokenInvalid
    }

    /// The v3 reasons that condemn the token itself (Push Kit's "响应参数", 80100000,
    /// https://developer.huawei.com/consumer/cn/doc/harmonyos-references/push-scenariozed-api-response).
    public static let tokenInvalidReasons: Set<String> = ["tokenFormatError", "noRight"]
}
