import HeraldCore

/// The final outcome of one notification sent with ``LegacyClient``.
public struct LegacyOutcome: Sendable {
    /// How it ended.
    public enum Result: Sendable, Hashable {
        /// No error response came for it within ``LegacyClient/Configuration/settleInterval`` of
        /// being written (the binary interface answers only on error, apns-spec §4), or a later
        /// notification on the same connection was answered, which means this one was processed.
        case accepted
        /// The gateway answered with this status (apns-spec §4.4).
        case rejected(LegacyStatus)
        /// It could not be delivered, or may not have been: refused locally, connection failures,
        /// shutdown, or ``LegacyError/Code/possiblyLost``.
        case failed(LegacyError)
    }

    /// Its position in the sequence given to ``LegacyClient/send(contentsOf:logger:)``.
    public var index: Int
    /// The device token it was for.
    public var token: DeviceToken
    public var result: Result
    /// Times it was written to a connection (re-sends after another notification's error included).
    public var attempts: Int

    public init(index: Int, token: DeviceToken, result: Result, attempts: Int) {
        self.index = index
        self.token = token
        self.result = result
        self.attempts = attempts
    }

    /// Whether the token should be removed from your records: the gateway answered status 8 (or 5, §4.5).
    public var invalidatesToken: Bool {
        if case .rejected(let status) = result { return status.invalidatesToken }
        return false
    }

    /// The result as an error, `nil` when accepted.
    public var error: LegacyError? {
        switch result {
        case .accepted: nil
        case .rejected(let status): .rejected(status)
        case .failed(let error): error
        }
    }
}
