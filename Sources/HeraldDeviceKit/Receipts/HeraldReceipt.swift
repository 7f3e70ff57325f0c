import Foundation

/// The receipt token a Herald gateway puts in every notification it sends, under the payload's
/// top-level key `"herald"`: `{"aps": {…}, "herald": "AQAB…"}`.
///
/// It is opaque and it is the only credential the receipt route asks for: 1 to 48 characters of
/// the base64url alphabet (RFC 4648 §5), without padding. Anything else under the key is not a
/// Herald receipt and is ignored.
public struct HeraldReceipt: Sendable, Hashable, CustomStringConvertible {
    /// The payload key the gateway writes the token under.
    public static let payloadKey = "herald"
    /// The longest token the gateway issues, in characters.
    public static let maximumLength = 48

    /// The token, as the gateway wrote it.
    public let token: String

    /// A receipt from its token; `nil` unless it is 1 to 48 base64url characters.
    public init?(token: String) {
        let utf8 = token.utf8
        guard (1...Self.maximumLength).contains(utf8.count), utf8.allSatisfy(Self.isBase64URL) else { return nil }
        self.token = token
    }

    /// The receipt of a notification's `userInfo` (its payload, as UserNotifications hands it
    /// over); `nil` when the payload has none or what it has is not a token.
    public init?(userInfo: [AnyHashable: Any]) {
        guard let token = userInfo[Self.payloadKey] as? String else { return nil }
        self.init(token: token)
    }

    /// The receipt of a payload's JSON bytes; `nil` when they are not a JSON object, or it has no
    /// token at its top level.
    public init?(payload: Data) {
        guard let object = try? JSONSerialization.jsonObject(with: payload), let dictionary = object as? [String: Any],
              let token = dictionary[Self.payloadKey] as? String
        else { return nil }
        self.init(token: token)
    }

    /// The token.
    public var description: String { token }

    /// `A`–`Z`, `a`–`z`, `0`–`9`, `-` and `_` (RFC 4648 §5); no `=`.
    private static func isBase64URL(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default:
            false
        }
    }
}
