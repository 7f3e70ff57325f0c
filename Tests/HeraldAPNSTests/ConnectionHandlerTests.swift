@testable import HeraldAPNS
@testable import HeraldTransport
import HeraldCore
@_spi(HeraldFlow) import HeraldFlow
import HeraldHTTP2
import Logging
import NIOCore
import NIOEmbedded
import NIOHPACK
import Synchronization
import Testing

/// The connection handler as the executor of its state machine, on an `EmbeddedChannel`: the
/// bytes it writes are read by a server-side ``HTTP2Connection``, and the server's answers are
/// fed back to it. No sockets, no TLS, no clock but the embedded loop's.
@Suite("Connection handler on EmbeddedChannel")
struct ConnectionHandlerTests {
    final class Harness {
        let loop = EmbeddedEventLoop()
        let channel: EmbeddedChannel
        let pool: ConnectionPool
        let sink: BulkSink<APNSOutcome>
        var server = HTTP2Connection(role: .server, local: { var settings = HTTP2Connection.Settings(); settings.maxConcurrentStreams = 10; return settings }())

        init() throws {
            let recorder = Recorder()
            let metrics = ClientMetrics(.init())
            let rules = APNSRules(issuer: nil, decider: RetryDecider(policy: .none, usesProviderTokens: false), metrics: metrics)
            pool = ConnectionPool(
                configuration: .init(
                    maximumConnections: 1, reconnectInitialBackoff: .milliseconds(100), reconnectMaximumBackoff: .seconds(1),
                    maximumConnectAttempts: 3, requestTimeout: .seconds(60), authority: "test", name: "APNs"
                ),
                rules: rules,
                group: loop, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
            ) { id, _ in recorder.append(id) }
            self.recorder = recorder
            let stateConfiguration = ConnectionStateMachine<any HTTP2Job>.Configuration(
                authority: "test", connectTimeout: .seconds(10), maximumStreams: 100, requestTimeout: .seconds(60), idlePingInterval: .seconds(60), responseOverdueAfter: .seconds(3),
                pingTimeout: .seconds(5), maximumStreamsPerConnection: 1000, maximumAge: nil
            )
            let shared = ConnectionHandler.Shared(
                pool: pool, authority: "test", name: "APNs", rules: rules, metrics: metrics.transport, stateConfiguration: stateConfiguration,
                tickInterval: .seconds(1)
            )
            sink = BulkSink(limiter: InFlightLimiter(limit: 10))
            channel = EmbeddedChannel(handler: ConnectionHandler(id: 0, shared: shared), loop: loop)
        }

        let recorder: Recorder

        final class Recorder: Sendable {
            let ids = Mutex<[Int]>([])
            func append(_ id: Int) { ids.withLock { $0.append(id) } }
        }

        /// Queues one notification with the pool, as `send(contentsOf:)` does.
        func submit(_ notification: PushNotification) {
            sink.submitted(1)
            _ = pool.submit([RequestJob(notification: notification, index: 0, completion: .bulk(sink), logger: Logger(label: "test"))])
        }

        /// What the client wrote, read by the server side.
        func serverReads() throws -> [HTTP2Connection.Event] {
            var events: [HTTP2Connection.Event] = []
            var answers = ByteBuffer()
            while var bytes = try channel.readOutbound(as: ByteBuffer.self) {
                try server.receive(&bytes, events: &events, output: &answers)
            }
            if answers.readableBytes > 0 { try channel.writeInbound(answers) }
            return events
        }
    }

    static func notification() throws -> PushNotification {
        PushNotification(
            token: try DeviceToken(String(repeating: "ab", count: 32)), headers: PushHeaders(topic: "com.example.app"),
            payload: try EncodedPayload(validating: #"{"aps":{"alert":"hi"}}"#)
        )
    }

    @Test("preface on connect; the server's SETTINGS make it ready; it pulls, writes the request, and an answer completes the notification")
    func friendlyPath() async throws {
        let harness = try Harness()
        harness.submit(try Self.notification())
        #expect(harness.recorder.ids.withLock { $0 } == [0], "the pool asked for a connection")
        try await harness.channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).get()
        // The preface and SETTINGS, and no request before the server's SETTINGS.
        let preface = try harness.serverReads()
        #expect(preface.contains { if case .settings = $0 { true } else { false } })
        #expect(!preface.contains { if case .headers = $0 { true } else { false } })
        var settings = ByteBuffer()
        harness.server.start(into: &settings)
        try harness.channel.writeInbound(settings)
        let events = try harness.serverReads().filter {
            switch $0 {
            case .headers, .data: true
            default: false
            }
        }
        guard case .headers(let streamID, let headers, let endStream) = events.first else {
            Issue.record("expected the request's HEADERS, got \(events)")
            return
        }
        #expect(!endStream)
        #expect(headers.first(name: ":path") == "/3/device/" + String(repeating: "ab", count: 32))
        #expect(headers.first(name: "apns-topic") == "com.example.app")
        guard case .data(_, let body, true) = events.last else {
            Issue.record("expected the payload with END_STREAM, got \(events)")
            return
        }
        #expect(String(buffer: body) == #"{"aps":{"alert":"hi"}}"#)

        var answer = ByteBuffer()
        harness.server.writeHeaders(streamID: streamID, endStream: true, into: &answer) { encoder, block in
            encoder.indexed(HPACKBlockEncoder.Static.status200, into: &block)
            encoder.literal(name: "apns-id", value: "11111111-2222-3333-4444-555555555555", into: &block)
        }
        try harness.channel.writeInbound(answer)
        harness.sink.producerFinished()
        let outcomes = try await harness.sink.take()
        #expect(outcomes.count == 1)
        #expect(outcomes.first?.response?.apnsID == "11111111-2222-3333-4444-555555555555")
        _ = try? harness.channel.finish()
    }

    @Test("bytes that break HTTP/2: GOAWAY(PROTOCOL_ERROR), the channel closes, and the queued notification fails as unconnectable")
    func protocolError() async throws {
        let harness = try Harness()
        harness.submit(try Self.notification())
        try await harness.channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).get()
        _ = try harness.serverReads()
        // A DATA frame on stream 0 before any SETTINGS: a connection error (RFC 9113 §6.1).
        try harness.channel.writeInbound(ByteBuffer(bytes: [0, 0, 1, 0x0, 0x0, 0, 0, 0, 0, 0x41]))
        var goAway: ByteBuffer?
        while let bytes = try harness.channel.readOutbound(as: ByteBuffer.self) { goAway = bytes }
        // GOAWAY is frame type 7, with error code PROTOCOL_ERROR (1) after the last stream ID.
        let frame = try #require(goAway)
        #expect(frame.getInteger(at: frame.readerIndex + 3, as: UInt8.self) == 7)
        #expect(frame.getInteger(at: frame.readerIndex + 13, as: UInt32.self) == 1)
        #expect(!harness.channel.isActive)
        harness.sink.producerFinished()
        // Not ready, so the pool heard a failed attempt; with a request queued it backs off and tries again.
        #expect(harness.recorder.ids.withLock { $0 } == [0])
        harness.loop.advanceTime(by: .milliseconds(100))
        #expect(harness.recorder.ids.withLock { $0 } == [0, 1], "a new connection after the back-off")
    }
}
