import HeraldHTTP2
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing

/// Herald's connection on one side, swift-nio-http2 (a strict, independent implementation) on the
/// other, in both roles: the bytes each writes go to the other until both are quiet. Whatever
/// Herald writes NIO must take, and the other way round, for every kind of frame APNs traffic meets.
@Suite("HTTP/2 interop with swift-nio-http2, both directions")
struct NIOInteropTests {
    /// What NIO's side received and how it failed, if it did.
    final class Collector: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTP2Frame
        typealias OutboundOut = HTTP2Frame
        var frames: [HTTP2Frame] = []
        var errors: [any Error] = []

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let frame = unwrapInboundIn(data)
            frames.append(frame)
            // Without NIO's stream multiplexer nobody pays back the windows: this side does.
            if case .data(let data) = frame.payload, data.data.readableBytes > 0 {
                context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: data.data.readableBytes))), promise: nil)
                if !data.endStream {
                    context.write(wrapOutboundOut(HTTP2Frame(streamID: frame.streamID, payload: .windowUpdate(windowSizeIncrement: data.data.readableBytes))), promise: nil)
                }
                context.flush()
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            errors.append(error)
        }
    }

    /// A Herald connection and a NIO handler wired back to back.
    struct Pair {
        var herald: HTTP2Connection
        let nio: EmbeddedChannel
        let collector = Collector()
        var events: [HTTP2Connection.Event] = []
        var heraldError: HTTP2ConnectionError?

        init(herald role: HTTP2Connection.Role, heraldSettings: HTTP2Connection.Settings = .init(), nioSettings: [HTTP2Setting] = nioDefaultSettings) throws {
            herald = HTTP2Connection(role: role, local: heraldSettings)
            nio = EmbeddedChannel()
            try nio.pipeline.syncOperations.addHandler(NIOHTTP2Handler(mode: role == .client ? .server : .client, initialSettings: nioSettings))
            try nio.pipeline.syncOperations.addHandler(collector)
            var start = ByteBuffer()
            herald.start(into: &start)
            try nio.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
            try deliver(start)
            try pump()
        }

        /// Herald's bytes to NIO.
        mutating func deliver(_ bytes: ByteBuffer) throws {
            guard bytes.readableBytes > 0 else { return }
            do {
                try nio.writeInbound(bytes)
            } catch {
                collector.errors.append(error)
            }
        }

        /// Shuttles bytes both ways until neither side has anything more to say.
        mutating func pump() throws {
            for _ in 0..<100 {
                var fromNIO = ByteBuffer()
                while let data = try nio.readOutbound(as: IOData.self) {
                    if case .byteBuffer(var buffer) = data { fromNIO.writeBuffer(&buffer) }
                }
                guard fromNIO.readableBytes > 0 else { return }
                var output = ByteBuffer()
                if heraldError == nil {
                    do {
                        try herald.receive(&fromNIO, events: &events, output: &output)
                    } catch {
                        heraldError = error
                    }
                }
                try deliver(output)
            }
            Issue.record("the two sides did not go quiet")
        }

        /// Herald writes something with its sending API.
        mutating func heraldWrites(_ write: (inout HTTP2Connection, inout ByteBuffer) -> Void) throws {
            var output = ByteBuffer()
            write(&herald, &output)
            try deliver(output)
            try pump()
        }

        /// NIO writes a frame.
        mutating func nioWrites(_ frames: HTTP2Frame...) throws {
            for frame in frames { nio.write(frame, promise: nil) }
            nio.flush()
            try pump()
        }

        /// Both sides are up and neither broke anything.
        func expectHealthy(sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(heraldError == nil, "Herald: \(String(describing: heraldError))", sourceLocation: sourceLocation)
            #expect(collector.errors.isEmpty, "NIO: \(collector.errors)", sourceLocation: sourceLocation)
        }
    }

    static let largeValue = String(repeating: "v", count: 40_000)
    /// Room for 40 KB header blocks. swift-nio-http2 never writes CONTINUATION (its encoder puts a
    /// block in one frame), so Herald allows 64 KiB frames to take NIO's; Herald's own blocks go
    /// to NIO split at NIO's 16 KiB. (Herald reading CONTINUATION is tested with blocks from
    /// NIOHPACK's encoder split by hand: HTTP2ConnectionTests, ConformanceTests.)
    static var largeSettings: HTTP2Connection.Settings {
        var settings = HTTP2Connection.Settings()
        settings.maxHeaderListSize = 1 << 20
        settings.maxFrameSize = 1 << 16
        return settings
    }

    static let request: [(String, String)] = [(":method", "POST"), (":scheme", "https"), (":path", "/3/device/ab"), (":authority", "x")]

    // MARK: Herald client, NIO server

    @Test("client: requests and answers with 40 KB header blocks both ways (Herald's split into CONTINUATION), windows of 100 bytes")
    func clientRequests() throws {
        var pair = try Pair(herald: .client, heraldSettings: Self.largeSettings, nioSettings: [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: 10), HTTP2Setting(parameter: .initialWindowSize, value: 100),
            HTTP2Setting(parameter: .maxHeaderListSize, value: 1 << 20),
        ])
        try pair.heraldWrites { connection, output in
            connection.writeHeaders(streamID: 1, endStream: false, into: &output) { encoder, block in
                encoder.indexed(HPACKBlockEncoder.Static.methodPOST, into: &block)
                encoder.indexed(HPACKBlockEncoder.Static.schemeHTTPS, into: &block)
                encoder.literal(staticNameIndex: HPACKBlockEncoder.Static.path, value: "/3/device/ab", into: &block)
                encoder.indexing(name: ":authority", value: "x", staticNameIndex: HPACKBlockEncoder.Static.authority, into: &block)
                encoder.literal(name: "x-large", value: Self.largeValue, into: &block)
            }
            connection.writeBody(streamID: 1, [UInt8](repeating: 0x61, count: 1000), into: &output)
        }
        pair.expectHealthy()
        let headers = pair.collector.frames.compactMap { frame -> HPACKHeaders? in
            if case .headers(let headers) = frame.payload { headers.headers } else { nil }
        }
        #expect(headers.first?.first(name: "x-large") == Self.largeValue, "NIO read the block over CONTINUATION")
        let body = pair.collector.frames.reduce(0) { total, frame in
            if case .data(let data) = frame.payload { total + data.data.readableBytes } else { total }
        }
        #expect(body == 1000, "the body arrived whole through a 100-byte window")

        try pair.nioWrites(
            HTTP2Frame(streamID: 1, payload: .headers(.init(headers: [":status": "200", "x-large": Self.largeValue], endStream: true)))
        )
        pair.expectHealthy()
        guard case .headers(1, let response, true) = pair.events.last else {
            Issue.record("expected the response, got \(pair.events.count) other events")
            return
        }
        #expect(response.first(name: "x-large") == Self.largeValue, "Herald read NIO's 40 KB block")
    }

    @Test("client: PING both ways, SETTINGS changes both ways, RST_STREAM both ways, then GOAWAY both ways")
    func clientControlFrames() throws {
        var pair = try Pair(herald: .client, nioSettings: [HTTP2Setting(parameter: .maxConcurrentStreams, value: 10)])
        // PING from Herald: NIO answers; from NIO: Herald answers.
        try pair.heraldWrites { _, output in output.writeHTTP2Ping(42, ack: false) }
        #expect(pair.events.contains { if case .pingAck(42) = $0 { true } else { false } })
        try pair.nioWrites(HTTP2Frame(streamID: .rootStream, payload: .ping(HTTP2PingData(withInteger: 7), ack: false)))
        #expect(pair.collector.frames.contains { if case .ping(let data, true) = $0.payload { data.integer == 7 } else { false } })

        // NIO narrows the stream window; Herald's waiting body follows it and NIO's updates.
        try pair.nioWrites(HTTP2Frame(streamID: .rootStream, payload: .settings(.settings([HTTP2Setting(parameter: .initialWindowSize, value: 10)]))))
        #expect(pair.herald.remote.initialWindowSize == 10)
        try pair.heraldWrites { connection, output in
            connection.writeHeaders(streamID: 1, endStream: false, into: &output) { encoder, block in
                for (name, value) in Self.request { encoder.literal(name: name, value: value, into: &block) }
            }
            connection.writeBody(streamID: 1, [UInt8](repeating: 1, count: 95), into: &output)
        }
        pair.expectHealthy()
        #expect(!pair.herald.hasPendingBody(1), "95 bytes went out 10 at a time")

        // Herald changes its own settings: NIO acknowledges, and the change is in force.
        try pair.heraldWrites { connection, output in connection.changeSettings([(.maxConcurrentStreams, 5)], into: &output) }
        #expect(pair.events.contains { if case .settingsAcknowledged = $0 { true } else { false } })
        #expect(pair.herald.localInForce.maxConcurrentStreams == 5)

        // Herald resets stream 1; NIO resets stream 3.
        try pair.heraldWrites { connection, output in connection.resetStream(1, code: .cancel, into: &output) }
        #expect(pair.collector.frames.contains { $0.streamID == 1 && { if case .rstStream(.cancel) = $0.payload { true } else { false } }($0) })
        try pair.heraldWrites { connection, output in
            connection.writeHeaders(streamID: 3, endStream: true, into: &output) { encoder, block in
                for (name, value) in Self.request { encoder.literal(name: name, value: value, into: &block) }
            }
        }
        try pair.nioWrites(HTTP2Frame(streamID: 3, payload: .rstStream(.refusedStream)))
        #expect(pair.events.contains { if case .streamReset(3, .refusedStream, true) = $0 { true } else { false } })

        // GOAWAY from NIO, then from Herald.
        try pair.nioWrites(HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: 3, errorCode: .noError, opaqueData: ByteBuffer(string: "bye"))))
        #expect(pair.events.contains { if case .goAway(3, .noError, _) = $0 { true } else { false } })
        try pair.heraldWrites { connection, output in connection.writeGoAway(code: .noError, into: &output) }
        #expect(pair.collector.frames.contains { if case .goAway(_, .noError, _) = $0.payload { true } else { false } })
        pair.expectHealthy()
    }

    // MARK: NIO client, Herald server

    @Test("server: requests and answers with 40 KB header blocks both ways (Herald's split into CONTINUATION), windows of 100 bytes")
    func serverRequests() throws {
        var pair = try Pair(herald: .server, heraldSettings: Self.largeSettings, nioSettings: [
            HTTP2Setting(parameter: .initialWindowSize, value: 100), HTTP2Setting(parameter: .maxHeaderListSize, value: 1 << 20),
        ])
        var request = HPACKHeaders(Self.request)
        request.add(name: "x-large", value: Self.largeValue)
        try pair.nioWrites(
            HTTP2Frame(streamID: 1, payload: .headers(.init(headers: request, endStream: false))),
            HTTP2Frame(streamID: 1, payload: .data(.init(data: .byteBuffer(ByteBuffer(repeating: 0x61, count: 50)), endStream: true)))
        )
        pair.expectHealthy()
        let heads = pair.events.compactMap { event -> HPACKHeaders? in
            if case .headers(1, let headers, false) = event { headers } else { nil }
        }
        guard let received = heads.first else {
            Issue.record("expected the request, got \(pair.events.count) other events")
            return
        }
        #expect(received.first(name: "x-large") == Self.largeValue, "Herald read NIO's 40 KB block")

        try pair.heraldWrites { connection, output in
            connection.writeHeaders(streamID: 1, endStream: false, into: &output) { encoder, block in
                encoder.indexed(HPACKBlockEncoder.Static.status200, into: &block)
                encoder.literal(name: "x-large", value: Self.largeValue, into: &block)
            }
            connection.writeBody(streamID: 1, [UInt8](repeating: 0x62, count: 1000), into: &output)
        }
        pair.expectHealthy()
        let headers = pair.collector.frames.compactMap { frame -> HPACKHeaders? in
            if case .headers(let headers) = frame.payload { headers.headers } else { nil }
        }
        #expect(headers.first?.first(name: "x-large") == Self.largeValue, "NIO read Herald's block over CONTINUATION")
        let body = pair.collector.frames.reduce(0) { total, frame in
            if case .data(let data) = frame.payload { total + data.data.readableBytes } else { total }
        }
        #expect(body == 1000)
        #expect(pair.herald.openStreamCount == 0)
    }

    @Test("server: PING and SETTINGS changes both ways, a lower stream limit NIO obeys, RST_STREAM and GOAWAY both ways")
    func serverControlFrames() throws {
        var pair = try Pair(herald: .server)
        try pair.nioWrites(HTTP2Frame(streamID: .rootStream, payload: .ping(HTTP2PingData(withInteger: 9), ack: false)))
        #expect(pair.collector.frames.contains { if case .ping(let data, true) = $0.payload { data.integer == 9 } else { false } })
        try pair.heraldWrites { _, output in output.writeHTTP2Ping(5, ack: false) }
        #expect(pair.events.contains { if case .pingAck(5) = $0 { true } else { false } })

        // Herald lowers its stream limit; NIO acknowledges and then refuses itself to go past it.
        try pair.heraldWrites { connection, output in connection.changeSettings([(.maxConcurrentStreams, 1)], into: &output) }
        #expect(pair.herald.localInForce.maxConcurrentStreams == 1)
        try pair.nioWrites(HTTP2Frame(streamID: 1, payload: .headers(.init(headers: HPACKHeaders(Self.request), endStream: false))))
        #expect(pair.herald.peerStreamCount == 1)

        try pair.nioWrites(HTTP2Frame(streamID: .rootStream, payload: .settings(.settings([HTTP2Setting(parameter: .maxFrameSize, value: 20_000)]))))
        #expect(pair.herald.remote.maxFrameSize == 20_000)

        // NIO resets stream 1; Herald resets stream 3.
        try pair.nioWrites(HTTP2Frame(streamID: 1, payload: .rstStream(.cancel)))
        #expect(pair.events.contains { if case .streamReset(1, .cancel, true) = $0 { true } else { false } })
        try pair.nioWrites(HTTP2Frame(streamID: 3, payload: .headers(.init(headers: HPACKHeaders(Self.request), endStream: false))))
        try pair.heraldWrites { connection, output in connection.resetStream(3, code: .refusedStream, into: &output) }
        #expect(pair.collector.frames.contains { $0.streamID == 3 && { if case .rstStream(.refusedStream) = $0.payload { true } else { false } }($0) })

        try pair.heraldWrites { connection, output in connection.writeGoAway(code: .noError, debugData: Array(#"{"reason":"Shutdown"}"#.utf8), into: &output) }
        #expect(pair.collector.frames.contains { if case .goAway(let last, .noError, _) = $0.payload { last == 3 } else { false } })
        try pair.nioWrites(HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: .rootStream, errorCode: .noError, opaqueData: nil)))
        #expect(pair.events.contains { if case .goAway(0, .noError, _) = $0 { true } else { false } })
        pair.expectHealthy()
    }
}
