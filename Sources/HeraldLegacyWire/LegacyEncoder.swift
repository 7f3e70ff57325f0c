import HeraldCore
import NIOCore

/// Writes notifications in the binary formats of apns-spec §4, every integer big-endian.
package enum LegacyEncoder {
    /// Appends `notification` framed with `command`.
    ///
    /// - Throws: ``LegacyError`` when the payload is over the command's limit.
    package static func write(
        _ notification: LegacyNotification, identifier: UInt32, command: LegacyCommand, into buffer: inout ByteBuffer
    ) throws(LegacyError) {
        let payload = notification.payload.bytes
        guard payload.count <= command.maximumPayloadSize else {
            throw LegacyError(.invalidNotification, "payload is \(payload.count) bytes; command \(command.rawValue) takes at most \(command.maximumPayloadSize)")
        }
        let token = notification.tokenBytes
        let expiry = UInt32(clamping: notification.expiration?.unixSeconds ?? 0)
        switch command {
        case .simple:
            // §4.1: command, token length, token, payload length, payload.
            buffer.writeInteger(UInt8(0))
            buffer.writeInteger(UInt16(token.count))
            buffer.writeBytes(token)
            buffer.writeInteger(UInt16(payload.count))
            buffer.writeBytes(payload)
        case .enhanced:
            // §4.2: command, identifier, expiry, token length, token, payload length, payload.
            buffer.writeInteger(UInt8(1))
            buffer.writeInteger(identifier)
            buffer.writeInteger(expiry)
            buffer.writeInteger(UInt16(token.count))
            buffer.writeBytes(token)
            buffer.writeInteger(UInt16(payload.count))
            buffer.writeBytes(payload)
        case .frame:
            // §4.3: command, frame length, then items (id, length, data): token, payload,
            // identifier, expiration, priority.
            var items = 3 + token.count + 3 + payload.count + 3 + 4 + 3 + 4
            if notification.priority != nil { items += 3 + 1 }
            buffer.writeInteger(UInt8(2))
            buffer.writeInteger(UInt32(items))
            buffer.writeInteger(UInt8(1)); buffer.writeInteger(UInt16(token.count)); buffer.writeBytes(token)
            buffer.writeInteger(UInt8(2)); buffer.writeInteger(UInt16(payload.count)); buffer.writeBytes(payload)
            buffer.writeInteger(UInt8(3)); buffer.writeInteger(UInt16(4)); buffer.writeInteger(identifier)
            buffer.writeInteger(UInt8(4)); buffer.writeInteger(UInt16(4)); buffer.writeInteger(expiry)
            if let priority = notification.priority {
                buffer.writeInteger(UInt8(5)); buffer.writeInteger(UInt16(1)); buffer.writeInteger(UInt8(priority.rawValue))
            }
        }
    }

    /// The size `notification` takes with `command`.
    package static func size(of notification: LegacyNotification, command: LegacyCommand) -> Int {
        let token = notification.token.byteCount
        let payload = notification.payload.count
        switch command {
        case .simple: return 1 + 2 + token + 2 + payload
        case .enhanced: return 1 + 4 + 4 + 2 + token + 2 + payload
        case .frame: return 1 + 4 + 3 + token + 3 + payload + 3 + 4 + 3 + 4 + (notification.priority != nil ? 4 : 0)
        }
    }
}
