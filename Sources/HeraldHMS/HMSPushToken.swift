/// Push Kit push tokens: what an app gets from `HmsInstanceId.getToken` (Android) or
/// `pushService.getToken()` (HarmonyOS NEXT) and a server sends to.
public enum HMSPushToken {
    /// The longest token accepted. Huawei publishes no length: Android tokens seen are about 130
    /// characters and HarmonyOS NEXT's 112 (Huawei asks apps not to rely on it), so the bound is
    /// generous and keeps a request, a database column and a log line small.
    public static let maximumCount = 1024
    /// Tokens in one request at most: "按Token发送时，最大Token数不能超过1000" (Push Kit's
    /// "下行消息" reference, https://developer.huawei.com/consumer/cn/doc/HMSCore-References/https-send-api-0000001050986197).
    public static let maximumPerRequest = 1000

    /// Checks `token`: 1 to 1,024 characters of letters, digits and `- _ . : + / =` (the
    /// base64 and base64url alphabets of every token seen; Huawei documents none).
    public static func check(_ token: String) throws(HMSError) {
        guard !token.isEmpty else { throw HMSError(.invalidToken, "a Push Kit token cannot be empty") }
        guard token.utf8.count <= maximumCount else {
            throw HMSError(.invalidToken, "a Push Kit token is at most \(maximumCount) characters; this one has \(token.utf8.count)")
        }
        if let index = token.utf8.firstIndex(where: { !isTokenCharacter($0) }) {
            let offset = token.utf8.distance(from: token.utf8.startIndex, to: index)
            throw HMSError(.invalidToken, "a Push Kit token has only letters, digits and - _ . : + / =; this one has another character at offset \(offset)")
        }
    }

    /// Whether `token` passes ``check(_:)``.
    public static func isValid(_ token: String) -> Bool {
        !token.isEmpty && token.utf8.count <= maximumCount && token.utf8.allSatisfy(isTokenCharacter)
    }

    /// Checks a request's tokens: 1 to 1,000, each valid, none twice (Huawei: a repeated token
    /// gets the message twice, "请您不要输入重复的Token").
    public static func checkList(_ tokens: [String], field: String) throws(HMSError) {
        guard !tokens.isEmpty else { throw HMSError(.invalidToken, "\(field) needs at least one push token", field: field) }
        guard tokens.count <= maximumPerRequest else {
            throw HMSError(.invalidToken, "\(field) has \(tokens.count) push tokens; Push Kit takes at most \(maximumPerRequest) per request", field: field)
        }
        var seen = Set<String>()
        seen.reserveCapacity(tokens.count)
        for (index, token) in tokens.enumerated() {
            do {
                try check(token)
            } catch {
                throw HMSError(.invalidToken, "\(field)[\(index)]: " + error.message, field: field)
            }
            guard seen.insert(token).inserted else {
                throw HMSError(.invalidToken, "\(field)[\(index)] repeats an earlier token (the device would get the message twice)", field: field)
            }
        }
    }

    static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"),
            UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: ":"), UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="):
            true
        default: false
        }
    }
}
