import HeraldHTTP2
import NIOCore
import NIOHPACK
import Testing

/// RFC 9113's rules on stream states, flow control and messages, one test per case of the h2spec
/// conformance suite that Herald's layer once failed (section numbers are h2spec's, which follow
/// RFC 7540's), played at the byte level against a server (as the mock runs it) and a client.
@Suite("HTTP/2 conformance (h2spec cases)")
struct ConformanceTests {
    typealias Peer = HTTP2TestPeer

    // MARK: 5.1 Stream states

    @Test("5.1: DATA, RST_STREAM or WINDOW_UPDATE on an idle stream is a connection error PROTOCOL_ERROR")
    func idleStream() {
        for (name, frame) in [
            ("DATA", { (buffer: inout ByteBuffer) in buffer.writeHTTP2Data(streamID: 1, bytes: [1, 2, 3], endStream: true) }),
            ("RST_STREAM", { (buffer: inout ByteBuffer) in buffer.writeHTTP2RstStream(streamID: 1, code: .cancel) }),
            ("WINDOW_UPDATE", { (buffer: inout ByteBuffer) in buffer.writeHTTP2WindowUpdate(streamID: 1, increment: 100) }),
        ] {
            var peer = Peer.server()
            peer.send(frame)
            peer.expectConnectionError(.protocolError, "\(name) on an idle stream")
        }
    }

    @Test("5.1: DATA on a half-closed (remote) stream is a stream error STREAM_CLOSED")
    func halfClosedRemote() {
        var peer = Peer.server()
        peer.sendHeaders(Peer.request(), stream: 1, endStream: true)
        #expect(peer.headStreams == [1])
        peer.send { $0.writeHTTP2Data(streamID: 1, bytes: [1], endStream: true) }
        peer.expectStreamError(1, .streamClosed)
    }

    @Test("5.1: DATA after the client reset the stream, or after both sides ended it, is a connection error STREAM_CLOSED")
    func closedStream() {
        var afterReset = Peer.server()
        afterReset.sendHeaders(Peer.request(), stream: 1, endStream: false)
        afterReset.send { $0.writeHTTP2RstStream(streamID: 1, code: .cancel) }
        afterReset.send { $0.writeHTTP2Data(streamID: 1, bytes: [1], endStream: true) }
        afterReset.expectConnectionError(.streamClosed)

        var afterEnd = Peer.server()
        afterEnd.sendHeaders(Peer.request(), stream: 1, endStream: true)
        var output = ByteBuffer()
        afterEnd.connection.writeHeaders(streamID: 1, endStream: true, into: &output) { encoder, block in
            encoder.indexed(HPACKBlockEncoder.Static.status200, into: &block)
        }
        #expect(afterEnd.connection.openStreamCount == 0)
        afterEnd.send { $0.writeHTTP2Data(streamID: 1, bytes: [1], endStream: true) }
        afterEnd.expectConnectionError(.streamClosed)
    }

    @Test("5.1: frames a client sent before it saw this side's RST_STREAM are ignored, flow control kept")
    func lateFramesAfterLocalReset() {
        var peer = Peer.server()
        peer.sendHeaders(Peer.request(), stream: 1, endStream: false)
        var output = ByteBuffer()
        peer.connection.resetStream(1, code: .noError, into: &output)
        peer.clear()
        peer.send {
            $0.writeHTTP2Data(streamID: 1, bytes: [UInt8](repeating: 1, count: 1000), endStream: false)
            $0.writeHTTP2WindowUpdate(streamID: 1, increment: 10)
            $0.writeHTTP2Data(streamID: 1, bytes: [], endStream: true)
        }
        #expect(peer.error == nil && peer.resets.isEmpty && peer.events.isEmpty)
    }

    @Test("5.1.1: an even stream ID, or one below the last, from a client is a connection error PROTOCOL_ERROR")
    func streamIdentifiers() {
        var even = Peer.server()
        even.sendHeaders(Peer.request(), stream: 2, endStream: true)
        even.expectConnectionError(.protocolError)

        var lower = Peer.server()
        lower.sendHeaders(Peer.request(), stream: 5, endStream: true)
        lower.sendHeaders(Peer.request(), stream: 3, endStream: true)
        lower.expectConnectionError(.protocolError)
    }

