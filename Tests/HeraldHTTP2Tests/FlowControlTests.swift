import HeraldHTTP2
import NIOCore
import Testing

/// Request and response bodies within the peer's flow-control windows (RFC 9113 §6.9), as a value:
/// the peer's frames go in as bytes, what the connection sends comes out as frames.
@Suite("HTTP/2 flow control")
struct FlowControlTests {
    /// A client whose server allows `window` bytes per stream.
    static func client(window: Int) -> HTTP2TestPeer {
        HTTP2TestPeer.client(serverSettings: [(.maxConcurrentStreams, 100), (.initialWindowSize, window)])
    }

    /// Opens stream `id` on `peer`'s client with a request and sends `count` bytes of body.
    static func request(_ peer: inout HTTP2TestPeer, stream id: HTTP2StreamNumber, count: Int, byte: UInt8 = 1) {
        var output = ByteBuffer()
        #expect(peer.connection.writeHeaders(streamID: id, endStream: false, into: &output) { encoder, block in
            encoder.indexed(HPACKBlockEncoder.Static.methodPOST, into: &block)
        })
        #expect(peer.connection.writeBody(streamID: id, [UInt8](repeating: byte, count: count), into: &output))
        peer.collect(output)
    }

    /// The DATA frames written since the last clear, as (stream, byte count, END_STREAM).
    static func data(_ peer: HTTP2TestPeer) -> [(stream: UInt32, count: Int, end: Bool)] {
        peer.written.filter { $0.type == HTTP2FrameType.data.rawValue }.map { ($0.streamID, $0.payload.readableBytes, $0.has(HTTP2Flag.endStream)) }
    }

    @Test("a body that fits goes out at once in one DATA frame that ends the stream")
    func fits() {
        var peer = Self.client(window: 1000)
        Self.request(&peer, stream: 1, count: 300)
        let frames = Self.data(peer)
        #expect(frames.map(\.stream) == [1] && frames.map(\.count) == [300] && frames.map(\.end) == [true])
    }

    @Test("a larger body goes out a window at a time, ending the stream with its last frame")
    func windowAtATime() {
        var peer = Self.client(window: 100)
        Self.request(&peer, stream: 1, count: 250)
        #expect(Self.data(peer).map(\.count) == [100])
        peer.clear()
        peer.send { $0.writeHTTP2WindowUpdate(streamID: 1, increment: 100) }
        #expect(Self.data(peer).map(\.count) == [100])
        peer.clear()
        peer.send { $0.writeHTTP2WindowUpdate(streamID: 1, increment: 100) }
        let frames = Self.data(peer)
        #expect(frames.map(\.count) == [50] && frames.map(\.end) == [true])
        peer.clear()
        peer.send { $0.writeHTTP2WindowUpdate(streamID: 1, increment: 100) }
        #expect(Self.data(peer).isEmpty, "nothing is left to send")
        #expect(peer.error == nil)
    }

    @Test("a stream out of window does not hold back the others: each has its own window")
    func noHeadOfLineBlocking() {
        var peer = Self.client(window: 100)
        Self.request(&peer, stream: 1, count: 250)
        Self.request(&peer, stream: 3, count: 150)
        Self.request(&peer, stream: 5, count: 80)
        var frames = Self.data(peer)
        #expect(frames.map(\.stream) == [1, 3, 5])
        #expect(frames.map(\.count) == [100, 100, 80])
        #expect(frames.map(\.end) == [false, false, true])

        // Stream 3's window comes back first: it finishes while stream 1 still waits for its own.
        peer.clear()
        peer.send { $0.writeHTTP2WindowUpdate(streamID: 3, increment: 100) }
        frames = Self.data(peer)
        #expect(frames.map(\.stream) == [3] && frames.map(\.count) == [50] && frames.map(\.end) == [true])
        // Resetting the stream out of window (answered early, timed out) leaves nothing stuck.
        var output = ByteBuffer()
        #expect(peer.connection.hasPendingBody(1))
        peer.connection.resetStream(1, code: .cancel, into: &output)
        #expect(!peer.connection.hasPendingBody(1))
        peer.clear()
        peer.send { $0.writeHTTP2WindowUpdate(streamID: 1, increment: 100) }
        #expect(Self.data(peer).isEmpty && peer.error == nil, "a late WINDOW_UPDATE for a reset stream is ignored")
    }

    @Test("waiting bodies share the connection window oldest first, and go on when it grows")
    func connectionWindowOldestFirst() {
        // The connection window starts at 65,535 (RFC 9113 §6.9.2); streams get 60,000 each.
        var peer = Self.client(window: 60_000)
        Self.request(&peer, stream: 1, count: 40_000)
        Self.request(&peer, stream: 3, count: 40_000)
        Self.request(&peer, stream: 5, count: 100)
        var frames = Self.data(peer)
        #expect(frames.reduce(0) { $0 + $1.count } == 65_535)
        #expect(frames.filter { $0.stream == 1 }.reduce(0) { $0 + $1.count } == 40_000, "the oldest body first")
        #expect(frames.allSatisfy { $0.count <= 16_384 }, "no frame beyond SETTINGS_MAX_FRAME_SIZE")
        #expect(!frames.contains { $0.stream == 5 })

        peer.clear()
        peer.send { $0.writeHTTP2WindowUpdate(streamID: 0, increment: 100_000) }
        frames = Self.data(peer)
        #expect(frames.filter { $0.stream == 3 }.reduce(0) { $0 + $1.count } == 40_000 - 25_535)
        #expect(frames.filter(\.end).map(\.stream) == [3, 5])
    }

    @Test("a larger SETTINGS_INITIAL_WINDOW_SIZE lets waiting bodies go on; one that overflows a stream window is a FLOW_CONTROL_ERROR")
    func initialWindowChange() {
        var peer = Self.client(window: 0)
        Self.request(&peer, stream: 1, count: 500)
        #expect(Self.data(peer).isEmpty, "a window of 0 lets nothing out")
        peer.clear()
        peer.send { $0.writeHTTP2Settings([(.initialWindowSize, 1000)]) }
        #expect(Self.data(peer).map(\.count) == [500])

        // A stream whose window is already 2^31-1: 90 more overflow it.
        var overflow = Self.client(window: 10)
        var output = ByteBuffer()
        overflow.connection.writeHeaders(streamID: 1, endStream: true, into: &output) { _, _ in }
        overflow.send { $0.writeHTTP2WindowUpdate(streamID: 1, increment: http2MaximumWindow - 10) }
        #expect(overflow.error == nil)
        overflow.send { $0.writeHTTP2Settings([(.initialWindowSize, 100)]) }
        overflow.expectConnectionError(.flowControlError)
    }

    @Test("the peer's DATA is paid back: the connection window after half of it, a stream's after half of its own")
    func receiveWindows() {
        var server = HTTP2TestPeer.server(initialWindowSize: 20_000)
        server.sendHeaders(HTTP2TestPeer.request(), stream: 1, endStream: false)
        for _ in 0..<6 {
            server.send { $0.writeHTTP2Data(streamID: 1, bytes: [UInt8](repeating: 0x61, count: 5_000), endStream: false) }
        }
        #expect(server.error == nil, "the stream window was paid back before the peer ran out")
        let updates = server.written.filter { $0.type == HTTP2FrameType.windowUpdate.rawValue && $0.streamID == 1 }
        #expect(updates.count == 3, "an update each time 10,000 bytes came in")

        // Past a stream's window: FLOW_CONTROL_ERROR on that stream only.
        var greedy = HTTP2TestPeer.server(initialWindowSize: 1000)
        greedy.sendHeaders(HTTP2TestPeer.request(), stream: 1, endStream: false)
        greedy.send { $0.writeHTTP2Data(streamID: 1, bytes: [UInt8](repeating: 0x61, count: 1001), endStream: false) }
        greedy.expectStreamError(1, .flowControlError)
    }
}
