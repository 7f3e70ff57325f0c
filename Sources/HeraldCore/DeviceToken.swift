/// A device token: the address of one app on one device, as hex.
///
/// Tokens are case-insensitive and kept in lower case. Their length varies (64 hex characters
/// is usual, Live Activity tokens are longer; apns-spec §1.4), so an even, non-zero length up to
/// ``maximumByteCount`` is required. The legacy binary interface needs exactly 32 bytes and checks
/// that itself.
public struct DeviceToken: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The longest token accepted, in bytes (twice as many hex digits). Apple's tokens are 32
    /// bytes today and longer ones have been seen for Live Activities; 100 leaves room for growth
    /// while keeping a token from becoming a 10 KB `:path` or database key.
    public static let maximumByteCount = 100

    /// The token as lower-case hex, as it goes into `:path`.
    public let hex: String

    /// Parses a hex token; upper case is accepted and normalised to lower case.
    ///
    /// - Throws: ``APNSError`` with reason ``APNSReason/badDeviceToken`` naming what is wrong:
    ///   empty, odd length, or the first character that is not hex and its position.
    public init(_ text: String) throws(APNSError) {
        guard !text.isEmpty else {
            throw APNSError(local: .badDeviceToken, "device token is empty")
        }
        guard text.utf8.count <= 2 * Self.maximumByteCount else {
            throw APNSError(
                local: .badDeviceToken,
                "device token is \(text.utf8.count) characters; at most \(2 * Self.maximumByteCount) hex digits (\(Self.maximumByteCount) bytes) are accepted"
            )
        }
        // Already lower-case hex of even length (every token from the registry): kept as it is,
        // its storage shared, not copied.
        if text.utf8.count % 2 == 0, text.utf8.withContiguousStorageIfAvailable(Self.isLowerHex) ?? false {
            hex = text
            return
        }
        var normalised = [UInt8]()
        normalised.reserveCapacity(text.utf8.count)
        // Bytes, not Characters: a server parses millions of these. Only a bad token pays for
        // finding the character and its position.
        for byte in text.utf8 {
            guard let lower = Self.lowerHex(byte) else { try Self.refuse(text) }
            normalised.append(lower)
        }
        guard normalised.count % 2 == 0 else {
            throw APNSError(
                local: .badDeviceToken,
                "device token has an odd number of hex digits (\(normalised.count)); each byte takes two"
            )
        }
        hex = String(decoding: normalised, as: UTF8.self)
    }

    /// A token made from its raw bytes.
    public init(bytes: some Sequence<UInt8>) throws(APNSError) {
        var hex = [UInt8]()
        for byte in bytes {
            hex.append(hexDigit(byte >> 4))
            hex.append(hexDigit(byte & 0x0F))
        }
        guard !hex.isEmpty else { throw APNSError(local: .badDeviceToken, "device token is empty") }
        guard hex.count <= 2 * Self.maximumByteCount else {
            throw APNSError(local: .badDeviceToken, "device token is \(hex.count / 2) bytes; at most \(Self.maximumByteCount) are accepted")
        }
        self.hex = String(decoding: hex, as: UTF8.self)
    }

    /// The token's raw bytes.
    public var bytes: [UInt8] {
        var result = [UInt8]()
        result.reserveCapacity(hex.utf8.count / 2)
        var high: UInt8 = 0
        for (index, digit) in hex.utf8.enumerated() {
            let value = digit <= UInt8(ascii: "9") ? digit - UInt8(ascii: "0") : digit - UInt8(ascii: "a") + 10
            if index % 2 == 0 {
                high = value << 4
            } else {
                result.append(high | value)
            }
        }
        return result
    }

    /// The number of bytes in the token.
    public var byteCount: Int { hex.utf8.count / 2 }

    public var description: String { hex }

    public static func < (lhs: DeviceToken, rhs: DeviceToken) -> Bool { lhs.hex < rhs.hex }

    /// Throws for the first character of `text` that is not a hex digit, naming it and its position.
    private static func refuse(_ text: String) throws(APNSError) -> Never {
        for (offset, character) in text.enumerated() where character.asciiValue.flatMap(lowerHex) == nil {
            throw APNSError(
                local: .badDeviceToken,
                "device token has \(describe(character)) at position \(offset + 1); only hex digits 0-9 and a-f are allowed"
            )
        }
        preconditionFailure("refuse(_:) is called only for a token with a character that is not a hex digit")
    }

    /// Whether `text` is hex digits only (any case): an APNs token's alphabet, whatever its length.
    public static func isHexDigits(_ text: some StringProtocol) -> Bool {
        text.utf8.allSatisfy { lowerHex($0) != nil }
    }

    /// Whether every byte is a lower-case hex digit: the check each token from the registry gets,
    /// once per device a notification goes to. Without a branch per byte (`containsUTF8Byte`
    /// stops at the first match, a test and a branch for each), so the compiler can check many
    /// at once.
    private static func isLowerHex(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var other: UInt8 = 0
        for byte in bytes {
            let digit: UInt8 = byte &- UInt8(ascii: "0") < 10 ? 1 : 0
            let letter: UInt8 = byte &- UInt8(ascii: "a") < 6 ? 1 : 0
            other |= (digit | letter) ^ 1
        }
        return other == 0
    }

    private static func lowerHex(_ ascii: UInt8) -> UInt8? {
        switch ascii {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"): return ascii
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return ascii + 0x20
        default: return nil
        }
    }

    private static func describe(_ character: Character) -> String {
        switch character {
        case " ": return "a space"
        case "\t": return "a tab"
        case "\n", "\r\n", "\r": return "a line break"
        default:
            if let scalar = character.unicodeScalars.first, scalar.properties.generalCategory == .control {
                return "control character U+" + String(scalar.value, radix: 16, uppercase: true)
            }
            return "'\(character)'"
        }
    }
}
