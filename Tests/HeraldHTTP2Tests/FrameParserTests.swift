import HeraldHTTP2
import NIOCore
import Testing

@Suite("HTTP/2 frames")
struct FrameParserTests {
    /// A few frames of every kind the layer writes.
    static func sampleBytes() -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeHTTP2Settings([(.maxConcurrentStreams, 100), (.initialWindowSize, 1 << 20)])
        buffer.writeHTTP2SettingsAck()
        buffer.writeHTTP2Ping(0x0102_0304_0506_0708, ack: false)
        var block = ByteBuffer()
        block.writeBytes([0x83, 0x87, 0x84])
        buffer.writeHTTP2Headers(streamID: 1, block: block, endStream: false, maximumFrameSize: 16_384)
        buffer.writeHTTP2Data(streamID: 1, bytes: Array("{\"aps\":{}}".utf8), endStream: true)
        buffer.writeHTTP2WindowUpdate(streamID: 0, increment: 12_345)
        buffer.writeHTTP2RstStream(streamID: 3, code: .refusedStream)
        buffer.writeHTTP2GoAway(lastStreamID: 1, code: .noError, debugData: Array(#"{"reason":"Shutdown"}"#.utf8))
        return buffer
    }

    static func parseAll(_ chunks: [ByteBuffer]) throws -> [HTTP2WireFrame] {
        var parser = HTTP2FrameParser()
        var frames: [HTTP2WireFrame] = []
        for var chunk in chunks {
            parser.append(&chunk)
            while let frame = try parser.next() { frames.append(frame) }
        }
        #expect(parser.bufferedBytes == 0)
        return frames
    }

    static func describe(_ frames: [HTTP2WireFrame]) -> [String] {
        frames.map { "\($0.type) \($0.flags) \($0.streamID) \(Array($0.payload.readableBytesView))" }
    }

    @Test("golden bytes: a SETTINGS frame and a PING, as RFC 9113 §4.1 lays them out")
    func goldenBytes() {
        var buffer = ByteBuffer()
        buffer.writeHTTP2Settings([(.maxConcurrentStreams, 100)])
        #expect(Array(buffer.readableBytesView) == [0, 0, 6, 0x4, 0, 0, 0, 0, 0, 0, 0x3, 0, 0, 0, 100])
        buffer.clear()
        buffer.writeHTTP2Ping(1, ack: true)
        #expect(Array(buffer.readableBytesView) == [0, 0, 8, 0x6, 0x1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])
        buffer.clear()
        buffer.writeHTTP2RstStream(streamID: 0x7FFF_FFFF, code: .cancel)
        #expect(Array(buffer.readableBytesView) == [0, 0, 4, 0x3, 0, 0x7F, 0xFF, 0xFF, 0xFF, 0, 0, 0, 8])
        // Every field of the header distinct: a length over 16 bits, and the stream's reserved
        // bit set by the caller, which is never sent.
        buffer.clear()
        buffer.writeHTTP2FrameHeader(length: 0xAB_CDEF, type: .continuation, flags: 0x25, streamID: 0x8123_4567)
        #expect(Array(buffer.readableBytesView) == [0xAB, 0xCD, 0xEF, 0x9, 0x25, 0x01, 0x23, 0x45, 0x67])
        buffer.clear()
        buffer.writeHTTP2Data(streamID: 0x0102_0304, bytes: [7, 8], endStream: true)
        #expect(Array(buffer.readableBytesView) == [0, 0, 2, 0x0, 0x1, 0x01, 0x02, 0x03, 0x04, 7, 8])
    }

    @Test("frames come out whole whatever the bytes' split: every split point, and one byte at a time")
    func anySplit() throws {
        let all = Self.sampleBytes()
        let whole = Self.describe(try Self.parseAll([all]))
        #expect(whole.count == 8)
        for split in 1..<all.readableBytes {
            let first = all.getSlice(at: 0, length: split)!
            let second = all.getSlice(at: split, length: all.readableBytes - split)!
            #expect(Self.describe(try Self.parseAll([first, second])) == whole, "split at \(split)")
        }
        let bytes = (0..<all.readableBytes).map { all.getSlice(at: $0, length: 1)! }
        #expect(Self.describe(try Self.parseAll(bytes)) == whole)
    }

    @Test("a frame larger than SETTINGS_MAX_FRAME_SIZE is a FRAME_SIZE_ERROR")
    func tooLarge() {
        var buffer = ByteBuffer()
        buffer.writeHTTP2FrameHeader(length: 16_385, type: .data, flags: 0, streamID: 1)
        var parser = HTTP2FrameParser()
        parser.append(&buffer)
        let error = #expect(throws: HTTP2ConnectionError.self) { _ = try parser.next() }
        #expect(error?.code == .frameSizeError)
    }

    @Test("a header block over the maximum frame size is split into HEADERS and CONTINUATION")
    func continuation() throws {
        var block = ByteBuffer()
        block.writeBytes([UInt8](repeating: 0x41, count: 40_000))
        var buffer = ByteBuffer()
        buffer.writeHTTP2Headers(streamID: 5, block: block, endStream: true, maximumFrameSize: 16_384)
        let frames = try Self.parseAll([buffer])
        #expect(frames.map(\.type) == [HTTP2FrameType.headers.rawValue, HTTP2FrameType.continuation.rawValue, HTTP2FrameType.continuation.rawValue])
        #expect(frames.map(\.payload.readableBytes) == [16_384, 16_384, 7_232])
        #expect(frames[0].has(HTTP2Flag.endStream) && !frames[0].has(HTTP2Flag.endHeaders))
        #expect(frames[2].has(HTTP2Flag.endHeaders))
    }
}
