/// Why a legacy notification was not delivered: refused locally, rejected by the gateway with a
/// status, or lost to the connection. A stable ``Code`` and a message that says what to do.
public struct LegacyError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        /// The gateway answered with an error response: see ``LegacyError/status``.
        public static let rejected = Code(name: "rejected")
        /// A token that is not 32 bytes.
        public static let invalidToken = Code(name: "invalidToken")
        /// A payload over the command's limit, or another local refusal.
        public static let invalidNotification = Code(name: "invalidNotification")
        /// The gateway could not be reached (or TLS failed), or connections kept closing without
        /// an error response while the notification was on them: it may or may not have been delivered.
        public static let connectionFailed = Code(name: "connectionFailed")
        /// After an error response the notification had to be sent again, but it had already left
        /// the ring buffer: the gateway discarded it, and it cannot be re-sent.
        public static let possiblyLost = Code(name: "possiblyLost")
        /// The gateway sent bytes that are not an error response.
        public static let protocolError = Code(name: "protocolError")
        /// A gateway or feedback address that is not `HOST:PORT`.
        public static let invalidEndpoint = Code(name: "invalidEndpoint")
        /// The feedback service or a connection did not answer in time.
        public static let timedOut = Code(name: "timedOut")
        /// The client was shut down before the notification could be sent.
        public static let shutdown = Code(name: "shutdown")
        public var description: String { name }
    }

    public var code: Code
    /// What was wrong and what to do, in words.
    public var message: String
    /// The gateway's status, for ``Code/rejected``.
    public var status: LegacyStatus?

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The gateway rejected a notification with `status` (apns-spec §4.4).
    public static func rejected(_ status: LegacyStatus, identifier: UInt32? = nil) -> LegacyError {
        var error = LegacyError(.rejected, "the gateway answered status \(status)" + (identifier.map { " for notification \($0)" } ?? ""))
        error.status = status
        return error
    }

    /// Whether the token should be removed: the gateway said it is invalid (status 8, apns-spec §4.5).
    public var invalidatesToken: Bool { status?.invalidatesToken ?? false }

    public var description: String { "\(code): \(message)" }
}