    @Test("5.1.2: a stream over SETTINGS_MAX_CONCURRENT_STREAMS is refused, counting streams whose answer still waits for window")
    func concurrencyLimit() {
        var peer = Peer.server(maxConcurrentStreams: 3)
        peer.send { $0.writeHTTP2Settings([(.initialWindowSize, 0)]) }
        for stream: HTTP2StreamNumber in [1, 3, 5] {
            peer.sendHeaders(Peer.request(), stream: stream, endStream: true)
            // Answered at once, but the body cannot go out: the stream stays open.
            var output = ByteBuffer()
            peer.connection.writeHeaders(streamID: stream, endStream: false, into: &output) { encoder, block in
                encoder.indexed(HPACKBlockEncoder.Static.status200, into: &block)
            }
            peer.connection.writeBody(streamID: stream, [1, 2, 3], into: &output)
            peer.collect(output)
        }
        peer.sendHeaders(Peer.request(), stream: 7, endStream: true)
        peer.expectStreamError(7, .refusedStream)
        #expect(peer.headStreams == [1, 3, 5])
        #expect(peer.connection.openStreamCount == 3)
    }

    @Test("a lower stream limit binds once the client acknowledges it")
    func limitAfterAcknowledgement() {
        var peer = Peer.server(maxConcurrentStreams: 10)
        var output = ByteBuffer()
        peer.connection.changeSettings([(.maxConcurrentStreams, 1)], into: &output)
        peer.sendHeaders(Peer.request(), stream: 1, endStream: false)
        peer.sendHeaders(Peer.request(), stream: 3, endStream: false)
        #expect(peer.headStreams == [1, 3], "before the ACK the old limit holds")
        peer.send { $0.writeHTTP2SettingsAck() }
        #expect(peer.connection.localInForce.maxConcurrentStreams == 1)
        peer.sendHeaders(Peer.request(), stream: 5, endStream: false)
        peer.expectStreamError(5, .refusedStream)
    }

    // MARK: 5.3.1 Stream dependencies

    @Test("5.3.1: HEADERS or PRIORITY making a stream depend on itself is a PROTOCOL_ERROR")
    func selfDependency() {
        var headers = Peer.server()
        let block = headers.block(Peer.request())
        headers.send { buffer in
            buffer.writeHTTP2FrameHeader(length: 5 + block.readableBytes, type: .headers, flags: HTTP2Flag.endHeaders | HTTP2Flag.endStream | HTTP2Flag.priority, streamID: 1)
            buffer.writeInteger(UInt32(1))
            buffer.writeInteger(UInt8(15))
            buffer.writeImmutableBuffer(block)
        }
        headers.expectStreamError(1, .protocolError)
        #expect(headers.headStreams.isEmpty)

        var priority = Peer.server()
        priority.sendHeaders(Peer.request(), stream: 1, endStream: false)
        priority.send { buffer in
            buffer.writeHTTP2FrameHeader(length: 5, type: .priority, flags: 0, streamID: 1)
            buffer.writeInteger(UInt32(1))
            buffer.writeInteger(UInt8(15))
        }
        priority.expectStreamError(1, .protocolError)

        var idle = Peer.server()
        idle.send { buffer in
            buffer.writeHTTP2FrameHeader(length: 5, type: .priority, flags: 0, streamID: 9)
            buffer.writeInteger(UInt32(9))
            buffer.writeInteger(UInt8(15))
        }
        idle.expectConnectionError(.protocolError)
    }

    // MARK: 6 Frame definitions

    @Test("6.2: padding that eats into HEADERS' priority fields is a PROTOCOL_ERROR, not a FRAME_SIZE_ERROR")
    func headersPadding() {
        var peer = Peer.server()
        peer.send { buffer in
            // Pad length 3, priority flag: the 5 priority bytes leave room for no padding at all.
            buffer.writeHTTP2FrameHeader(length: 6, type: .headers, flags: HTTP2Flag.endHeaders | HTTP2Flag.padded | HTTP2Flag.priority, streamID: 1)
            buffer.writeInteger(UInt8(3))
            buffer.writeInteger(UInt32(0))
            buffer.writeInteger(UInt8(15))
        }
        peer.expectConnectionError(.protocolError)

        var short = Peer.server()
        short.send { buffer in
            buffer.writeHTTP2FrameHeader(length: 3, type: .headers, flags: HTTP2Flag.endHeaders | HTTP2Flag.priority, streamID: 1)
            buffer.writeBytes([0, 0, 0])
        }
        short.expectConnectionError(.frameSizeError)
    }

