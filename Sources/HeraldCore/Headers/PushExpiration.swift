#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The `apns-expiration` header (apns-spec §1.4). Leave it out (`nil`) for APNs's default storage.
public enum PushExpiration: Sendable, Hashable, CustomStringConvertible {
    /// `0`: one delivery attempt, nothing stored.
    case immediately
    /// Store and retry until this time (best effort, up to about 30 days).
    case at(Date)

    /// The latest expiration accepted: 9999-12-31T23:59:59Z. APNs keeps a notification for about
    /// 30 days at most, so anything later means the same as this; past it, a time is a caller's
    /// mistake, and arithmetic on it (milliseconds in a store, a `Date`) would overflow.
    public static let maximumUnixSeconds = 253_402_300_799

    /// An expiration from UNIX seconds; `0` means ``immediately``.
    ///
    /// - Throws: ``APNSError`` with reason ``APNSReason/badExpirationDate`` for a value outside
    ///   `0...maximumUnixSeconds`, naming the range.
    public init(unixSeconds: Int) throws(APNSError) {
        guard (0...Self.maximumUnixSeconds).contains(unixSeconds) else {
            throw APNSError(
                local: .badExpirationDate,
                "apns-expiration must be UNIX seconds from 0 to \(Self.maximumUnixSeconds) (9999-12-31), got \(unixSeconds)"
            )
        }
        self = unixSeconds == 0 ? .immediately : .at(Date(timeIntervalSince1970: TimeInterval(unixSeconds)))
    }

    /// The header value: UNIX seconds, `0` for ``immediately``.
    public var unixSeconds: Int {
        switch self {
        case .immediately: 0
        // Clamped: a `Date` made by hand may lie outside what an `Int` of seconds can hold.
        case .at(let date): Int(min(max(date.timeIntervalSince1970.rounded(.down), 0), Double(Self.maximumUnixSeconds)))
        }
    }

    /// The last moment the notification is worth delivering (`nil`: no limit set by the header).
    /// A retry must not outlive this.
    public var deadline: Date? {
        if case .at(let date) = self { return date }
        return nil
    }

    public var description: String { String(unixSeconds) }
}
