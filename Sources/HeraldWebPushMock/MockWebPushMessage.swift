#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A push message the mock accepted (201 Created), as the browser received it.
public struct MockWebPushMessage: Sendable, Hashable {
    /// The subscription's ID: the last path segment of its endpoint.
    public var subscriptionID: String
    /// The subscription's endpoint, `https://127.0.0.1:PORT/push/<subscriptionID>`.
    public var endpoint: URL
    /// The ID in the answer's `Location: /message/<messageID>` (RFC 8030 §5).
    public var messageID: String
    /// The decrypted message; `nil` when the mock does not decrypt
    /// (``MockWebPushServer/Configuration/decryptsMessages`` is `false`).
    public var plaintext: [UInt8]?
    /// The size of the encrypted body, in bytes.
    public var bodyCount: Int
    /// The `TTL` header, in seconds (RFC 8030 §5.2).
    public var ttl: Int
    /// The `Urgency` header (RFC 8030 §5.3): `very-low`, `low`, `normal` or `high`; `nil` when absent.
    public var urgency: String?
    /// The `Topic` header (RFC 8030 §5.4); `nil` when absent.
    public var topic: String?
    /// The VAPID token's `sub` claim (RFC 8292 §2.1).
    public var vapidSubject: String
    /// The VAPID `k` parameter: the application server's public key, 65 bytes uncompressed.
    public var vapidPublicKey: [UInt8]
    /// The HTTP version the request came on: 1 (HTTP/1.1) or 2.
    public var httpVersion: Int
    /// When the mock accepted it.
    public var receivedAt: Date

    /// The plaintext as UTF-8 text; `nil` when not decrypted.
    public var text: String? { plaintext.map { String(decoding: $0, as: UTF8.self) } }
}
