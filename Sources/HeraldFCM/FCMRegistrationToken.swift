/// FCM registration tokens: what an app instance gets from `FirebaseMessaging.getToken()` and
/// a server sends to.
public enum FCMRegistrationToken {
    /// The longest token accepted. Google's are about 160 characters; the bound is generous and
    /// keeps a path, a database column and a header small.
    public static let maximumCount = 4096

    /// Checks `token`: 1 to 4,096 characters of letters, digits, `-`, `_` and `:` (the alphabet
    /// of every token FCM has handed out).
    public static func check(_ token: String) throws(FCMError) {
        guard !token.isEmpty else { throw FCMError(.invalidToken, "an FCM registration token cannot be empty") }
        guard token.utf8.count <= maximumCount else {
            throw FCMError(.invalidToken, "an FCM registration token is at most \(maximumCount) characters; this one has \(token.utf8.count)")
        }
        if let index = token.utf8.firstIndex(where: { !isTokenCharacter($0) }) {
            let offset = token.utf8.distance(from: token.utf8.startIndex, to: index)
            throw FCMError(
                .invalidToken, "an FCM registration token has only letters, digits, '-', '_' and ':'; this one has another character at offset \(offset)")
        }
    }

    /// Whether `token` passes ``check(_:)``.
    public static func isValid(_ token: String) -> Bool {
        !token.isEmpty && token.utf8.count <= maximumCount && token.utf8.allSatisfy(isTokenCharacter)
    }

    private static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"),
            UInt8(ascii: "_"), UInt8(ascii: ":"):
            true
        default: false
        }
    }
}
