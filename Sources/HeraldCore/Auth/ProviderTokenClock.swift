import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The time source of a ``ProviderTokenIssuer``: wall-clock time for `iat`, and a monotonic clock
/// for a token's age, so a wall-clock jump (NTP, a VM resumed) never makes tokens renew in a burst
/// nor keeps one past its hour. Inject ``ManualProviderTokenClock`` in tests.
public protocol ProviderTokenClock: Sendable {
    /// Wall-clock time, written into `iat`.
    func now() -> Date
    /// Time elapsed since a fixed origin, unaffected by changes to the wall clock.
    func uptime() -> Duration
}

/// The system clocks: `Date()` and `ContinuousClock`.
public struct SystemProviderTokenClock: ProviderTokenClock {
    private let origin = ContinuousClock.now

    public init() {}

    public func now() -> Date { Date() }
    public func uptime() -> Duration { ContinuousClock.now - origin }
}

/// A clock that moves only when told: for tests of token renewal.
public final class ManualProviderTokenClock: ProviderTokenClock {
    private let state: Mutex<(wall: Date, uptime: Duration)>

    /// Starts at `date` with zero uptime.
    public init(startingAt date: Date = Date(timeIntervalSince1970: 1_700_000_000)) {
        state = Mutex((date, .zero))
    }

    public func now() -> Date { state.withLock { $0.wall } }
    public func uptime() -> Duration { state.withLock { $0.uptime } }

    /// Moves both clocks forward.
    public func advance(by duration: Duration) {
        state.withLock { state in
            state.wall += duration.timeInterval
            state.uptime += duration
        }
    }

    /// Sets the wall clock alone, as an NTP correction would; uptime does not move.
    public func setWallClock(to date: Date) {
        state.withLock { $0.wall = date }
    }
}
