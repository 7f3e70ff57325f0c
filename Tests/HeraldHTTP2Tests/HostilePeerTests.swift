import HeraldHTTP2
import NIOCore
import NIOHPACK
import Testing

/// A peer out to exhaust memory or CPU, written frame by frame: every buffer and table it can grow
/// stays under its named bound (counted in bytes and entries, not RSS), and each abuse ends the
/// connection with the code RFC 9113 §10.5 suggests.
@Suite("HTTP/2 hostile peers")
struct HostilePeerTests {
    typealias Peer = HTTP2TestPeer

    @Test("frames split one byte into the next frame, 20 MB of them: the parser holds at most two frames", arguments: [HTTP2Connection.Role.server, .client])
    func parserRetention(role: HTTP2Connection.Role) {
        var peer = role == .server ? Peer.server() : Peer.client()
        // Unknown frame types are ignored (§5.5); every read ends 1 byte into the next frame.
        var frame = ByteBuffer()
        frame.writeHTTP2FrameHeader(length: 16_000, type: .data, flags: 0, streamID: 0)
        frame.setInteger(UInt8(0xEE), at: 3)  // an unknown type
        frame.writeBytes([UInt8](repeating: 0x55, count: 16_000))
        var limits = HTTP2Connection.Limits()
        limits.controlFrames = HTTP2RateLimit(1_000_000, per: .seconds(1))
        peer.connection = role == .server ? Peer.server(limits: limits).connection : Peer.client(limits: limits).connection
        var largest = 0
        var pending = ByteBuffer()
        for _ in 0..<1300 {
            pending.writeImmutableBuffer(frame)
            let cut = pending.readableBytes - (frame.readableBytes - 1)
            // Each read in a buffer of its own, as the TLS handler hands them over.
            var read = ByteBufferAllocator().buffer(capacity: cut)
            read.writeImmutableBuffer(pending.readSlice(length: cut)!)
            pending.discardReadBytes()
            peer.feed(read)
            largest = max(largest, peer.connection.retainedBytes)
        }
        #expect(peer.error == nil)
        // One incomplete frame and one read, in storage rounded up to a power of two: at most
        // 4 x (16,384 + 9) bytes, whatever was sent before.
        #expect(largest <= 4 * (16_384 + 9), "retained \(largest) bytes")
    }

