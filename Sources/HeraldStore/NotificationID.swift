import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Notification IDs: UUIDv7 (RFC 9562 §5.7) in lower case, so their text sorts by creation time.
/// Within one millisecond a 12-bit counter keeps them increasing in this process.
enum NotificationID {
    private static let state = Mutex<(milliseconds: UInt64, counter: UInt16)>((0, 0))

    static func make(now: Date = Date()) -> String {
        let wall = UInt64(max(0, now.timeIntervalSince1970 * 1000))
        let (milliseconds, counter) = state.withLock { state -> (UInt64, UInt16) in
            if wall > state.milliseconds {
                state = (wall, UInt16.random(in: 0..<0x400))
            } else if state.counter < 0xFFF {
                state.counter += 1
            } else {
                state = (state.milliseconds + 1, 0)  // 4096 in one millisecond: borrow the next
            }
            return state
        }
        var random = SystemRandomNumberGenerator()
        let high = (milliseconds << 16) | 0x7000 | UInt64(counter)  // unix_ts_ms, ver 7, rand_a as the counter
        let low = (random.next() & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000  // variant 10, rand_b
        let digits = Array(hex(high) + hex(low))
        return String(digits[0..<8]) + "-" + String(digits[8..<12]) + "-" + String(digits[12..<16]) + "-"
            + String(digits[16..<20]) + "-" + String(digits[20..<32])
    }

    /// 16 lower-case hex digits.
    private static func hex(_ word: UInt64) -> String {
        let text = String(word, radix: 16)
        return String(repeating: "0", count: 16 - text.count) + text
    }

    /// Whether `text` looks like an ID made here (a UUID in lower case).
    static func isValid(_ text: String) -> Bool {
        text.utf8.count == 36 && UUID(uuidString: text) != nil && text == text.lowercased()
    }
}
