#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// The one home of the package's `Duration` conversions (a `TimeAmount` from a `Duration` is
// NIO's own `TimeAmount(_:)`, clamped).
extension Duration {
    /// The duration in seconds, with its fraction.
    package var seconds: Double {
        let (whole, fraction) = components
        return Double(whole) + Double(fraction) / 1e18
    }

    /// The duration in seconds, as a `TimeInterval`.
    package var timeInterval: TimeInterval { seconds }
}
