/// A Web Push key, subscription, message or answer that cannot be used: what is wrong and what to
/// do. Never contains key material, auth secrets or message contents.
public struct WebPushError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable code for the kind of problem.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        /// A VAPID key file that cannot be read or is not a P-256 private key.
        public static let invalidKey = Code(name: "invalidKey")
        /// A VAPID `sub` that is neither `mailto:` nor `https:` (RFC 8292 §2.1; Apple requires one).
        public static let invalidSubject = Code(name: "invalidSubject")
        /// A subscription whose endpoint, `p256dh` or `auth` is unusable.
        public static let invalidSubscription = Code(name: "invalidSubscription")
        /// A subscription whose endpoint is not a push service Herald may send to: not a known
        /// one nor an allowed host, or an address on a private network
        /// (``WebPushSubscription/Policy``). The message names the host.
        public static let endpointNotAllowed = Code(name: "endpointNotAllowed")
        /// A message whose TTL or Topic is out of range.
        public static let invalidMessage = Code(name: "invalidMessage")
        /// A plaintext longer than one 4096-byte record can carry (RFC 8291 §4).
        public static let payloadTooLarge = Code(name: "payloadTooLarge")
        /// A message body that does not decrypt (wrong keys, tampered, or not `aes128gcm`).
        public static let decryptionFailed = Code(name: "decryptionFailed")
        /// An `Authorization: vapid` header that does not verify (RFC 8292 §3).
        public static let invalidVAPID = Code(name: "invalidVAPID")
        public var description: String { name }
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
