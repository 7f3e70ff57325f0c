import HeraldCore
import HeraldLegacyWire

/// What the mock gateway answers besides accepting: error responses for given tokens or for the
/// N-th notification, and shutdown (status 10).
public struct MockLegacyScript: Sendable {
    /// Statuses by token (lower-case hex): every notification to the token is answered with it,
    /// e.g. ``HeraldLegacy/LegacyStatus/invalidToken`` (8) for a token that is gone.
    public var tokenStatuses: [String: LegacyStatus] = [:]
    /// Statuses by position: the N-th notification the gateway receives (from 1, counted over
    /// all connections, re-sends included) is answered with it, once.
    public var statusesByPosition: [Int: LegacyStatus] = [:]
    /// After this many accepted notifications (counted over all connections), answer status 10
    /// (shutdown) naming the last one and close, once.
    public var shutdownAfterAccepted: Int?
    /// How long to wait before answering an error, reading and discarding meanwhile, as a busy
    /// gateway does. Default none.
    public var errorResponseDelay: Duration = .zero

    public init() {}

    /// Answers every notification to `token` with `status`.
    public mutating func reject(token: DeviceToken, with status: LegacyStatus) {
        tokenStatuses[token.hex] = status
    }

    /// Answers the `position`-th notification received (from 1) with `status`.
    public mutating func reject(position: Int, with status: LegacyStatus) {
        statusesByPosition[position] = status
    }
}
