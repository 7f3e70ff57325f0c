#if canImport(UserNotifications)
import Foundation
import UserNotifications

// Glue for Apple's UserNotifications: it reads the notification and calls the core, nothing more.
// Each call is synchronous (it only appends to the queue's file), so it takes the framework's
// objects from any isolation without sending them anywhere; `await receipts.flush()` then sends.

extension HeraldReceipt {
    /// The receipt of a delivered notification's request; `nil` when it carries none.
    public init?(request: UNNotificationRequest) {
        self.init(userInfo: request.content.userInfo)
    }
}

extension HeraldEvent {
    /// What the user did with a notification (`opened`, `dismissed`, or `clicked` with the
    /// action's identifier), now; `nil` when the notification carries no receipt.
    public init?(response: UNNotificationResponse) {
        guard let receipt = HeraldReceipt(request: response.notification.request) else { return nil }
        self.init(HeraldEvent.Kind(actionIdentifier: response.actionIdentifier), receipt: receipt)
    }
}

extension HeraldReceipts {
    /// For the Notification Service Extension's `didReceive(_:withContentHandler:)`: queues
    /// `received` for the notification. Returns the event, or `nil` when it carries no receipt.
    @discardableResult
    public func didReceive(_ request: UNNotificationRequest) throws(HeraldDeviceError) -> HeraldEvent? {
        guard let receipt = HeraldReceipt(request: request) else { return nil }
        let event = HeraldEvent(.received, receipt: receipt)
        try record(event)
        return event
    }

    /// For `userNotificationCenter(_:didReceive:withCompletionHandler:)`: queues `opened`,
    /// `dismissed` or `clicked`. Returns the event, or `nil` when the notification carries no receipt.
    @discardableResult
    public func handle(_ response: UNNotificationResponse) throws(HeraldDeviceError) -> HeraldEvent? {
        guard let event = HeraldEvent(response: response) else { return nil }
        try record(event)
        return event
    }
}
#endif
