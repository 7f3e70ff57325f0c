/// The headers of a push request (RFC 8030 §5), checked as a push service checks them.
struct MockWebPushHeaders: Sendable, Hashable {
    /// The longest `Topic` (RFC 8030 §5.4).
    static let maximumTopicCount = 32
    static let urgencies: Set<String> = ["very-low", "low", "normal", "high"]

    var ttl: Int
    var urgency: String?
    var topic: String?

    /// Checks, in this order, `TTL` (required, a whole number ≥ 0: RFC 8030 §5.2), `Urgency`
    /// (optional, one of §5.3's four), `Topic` (optional, at most 32 characters of the base64url
    /// alphabet: §5.4) and `Content-Encoding` (`aes128gcm`: RFC 8291 §4).
    init(ttl: String?, urgency: String?, topic: String?, contentEncoding: String?) throws(MockWebPushRejection) {
        guard let ttl, let seconds = Self.wholeNumber(ttl) else { throw .badTTL }
        if let urgency, !Self.urgencies.contains(urgency) { throw .badUrgency }
        if let topic, !Self.isValidTopic(topic) { throw .badTopic }
        guard let contentEncoding, contentEncoding.lowercased() == "aes128gcm" else { throw .badContentEncoding }
        self.ttl = seconds
        self.urgency = urgency
        self.topic = topic
    }

    /// Digits only (no sign, no spaces), fitting an `Int`.
    static func wholeNumber(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        return Int(text)
    }

    /// 1 to 32 characters of `A-Z a-z 0-9 - _`. Apple also refuses a topic whose length leaves 1
    /// when divided by 4, which no base64url text can have (`BadWebPushTopic` for a 5- or
    /// 13-character topic, as developers report): the mock does too, so a topic that would fail
    /// at Apple fails here first.
    static func isValidTopic(_ topic: String) -> Bool {
        let bytes = topic.utf8
        guard (1...maximumTopicCount).contains(bytes.count), bytes.count % 4 != 1 else { return false }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"):
                true
            default: false
            }
        }
    }
}
