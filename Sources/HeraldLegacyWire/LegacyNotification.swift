import HeraldCore

/// A notification for the legacy binary interface (apns-spec §4), retired by Apple in 2021 and
/// kept for gateways, simulators and old back ends.
public struct LegacyNotification: Sendable, Hashable {
    /// The device token: exactly 32 bytes on this interface.
    public let token: DeviceToken
    /// The token's bytes, decoded once for the encoder.
    let tokenBytes: [UInt8]
    public var payload: EncodedPayload
    /// Expiry; `nil` or ``PushExpiration/immediately`` send 0, "do not store" (the binary
    /// interface has no default storage).
    public var expiration: PushExpiration?
    /// Priority (command 2 only): 10 or 5; `nil` leaves the item out.
    public var priority: PushPriority?

    /// - Throws: ``LegacyError`` when the token is not 32 bytes: this interface takes no other size.
    public init(token: DeviceToken, payload: EncodedPayload, expiration: PushExpiration? = nil, priority: PushPriority? = nil) throws(LegacyError) {
        guard token.byteCount == 32 else {
            throw LegacyError(.invalidToken, "the binary interface needs 32-byte tokens (64 hex digits); \(token.hex.prefix(16))… has \(token.byteCount) bytes")
        }
        if priority == .low {
            throw LegacyError(.invalidNotification, "the binary interface knows priorities 10 and 5 only")
        }
        self.token = token
        self.tokenBytes = token.bytes
        self.payload = payload
        self.expiration = expiration
        self.priority = priority
    }
}

extension LegacyNotification {
    /// A notification whose payload is shortened to fit `command`'s limit (256 bytes for commands
    /// 0 and 1, 2048 for 2): the alert text is cut, custom keys are kept
    /// (``HeraldCore/Payload/encode(fittingIn:)``).
    ///
    /// - Throws: ``LegacyError`` when the token is not 32 bytes, or when the payload cannot fit
    ///   even with its alert shortened.
    public init(token: DeviceToken, shortening payload: Payload, toFit command: LegacyCommand, expiration: PushExpiration? = nil, priority: PushPriority? = nil) throws(LegacyError) {
        let encoded: EncodedPayload
        do {
            encoded = try payload.encode(fittingIn: command.maximumPayloadSize)
        } catch {
            throw LegacyError(.invalidNotification, "the payload cannot fit the \(command.maximumPayloadSize) bytes of command \(command.rawValue): \(error)")
        }
        try self.init(token: token, payload: encoded, expiration: expiration, priority: priority)
    }
}