    @Test("6.9: WINDOW_UPDATE of 0 on a stream is a stream error PROTOCOL_ERROR; past 2^31-1 a FLOW_CONTROL_ERROR")
    func streamWindowUpdate() {
        var zero = Peer.server()
        zero.sendHeaders(Peer.request(), stream: 1, endStream: false)
        zero.send { $0.writeHTTP2WindowUpdate(streamID: 1, increment: 0) }
        zero.expectStreamError(1, .protocolError)

        var overflow = Peer.server()
        overflow.sendHeaders(Peer.request(), stream: 1, endStream: false)
        overflow.send {
            $0.writeHTTP2WindowUpdate(streamID: 1, increment: http2MaximumWindow)
            $0.writeHTTP2WindowUpdate(streamID: 1, increment: http2MaximumWindow)
        }
        overflow.expectStreamError(1, .flowControlError)
    }

    // MARK: 8.1 HTTP request/response exchange

    @Test("8.1: a second HEADERS without END_STREAM is a PROTOCOL_ERROR; trailers with it end the request")
    func trailers() {
        var second = Peer.server()
        second.sendHeaders(Peer.request(), stream: 1, endStream: false)
        second.sendHeaders([("x-trailer", "1")], stream: 1, endStream: false)
        second.expectStreamError(1, .protocolError)

        var proper = Peer.server()
        proper.sendHeaders(Peer.request(), stream: 1, endStream: false)
        proper.send { $0.writeHTTP2Data(streamID: 1, bytes: [1, 2], endStream: false) }
        proper.sendHeaders([("x-trailer", "1")], stream: 1, endStream: true)
        #expect(proper.error == nil && proper.resets.isEmpty)
        guard case .trailers(1, _) = proper.events.last else {
            Issue.record("expected trailers, got \(proper.events)")
            return
        }
    }

    static let malformedRequests: [(String, [(String, String)])] = [
        ("an upper-case field name", Peer.request(extra: [("X-Test", "ok")])),
        ("an unknown pseudo-header", Peer.request() + [(":foo", "bar")]),
        ("a response pseudo-header", [(":status", "200")] + Peer.request()),
        ("a pseudo-header after a regular field", [(":method", "POST"), (":scheme", "https"), ("x-a", "1"), (":path", "/"), (":authority", "x")]),
        ("a connection-specific field", Peer.request(extra: [("connection", "keep-alive")])),
        ("te other than trailers", Peer.request(extra: [("te", "gzip")])),
        ("an empty :path", [(":method", "POST"), (":scheme", "https"), (":path", ""), (":authority", "x")]),
        ("no :method", [(":scheme", "https"), (":path", "/"), (":authority", "x")]),
        ("no :scheme", [(":method", "POST"), (":path", "/"), (":authority", "x")]),
        ("no :path", [(":method", "POST"), (":scheme", "https"), (":authority", "x")]),
        ("a duplicate :method", [(":method", "POST"), (":method", "POST"), (":scheme", "https"), (":path", "/")]),
        ("a duplicate :scheme", [(":method", "POST"), (":scheme", "https"), (":scheme", "https"), (":path", "/")]),
        ("a duplicate :path", [(":method", "POST"), (":scheme", "https"), (":path", "/"), (":path", "/")]),
        ("a field value with CR LF", Peer.request(extra: [("x-a", "1\r\nx-b: 2")])),
        ("a field value with leading whitespace", Peer.request(extra: [("x-a", " 1")])),
        ("an invalid content-length", Peer.request(extra: [("content-length", "-1")])),
    ]

    @Test("8.1.2: each malformed request is a stream error PROTOCOL_ERROR, and never reaches the owner", arguments: 0..<16)
    func malformedRequest(index: Int) {
        let (name, fields) = Self.malformedRequests[index]
        var peer = Peer.server()
        peer.sendHeaders(fields, stream: 1, endStream: true)
        peer.expectStreamError(1, .protocolError, "\(name)")
        #expect(peer.headStreams.isEmpty, "\(name)")
        // The connection goes on: the next request is taken.
        peer.sendHeaders(Peer.request(), stream: 3, endStream: true)
        #expect(peer.headStreams == [3], "\(name)")
    }

    @Test("8.1.2.3: pseudo-headers in trailers are a PROTOCOL_ERROR")
    func pseudoHeaderInTrailers() {
        var peer = Peer.server()
        peer.sendHeaders(Peer.request(), stream: 1, endStream: false)
        peer.sendHeaders([(":method", "POST")], stream: 1, endStream: true)
        peer.expectStreamError(1, .protocolError)
    }

