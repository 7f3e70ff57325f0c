import HeraldCore

/// APNs accepted a notification.
public struct APNSResponse: Sendable, Hashable {
    /// The notification's apns-id: the one sent, or the one APNs generated (lower-cased).
    public var apnsID: String
    /// `apns-unique-id`, which APNs returns only in the development environment: the key to look
    /// the notification up in the Push Notifications Console (apns-spec §1.6).
    public var apnsUniqueID: String?

    public init(apnsID: String, apnsUniqueID: String? = nil) {
        self.apnsID = apnsID
        self.apnsUniqueID = apnsUniqueID
    }
}

/// The final outcome of one notification in a bulk send: exactly one per notification.
public struct APNSOutcome: Sendable {
    /// What happened.
    public enum Result: Sendable {
        /// APNs accepted it.
        case accepted(APNSResponse)
        /// APNs (or local validation) rejected it; the error has the reason, status and 410 timestamp.
        case rejected(APNSError)
        /// It could not be delivered: no connection, no answer in time, shutdown.
        case failed(APNSClientError)
    }

    /// The notification.
    public let notification: PushNotification
    /// Its position in the input sequence, from 0.
    public let index: Int
    /// What happened to it.
    public let result: Result
    /// How many times it was sent (0 if it never was).
    public let attempts: Int
    /// From when the client took it to its final outcome, retries included.
    public let elapsed: Duration

    public init(notification: PushNotification, index: Int, result: Result, attempts: Int, elapsed: Duration = .zero) {
        self.notification = notification
        self.index = index
        self.result = result
        self.attempts = attempts
        self.elapsed = elapsed
    }

    /// The response, when accepted.
    public var response: APNSResponse? {
        if case .accepted(let response) = result { return response }
        return nil
    }

    /// The rejection, when APNs or local validation refused it.
    public var rejection: APNSError? {
        if case .rejected(let error) = result { return error }
        return nil
    }

    /// The delivery failure, when it could not be delivered.
    public var failure: APNSClientError? {
        if case .failed(let error) = result { return error }
        return nil
    }
}
