import HeraldCore
import Testing

@Suite("Device tokens")
struct DeviceTokenTests {
    @Test("hex is case-insensitive and kept in lower case")
    func normalised() throws {
        let token = try DeviceToken("ABCDEF0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789")
        #expect(token.hex == "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789")
        #expect(token.byteCount == 32)
        #expect(token == (try DeviceToken(token.hex.uppercased())))
    }

    @Test("any even length works: Live Activity tokens are longer than 32 bytes")
    func variableLength() throws {
        let long = String(repeating: "0f", count: 80)
        let token = try DeviceToken(long)
        #expect(token.byteCount == 80)
        #expect(token.bytes == Array(repeating: 0x0F, count: 80))
        #expect(try DeviceToken("0a").bytes == [0x0A])
    }

    @Test("bytes round-trip")
    func bytesRoundTrip() throws {
        let bytes: [UInt8] = (0..<100).map { UInt8($0) }
        let token = try DeviceToken(bytes: bytes)
        #expect(token.bytes == bytes)
        #expect(token.hex.hasPrefix("000102"))
        #expect(throws: APNSError.self) { try DeviceToken(bytes: []) }
    }

    @Test("a token longer than maximumByteCount (100 bytes) is BadDeviceToken, whatever its form")
    func tooLong() throws {
        #expect(try DeviceToken(String(repeating: "ab", count: DeviceToken.maximumByteCount)).byteCount == 100)
        for text in [String(repeating: "ab", count: 101), String(repeating: "0", count: 10_000), String(repeating: "x", count: 1 << 20)] {
            let error = #expect(throws: APNSError.self) { try DeviceToken(text) }
            #expect(error?.reason == .badDeviceToken)
            #expect(error?.detail?.contains("at most 200 hex digits (100 bytes)") == true)
        }
        let error = #expect(throws: APNSError.self) { try DeviceToken(bytes: Array(repeating: 0xAB, count: 101)) }
        #expect(error?.reason == .badDeviceToken)
    }

    @Test("every byte value, at the start, middle and end of a token: hex digits kept (upper case lowered), anything else refused")
    func everyByte() throws {
        for position in [0, 31, 63] {
            for value in 0...255 {
                var bytes = Array(repeating: UInt8(ascii: "a"), count: 64)
                bytes[position] = UInt8(value)
                let text = String(decoding: bytes, as: UTF8.self)
                let scalar = Unicode.Scalar(UInt8(value))
                switch scalar {
                case "0"..."9", "a"..."f":
                    #expect(try DeviceToken(text).hex == text, "\(value) at \(position)")
                case "A"..."F":
                    #expect(try DeviceToken(text).hex == text.lowercased(), "\(value) at \(position)")
                default:
                    let error = #expect(throws: APNSError.self, "\(value) at \(position)") { try DeviceToken(text) }
                    #expect(error?.reason == .badDeviceToken)
                }
            }
        }
    }

    @Test("an empty token is BadDeviceToken")
    func empty() {
        let error = #expect(throws: APNSError.self) { try DeviceToken("") }
        #expect(error?.reason == .badDeviceToken)
        #expect(error?.detail == "device token is empty")
    }

    @Test("an odd length says how many digits there are")
    func oddLength() {
        let error = #expect(throws: APNSError.self) { try DeviceToken("abc") }
        #expect(error?.reason == .badDeviceToken)
        #expect(error?.detail?.contains("odd number of hex digits (3)") == true)
    }

    @Test("the first non-hex character is named with its position", arguments: [
        ("abcg12", "'g' at position 4"), ("<abcd>", "'<' at position 1"), ("ab cd", "a space at position 3"),
        ("abcd\u{00E9}f", "'é' at position 5"), ("ab\tc", "a tab at position 3"),
    ])
    func nonHex(text: String, expected: String) {
        let error = #expect(throws: APNSError.self) { try DeviceToken(text) }
        #expect(error?.detail?.contains(expected) == true, "\(error?.detail ?? "")")
    }
}
