import HeraldHTTP2
import NIOCore
import NIOHPACK
import Testing

/// One side of an ``HTTP2Connection`` driven by a test that plays the other side at the byte
/// level: it writes raw frames (header blocks from NIOHPACK's encoder, independent of Herald's),
/// and records what the connection reports, writes back, or fails with.
struct HTTP2TestPeer {
    typealias Event = HTTP2Connection.Event

    var connection: HTTP2Connection
    var now = NIODeadline.uptimeNanoseconds(1_000_000_000)
    var encoder = HPACKEncoder(allocator: ByteBufferAllocator())
    /// Everything the connection reported, wrote and failed with, since the start.
    var events: [Event] = []
    var written: [HTTP2WireFrame] = []
    var error: HTTP2ConnectionError?
    private var parser = HTTP2FrameParser(maximumFrameSize: 1 << 24)

    /// A server connection (the test is the client) that has read the preface and empty SETTINGS.
    static func server(
        maxConcurrentStreams: Int = 100, initialWindowSize: Int = 65_535, limits: HTTP2Connection.Limits = .init()
    ) -> HTTP2TestPeer {
        var settings = HTTP2Connection.Settings()
        settings.maxConcurrentStreams = maxConcurrentStreams
        settings.initialWindowSize = initialWindowSize
        settings.maxHeaderListSize = 16 << 10
        var peer = HTTP2TestPeer(connection: HTTP2Connection(role: .server, local: settings, limits: limits))
        var start = ByteBuffer()
        peer.connection.start(into: &start)
        peer.send { buffer in
            buffer.writeBytes(http2ClientPreface)
            buffer.writeHTTP2Settings([])
            buffer.writeHTTP2SettingsAck()
        }
        peer.clear()
        return peer
    }

    /// A client connection (the test is the server) that has read the server's SETTINGS.
    static func client(serverSettings: [(HTTP2SettingID, Int)] = [(.maxConcurrentStreams, 100)], limits: HTTP2Connection.Limits = .init()) -> HTTP2TestPeer {
        var settings = HTTP2Connection.Settings()
        settings.maxHeaderListSize = 16 << 10
        var peer = HTTP2TestPeer(connection: HTTP2Connection(role: .client, local: settings, limits: limits))
        var start = ByteBuffer()
        peer.connection.start(into: &start)
        peer.send {
            $0.writeHTTP2Settings(serverSettings)
            $0.writeHTTP2SettingsAck()
        }
        peer.clear()
        return peer
    }

    /// Forgets what was recorded so far.
    mutating func clear() {
        events = []
        written = []
    }

    /// Feeds the bytes `write` produces to the connection, as one read.
    mutating func send(writable: Bool = true, _ write: (inout ByteBuffer) -> Void) {
        var bytes = ByteBuffer()
        write(&bytes)
        feed(bytes, writable: writable)
    }

    /// Feeds `bytes` as one read; after a connection error nothing more is read.
    mutating func feed(_ bytes: ByteBuffer, writable: Bool = true) {
        guard error == nil else { return }
        var bytes = bytes
        var output = ByteBuffer()
        do {
            try connection.receive(&bytes, now: now, outputWritable: writable, events: &events, output: &output)
        } catch {
            self.error = error
        }
        collect(output)
    }

    /// Records frames the connection's owner wrote with its sending API.
    mutating func collect(_ output: ByteBuffer) {
        var output = output
        parser.append(&output)
        while let frame = try! parser.next() { written.append(frame) }
    }

    /// A header block for `fields`, encoded by NIOHPACK.
    mutating func block(_ fields: [(String, String)]) -> ByteBuffer {
        var block = ByteBuffer()
        try! encoder.encode(headers: HPACKHeaders(fields), to: &block)
        return block
    }

    /// Sends HEADERS (one frame) with `fields` on `stream`.
    mutating func sendHeaders(_ fields: [(String, String)], stream: HTTP2StreamNumber, endStream: Bool, flags extra: UInt8 = 0) {
        let block = block(fields)
        send { buffer in
            buffer.writeHTTP2FrameHeader(
                length: block.readableBytes, type: .headers, flags: HTTP2Flag.endHeaders | (endStream ? HTTP2Flag.endStream : 0) | extra, streamID: stream
            )
            buffer.writeImmutableBuffer(block)
        }
    }

    /// A request like the ones APNs gets.
    static func request(path: String = "/3/device/00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0", extra: [(String, String)] = []) -> [(String, String)] {
        [(":method", "POST"), (":scheme", "https"), (":path", path), (":authority", "api.push.apple.com"), ("apns-topic", "com.example")] + extra
    }

    // MARK: What happened

    /// The code of the GOAWAY or connection error, if the connection ended.
    var connectionErrorCode: HTTP2ErrorCode? { error?.code }

    /// RST_STREAM frames written, as (stream, code).
    var resets: [(stream: HTTP2StreamNumber, code: HTTP2ErrorCode)] {
        written.filter { $0.type == HTTP2FrameType.rstStream.rawValue }.map { frame in
            var payload = frame.payload
            return (frame.streamID, HTTP2ErrorCode(payload.readInteger(as: UInt32.self)!))
        }
    }

    /// The streams whose request or response head was reported.
    var headStreams: [HTTP2StreamNumber] {
        events.compactMap { if case .headers(let id, _, _) = $0 { id } else { nil } }
    }

    /// Asserts that the connection ended with `code`.
    func expectConnectionError(_ code: HTTP2ErrorCode, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(error?.code == code, "\(comment?.description ?? ""): got \(String(describing: error))", sourceLocation: sourceLocation)
    }

    /// Asserts that the connection is still up and stream `stream` was reset with `code`.
    func expectStreamError(_ stream: HTTP2StreamNumber, _ code: HTTP2ErrorCode, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(error == nil, "\(comment?.description ?? ""): the connection failed with \(String(describing: error))", sourceLocation: sourceLocation)
        #expect(resets.contains { $0.stream == stream && $0.code == code }, "\(comment?.description ?? ""): resets \(resets)", sourceLocation: sourceLocation)
    }
}
