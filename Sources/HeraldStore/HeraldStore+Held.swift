import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension HeraldStore {
    /// Makes due now every delivery of `app`'s devices of `platform` that waits with `reason`
    /// (`HostBackedOff`: held while their push service's host was backed off, which answers
    /// again), of the notifications still queued or sending; workers are woken. Returns how many.
    @discardableResult
    public func wakeHeld(app: String, platform: DevicePlatform, reason: DeliveryReason, now: Date = Date()) async throws -> Int {
        try await backend.wakeHeld(app: app, platform: platform, reason: reason.description, now: now)
    }
}
