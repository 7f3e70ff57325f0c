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

    /// An expiration from UNIX seconds; `0` means ``immediately``.
    public init(unixSeconds: Int) throws(APNSError) {
        guard unixSeconds >= 0 else {
            throw APNSError(local: .badExpirationDate, "apns-expiration must be UNIX seconds (0 or more), got \(unixSeconds)")
        }
        self = unixSeconds == 0 ? .immediately : .at(Date(timeIntervalSince1970: TimeInterval(unixSeconds)))
    }

    /// The header value: UNIX seconds, `0` for ``immediately``.
    public var unixSeconds: Int {
        switch self {
        case .immediately: 0
        case .at(let date): Int(date.timeIntervalSince1970.rounded(.down))
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
