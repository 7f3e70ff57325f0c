/// Base64url without padding (RFC 4648 §5), as JWTs use it (RFC 7515).
package enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Whether `byte` is one of the alphabet's 64 characters (`A-Z a-z 0-9 - _`; not `=`).
    package static func isAlphabet(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"),
            UInt8(ascii: "_"):
            true
        default: false
        }
    }

    /// Encodes without padding.
    package static func encode(_ input: some Collection<UInt8>) -> String {
        var output = [UInt8]()
        output.reserveCapacity((input.count * 4 + 2) / 3)
        var iterator = input.makeIterator()
        while let first = iterator.next() {
            let second = iterator.next()
            let third = iterator.next()
            output.append(alphabet[Int(first >> 2)])
            output.append(alphabet[Int((first & 0x03) << 4 | (second ?? 0) >> 4)])
            guard let second else { break }
            output.append(alphabet[Int((second & 0x0F) << 2 | (third ?? 0) >> 6)])
            guard let third else { break }
            output.append(alphabet[Int(third & 0x3F)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes base64url with or without padding; `nil` for any other character.
    package static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var output = [UInt8]()
        output.reserveCapacity(text.utf8.count * 3 / 4)
        var buffer: UInt32 = 0
        var bits = 0
        for byte in text.utf8 {
            let value: UInt8
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = byte - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = byte - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte - UInt8(ascii: "0") + 52
            case UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "_"): value = 63
            case UInt8(ascii: "="): continue
            default: return nil
            }
            buffer = buffer << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        return output
    }
}
