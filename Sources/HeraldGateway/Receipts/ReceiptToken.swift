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
/// | 1 | the device's token kind (high 4 bits) and platform (low 4 bits), as the store numbers them |
/// | 2..<18 | the notification's ID (a UUID's 16 bytes) |
/// | 18..<22 | when it was made, seconds since 1970, big-endian |
/// | 22..<28 | the device: the top 48 bits of its key-space hash (``KeySpace``), big-endian |
/// | 28..<36 | the first 64 bits of HMAC-SHA256 (RFC 2104) over the domain, the app and bytes 0..<28 |
///
/// The MAC is checked before anything is read for a receipt: a forged one costs no database
/// work. A device is then found by its app, kind and the first 32 bits of the reference (the
/// key its row is stored under), and must match all 48; one no longer registered, or two that
/// share the reference, and the receipt is refused as a forged one is, without saying which.
struct ReceiptToken: Sendable, Hashable {
    /// The key it is sent under: in an APNs payload and a Web Push message, at the top level; in
    /// FCM's `data`.
    static let payloadKey = "herald"
    static let byteCount = 36
    static let textLength = 48
    static let version: UInt8 = 1
    static let macLength = 8
    /// Bytes 0..<signedPrefix are covered by the MAC as they are.
    static let signedPrefix = 28

    var slot: Int
    var platform: DevicePlatform
    var kind: TokenKind
    /// The notification's ID, as the store spells it (lower-case UUID).
    var notification: String
    var issuedAt: Date
    /// The top 48 bits of the device's ``KeySpace/mixed(_:)``.
    var device: UInt64
    /// The 36 bytes as read.
    var bytes: [UInt8]

    /// The first 32 bits of ``device``: its row's key hash.
    var deviceHash: UInt32 { UInt32(truncatingIfNeeded: device >> 16) }

    /// Why a token is refused, as the API and the metrics name it.
    enum Refusal: String, Sendable, CaseIterable {
        /// Not 48 characters of base64url, or not this version.
        case malformed
        /// Its MAC does not match its app's keys, or it names no device (any more): forged,
        /// altered, or for a device no longer registered (not told apart).
        case forged
        /// Made longer ago than its app keeps receipts open (`receipts.lifetimeSeconds`).
        case expired
        /// Its app does not take receipts (`receipts.enabled` false).
        case disabled
    }

    /// Reads a token's fields; its MAC is checked by ``verify(app:key:)``.
    init(parsing text: some StringProtocol) throws(ReceiptTokenError) {
        guard text.utf8.count == Self.textLength, let bytes = Self.decode(text.utf8), bytes[0] >> 4 == Self.version,
            let platform = DevicePlatform.allCases.first(where: { $0.code == Int(bytes[1] & 0x0F) }), let kind = TokenKind(code: Int(bytes[1] >> 4))
        else { throw ReceiptTokenError(.malformed) }
        slot = Int(bytes[0] & 0x0F)
        self.platform = platform
        self.kind = kind
        notification = Self.uuidText(bytes[2..<18])
        issuedAt = Date(timeIntervalSince1970: TimeInterval(Self.integer(bytes, 18..<22)))
        device = Self.integer(bytes, 22..<28)
        self.bytes = bytes
    }

    /// Whether the MAC was made with `key` for `app`. Constant-time in the MAC.
    func verify(app: String, key: ReceiptKey) -> Bool {
        let code = key.start(app: app).mac(bytes[..<Self.signedPrefix])
        var difference: UInt8 = 0
        code.withUnsafeBytes { code in
            for index in 0..<Self.macLength { difference |= code[index] ^ bytes[Self.signedPrefix + index] }
        }
        return difference == 0
    }

    /// Whether `device` (an ID as the store keeps it) is the one this token names.
    func names(_ device: String) -> Bool {
        KeySpace.mixed(device) >> 16 == self.device
    }

    // MARK: Encoding

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Writes 36 bytes as 48 characters of base64url at `output` (no padding: 36 is a multiple of 3).
    static func encode(_ bytes: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) {
        alphabet.withUnsafeBufferPointer { alphabet in
            var out = 0
            var index = 0
            while index + 3 <= bytes.count {
                let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
                output[out] = alphabet[Int(group >> 18)]
                output[out + 1] = alphabet[Int(group >> 12 & 0x3F)]
                output[out + 2] = alphabet[Int(group >> 6 & 0x3F)]
                output[out + 3] = alphabet[Int(group & 0x3F)]
                index += 3
                out += 4
            }
        }
    }

