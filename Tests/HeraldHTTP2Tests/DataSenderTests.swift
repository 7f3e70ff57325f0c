import HeraldHTTP2
import NIOCore
import Testing

/// Request and response bodies within the peer's flow-control windows (RFC 9113 §6.9), as a value.
@Suite("HTTP/2 DATA sender")
struct DataSenderTests {
    /// A client whose peer allows `window` bytes per stream.
    static func connection(window: Int) throws -> HTTP2Connection {
        try HTTP2ConnectionTests.readyClient(serverSettings: [(.maxConcurrentStreams, 100), (.initialWindowSize, window)])
    }

    /// The DATA frames in `output` as (stream, byte count, END_STREAM).
    static func data(_ output: ByteBuffer) throws -> [(stream: UInt32, count: Int, end: Bool)] {
        try HTTP2ConnectionTests.frames(output)
            .filter { $0.type == HTTP2FrameType.data.rawValue }
            .map { ($0.streamID, $0.payload.readableBytes, $0.flags & 0x1 != 0) }
    }

    @Test("a body that fits goes out at once in one DATA frame that ends the stream")
    func fits() throws {
        var connection = try Self.connection(window: 1000)
        var sender = HTTP2DataSender()
        var output = ByteBuffer()
        sender.send(streamID: 1, body: [UInt8](repeating: 7, count: 300), connection: &connection, output: &output)
        let frames = try Self.data(output)
        #expect(frames.map(\.stream) == [1] && frames.map(\.count) == [300] && frames.map(\.end) == [true])
    }

    @Test("a larger body goes out a window at a time, ending the stream with its last frame")
    func windowAtATime() throws {
        var connection = try Self.connection(window: 100)
        var sender = HTTP2DataSender()
        var output = ByteBuffer()
        sender.send(streamID: 1, body: [UInt8](repeating: 1, count: 250), connection: &connection, output: &output)
        #expect(try Self.data(output).map(\.count) == [100])
        output.clear()
        sender.windowGrew(streamID: 1, increment: 100, connection: &connection, output: &output)
        #expect(try Self.data(output).map(\.count) == [100])
        output.clear()
        sender.windowGrew(streamID: 1, increment: 100, connection: &connection, output: &output)
        let frames = try Self.data(output)
        #expect(frames.map(\.count) == [50] && frames.map(\.end) == [true])
        output.clear()
        sender.windowGrew(streamID: 1, increment: 100, connection: &connection, output: &output)
        #expect(output.readableBytes == 0, "nothing is left to send")
    }

    @Test("a stream out of window does not hold back the others: each has its own window")
    func noHeadOfLineBlocking() throws {
        var connection = try Self.connection(window: 100)
        var sender = HTTP2DataSender()
        var output = ByteBuffer()
        sender.send(streamID: 1, body: [UInt8](repeating: 1, count: 250), connection: &connection, output: &output)
        sender.send(streamID: 3, body: [UInt8](repeating: 3, count: 150), connection: &connection, output: &output)
        sender.send(streamID: 5, body: [UInt8](repeating: 5, count: 80), connection: &connection, output: &output)
        var frames = try Self.data(output)
        #expect(frames.map(\.stream) == [1, 3, 5])
        #expect(frames.map(\.count) == [100, 100, 80])
        #expect(frames.map(\.end) == [false, false, true])

        // Stream 3's window comes back first: it finishes while stream 1 still waits for its own.
        output.clear()
        sender.windowGrew(streamID: 3, increment: 100, connection: &connection, output: &output)
        frames = try Self.data(output)
        #expect(frames.map(\.stream) == [3] && frames.map(\.count) == [50] && frames.map(\.end) == [true])
        // Dropping the stream out of window (answered early, reset or timed out) leaves nothing stuck.
        let dropped = sender.drop(1)
        let droppedAgain = sender.drop(1)
        #expect(dropped && !droppedAgain)
    }

    @Test("waiting bodies share the connection window oldest first, and go on when it grows")
    func connectionWindowOldestFirst() throws {
        // The connection window starts at 65,535 (RFC 9113 §6.9.2); streams get 60,000 each.
        var connection = try Self.connection(window: 60_000)
        var sender = HTTP2DataSender()
        var output = ByteBuffer()
        sender.send(streamID: 1, body: [UInt8](repeating: 1, count: 40_000), connection: &connection, output: &output)
        sender.send(streamID: 3, body: [UInt8](repeating: 3, count: 40_000), connection: &connection, output: &output)
        sender.send(streamID: 5, body: [UInt8](repeating: 5, count: 100), connection: &connection, output: &output)
        var frames = try Self.data(output)
        #expect(frames.reduce(0) { $0 + $1.count } == 65_535)
        #expect(frames.filter { $0.stream == 1 }.reduce(0) { $0 + $1.count } == 40_000, "the oldest body first")
        #expect(frames.allSatisfy { $0.count <= 16_384 }, "no frame beyond SETTINGS_MAX_FRAME_SIZE")
        #expect(!frames.contains { $0.stream == 5 })

        output.clear()
        var update = ByteBuffer()
        update.writeHTTP2WindowUpdate(streamID: 0, increment: 100_000)
        var events: [HTTP2Connection.Event] = []
        var ignored = ByteBuffer()
        try connection.receive(&update, events: &events, output: &ignored)
        sender.windowGrew(connection: &connection, output: &output)
        frames = try Self.data(output)
        #expect(frames.filter { $0.stream == 3 }.reduce(0) { $0 + $1.count } == 40_000 - 25_535)
        #expect(frames.filter(\.end).map(\.stream) == [3, 5])
    }
}
