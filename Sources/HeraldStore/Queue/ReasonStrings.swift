import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// TEMPORARY: lets Backend/StoreRules.swift, which still keeps reasons as strings, compile against
// `DeliveryOutcome.Result`'s typed reasons unchanged. Delete this file once StoreRules converts
// with `.description` itself (OutcomePlan.init: the rejected, retry and failed cases).

extension OutcomePlan.Row {
    init(token: String, state: DeliveryState, reason: DeliveryReason, nextAttemptAt: Int64? = nil) {
        self.init(token: token, state: state, reason: reason.description, nextAttemptAt: nextAttemptAt)
    }
}

extension Invalidation {
    init(token: String, reason: DeliveryReason, timestamp: Date?) {
        self.init(token: token, reason: reason.description, timestamp: timestamp)
    }

    static func status(for reason: DeliveryReason) -> DeviceCode? {
        status(for: reason.description)
    }
}

extension Dictionary where Key == String {
    subscript(reason: DeliveryReason, default defaultValue: @autoclosure () -> Value) -> Value {
        get { self[reason.description, default: defaultValue()] }
        set { self[reason.description] = newValue }
    }
}
