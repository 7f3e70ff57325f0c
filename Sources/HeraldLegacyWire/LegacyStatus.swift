/// The status byte of an error response (§4.4).
public struct LegacyStatus: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let noErrors = LegacyStatus(rawValue: 0)
    public static let processingError = LegacyStatus(rawValue: 1)
    public static let missingDeviceToken = LegacyStatus(rawValue: 2)
    public static let missingTopic = LegacyStatus(rawValue: 3)
    public static let missingPayload = LegacyStatus(rawValue: 4)
    public static let invalidTokenSize = LegacyStatus(rawValue: 5)
    public static let invalidTopicSize = LegacyStatus(rawValue: 6)
    public static let invalidPayloadSize = LegacyStatus(rawValue: 7)
    /// The token is invalid: remove it (§4.5).
    public static let invalidToken = LegacyStatus(rawValue: 8)
    /// The gateway is shutting down; the identifier is the last notification it processed.
    public static let shutdown = LegacyStatus(rawValue: 10)
    /// The gateway could not parse the notification.
    public static let protocolError = LegacyStatus(rawValue: 128)
    public static let unknown = LegacyStatus(rawValue: 255)

    /// Whether the token should be dropped: status 8, and 5 as some gateways answer for a gone
    /// token (§4.5: "Status 8 (sometimes 5) means remove the token"). The client only sends
    /// 32-byte tokens, so a 5 cannot mean a malformed frame of ours.
    public var invalidatesToken: Bool { self == .invalidToken || self == .invalidTokenSize }

    public var description: String {
        let names: [UInt8: String] = [
            0: "No errors", 1: "Processing error", 2: "Missing device token", 3: "Missing topic", 4: "Missing payload",
            5: "Invalid token size", 6: "Invalid topic size", 7: "Invalid payload size", 8: "Invalid token", 10: "Shutdown",
            128: "Protocol error", 255: "Unknown",
        ]
        return "\(rawValue) (\(names[rawValue] ?? "unassigned"))"
    }
}