    /// 48 characters of base64url as 36 bytes; `nil` for any other character.
    static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        guard text.count == textLength else { return nil }
        var bytes = [UInt8](repeating: 0, count: byteCount)
        var group: UInt32 = 0
        var count = 0
        var out = 0
        for character in text {
            let value: UInt32
            switch character {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(character - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(character - UInt8(ascii: "a") + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(character - UInt8(ascii: "0") + 52)
            case UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "_"): value = 63
            default: return nil
            }
            group = group << 6 | value
            count += 1
            if count == 4 {
                bytes[out] = UInt8(truncatingIfNeeded: group >> 16)
                bytes[out + 1] = UInt8(truncatingIfNeeded: group >> 8)
                bytes[out + 2] = UInt8(truncatingIfNeeded: group)
                out += 3
                count = 0
                group = 0
            }
        }
        return bytes
    }

    /// `json` (a JSON object's text) with `"herald": receipt` first among its members, written
    /// into its bytes (a receipt needs no escaping); `nil` when that would take it over `limit`
    /// bytes, or it is not an object.
    static func inserted(_ receipt: String, into json: [UInt8], limit: Int) -> [UInt8]? {
        var receipt = receipt
        return receipt.withUTF8 { text in inserted(UnsafeRawBufferPointer(text), into: json, limit: limit) }
    }

    /// The same, with the receipt's characters.
    static func inserted(_ receipt: UnsafeRawBufferPointer, into json: [UInt8], limit: Int) -> [UInt8]? {
        guard let layout = Insertion(json, receiptLength: receipt.count, limit: limit) else { return nil }
        return layout.write(into: json) { $0.copyMemory(from: receipt) }
    }

    /// Where a receipt goes in a JSON object's text, and how long the result is.
    struct Insertion {
        /// The index of the object's `{`.
        let open: Int
        /// Whether the object has no members (no comma after the receipt).
        let empty: Bool
        let count: Int
        let receiptLength: Int

        static let head = Array("\"\(payloadKey)\":\"".utf8)

        init?(_ json: [UInt8], receiptLength: Int, limit: Int) {
            func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 }
            guard let open = json.firstIndex(where: { !isSpace($0) }), json[open] == UInt8(ascii: "{") else { return nil }
            self.open = open
            empty = json[(open + 1)...].first(where: { !isSpace($0) }) == UInt8(ascii: "}")
            self.receiptLength = receiptLength
            count = json.count + Self.head.count + receiptLength + 1 + (empty ? 0 : 1)
            guard count <= limit else { return nil }
        }

        /// `json` with the member written in, its receipt's characters by `receipt` (given the
        /// bytes they go in), in one allocation.
        func write(into json: [UInt8], receipt: (UnsafeMutableRawBufferPointer) -> Void) -> [UInt8] {
            [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
                let raw = UnsafeMutableRawBufferPointer(buffer)
                var at = 0
                json.withUnsafeBytes { source in
                    raw.baseAddress!.copyMemory(from: source.baseAddress!, byteCount: open + 1)
                    at = open + 1
                    Self.head.withUnsafeBytes { raw.baseAddress!.advanced(by: at).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
                    at += Self.head.count
                    receipt(UnsafeMutableRawBufferPointer(rebasing: raw[at..<(at + receiptLength)]))
                    at += receiptLength
                    raw[at] = UInt8(ascii: "\"")
                    at += 1
                    if !empty {
                        raw[at] = UInt8(ascii: ",")
                        at += 1
                    }
                    let rest = json.count - open - 1
                    if rest > 0 { raw.baseAddress!.advanced(by: at).copyMemory(from: source.baseAddress!.advanced(by: open + 1), byteCount: rest) }
                    at += rest
                }
                initialized = at
            }
        }
    }

    // MARK: Notification IDs

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

