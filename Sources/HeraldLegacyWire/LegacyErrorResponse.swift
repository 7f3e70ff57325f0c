import NIOCore

/// The 6-byte error response (§4.4): command 8, status, identifier.
public struct LegacyErrorResponse: Sendable, Hashable {
    public var status: LegacyStatus
    public var identifier: UInt32

    public init(status: LegacyStatus, identifier: UInt32) {
        self.status = status
        self.identifier = identifier
    }

    package func write(into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(8))
        buffer.writeInteger(status.rawValue)
        buffer.writeInteger(identifier)
    }
}

/// Reads error responses, whatever the split of the bytes. Anything but command 8 is refused.
package struct LegacyErrorResponseDecoder: ByteToMessageDecoder {
    package typealias InboundOut = LegacyErrorResponse

    package init() {}

    package mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let response = try Self.next(&buffer) else { return .needMoreData }
        context.fireChannelRead(wrapInboundOut(response))
        return .continue
    }

    package mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        try decode(context: context, buffer: &buffer)
    }

    /// The next response in `buffer`, or `nil` until 6 bytes are there.
    package static func next(_ buffer: inout ByteBuffer) throws(LegacyError) -> LegacyErrorResponse? {
        guard buffer.readableBytes >= 6 else { return nil }
        let command = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self)!
        guard command == 8 else {
            throw LegacyError(.protocolError, "the gateway sent command \(command) where an error response (8) belongs")
        }
        buffer.moveReaderIndex(forwardBy: 1)
        let status = buffer.readInteger(as: UInt8.self)!
        let identifier = buffer.readInteger(as: UInt32.self)!
        return LegacyErrorResponse(status: LegacyStatus(rawValue: status), identifier: identifier)
    }
}