    @Test("8.1.2.6: content-length not matching the DATA, in one frame or several, is a PROTOCOL_ERROR")
    func contentLength() {
        var single = Peer.server()
        single.sendHeaders(Peer.request(extra: [("content-length", "1")]), stream: 1, endStream: false)
        single.send { $0.writeHTTP2Data(streamID: 1, bytes: [1, 2, 3, 4], endStream: true) }
        single.expectStreamError(1, .protocolError)

        var several = Peer.server()
        several.sendHeaders(Peer.request(extra: [("content-length", "5")]), stream: 1, endStream: false)
        several.send {
            $0.writeHTTP2Data(streamID: 1, bytes: [1, 2], endStream: false)
            $0.writeHTTP2Data(streamID: 1, bytes: [3, 4], endStream: true)
        }
        several.expectStreamError(1, .protocolError)

        var right = Peer.server()
        right.sendHeaders(Peer.request(extra: [("content-length", "4")]), stream: 1, endStream: false)
        right.send {
            $0.writeHTTP2Data(streamID: 1, bytes: [1, 2], endStream: false)
            $0.writeHTTP2Data(streamID: 1, bytes: [3, 4], endStream: true)
        }
        #expect(right.error == nil && right.resets.isEmpty)
    }

    // MARK: The client side

    /// A client with stream 1 open.
    static func clientWithRequest() -> Peer {
        var peer = Peer.client()
        var output = ByteBuffer()
        peer.connection.writeHeaders(streamID: 1, endStream: true, into: &output) { encoder, block in
            encoder.indexed(HPACKBlockEncoder.Static.methodPOST, into: &block)
        }
        return peer
    }

    @Test("8.1: a 1xx response is not the answer: the final response that follows is")
    func informationalResponse() {
        var peer = Self.clientWithRequest()
        peer.sendHeaders([(":status", "100")], stream: 1, endStream: false)
        #expect(peer.events.isEmpty)
        peer.sendHeaders([(":status", "200"), ("apns-id", "x")], stream: 1, endStream: true)
        guard case .headers(1, let headers, true) = peer.events.first else {
            Issue.record("expected the final response, got \(peer.events)")
            return
        }
        #expect(headers.first(name: ":status") == "200")

        var ended = Self.clientWithRequest()
        ended.sendHeaders([(":status", "103")], stream: 1, endStream: true)
        ended.expectStreamError(1, .protocolError, "a 1xx response may not end the stream")

        var switching = Self.clientWithRequest()
        switching.sendHeaders([(":status", "101")], stream: 1, endStream: false)
        switching.expectStreamError(1, .protocolError, "101 is not used in HTTP/2")
    }

    @Test("a response without :status, or with a request pseudo-header, is a stream error PROTOCOL_ERROR")
    func malformedResponses() {
        for fields in [[("apns-id", "x")], [(":status", "200"), (":path", "/")], [(":status", "2000")], [(":status", "abc")]] {
            var peer = Self.clientWithRequest()
            peer.sendHeaders(fields, stream: 1, endStream: true)
            peer.expectStreamError(1, .protocolError, "\(fields)")
            #expect(peer.events.count == 1, "only the reset is reported")
        }
    }

    @Test("a server may not open streams or offer push: HEADERS on an idle stream and SETTINGS_ENABLE_PUSH 1 are PROTOCOL_ERRORs")
    func serverOpensStream() {
        var peer = Peer.client()
        peer.sendHeaders([(":status", "200")], stream: 2, endStream: true)
        peer.expectConnectionError(.protocolError)

        var push = Peer.client()
        push.send { $0.writeHTTP2Settings([(.enablePush, 1)]) }
        push.expectConnectionError(.protocolError)
    }

    @Test("a complete response before the whole request was sent stops the request with RST_STREAM NO_ERROR")
    func earlyResponse() {
        var peer = HTTP2TestPeer.client(serverSettings: [(.maxConcurrentStreams, 10), (.initialWindowSize, 10)])
        var output = ByteBuffer()
        peer.connection.writeHeaders(streamID: 1, endStream: false, into: &output) { _, _ in }
        peer.connection.writeBody(streamID: 1, [UInt8](repeating: 1, count: 100), into: &output)
        peer.sendHeaders([(":status", "413")], stream: 1, endStream: true)
        #expect(peer.resets.map(\.code) == [.noError])
        #expect(peer.connection.openStreamCount == 0)
        peer.send { $0.writeHTTP2WindowUpdate(streamID: 1, increment: 100) }
        #expect(peer.error == nil)
    }
}
