import Crypto
import HeraldCore

/// A browser's Web Push subscription as the registry keeps it: its endpoint and keys, as the
/// page's `subscription.toJSON()` gave them. The gateway checks them (https, a point on P-256,
/// a 16-byte secret) before they get here; the store bounds them.
///
/// A subscription is a device of the app like an APNs token, under an ID made from its endpoint
/// (``id``), so the same endpoint registered again is the same device.
public struct WebPushAddress: PlatformAddress {
    public static let platform = DevicePlatform.webpush

    /// The push resource URL at the browser's push service.
    public let endpoint: String
    /// `keys.p256dh`, base64url.
    public let p256dh: String
    /// `keys.auth`, base64url: a secret.
    public let auth: String

    /// The longest endpoint kept, in bytes.
    public static let maximumEndpointLength = 2048
    /// The longest key text kept (a P-256 point is 87 base64url characters).
    public static let maximumKeyLength = 128
    /// The device ID prefix: never the start of an APNs token (hex).
    public static let idPrefix = "wp_"

    /// - Throws: ``StoreError`` `invalidInput` naming the field, for lengths or characters out of bounds.
    public init(endpoint: String, p256dh: String, auth: String) throws(StoreError) {
        guard !endpoint.isEmpty, endpoint.utf8.count <= Self.maximumEndpointLength, endpoint.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw StoreError(.invalidInput, "endpoint: 1 to \(Self.maximumEndpointLength) bytes of printable ASCII")
        }
        for (name, value) in [("keys.p256dh", p256dh), ("keys.auth", auth)] {
            guard !value.isEmpty, value.utf8.count <= Self.maximumKeyLength, value.utf8.allSatisfy({ Base64URL.isAlphabet($0) || $0 == UInt8(ascii: "=") }) else {
                throw StoreError(.invalidInput, "\(name): 1 to \(Self.maximumKeyLength) base64url characters")
            }
        }
        self.endpoint = endpoint
        self.p256dh = p256dh
        self.auth = auth
    }

    /// The device ID: `wp_` and the first 20 bytes of the endpoint's SHA-256 in base32
    /// (lower case, 32 characters). Stable for an endpoint; never mistaken for an APNs token.
    public var id: String { Self.id(forEndpoint: endpoint) }

    /// The device ID of `endpoint`.
    public static func id(forEndpoint endpoint: String) -> String {
        // 20 bytes are 160 bits: 32 characters of 5.
        idPrefix + Base32.lowercase(Array(SHA256.hash(data: Array(endpoint.utf8)).prefix(20)))
    }

    /// Whether `text` is a Web Push device ID (``id``).
    public static func isID(_ text: some StringProtocol) -> Bool {
        Base32.isDeviceID(text, prefix: idPrefix)
    }

    /// The stored form: `{"endpoint":…,"p256dh":…,"auth":…}`.
    public var stored: String {
        JSONValue.object(["endpoint": .string(endpoint), "p256dh": .string(p256dh), "auth": .string(auth)]).jsonString
    }

    /// From the stored form; `nil` for anything else.
    public init?(stored: String) {
        guard let json = try? JSONValue(parsing: stored), let endpoint = json["endpoint"]?.stringValue,
            let p256dh = json["p256dh"]?.stringValue, let auth = json["auth"]?.stringValue,
            let address = try? WebPushAddress(endpoint: endpoint, p256dh: p256dh, auth: auth)
        else { return nil }
        self = address
    }
}

extension WebPushAddress: CustomStringConvertible {
    /// The ID only: the endpoint is a capability at some push services and `auth` a secret.
    public var description: String { "WebPushAddress(\(id))" }
}