    /// Big-endian bytes `range` of `bytes` as a number.
    static func integer(_ bytes: [UInt8], _ range: Range<Int>) -> UInt64 {
        bytes[range].reduce(0) { $0 << 8 | UInt64($1) }
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
    /// SHA-256 after the key XOR ipad, and after the key XOR opad (RFC 2104 §2): each MAC starts
    /// from copies of these, rather than hash the key again.
    private let inner: SHA256
    private let outer: SHA256

    init(slot: Int, secret: [UInt8]) {
        self.slot = slot
        // A key longer than SHA-256's block is hashed first (RFC 2104 §2).
        var key = secret.count > 64 ? Array(SHA256.hash(data: secret)) : secret
        key += [UInt8](repeating: 0, count: 64 - key.count)
        var inner = SHA256()
        inner.update(data: key.map { $0 ^ 0x36 })
        var outer = SHA256()
        outer.update(data: key.map { $0 ^ 0x5C })
        self.inner = inner
        self.outer = outer
    }

    /// The MAC's state once the domain and `app` are in it.
    func start(app: String) -> ReceiptMAC {
        var inner = self.inner
        inner.update(data: Self.domain)
        inner.update(data: Array(app.utf8) + [0])
        return ReceiptMAC(inner: inner, outer: outer)
    }

    /// What a receipt's MAC is over first: no other MAC made with this key can be taken for one.
    static let domain = Array("herald-receipt-v1".utf8)
}

/// HMAC-SHA256 (RFC 2104) part-way: the key, the domain and an app in it. Written over
/// swift-crypto's SHA-256 rather than its `HMAC`, whose generic `update` made a broadcast's
/// receipts cost a fifth of the gateway's time; the result is the same (tested against `HMAC`).
struct ReceiptMAC: Sendable {
    fileprivate var inner: SHA256
    fileprivate let outer: SHA256

    /// The MAC of what is in it so far and then `message`.
    func mac(_ message: ArraySlice<UInt8>) -> SHA256Digest {
        var inner = self.inner
        message.withUnsafeBytes { inner.update(bufferPointer: $0) }
        return finish(inner)
    }

    func mac(_ message: UnsafeRawBufferPointer) -> SHA256Digest {
        var inner = self.inner
        inner.update(bufferPointer: message)
        return finish(inner)
    }

    private func finish(_ inner: SHA256) -> SHA256Digest {
        var outer = self.outer
        inner.finalize().withUnsafeBytes { outer.update(bufferPointer: $0) }
        return outer.finalize()
    }
}

/// Makes the receipts of one notification's devices on one platform: what is the same for all of
/// them is computed once (the MAC's state after the app, the token's first 22 bytes).
struct ReceiptMaker: Sendable {
    private let started: ReceiptMAC
    private let head: [UInt8]

    /// For `notification` of `app` on `platform`, to devices of token `kind`, signed with `key`,
    /// made at `now`; `nil` when the notification's ID is not a UUID (the store makes none other).
    init?(app: String, notification: String, platform: DevicePlatform, kind: TokenKind, key: ReceiptKey, now: Date) {
        guard let id = ReceiptToken.uuidBytes(notification) else { return nil }
        var head: [UInt8] = [ReceiptToken.version << 4 | UInt8(key.slot & 0x0F), UInt8(kind.code & 0x0F) << 4 | UInt8(platform.code & 0x0F)]
        head += id
        let seconds = UInt32(clamping: Int64(max(0, now.timeIntervalSince1970)))
        head += [UInt8(seconds >> 24), UInt8(truncatingIfNeeded: seconds >> 16), UInt8(truncatingIfNeeded: seconds >> 8), UInt8(truncatingIfNeeded: seconds)]
        self.head = head
        started = key.start(app: app)
    }

    /// Writes the receipt of device `token` (its ID as the store keeps it), 48 characters, at `output`.
    func write(for token: String, into output: UnsafeMutableRawBufferPointer) {
        withUnsafeTemporaryAllocation(byteCount: ReceiptToken.byteCount, alignment: 1) { bytes in
            head.withUnsafeBytes { bytes.copyMemory(from: $0) }
            let reference = KeySpace.mixed(token) >> 16
            for index in 0..<6 { bytes[22 + index] = UInt8(truncatingIfNeeded: reference >> (40 - 8 * UInt64(index))) }
            let code = started.mac(UnsafeRawBufferPointer(rebasing: bytes[..<ReceiptToken.signedPrefix]))
            code.withUnsafeBytes { code in
                for index in 0..<ReceiptToken.macLength { bytes[ReceiptToken.signedPrefix + index] = code[index] }
            }
            ReceiptToken.encode(UnsafeRawBufferPointer(bytes), into: output)
        }
    }

    /// The receipt of device `token`.
    func receipt(for token: String) -> String {
        String(unsafeUninitializedCapacity: ReceiptToken.textLength) { buffer in
            write(for: token, into: UnsafeMutableRawBufferPointer(buffer))
            return ReceiptToken.textLength
        }
    }

    /// `json` (a JSON object's text) with device `token`'s receipt first among its members, in
    /// one allocation; `nil` when it would go over `limit` bytes or is not an object.
    func payload(_ json: [UInt8], for token: String, limit: Int) -> [UInt8]? {
        guard let layout = ReceiptToken.Insertion(json, receiptLength: ReceiptToken.textLength, limit: limit) else { return nil }
        return layout.write(into: json) { write(for: token, into: $0) }
    }
}
