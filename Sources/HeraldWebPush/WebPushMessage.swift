import Crypto
import HeraldCore

/// One push message (RFC 8030 §5): its plaintext, which the client encrypts for each
/// subscription, and the headers that tell the push service how to hold it.
public struct WebPushMessage: Sendable, Hashable {
    /// How soon the browser should be woken (RFC 8030 §5.3): low urgencies save battery.
    public enum Urgency: String, Sendable, Hashable, CaseIterable {
        case veryLow = "very-low"
        case low
        case normal
        case high
    }

    /// The plaintext (often JSON, e.g. WebKit's declarative format), at most
    /// ``WebPushEncryption/maximumPlaintextCount`` bytes. Empty: a push without a body.
    public var payload: [UInt8]
    /// `TTL`: how many seconds the push service keeps the message for an offline browser; 0 is
    /// "now or never" (RFC 8030 §5.2).
    public var timeToLive: Int
    /// `Urgency`; absent means `normal`.
    public var urgency: Urgency?
    /// `Topic`: a newer message with the same topic replaces one still waiting at the push service
    /// (not one already delivered). At most 32 characters of the base64url alphabet (RFC 8030 §5.4).
    public var topic: String?

    /// A message; `topic` is checked here.
    public init(payload: [UInt8], timeToLive: Int = 4 * 7 * 86400, urgency: Urgency? = nil, topic: String? = nil) throws(WebPushError) {
        guard payload.count <= WebPushEncryption.maximumPlaintextCount else {
            throw WebPushError(
                .payloadTooLarge, "a Web Push payload is at most \(WebPushEncryption.maximumPlaintextCount) bytes (RFC 8291 §4); this one has \(payload.count)")
        }
        guard timeToLive >= 0 else { throw WebPushError(.invalidMessage, "TTL must be 0 or more seconds; got \(timeToLive)") }
        if let topic { try Self.checkTopic(topic) }
        self.payload = payload
        self.timeToLive = timeToLive
        self.urgency = urgency
        self.topic = topic
    }

    /// A `Topic` header value: 1 to 32 characters of the URL-safe base64 alphabet (RFC 8030 §5.4).
    public static func checkTopic(_ topic: String) throws(WebPushError) {
        guard (1...32).contains(topic.utf8.count), topic.utf8.allSatisfy(Base64URL.isAlphabet) else {
            throw WebPushError(.invalidMessage, "a Topic is 1 to 32 characters of A-Z, a-z, 0-9, '-' and '_' (RFC 8030 §5.4); got \(PeerText(topic, limit: 40))")
        }
    }

    /// A Topic made from any collapse identifier: the identifier itself when it already is one,
    /// otherwise the base64url of the first 24 bytes of its SHA-256 (32 characters). A length of
    /// 4n+1 is hashed too: Apple's service decodes the topic as base64url, and such a length does
    /// not decode (`BadWebPushTopic`, as developers report).
    public static func topic(forCollapseID collapseID: String) -> String {
        if (try? checkTopic(collapseID)) != nil, collapseID.utf8.count % 4 != 1 { return collapseID }
        return Base64URL.encode(Array(SHA256.hash(data: Array(collapseID.utf8))).prefix(24))
    }
}
