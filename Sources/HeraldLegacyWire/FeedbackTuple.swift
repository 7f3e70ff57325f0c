import HeraldCore
import NIOCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One entry of the feedback service (§4.6): when APNs found the app gone, and the token.
public struct FeedbackTuple: Sendable, Hashable {
    /// When APNs determined the app no longer exists on the device.
    public var timestamp: Date
    public var token: DeviceToken

    public init(timestamp: Date, token: DeviceToken) {
        self.timestamp = timestamp
        self.token = token
    }

    package func write(into buffer: inout ByteBuffer) {
        // Seconds as 32 bits (apns-spec §4): a date outside 1970-2106 is clamped, never a trap.
        let seconds = timestamp.timeIntervalSince1970
        buffer.writeInteger(seconds.isFinite ? UInt32(min(max(seconds, 0), Double(UInt32.max))) : 0)
        let bytes = token.bytes
        buffer.writeInteger(UInt16(bytes.count))
        buffer.writeBytes(bytes)
    }
}

/// Reads feedback tuples, whatever the split: 4-byte time, 2-byte token length, token.
package struct FeedbackTupleDecoder: ByteToMessageDecoder {
    package typealias InboundOut = FeedbackTuple

    package init() {}

    package mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let tuple = try Self.next(&buffer) else { return .needMoreData }
        context.fireChannelRead(wrapInboundOut(tuple))
        return .continue
    }

    package mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        if try decode(context: context, buffer: &buffer) == .continue { return .continue }
        if seenEOF, buffer.readableBytes > 0 {
            throw LegacyError(.protocolError, "the feedback service closed in the middle of a tuple (\(buffer.readableBytes) bytes left)")
        }
        return .needMoreData
    }

    package static func next(_ buffer: inout ByteBuffer) throws(LegacyError) -> FeedbackTuple? {
        guard buffer.readableBytes >= 6 else { return nil }
        let length = Int(buffer.getInteger(at: buffer.readerIndex + 4, as: UInt16.self)!)
        guard length > 0 else { throw LegacyError(.protocolError, "a feedback tuple with an empty token") }
        guard length <= DeviceToken.maximumByteCount else {
            throw LegacyError(.protocolError, "a feedback tuple with a \(length)-byte token; at most \(DeviceToken.maximumByteCount) are accepted")
        }
        guard buffer.readableBytes >= 6 + length else { return nil }
        let seconds = buffer.readInteger(as: UInt32.self)!
        buffer.moveReaderIndex(forwardBy: 2)
        let token = buffer.readBytes(length: length)!
        return FeedbackTuple(timestamp: Date(timeIntervalSince1970: TimeInterval(seconds)), token: try! DeviceToken(bytes: token))  // 1...maximumByteCount bytes: checked above
    }
}
