import Crypto
import HeraldHMS
import HeraldStore

/// A Huawei device's Push Kit push token and which of Push Kit's APIs reaches it, as the registry
/// keeps it: `android` (HMS Core on Android, the v1 API) or `harmony` (HarmonyOS NEXT, the v3
/// API). Registered with `"platform": "hms"` and `"hmsAPI"` (docs/hms.md, "The gateway").
///
/// Like an FCM registration token it is a device of the app under an ID made from the token
/// (``id``): tokens run to 1,024 characters here, and the same token registered again is the
/// same device (whichever API it says).
struct HMSAddress: PlatformAddress {
    static let platform = DevicePlatform.hms

    /// Which Push Kit API sends to the device.
    enum API: String, Sendable, Hashable, CaseIterable {
        /// HMS Core on Android: `POST /v1/{clientid}/messages:send`, with the app's OAuth client credentials.
        case android
        /// HarmonyOS NEXT (HarmonyOS 5 and later): `POST /v3/{projectId}/messages:send`, with a service account.
        case harmony
    }

    let api: API
    /// The push token the app got from Push Kit (`HmsInstanceId.getToken`, `pushService.getToken()`).
    let pushToken: String

    /// The device ID prefix: never the start of an APNs token (hex), a browser's (`wp_`) or an
    /// Android FCM device's (`fcm_`).
    static let idPrefix = "hms_"

    /// - Throws: ``StoreError`` `invalidInput` for a token Push Kit would refuse (HeraldHMS's bound).
    init(api: API, pushToken: String) throws(StoreError) {
        do {
            try HMSPushToken.check(pushToken)
        } catch {
            throw StoreError(.invalidInput, "Push Kit token: \(error.message)")
        }
        self.api = api
        self.pushToken = pushToken
    }

    /// The stored form: `android:TOKEN` or `harmony:TOKEN`.
    var stored: String { api.rawValue + ":" + pushToken }

    init?(stored: String) {
        guard let colon = stored.firstIndex(of: ":"), let api = API(rawValue: String(stored[..<colon])) else { return nil }
        let token = String(stored[stored.index(after: colon)...])
        guard HMSPushToken.isValid(token) else { return nil }
        self.api = api
        self.pushToken = token
    }

    /// `hms_` and the first 20 bytes of the token's SHA-256 in lower-case base32 (32 characters),
    /// the form of FCM's and Web Push's IDs.
    var id: String { Self.id(forToken: pushToken) }

    /// The device ID of `pushToken`.
    static func id(forToken pushToken: String) -> String {
        idPrefix + lowercaseBase32(Array(SHA256.hash(data: Array(pushToken.utf8)).prefix(20)))
    }

    /// Whether `text` is a Huawei device's ID (``id``): the store's reading of a device ID's form.
    static func isID(_ text: String) -> Bool {
        DevicePlatform(deviceID: text) == .hms
    }

    /// RFC 4648 base32, lower case, without padding. HeraldStore's is internal to it; this is the
    /// same few lines rather than a public API of the store for one caller.
    private static func lowercaseBase32(_ bytes: [UInt8]) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)
        var text: [UInt8] = []
        text.reserveCapacity((bytes.count * 8 + 4) / 5)
        var buffer: UInt64 = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | UInt64(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                text.append(alphabet[Int((buffer >> UInt64(bits)) & 31)])
            }
        }
        if bits > 0 { text.append(alphabet[Int((buffer << UInt64(5 - bits)) & 31)]) }
        return String(decoding: text, as: UTF8.self)
    }
}

extension HMSAddress: CustomStringConvertible {
    /// The ID and API only: the push token is what sending takes.
    var description: String { "HMSAddress(\(id), \(api.rawValue))" }
}
