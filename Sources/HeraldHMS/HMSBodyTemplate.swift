/// An Android (v1) request body written once with a stand-in token and cut around it, so the
/// body for each token of a grouped send is two copies and the token, not the message built,
/// validated and written again (as FCM's `FCMBodyTemplate`).
struct HMSBodyTemplate {
    private let prefix: [UInt8]
    private let suffix: [UInt8]

    /// A token no push token shares a body with: Push Kit's alphabet, checked like any token.
    static let standIn = "HERALD-TOKEN:6d0f1a9e8c7b4e2f93a5b1c0d2e4f6a8"

    /// `nil` when the message is refused with the stand-in (each token is then written and
    /// checked alone, and refused alone) or the stand-in is not found exactly once.
    init?(_ message: HMSAndroidMessage) {
        var standing = message
        standing.tokens = [Self.standIn]
        guard let body = try? standing.requestBody() else { return nil }
        let needle = Array("\"token\":[\"\(Self.standIn)\"]".utf8)
        var found: Int?
        var start = 0
        while let range = body[start...].firstRange(of: needle) {
            guard found == nil else { return nil }
            found = range.lowerBound
            start = range.upperBound
        }
        guard let at = found else { return nil }
        let tokenStart = at + needle.count - Self.standIn.utf8.count - 2
        prefix = Array(body[..<tokenStart])
        suffix = Array(body[(tokenStart + Self.standIn.utf8.count)...])
    }

    /// The body for `token`, which must pass ``HMSPushToken/isValid(_:)`` (its alphabet needs no
    /// JSON escaping).
    func body(for token: String) -> [UInt8] {
        var body = [UInt8]()
        body.reserveCapacity(prefix.count + token.utf8.count + suffix.count)
        body += prefix
        body += token.utf8
        body += suffix
        return body
    }
}
