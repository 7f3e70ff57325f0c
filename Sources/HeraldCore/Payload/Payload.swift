/// A notification payload: Apple's `aps` dictionary and custom keys beside it (apns-spec §3).
///
/// Build it once and ``encode()`` it once: the ``EncodedPayload`` can be shared by any number of
/// notifications without encoding again.
public struct Payload: Sendable, Hashable {
    /// Apple's keys; `nil` leaves `aps` out (MDM and Wallet payloads have none).
    public var aps: APS?
    /// Custom keys beside `aps`. Set them with ``setCustom(_:_:)``, which refuses `aps`.
    public private(set) var custom: [String: JSONValue]

    /// A payload with the given `aps` and no custom keys.
    public init(aps: APS? = APS()) {
        self.aps = aps
        self.custom = [:]
    }

    /// A payload with custom keys; `aps` among them is refused.
    public init(aps: APS? = APS(), custom: [String: JSONValue]) throws(PayloadError) {
        self.aps = aps
        self.custom = [:]
        for (key, value) in custom { try setCustom(key, value) }
    }

    /// Sets a custom key beside `aps`. APNs ignores custom keys inside `aps`, so `aps` itself is
    /// refused here (§3).
    public mutating func setCustom(_ key: String, _ value: JSONValue) throws(PayloadError) {
        guard key != "aps" else {
            throw PayloadError(.reservedKey, "'aps' cannot be a custom key: Apple's keys go in Payload.aps")
        }
        custom[key] = value
    }

    /// Sets a custom key to any `Encodable` value (encoded with a default `JSONEncoder`).
    public mutating func setCustom(_ key: String, encoding value: some Encodable) throws(PayloadError) {
        try setCustom(key, JSONValue(encoding: value))
    }

    /// Removes a custom key.
    public mutating func removeCustom(_ key: String) {
        custom[key] = nil
    }

    /// The MDM wake-up payload `{"mdm":"<PushMagic>"}`, with no `aps` (§3.4).
    public static func mdm(pushMagic: String) -> Payload {
        var payload = Payload(aps: nil)
        payload.custom["mdm"] = .string(pushMagic)
        return payload
    }

    /// The Wallet pass update payload: the empty dictionary `{}` (§6.8).
    public static let walletPassUpdate = Payload(aps: nil)
}
