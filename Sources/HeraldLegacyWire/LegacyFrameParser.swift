import NIOCore

/// One notification as a gateway receives it, in any of the three commands (apns-spec §4.1-§4.3).
public struct LegacyFrame: Sendable, Hashable {
    public var command: LegacyCommand
    /// The identifier (commands 1 and 2; `nil` for command 0 or when the frame has no item 3).
    public var identifier: UInt32?
    public var token: [UInt8]
    public var payload: [UInt8]
    /// Expiry in UNIX seconds (commands 1 and 2); 0 means "do not store".
    public var expiry: UInt32?
    /// Priority item (command 2 only).
    public var priority: UInt8?

    public init(command: LegacyCommand, identifier: UInt32?, token: [UInt8], payload: [UInt8], expiry: UInt32?, priority: UInt8?) {
        self.command = command
        self.identifier = identifier
        self.token = token
        self.payload = payload
        self.expiry = expiry
        self.priority = priority
    }
}

/// Parses the notification stream a provider sends, strictly, the way a gateway must: every
/// length checked, every item known and present once. A gateway (such as Herald's mock) answers
/// an invalid notification with ``LegacyErrorResponse`` and closes the connection (apns-spec §4.4).
package enum LegacyFrameParser {
    /// What the next bytes hold.
    package enum Parsed: Sendable, Hashable {
        case frame(LegacyFrame)
        /// An invalid notification: the response to send before closing. Its identifier is the
        /// notification's when it could be read, else 0.
        case invalid(LegacyErrorResponse)
    }

    /// The longest command-2 frame taken before the identifier is looked for: larger frames are
    /// answered with status 128 and identifier 0 without reading them.
    package static let maximumFrameLength = 65_535

    /// The next notification in `buffer`, an invalid one, or `nil` until more bytes arrive. Bytes
    /// are consumed only for a complete, valid frame.
    package static func next(_ buffer: inout ByteBuffer) -> Parsed? {
        guard let command = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) else { return nil }
        switch command {
        case 0: return simpleOrEnhanced(&buffer, command: .simple)
        case 1: return simpleOrEnhanced(&buffer, command: .enhanced)
        case 2: return frame(&buffer)
        default: return .invalid(LegacyErrorResponse(status: .protocolError, identifier: 0))
        }
    }

    /// §4.1 and §4.2: fixed offsets, so each field is judged as soon as it has arrived.
    private static func simpleOrEnhanced(_ buffer: inout ByteBuffer, command: LegacyCommand) -> Parsed? {
        let start = buffer.readerIndex
        let header = command == .simple ? 1 : 9
        var identifier: UInt32 = 0
        var expiry: UInt32?
        if command == .enhanced {
            guard let id = buffer.getInteger(at: start + 1, as: UInt32.self),
                let seconds = buffer.getInteger(at: start + 5, as: UInt32.self)
            else { return nil }
            identifier = id
            expiry = seconds
        }
        guard let tokenLength = buffer.getInteger(at: start + header, as: UInt16.self).map(Int.init) else { return nil }
        if tokenLength == 0 { return .invalid(LegacyErrorResponse(status: .missingDeviceToken, identifier: identifier)) }
        if tokenLength != 32 { return .invalid(LegacyErrorResponse(status: .invalidTokenSize, identifier: identifier)) }
        let payloadAt = start + header + 2 + tokenLength
        guard let payloadLength = buffer.getInteger(at: payloadAt, as: UInt16.self).map(Int.init) else { return nil }
        if payloadLength == 0 { return .invalid(LegacyErrorResponse(status: .missingPayload, identifier: identifier)) }
        if payloadLength > command.maximumPayloadSize { return .invalid(LegacyErrorResponse(status: .invalidPayloadSize, identifier: identifier)) }
        guard buffer.readableBytes >= payloadAt + 2 + payloadLength - start else { return nil }
        let token = buffer.getBytes(at: start + header + 2, length: tokenLength)!
        let payload = buffer.getBytes(at: payloadAt + 2, length: payloadLength)!
        buffer.moveReaderIndex(to: payloadAt + 2 + payloadLength)
        return .frame(LegacyFrame(command: command, identifier: command == .simple ? nil : identifier, token: token, payload: payload, expiry: expiry, priority: nil))
    }

    /// §4.3: a frame of items. The whole frame is read first, since the identifier item may come last.
    private static func frame(_ buffer: inout ByteBuffer) -> Parsed? {
        let start = buffer.readerIndex
        guard let frameLength = buffer.getInteger(at: start + 1, as: UInt32.self).map(Int.init) else { return nil }
        if frameLength > maximumFrameLength { return .invalid(LegacyErrorResponse(status: .protocolError, identifier: 0)) }
        guard buffer.readableBytes >= 5 + frameLength else { return nil }
        guard var items = buffer.getSlice(at: start + 5, length: frameLength) else { return nil }

        var token: [UInt8]?
        var payload: [UInt8]?
        var identifier: UInt32?
        var expiry: UInt32?
        var priority: UInt8?
        var malformed = false
        while items.readableBytes > 0 {
            guard let id = items.readInteger(as: UInt8.self), let length = items.readInteger(as: UInt16.self).map(Int.init),
                let data = items.readSlice(length: length)
            else {
                malformed = true
                break
            }
            switch id {
            case 1 where token == nil: token = Array(data.readableBytesView)
            case 2 where payload == nil: payload = Array(data.readableBytesView)
            case 3 where identifier == nil && length == 4: identifier = data.getInteger(at: data.readerIndex, as: UInt32.self)
            case 4 where expiry == nil && length == 4: expiry = data.getInteger(at: data.readerIndex, as: UInt32.self)
            case 5 where priority == nil && length == 1: priority = data.getInteger(at: data.readerIndex, as: UInt8.self)
            default: malformed = true  // an unknown item, a repeated one, or a wrong length
            }
            if malformed { break }
        }
        let id = identifier ?? 0
        if malformed { return .invalid(LegacyErrorResponse(status: .protocolError, identifier: id)) }
        guard let token, !token.isEmpty else { return .invalid(LegacyErrorResponse(status: .missingDeviceToken, identifier: id)) }
        guard token.count == 32 else { return .invalid(LegacyErrorResponse(status: .invalidTokenSize, identifier: id)) }
        guard let payload, !payload.isEmpty else { return .invalid(LegacyErrorResponse(status: .missingPayload, identifier: id)) }
        guard payload.count <= LegacyCommand.frame.maximumPayloadSize else { return .invalid(LegacyErrorResponse(status: .invalidPayloadSize, identifier: id)) }
        // §4.3: priority is 10 (now) or 5 (power-saving).
        if let priority, priority != 10, priority != 5 { return .invalid(LegacyErrorResponse(status: .protocolError, identifier: id)) }
        buffer.moveReaderIndex(to: start + 5 + frameLength)
        return .frame(LegacyFrame(command: .frame, identifier: identifier, token: token, payload: payload, expiry: expiry, priority: priority))
    }
}

/// A decoder of the provider's notification stream, for gateways: emits ``LegacyFrameParser/Parsed``
/// values whatever the split of the bytes, and nothing after the first invalid notification.
package struct LegacyFrameDecoder: ByteToMessageDecoder {
    package typealias InboundOut = LegacyFrameParser.Parsed

    private var failed = false

    package init() {}

    package mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        if failed {
            buffer.moveReaderIndex(forwardBy: buffer.readableBytes)  // after an error the gateway discards the rest
            return .needMoreData
        }
        guard let parsed = LegacyFrameParser.next(&buffer) else { return .needMoreData }
        if case .invalid = parsed { failed = true }
        context.fireChannelRead(wrapInboundOut(parsed))
        return .continue
    }

    package mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        try decode(context: context, buffer: &buffer)
    }
}
