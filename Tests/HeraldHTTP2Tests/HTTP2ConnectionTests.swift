import HeraldHTTP2
import NIOCore
import NIOHPACK
import Testing

/// The connection-level protocol as a plain value: bytes in, events and bytes out.
@Suite("HTTP/2 connection")
struct HTTP2ConnectionTests {
    typealias Event = HTTP2Connection.Event

    static func frames(_ bytes: ByteBuffer) throws -> [HTTP2WireFrame] {
        var parser = HTTP2FrameParser(maximumFrameSize: 1 << 24)
        var bytes = bytes
        parser.append(&bytes)
        var frames: [HTTP2WireFrame] = []
        while let frame = try parser.next() { frames.append(frame) }
        return frames
    }

    /// A client that has received the server's first SETTINGS.
    static func readyClient(serverSettings: [(HTTP2SettingID, Int)] = [(.maxConcurrentStreams, 100)]) throws -> HTTP2Connection {
        var client = HTTP2Connection(role: .client, local: .init())
        var start = ByteBuffer()
        client.start(into: &start)
        var bytes = ByteBuffer()
        bytes.writeHTTP2Settings(serverSettings)
        var events: [Event] = []
        var output = ByteBuffer()
        try client.receive(&bytes, events: &events, output: &output)
        return client
    }

    func receive(_ connection: inout HTTP2Connection, _ write: (inout ByteBuffer) -> Void) throws -> (events: [Event], output: [HTTP2WireFrame]) {
        var bytes = ByteBuffer()
        write(&bytes)
        var events: [Event] = []
        var output = ByteBuffer()
        try connection.receive(&bytes, events: &events, output: &output)
        return (events, try Self.frames(output))
    }

    @Test("a client opens with the preface, SETTINGS (push off) and a large connection window")
    func clientStart() throws {
        var client = HTTP2Connection(role: .client, local: .init(), connectionReceiveWindow: 1 << 24)
        var output = ByteBuffer()
        client.start(into: &output)
        #expect(Array(output.readableBytesView.prefix(24)) == http2ClientPreface)
        output.moveReaderIndex(forwardBy: 24)
        let frames = try Self.frames(output)
        #expect(frames.map(\.type) == [HTTP2FrameType.settings.rawValue, HTTP2FrameType.windowUpdate.rawValue])
        var settings = frames[0].payload
        #expect(settings.readInteger(as: UInt16.self) == HTTP2SettingID.enablePush.rawValue)
        #expect(settings.readInteger(as: UInt32.self) == 0)
        var window = frames[1].payload
        #expect(window.readInteger(as: UInt32.self) == UInt32((1 << 24) - 65_535))
    }

    @Test("the peer's SETTINGS are applied and acknowledged; the first one makes the connection ready")
    func settings() throws {
        var client = HTTP2Connection(role: .client, local: .init())
        var start = ByteBuffer()
        client.start(into: &start)
        #expect(!client.isReady)
        let (events, output) = try receive(&client) { $0.writeHTTP2Settings([(.maxConcurrentStreams, 7), (.initialWindowSize, 1000), (.maxFrameSize, 20_000)]) }
        guard case .settings(true, 7) = events.first else {
            Issue.record("expected the first settings event, got \(events)")
            return
        }
        #expect(client.remote.initialWindowSize == 1000)
        #expect(client.isReady)
        #expect(client.remote.maxFrameSize == 20_000)
        #expect(output.count == 1 && output[0].type == HTTP2FrameType.settings.rawValue && output[0].has(HTTP2Flag.ack))
        let (again, _) = try receive(&client) { $0.writeHTTP2Settings([(.maxConcurrentStreams, 1)]) }
        guard case .settings(false, 1) = again.first else {
            Issue.record("expected a settings change, got \(again)")
            return
        }
    }

    @Test("PING is answered with the same data; a PING ACK becomes an event")
    func ping() throws {
        var client = try Self.readyClient()
        let (events, output) = try receive(&client) {
            $0.writeHTTP2Ping(42, ack: false)
            $0.writeHTTP2Ping(7, ack: true)
        }
        #expect(output.count == 1 && output[0].has(HTTP2Flag.ack))
        var payload = output[0].payload
        #expect(payload.readInteger(as: UInt64.self) == 42)
        guard case .pingAck(7) = events.first else {
            Issue.record("expected pingAck, got \(events)")
            return
        }
    }

    /// Opens stream `id` on a client with a bodiless request.
    static func open(_ client: inout HTTP2Connection, _ id: HTTP2StreamNumber) {
        var output = ByteBuffer()
        client.writeHeaders(streamID: id, endStream: true, into: &output) { encoder, block in
            encoder.indexed(HPACKBlockEncoder.Static.methodGET, into: &block)
        }
    }

