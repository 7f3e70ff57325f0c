import Foundation
import HeraldCore

/// The lower-case UUIDs the mock makes up for `apns-id`, `apns-unique-id` and `apns-request-id`.
///
/// Foundation's `UUID()` reads the system's random source and formats with `sprintf` for every
/// id; under a benchmark that was a few percent of the mock's time. These are version-4 UUIDs
/// from SplitMix64, seeded once per connection from the system's generator: unique enough for
/// a test server (never for secrets), and written straight into their 36 bytes.
struct MockIdentifiers {
    private var random: SplitMix64

    init() {
        var system = SystemRandomNumberGenerator()
        random = SplitMix64(seed: system.next())
    }

    /// A new random version-4 UUID, lower case.
    mutating func next() -> String {
        var high = random.next()
        var low = random.next()
        high = (high & ~0xF000) | 0x4000  // version 4 (RFC 9562 §5.4)
        low = (low & ~(0b11 << 62)) | (0b10 << 62)  // variant 10
        return Self.format(high: high, low: low)
    }

    /// `uuid` in lower case, as APNs writes ids.
    static func format(_ uuid: UUID) -> String {
        let bytes = uuid.uuid
        let high = [bytes.0, bytes.1, bytes.2, bytes.3, bytes.4, bytes.5, bytes.6, bytes.7].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let low = [bytes.8, bytes.9, bytes.10, bytes.11, bytes.12, bytes.13, bytes.14, bytes.15].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return format(high: high, low: low)
    }

    private static func format(high: UInt64, low: UInt64) -> String {
        String(unsafeUninitializedCapacity: 36) { buffer in
            let digits: StaticString = "0123456789abcdef"
            var index = 0
            func put(_ word: UInt64, nibbles: ClosedRange<Int>) {
                for nibble in nibbles.reversed() {
                    if index == 8 || index == 13 || index == 18 || index == 23 {
                        buffer[index] = UInt8(ascii: "-")
                        index += 1
                    }
                    buffer[index] = digits.utf8Start[Int((word >> UInt64(nibble * 4)) & 0xF)]
                    index += 1
                }
            }
            put(high, nibbles: 0...15)
            put(low, nibbles: 0...15)
            return 36
        }
    }
}
