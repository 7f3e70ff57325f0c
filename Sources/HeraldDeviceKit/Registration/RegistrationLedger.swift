import Foundation

/// What was last registered, by registration (`device`, `liveActivity/{id}`,
/// `pushToStart/{type}`), so a registration is sent again only when it changed or aged.
struct RegistrationLedger: Codable, Equatable, Sendable {
    struct Entry: Codable, Equatable, Sendable {
        /// The token, in hex.
        var token: String
        /// ``RegistrationLedger/digest(_:)`` of the body.
        var body: String
        /// Seconds since 1970.
        var sentAt: Double
    }

    /// The most registrations remembered: Live Activities come and go, and each leaves one.
    static let maximumEntries = 64

    var entries: [String: Entry] = [:]

    /// Whether `entry` (its `sentAt` aside) was sent under `key` less than `interval` ago.
    func isCurrent(_ key: String, _ entry: Entry, now: Date, interval: TimeInterval) -> Bool {
        guard let last = entries[key], last.token == entry.token, last.body == entry.body else { return false }
        let age = now.timeIntervalSince1970 - last.sentAt
        // A clock set back makes the age negative: send again rather than wait for it.
        return age >= 0 && age < interval
    }

    /// Remembers `entry` under `key`, forgetting the longest-sent past the bound.
    mutating func record(_ key: String, _ entry: Entry) {
        entries[key] = entry
        while entries.count > Self.maximumEntries, let oldest = entries.min(by: { $0.value.sentAt < $1.value.sentAt })?.key {
            entries[oldest] = nil
        }
    }

    /// FNV-1a (64 bits) of `body`, in hex: to tell whether a body changed, nothing more (it is
    /// not a secret and needs no cryptographic hash).
    static func digest(_ body: Data) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in body {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return String(hash, radix: 16)
    }
}