    @Test("DATA is paid back with WINDOW_UPDATE after half the connection window; padding is stripped")
    func receiveWindow() throws {
        var client = HTTP2Connection(role: .client, local: .init(), connectionReceiveWindow: 100_000)
        var start = ByteBuffer()
        client.start(into: &start)
        _ = try receive(&client) { $0.writeHTTP2Settings([]) }
        Self.open(&client, 1)
        var encoder = HPACKEncoder(allocator: ByteBufferAllocator())
        var block = ByteBuffer()
        try encoder.encode(headers: [":status": "200"], to: &block)
        _ = try receive(&client) { $0.writeHTTP2Headers(streamID: 1, block: block, endStream: false, maximumFrameSize: 16_384) }
        var updates = 0
        for _ in 0..<10 {
            let (events, output) = try receive(&client) { buffer in
                // A padded DATA frame: pad length 3, 10 000 bytes, 3 bytes of padding.
                buffer.writeHTTP2FrameHeader(length: 1 + 10_000 + 3, type: .data, flags: HTTP2Flag.padded, streamID: 1)
                buffer.writeInteger(UInt8(3))
                buffer.writeBytes([UInt8](repeating: 0x61, count: 10_000))
                buffer.writeBytes([0, 0, 0])
            }
            guard case .data(1, let data, false) = events.first else {
                Issue.record("expected data, got \(events)")
                return
            }
            #expect(data.readableBytes == 10_000)
            updates += output.filter { $0.type == HTTP2FrameType.windowUpdate.rawValue && $0.streamID == 0 }.count
        }
        #expect(updates == 2)  // 100 040 bytes received: an update each time 50 000 have come in
    }

