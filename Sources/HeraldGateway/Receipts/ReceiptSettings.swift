#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Whether an app's deliveries carry receipts, and for how long a receipt is taken (`receipts`
/// in the app's entry: `{"enabled": false}` turns them off).
public struct ReceiptSettings: Sendable, Hashable {
    /// Each delivery carries a receipt token (`"herald"` in the payload); default on.
    public var enabled = true
    /// How long after its send a receipt is taken: a device may open a notification days later.
    /// `nil`: 7 days, or the queue's retention when shorter (after it the notification is gone).
    public var lifetimeSeconds: Int?

    /// How long receipts are taken, with the queue's `retention`.
    func lifetime(retention: Duration) -> TimeInterval {
        let kept = Double(retention.components.seconds)
        return lifetimeSeconds.map(Double.init) ?? min(7 * 86_400, kept)
    }

    public init() {}

    init(_ fields: JSONFields) throws(FieldError) {
        try fields.only(["enabled", "lifetimeSeconds"])
        if let enabled = try fields.bool("enabled") { self.enabled = enabled }
        if let lifetime = try fields.int("lifetimeSeconds") {
            guard (60...(366 * 86_400)).contains(lifetime) else { throw FieldError(fields.at("lifetimeSeconds"), "must be 60 to 31622400 (366 days)") }
            lifetimeSeconds = lifetime
        }
    }
}