    @Test("after a connection error the peer's bytes are dropped, not buffered, however many more arrive", arguments: [HTTP2Connection.Role.server, .client])
    func nothingAfterFailure(role: HTTP2Connection.Role) {
        var peer = role == .server ? Peer.server() : Peer.client()
        peer.send { $0.writeHTTP2Data(streamID: 0, bytes: [1], endStream: false) }
        peer.expectConnectionError(.protocolError)
        // A TLS layer waiting for close_notify still hands over what arrives: 100 reads of 64 KiB.
        var read = ByteBuffer()
        for index in 0..<4000 { read.writeHTTP2Ping(UInt64(index), ack: false) }
        for _ in 0..<100 {
            var bytes = read
            var events: [HTTP2Connection.Event] = []
            var output = ByteBuffer()
            let error = #expect(throws: HTTP2ConnectionError.self) {
                try peer.connection.receive(&bytes, events: &events, output: &output)
            }
            #expect(error?.code == .protocolError && events.isEmpty && output.readableBytes == 0)
        }
        #expect(peer.connection.retainedBytes == 0)
    }

    @Test("a PING or SETTINGS flood ends with ENHANCE_YOUR_CALM after 200 (swift-nio-http2's limit)")
    func controlFlood() {
        for kind in ["PING", "SETTINGS", "PRIORITY", "empty DATA"] {
            var peer = Peer.server()
            peer.sendHeaders(Peer.request(), stream: 1, endStream: false)
            var sent = 0
            while peer.error == nil, sent < 1000 {
                peer.send { buffer in
                    switch kind {
                    case "PING": buffer.writeHTTP2Ping(UInt64(sent), ack: false)
                    case "SETTINGS": buffer.writeHTTP2Settings([])
                    case "PRIORITY":
                        buffer.writeHTTP2FrameHeader(length: 5, type: .priority, flags: 0, streamID: 1)
                        buffer.writeInteger(UInt32(0))
                        buffer.writeInteger(UInt8(1))
                    default: buffer.writeHTTP2Data(streamID: 1, bytes: [], endStream: false)
                    }
                }
                sent += 1
            }
            peer.expectConnectionError(.enhanceYourCalm, "\(kind) flood")
            #expect(sent == 201, "\(kind): ended at the 201st, after \(sent)")
        }
    }

    @Test("a peer that does not read: answers queued while its output is not writable end at the bound")
    func queuedAnswers() {
        var limits = HTTP2Connection.Limits()
        limits.controlFrames = HTTP2RateLimit(1_000_000, per: .seconds(1))
        limits.maximumQueuedControlFrames = 500
        var peer = Peer.client(limits: limits)
        for index in 0..<499 { peer.send(writable: false) { $0.writeHTTP2Ping(UInt64(index), ack: false) } }
        #expect(peer.error == nil)
        // Once it reads again the count starts over (the answer written then counts).
        peer.send(writable: true) { $0.writeHTTP2Ping(1, ack: false) }
        for index in 0..<499 { peer.send(writable: false) { $0.writeHTTP2Ping(UInt64(index), ack: false) } }
        #expect(peer.error == nil)
        peer.send(writable: false) { $0.writeHTTP2Ping(0, ack: false) }
        peer.expectConnectionError(.enhanceYourCalm)
    }

    @Test("CONTINUATION: empty frames, too many, too large or left open end the connection; appending never copies the block")
    func continuationAbuse() {
        func open(_ peer: inout Peer) {
            let block = peer.block(Peer.request())
            peer.send { buffer in
                buffer.writeHTTP2FrameHeader(length: block.readableBytes, type: .headers, flags: HTTP2Flag.endStream, streamID: 1)
                buffer.writeImmutableBuffer(block)
            }
        }
        var empty = Peer.server()
        open(&empty)
        for _ in 0..<16 { empty.send { $0.writeHTTP2FrameHeader(length: 0, type: .continuation, flags: 0, streamID: 1) } }
        #expect(empty.error == nil)
        empty.send { $0.writeHTTP2FrameHeader(length: 0, type: .continuation, flags: 0, streamID: 1) }
        empty.expectConnectionError(.enhanceYourCalm, "the 17th CONTINUATION")

        var large = Peer.server()
        open(&large)
        for _ in 0..<4 where large.error == nil {
            large.send { buffer in
                buffer.writeHTTP2FrameHeader(length: 16_384, type: .continuation, flags: 0, streamID: 1)
                buffer.writeBytes([UInt8](repeating: 0, count: 16_384))
            }
        }
        large.expectConnectionError(.enhanceYourCalm, "a header block over 64 KiB")
        #expect(large.connection.retainedBytes <= 2 * (64 << 10) + 2 * (16_384 + 9))

        var slow = Peer.server()
        open(&slow)
        #expect(throws: Never.self) { try slow.connection.checkTimeouts(now: slow.now + .seconds(4)) }
        let error = #expect(throws: HTTP2ConnectionError.self) { try slow.connection.checkTimeouts(now: slow.now + .seconds(6)) }
        #expect(error?.code == .enhanceYourCalm)
    }

    @Test("rapid reset (CVE-2023-44487): the 201st stream a client opens and cancels before its answer ends the connection")
    func rapidReset() {
        var peer = Peer.server()
        var pairs = 0
        while peer.error == nil, pairs < 500 {
            let stream = HTTP2StreamNumber(2 * pairs + 1)
            peer.sendHeaders(Peer.request(), stream: stream, endStream: false)
            peer.send { $0.writeHTTP2RstStream(streamID: stream, code: .cancel) }
            pairs += 1
        }
        peer.expectConnectionError(.enhanceYourCalm)
        #expect(pairs == 201)

        // Resets after the answer are fine: the stream cost nothing more.
        var answered = Peer.server()
        for index in 0..<300 {
            let stream = HTTP2StreamNumber(2 * index + 1)
            answered.sendHeaders(Peer.request(), stream: stream, endStream: false)
            var output = ByteBuffer()
            answered.connection.writeHeaders(streamID: stream, endStream: true, into: &output) { encoder, block in
                encoder.indexed(HPACKBlockEncoder.Static.status200, into: &block)
            }
            answered.send { $0.writeHTTP2RstStream(streamID: stream, code: .cancel) }
        }
        #expect(answered.error == nil)
    }

    @Test("malformed requests and refused streams: the 201st stream error ends the connection")
    func streamErrorFlood() {
        var peer = Peer.server(maxConcurrentStreams: 1)
        peer.sendHeaders(Peer.request(), stream: 1, endStream: false)
        var index = 1
        while peer.error == nil, index < 1000 {
            peer.sendHeaders(Peer.request(), stream: HTTP2StreamNumber(2 * index + 1), endStream: true)
            index += 1
        }
        peer.expectConnectionError(.enhanceYourCalm)
        #expect(peer.resets.count == 200)
    }

    @Test("a header list that decodes past SETTINGS_MAX_HEADER_LIST_SIZE (an HPACK bomb) ends the connection")
    func headerListBomb() {
        var peer = Peer.server()
        // One 4 KiB field put in the table, then a block that names it 3,000 times: 3 bytes each.
        var block = ByteBuffer()
        block.writeInteger(UInt8(0x40))  // literal with incremental indexing, new name
        HPACKBlockEncoder.writeString("x-big", into: &block)
        HPACKBlockEncoder.writeString(String(repeating: "b", count: 4000), into: &block)
        for _ in 0..<3000 { block.writeInteger(UInt8(0x80 | 62)) }
        peer.send { buffer in
            buffer.writeHTTP2Headers(streamID: 1, block: block, endStream: true, maximumFrameSize: 16_384)
        }
        peer.expectConnectionError(.enhanceYourCalm)
    }

    @Test("streams this side reset are remembered up to the bound, oldest forgotten first")
    func recentlyResetBound() {
        var limits = HTTP2Connection.Limits()
        limits.recentlyResetStreams = 64
        var peer = Peer.server(maxConcurrentStreams: 10_000, limits: limits)
        for index in 0..<1000 {
            let stream = HTTP2StreamNumber(2 * index + 1)
            peer.sendHeaders(Peer.request(), stream: stream, endStream: false)
            var output = ByteBuffer()
            peer.connection.resetStream(stream, code: .noError, into: &output)
        }
        #expect(peer.connection.recentlyResetCount == 64)
        // A late frame on a remembered stream is ignored; on a forgotten one it is an error.
        peer.send { $0.writeHTTP2Data(streamID: 1999, bytes: [1], endStream: true) }
        #expect(peer.error == nil)
        peer.send { $0.writeHTTP2Data(streamID: 1, bytes: [1], endStream: true) }
        peer.expectConnectionError(.streamClosed)
    }

    @Test("with a window of 0, answers wait in the connection for at most SETTINGS_MAX_CONCURRENT_STREAMS streams")
    func zeroWindowAnswers() {
        var peer = Peer.server(maxConcurrentStreams: 50)
        peer.send { $0.writeHTTP2Settings([(.initialWindowSize, 0)]) }
        var output = ByteBuffer()
        for index in 0..<200 {
            let stream = HTTP2StreamNumber(2 * index + 1)
            peer.sendHeaders(Peer.request(), stream: stream, endStream: true)
            peer.connection.writeHeaders(streamID: stream, endStream: false, into: &output) { encoder, block in
                encoder.indexed(HPACKBlockEncoder.Static.status200, into: &block)
            }
            peer.connection.writeBody(streamID: stream, [UInt8](repeating: 1, count: 100), into: &output)
            if peer.error != nil { break }
        }
        #expect(peer.connection.openStreamCount == 50)
        #expect(peer.headStreams.count == 50)
        // The window opens: every waiting answer goes out, and the streams close.
        peer.clear()
        peer.send { $0.writeHTTP2Settings([(.initialWindowSize, 1000)]) }
        peer.collect(output)
        #expect(peer.connection.openStreamCount == 0)
    }
}