    @Test("WINDOW_UPDATE grows the connection send window; past 2^31-1 is a FLOW_CONTROL_ERROR")
    func sendWindow() throws {
        var client = try Self.readyClient()
        #expect(client.connectionSendWindow == 65_535)
        _ = try receive(&client) { $0.writeHTTP2WindowUpdate(streamID: 0, increment: 1000) }
        #expect(client.connectionSendWindow == 66_535)
        let error = #expect(throws: HTTP2ConnectionError.self) {
            _ = try receive(&client) { $0.writeHTTP2WindowUpdate(streamID: 0, increment: Int(Int32.max)) }
        }
        #expect(error?.code == .flowControlError)
    }

    @Test("HEADERS with CONTINUATION decode as one block; anything between them is a PROTOCOL_ERROR")
    func continuation() throws {
        var encoder = HPACKEncoder(allocator: ByteBufferAllocator())
        var block = ByteBuffer()
        var headers = HPACKHeaders([(":status", "200"), ("apns-id", "abc")])
        for n in 0..<300 { headers.add(name: "x-filler-\(n)", value: String(repeating: "v", count: 50)) }
        try encoder.encode(headers: headers, to: &block)
        var client = try Self.readyClient()
        Self.open(&client, 1)
        let (events, _) = try receive(&client) { $0.writeHTTP2Headers(streamID: 1, block: block, endStream: true, maximumFrameSize: 4096) }
        guard case .headers(1, let decoded, true) = events.first else {
            Issue.record("got \(events)")
            return
        }
        #expect(decoded.first(name: "apns-id") == "abc")
        #expect(decoded.count == 302)

        var interleaved = try Self.readyClient()
        Self.open(&interleaved, 1)
        let error = #expect(throws: HTTP2ConnectionError.self) {
            _ = try receive(&interleaved) { buffer in
                buffer.writeHTTP2FrameHeader(length: 1, type: .headers, flags: 0, streamID: 1)
                buffer.writeInteger(UInt8(0x88))
                buffer.writeHTTP2Ping(1, ack: false)
            }
        }
        #expect(error?.code == .protocolError)
    }

    @Test("GOAWAY and RST_STREAM become events with their codes and debug data")
    func goAwayAndReset() throws {
        var client = try Self.readyClient()
        for id: HTTP2StreamNumber in [1, 3, 5, 7] { Self.open(&client, id) }
        let (events, _) = try receive(&client) {
            $0.writeHTTP2RstStream(streamID: 5, code: .refusedStream)
            $0.writeHTTP2GoAway(lastStreamID: 3, code: .noError, debugData: Array(#"{"reason":"Shutdown"}"#.utf8))
        }
        #expect(client.openStreamCount == 2, "streams above the GOAWAY's last stream are gone")
        var output = ByteBuffer()
        #expect(!client.writeHeaders(streamID: 9, endStream: true, into: &output) { _, _ in }, "no new stream after GOAWAY")
        guard events.count == 2, case .streamReset(5, .refusedStream, true) = events[0], case .goAway(3, .noError, let debug) = events[1] else {
            Issue.record("got \(events)")
            return
        }
        #expect(String(buffer: debug) == #"{"reason":"Shutdown"}"#)
    }

    @Test("protocol violations end the connection with the right code", arguments: [
        ("first frame not SETTINGS", HTTP2ErrorCode.protocolError),
        ("PUSH_PROMISE", .protocolError),
        ("SETTINGS_ENABLE_PUSH 2", .protocolError),
        ("SETTINGS_INITIAL_WINDOW_SIZE 2^31", .flowControlError),
        ("SETTINGS_MAX_FRAME_SIZE 100", .protocolError),
        ("SETTINGS on a stream", .protocolError),
        ("DATA on stream 0", .protocolError),
        ("PING of 4 bytes", .frameSizeError),
        ("undecodable header block", .compressionError),
    ])
    func violations(name: String, code: HTTP2ErrorCode) throws {
        var client = HTTP2Connection(role: .client, local: .init())
        var start = ByteBuffer()
        client.start(into: &start)
        var bytes = ByteBuffer()
        if name != "first frame not SETTINGS" { bytes.writeHTTP2Settings([]) }
        switch name {
        case "first frame not SETTINGS": bytes.writeHTTP2Ping(1, ack: false)
        case "PUSH_PROMISE": bytes.writeHTTP2FrameHeader(length: 4, type: .pushPromise, flags: HTTP2Flag.endHeaders, streamID: 1); bytes.writeInteger(UInt32(2))
        case "SETTINGS_ENABLE_PUSH 2": bytes.writeHTTP2Settings([(.enablePush, 2)])
        case "SETTINGS_INITIAL_WINDOW_SIZE 2^31": bytes.writeHTTP2Settings([(.initialWindowSize, 1 << 31)])
        case "SETTINGS_MAX_FRAME_SIZE 100": bytes.writeHTTP2Settings([(.maxFrameSize, 100)])
        case "SETTINGS on a stream": bytes.writeHTTP2FrameHeader(length: 0, type: .settings, flags: 0, streamID: 1)
        case "DATA on stream 0": bytes.writeHTTP2Data(streamID: 0, bytes: [1], endStream: false)
        case "PING of 4 bytes": bytes.writeHTTP2FrameHeader(length: 4, type: .ping, flags: 0, streamID: 0); bytes.writeInteger(UInt32(0))
        case "undecodable header block": bytes.writeHTTP2FrameHeader(length: 1, type: .headers, flags: HTTP2Flag.endHeaders, streamID: 1); bytes.writeInteger(UInt8(0xFF))
        default: Issue.record("unknown case")
        }
        var events: [Event] = []
        var output = ByteBuffer()
        let error = #expect(throws: HTTP2ConnectionError.self) { try client.receive(&bytes, events: &events, output: &output) }
        #expect(error?.code == code, "\(name): \(String(describing: error))")
    }

    @Test("a server first reads the client's preface; anything else is refused")
    func serverPreface() throws {
        var server = HTTP2Connection(role: .server, local: .init())
        var start = ByteBuffer()
        server.start(into: &start)
        #expect(Array(start.readableBytesView.prefix(24)) != http2ClientPreface)
        var bytes = ByteBuffer(bytes: http2ClientPreface.prefix(10))
        var events: [Event] = []
        var output = ByteBuffer()
        try server.receive(&bytes, events: &events, output: &output)
        bytes = ByteBuffer(bytes: http2ClientPreface.dropFirst(10))
        bytes.writeHTTP2Settings([])
        try server.receive(&bytes, events: &events, output: &output)
        #expect(server.isReady)

        var fooled = HTTP2Connection(role: .server, local: .init())
        var http1 = ByteBuffer(string: "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        let error = #expect(throws: HTTP2ConnectionError.self) { try fooled.receive(&http1, events: &events, output: &output) }
        #expect(error?.code == .protocolError)
    }

    @Test("random bytes never crash the connection (bounded, seeded)")
    func randomBytes() {
        var state: UInt64 = 0x5EED
        func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        for _ in 0..<3000 {
            var connection = HTTP2Connection(role: .client, local: .init())
            var start = ByteBuffer()
            connection.start(into: &start)
            var bytes = ByteBuffer()
            bytes.writeHTTP2Settings([])
            // Valid frame headers with random types, flags and payloads, then raw noise.
            for _ in 0..<Int(next() % 6) {
                let length = Int(next() % 40)
                bytes.writeHTTP2FrameHeader(length: length, type: HTTP2FrameType(rawValue: UInt8(next() % 10))!, flags: UInt8(truncatingIfNeeded: next()), streamID: UInt32(next() % 4))
                for _ in 0..<length { bytes.writeInteger(UInt8(truncatingIfNeeded: next())) }
            }
            for _ in 0..<Int(next() % 30) { bytes.writeInteger(UInt8(truncatingIfNeeded: next())) }
            var events: [Event] = []
            var output = ByteBuffer()
            _ = try? connection.receive(&bytes, events: &events, output: &output)
        }
    }
}
