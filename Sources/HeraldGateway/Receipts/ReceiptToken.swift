import Crypto
import HeraldCore
import HeraldStore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The receipt a delivery carries (`"herald"` in an APNs payload and a Web Push message, in FCM's
/// `data`): what a device reports `received`, `opened`, `dismissed` or `clicked` with, to the
/// public `POST /v1/receipts`. It is its own credential: a MAC with the app's receipt key binds
/// it to one notification, one device and one platform, so it can name nothing else.
///
/// 36 bytes, 48 characters of base64url (RFC 4648 §5):
///
/// | bytes | what |
/// |---|---|
/// | 0 | version (high 4 bits, 1) and the app's key slot (low 4 bits) |
/// | 1 | the platform (``DevicePlatform/code``) |
/// | 2..<18 | the notification's ID (a UUID's 16 bytes) |
/// | 18..<22 | when it was made, seconds since 1970, big-endian |
/// | 22..<26 | the device's key-space hash (where its row is found), big-endian |
/// | 26..<36 | the first 80 bits of HMAC-SHA256 (RFC 2104) over the domain, the app, bytes 0..<26 and the device's ID |
///
/// The MAC covers the device's whole ID, which the token does not hold: the gateway finds the
/// device by the hash and checks the MAC against it, so a token names exactly one device, and
/// one that is not (any more) registered is refused as a forged one is, without saying which.
struct ReceiptToken: Sendable, Hashable {
    /// The key it is sent under: in an APNs payload and a Web Push message, at the top level; in
    /// FCM's `data`.
    static let payloadKey = "herald"
    static let byteCount = 36
    static let textLength = 48
    static let version: UInt8 = 1
    static let macLength = 10
    /// Bytes 0..<signedPrefix are covered by the MAC as they are.
    static let signedPrefix = 26

    var slot: Int
    var platform: DevicePlatform
    /// The notification's ID, as the store spells it (lower-case UUID).
    var notification: String
    var issuedAt: Date
    var deviceHash: UInt32
    /// The MAC as the token carries it.
    var mac: [UInt8]
    /// Bytes 0..<signedPrefix, as read.
    var prefix: [UInt8]

    /// Why a token is refused, as the API and the metrics name it.
    enum Refusal: String, Sendable, CaseIterable {
        /// Not 48 characters of base64url, or not this version.
        case malformed
        /// Its MAC does not match any of its app's keys and devices: forged, altered, or for a
        /// device no longer registered (not told apart).
        case forged
        /// Made longer ago than its app keeps receipts open (`receipts.lifetimeSeconds`), or its
        /// notification is no longer kept.
        case expired
        /// Its app does not take receipts (`receipts.enabled` false) or no longer exists.
        case disabled
    }

    /// Reads a token's fields; its MAC is checked by ``verify(app:device:key:)``.
    init(parsing text: some StringProtocol) throws(ReceiptTokenError) {
        guard text.utf8.count == Self.textLength, text.utf8.allSatisfy(Base64URL.isAlphabet), let bytes = Base64URL.decode(text),
            bytes.count == Self.byteCount, bytes[0] >> 4 == Self.version,
            let platform = DevicePlatform.allCases.first(where: { $0.code == Int(bytes[1]) })
        else { throw ReceiptTokenError(.malformed) }
        slot = Int(bytes[0] & 0x0F)
        self.platform = platform
        notification = Self.uuidText(bytes[2..<18])
        issuedAt = Date(timeIntervalSince1970: TimeInterval(Self.uint32(bytes, at: 18)))
        deviceHash = Self.uint32(bytes, at: 22)
        mac = Array(bytes[Self.signedPrefix...])
        prefix = Array(bytes[..<Self.signedPrefix])
    }

    /// Whether the MAC was made with `key` for `device` of `app`. Constant-time in the MAC.
    func verify(app: String, device: String, key: ReceiptKey) -> Bool {
        var hmac = key.start(app: app)
        hmac.update(data: prefix)
        hmac.update(data: Array(device.utf8))
        let code = hmac.finalize()
        var difference: UInt8 = 0
        code.withUnsafeBytes { bytes in
            for index in 0..<Self.macLength { difference |= bytes[index] ^ mac[index] }
        }
        return difference == 0
    }

    /// `json` (a JSON object's text) with `"herald": receipt` first among its members, written
    /// into its bytes (a receipt needs no escaping); `nil` when that would take it over `limit`
    /// bytes, or it is not an object.
    static func inserted(_ receipt: String, into json: [UInt8], limit: Int) -> [UInt8]? {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 }
        guard let open = json.firstIndex(where: { !isSpace($0) }), json[open] == UInt8(ascii: "{") else { return nil }
        let member = "\"\(payloadKey)\":\"\(receipt)\""
        let empty = json[(open + 1)...].first(where: { !isSpace($0) }) == UInt8(ascii: "}")
        guard json.count + member.utf8.count + 1 <= limit else { return nil }
        var spliced: [UInt8] = []
        spliced.reserveCapacity(json.count + member.utf8.count + 1)
        spliced += json[...open]
        spliced += member.utf8
        if !empty { spliced.append(UInt8(ascii: ",")) }
        spliced += json[(open + 1)...]
        return spliced
    }

    /// The notification ID's 16 bytes (its hex digits), or `nil` when it is not a UUID.
    static func uuidBytes(_ id: String) -> [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        var high: UInt8?
        for character in id.utf8 where character != UInt8(ascii: "-") {
            guard let nibble = Self.nibble(character) else { return nil }
            if let first = high {
                bytes.append(first << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return bytes.count == 16 && high == nil ? bytes : nil
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// 16 bytes as a lower-case UUID (8-4-4-4-12).
    static func uuidText(_ bytes: ArraySlice<UInt8>) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (offset, byte) in bytes.enumerated() {
            if offset == 4 || offset == 6 || offset == 8 || offset == 10 { text.append(UInt8(ascii: "-")) }
            text.append(hexDigits[Int(byte >> 4)])
            text.append(hexDigits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    static func uint32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }
}

/// A receipt token that cannot be taken, and why.
struct ReceiptTokenError: Error, Sendable, Equatable {
    let refusal: ReceiptToken.Refusal

    init(_ refusal: ReceiptToken.Refusal) {
        self.refusal = refusal
    }
}

/// One of an app's receipt keys: a random 256-bit secret in a slot (0 to 15). The newest signs;
/// an older one still verifies until its overlap ends (``HeraldStore/rotateReceiptKey(app:overlap:now:)``).
struct ReceiptKey: Sendable {
    let slot: Int
    /// HMAC-SHA256 keyed with the secret, before any message: each token copies it rather than
    /// hash the key again.
    private let keyed: HMAC<SHA256>

    init(slot: Int, secret: [UInt8]) {
        self.slot = slot
        keyed = HMAC<SHA256>(key: SymmetricKey(data: secret))
    }

    /// The MAC's state once the domain and `app` are in it.
    func start(app: String) -> HMAC<SHA256> {
        var hmac = keyed
        hmac.update(data: Self.domain)
        hmac.update(data: Array(app.utf8))
        hmac.update(data: [0])
        return hmac
    }

    /// What a receipt's MAC is over first: no other MAC made with this key can be taken for one.
    static let domain = Array("herald-receipt-v1".utf8)
}

/// Makes the receipts of one notification's devices on one platform: what is the same for all of
/// them is computed once (the MAC's state after the app, the token's first 22 bytes).
struct ReceiptMaker: Sendable {
    private let started: HMAC<SHA256>
    private var head: [UInt8]

    /// For `notification` of `app` on `platform`, signed with `key`, made at `now`; `nil` when
    /// the notification's ID is not a UUID (the store makes none other).
    init?(app: String, notification: String, platform: DevicePlatform, key: ReceiptKey, now: Date) {
        guard let id = ReceiptToken.uuidBytes(notification) else { return nil }
        var head: [UInt8] = [ReceiptToken.version << 4 | UInt8(key.slot & 0x0F), UInt8(platform.code)]
        head += id
        let seconds = UInt32(clamping: Int64(max(0, now.timeIntervalSince1970)))
        head += [UInt8(seconds >> 24), UInt8(truncatingIfNeeded: seconds >> 16), UInt8(truncatingIfNeeded: seconds >> 8), UInt8(truncatingIfNeeded: seconds)]
        self.head = head
        started = key.start(app: app)
    }

    /// The receipt of device `token` (its ID as the store keeps it).
    func receipt(for token: String) -> String {
        let hash = UInt32(truncatingIfNeeded: KeySpace.hash(token))
        var bytes = head
        bytes.reserveCapacity(ReceiptToken.byteCount)
        bytes += [UInt8(hash >> 24), UInt8(truncatingIfNeeded: hash >> 16), UInt8(truncatingIfNeeded: hash >> 8), UInt8(truncatingIfNeeded: hash)]
        var hmac = started
        hmac.update(data: bytes)
        hmac.update(data: Array(token.utf8))
        let code = hmac.finalize()
        code.withUnsafeBytes { bytes += $0.prefix(ReceiptToken.macLength) }
        return Base64URL.encode(bytes)
    }
}
