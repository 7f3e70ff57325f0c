import Crypto
import HeraldCore

/// An Android device's Firebase Cloud Messaging registration token, as the registry keeps it.
///
/// A registration token is a device of the app like an APNs token, under an ID made from it
/// (``id``): tokens run to 4,096 characters, longer than a database key should be, and the same
/// token registered again is the same device.
public struct FCMAddress: PlatformAddress {
    public static let platform = DevicePlatform.fcm

    /// The registration token the app's Firebase SDK gave (`FirebaseMessaging.getToken()`).
    public let registrationToken: String

    /// The longest registration token kept (FCM's tokens are about 160 characters today).
    public static let maximumLength = 4096
    /// The device ID prefix: never the start of an APNs token (hex) or a browser's (`wp_`).
    public static let idPrefix = "fcm_"

    /// - Throws: ``StoreError`` `invalidInput` when the token is empty, longer than
    ///   ``maximumLength`` or holds anything but letters, digits, `-`, `_` and `:`.
    public init(registrationToken: String) throws(StoreError) {
        guard Self.isValid(registrationToken) else {
            throw StoreError(
                .invalidInput,
                "FCM registration token: 1 to \(Self.maximumLength) of letters, digits, -, _ and : (got \(registrationToken.utf8.count) bytes\(registrationToken.utf8.contains(where: { !Self.isTokenByte($0) }) ? " with other characters" : ""))"
            )
        }
        self.registrationToken = registrationToken
    }

    /// The stored form: the registration token as it is.
    public var stored: String { registrationToken }

    /// From the stored form; `nil` for anything but a registration token.
    public init?(stored: String) {
        guard Self.isValid(stored) else { return nil }
        registrationToken = stored
    }

    /// Whether `text` could be an FCM registration token.
    public static func isValid(_ text: some StringProtocol) -> Bool {
        let bytes = text.utf8
        return !bytes.isEmpty && bytes.count <= maximumLength && bytes.allSatisfy(isTokenByte)
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        Base64URL.isAlphabet(byte) || byte == UInt8(ascii: ":")
    }

    /// The device ID: `fcm_` and the first 20 bytes of the token's SHA-256 in base32 (lower
    /// case, 32 characters). Stable for a token; never mistaken for an APNs token.
    public var id: String { Self.id(forToken: registrationToken) }

    /// The device ID of `registrationToken`.
    public static func id(forToken registrationToken: String) -> String {
        idPrefix + Base32.lowercase(Array(SHA256.hash(data: Array(registrationToken.utf8)).prefix(20)))
    }

    /// Whether `text` is an FCM device ID (``id``).
    public static func isID(_ text: some StringProtocol) -> Bool {
        Base32.isDeviceID(text, prefix: idPrefix)
    }
}

extension FCMAddress: CustomStringConvertible {
    /// The ID only: a registration token is what sending to the device takes.
    public var description: String { "FCMAddress(\(id))" }
}

/// RFC 4648 base32 without padding, lower case: device IDs.
enum Base32 {
    /// Whether `text` is `prefix` and 32 lower-case base32 characters (a 20-byte digest).
    static func isDeviceID(_ text: some StringProtocol, prefix: String) -> Bool {
        let bytes = text.utf8
        return bytes.count == deviceIDLength(prefix: prefix) && text.hasPrefix(prefix)
            && bytes.dropFirst(prefix.utf8.count).allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x32 && $0 <= 0x37) }
    }

    /// The length in bytes of a device ID with `prefix`.
    static func deviceIDLength(prefix: String) -> Int { prefix.utf8.count + 32 }

    static func lowercase(_ bytes: [UInt8]) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)
        var text = [UInt8]()
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
