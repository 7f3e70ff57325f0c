import NIOCore

/// One frame off the wire: its header and payload (a slice of the read buffer, no copy).
package struct HTTP2WireFrame {
    package var type: UInt8
    package var flags: UInt8
    package var streamID: HTTP2StreamNumber
    package var payload: ByteBuffer

    package func has(_ flag: UInt8) -> Bool { flags & flag != 0 }
}

/// Cuts frames out of bytes as they arrive, whatever the split (RFC 9113 §4.1).
package struct HTTP2FrameParser {
    /// The largest frame payload accepted: our SETTINGS_MAX_FRAME_SIZE.
    package var maximumFrameSize: Int
    private var buffer: ByteBuffer?

    package init(maximumFrameSize: Int = 16_384) {
        self.maximumFrameSize = maximumFrameSize
    }

    /// Adds bytes read from the connection.
    ///
    /// What stays buffered is at most one incomplete frame (bounded by ``maximumFrameSize``) and
    /// the bytes of this read: consumed bytes are dropped once they outnumber the unread ones, so
    /// each byte is moved at most once more, whatever the split of the reads.
    package mutating func append(_ bytes: inout ByteBuffer) {
        guard var current = buffer, current.readableBytes > 0 else {
            buffer = bytes
            return
        }
        buffer = nil  // own the storage while writing, so it is not copied
        if current.readerIndex >= current.readableBytes {
            current.discardReadBytes()
        }
        current.writeBuffer(&bytes)
        buffer = current
    }

    /// The next complete frame, or `nil` until more bytes arrive.
    package mutating func next() throws(HTTP2ConnectionError) -> HTTP2WireFrame? {
        guard var buffer, buffer.readableBytes >= 9 else { return nil }
        let index = buffer.readerIndex
        let length = Int(buffer.getInteger(at: index, as: UInt16.self)!) << 8 | Int(buffer.getInteger(at: index + 2, as: UInt8.self)!)
        guard length <= maximumFrameSize else {
            throw HTTP2ConnectionError(.frameSizeError, "frame of \(length) bytes exceeds SETTINGS_MAX_FRAME_SIZE \(maximumFrameSize)")
        }
        guard buffer.readableBytes >= 9 + length else { return nil }
        let type = buffer.getInteger(at: index + 3, as: UInt8.self)!
        let flags = buffer.getInteger(at: index + 4, as: UInt8.self)!
        let streamID = buffer.getInteger(at: index + 5, as: UInt32.self)! & 0x7FFF_FFFF
        let payload = buffer.getSlice(at: index + 9, length: length)!
        buffer.moveReaderIndex(forwardBy: 9 + length)
        if buffer.readableBytes == 0 {
            self.buffer = nil
        } else {
            self.buffer = buffer
        }
        return HTTP2WireFrame(type: type, flags: flags, streamID: streamID, payload: payload)
    }

    /// Bytes received but not yet a whole frame.
    package var bufferedBytes: Int { buffer?.readableBytes ?? 0 }

    /// Bytes of storage held, read or not: what the parser costs in memory.
    package var retainedBytes: Int { buffer?.capacity ?? 0 }
}

extension ByteBuffer {
    /// Appends a frame header (RFC 9113 §4.1).
    /// Two writes, not one per field: each `ByteBuffer` write checks the buffer's uniqueness and
    /// capacity, and five per header, two headers a request, were 4.7 % of the client's event loop.
    package mutating func writeHTTP2FrameHeader(length: Int, type: HTTP2FrameType, flags: UInt8, streamID: HTTP2StreamNumber) {
        let stream = streamID & 0x7FFF_FFFF
        // Length (24 bits), type, flags, and the stream's first three bytes; then its last byte.
        let head = (UInt64(truncatingIfNeeded: length) & 0xFF_FFFF) << 40 | UInt64(type.rawValue) << 32 | UInt64(flags) << 24 | UInt64(stream >> 8)
        writeInteger(head)
        writeInteger(UInt8(truncatingIfNeeded: stream))
    }

    /// Appends a HEADERS frame carrying `block`, split into CONTINUATION frames when it is larger
    /// than `maximumFrameSize`.
    package mutating func writeHTTP2Headers(streamID: HTTP2StreamNumber, block: ByteBuffer, endStream: Bool, maximumFrameSize: Int) {
        var block = block
        var first = true
        repeat {
            let chunk = block.readSlice(length: min(block.readableBytes, maximumFrameSize))!
            let last = block.readableBytes == 0
            var flags: UInt8 = last ? HTTP2Flag.endHeaders : 0
            if first && endStream { flags |= HTTP2Flag.endStream }
            writeHTTP2FrameHeader(length: chunk.readableBytes, type: first ? .headers : .continuation, flags: flags, streamID: streamID)
            writeImmutableBuffer(chunk)
            first = false
        } while block.readableBytes > 0
    }

    /// Appends a DATA frame (the caller respects flow control and the maximum frame size).
    package mutating func writeHTTP2Data(streamID: HTTP2StreamNumber, bytes: some Collection<UInt8>, endStream: Bool) {
        writeHTTP2FrameHeader(length: bytes.count, type: .data, flags: endStream ? HTTP2Flag.endStream : 0, streamID: streamID)
        writeBytes(bytes)
    }

    package mutating func writeHTTP2Settings(_ settings: [(HTTP2SettingID, Int)]) {
        writeHTTP2FrameHeader(length: settings.count * 6, type: .settings, flags: 0, streamID: 0)
        for (id, value) in settings {
            writeInteger(id.rawValue)
            writeInteger(UInt32(truncatingIfNeeded: value))
        }
    }

    package mutating func writeHTTP2SettingsAck() {
        writeHTTP2FrameHeader(length: 0, type: .settings, flags: HTTP2Flag.ack, streamID: 0)
    }

    package mutating func writeHTTP2Ping(_ data: UInt64, ack: Bool) {
        writeHTTP2FrameHeader(length: 8, type: .ping, flags: ack ? HTTP2Flag.ack : 0, streamID: 0)
        writeInteger(data)
    }

    package mutating func writeHTTP2WindowUpdate(streamID: HTTP2StreamNumber, increment: Int) {
        writeHTTP2FrameHeader(length: 4, type: .windowUpdate, flags: 0, streamID: streamID)
        writeInteger(UInt32(truncatingIfNeeded: increment) & 0x7FFF_FFFF)
    }

    package mutating func writeHTTP2RstStream(streamID: HTTP2StreamNumber, code: HTTP2ErrorCode) {
        writeHTTP2FrameHeader(length: 4, type: .rstStream, flags: 0, streamID: streamID)
        writeInteger(code.rawValue)
    }

    package mutating func writeHTTP2GoAway(lastStreamID: HTTP2StreamNumber, code: HTTP2ErrorCode, debugData: [UInt8] = []) {
        writeHTTP2FrameHeader(length: 8 + debugData.count, type: .goAway, flags: 0, streamID: 0)
        writeInteger(lastStreamID & 0x7FFF_FFFF)
        writeInteger(code.rawValue)
        writeBytes(debugData)
    }
}
