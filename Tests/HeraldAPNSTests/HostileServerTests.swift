import Foundation
import HeraldAPNS
import HeraldCore
import HeraldHTTP2
import HeraldHostilePeers
import InMemoryLogging
import Logging
import NIOCore
import NIOHPACK
import Testing

/// The client against a server that breaks the rules on purpose, over real TLS: whatever it sends,
/// every notification ends with one outcome within its deadline, the connection ends with the code
/// RFC 9113 §10.5 suggests, and nothing it says reaches a log or a terminal unescaped.
@Suite("Client against a hostile server", .timeLimit(.minutes(6)))
struct HostileServerTests {
    static func configuration(_ server: HostileHTTP2Server, _ configure: (inout APNSClient.Configuration) -> Void = { _ in }) -> APNSClient.Configuration {
        var configuration = APNSClient.Configuration(environment: .custom(host: "127.0.0.1", port: server.port), credentials: .providerToken(.generate()))
        configuration.trustRoots = .only(server.trustRoots)
        configuration.retry = .none
        configure(&configuration)
        return configuration
    }

    @Test("SETTINGS_MAX_CONCURRENT_STREAMS 0: each notification fails as timed out within its deadline, never sent")
    func noStreamsAllowed() async throws {
        let server = try HostileHTTP2Server { event, writer in
            if case .connected = event { writer.bytes.writeHTTP2Settings([(.maxConcurrentStreams, 0)]) }
        }
        try await server.start()
        let notifications = try batch(20)
        // That the send ends at all is the point; the suite's time limit catches a hang.
        let outcomes = try await withAPNSClient(configuration: Self.configuration(server) {
            // Long enough for the connection to be up even under load: the wait that times out is
            // the one for a stream.
            $0.timeouts.request = .seconds(3)
            $0.retry = .default
        }) { client in
            try await sendAll(notifications, with: client)
        }
        for outcome in outcomes {
            #expect(outcome.failure?.code == .timedOut, "\(outcome.result)")
            #expect(outcome.failure?.message.contains("allowed no more concurrent streams") == true, "\(outcome.result)")
            #expect(outcome.attempts == 0)
        }
        try await server.stop()
    }

    @Test("a PING flood ends the connection with GOAWAY ENHANCE_YOUR_CALM; the notification still gets its outcome")
    func pingFlood() async throws {
        let server = try HostileHTTP2Server { event, writer in
            guard case .connected = event else { return }
            writer.bytes.writeHTTP2Settings([(.maxConcurrentStreams, 100)])
            for index in 0..<5000 { writer.bytes.writeHTTP2Ping(UInt64(index), ack: false) }
        }
        try await server.start()
        let outcomes = try await withAPNSClient(configuration: Self.configuration(server) { $0.pool.maximumConnectAttempts = 2 }) { client in
            try await sendAll(try batch(3), with: client)
        }
        #expect(outcomes.allSatisfy { $0.failure != nil })
        #expect(server.receivedGoAwayCodes.contains(.enhanceYourCalm), "\(server.receivedGoAwayCodes)")
        try await server.stop()
    }

    @Test("a server that completes TLS but never sends SETTINGS: setup fails after timeouts.connect, naming the server and the limit")
    func setupNeverCompletes() async throws {
        let server = try HostileHTTP2Server { _, _ in }  // TLS, then silence
        try await server.start()
        let outcomes = try await withAPNSClient(configuration: Self.configuration(server) {
            $0.timeouts.connect = .seconds(1)
            $0.pool.maximumConnectAttempts = 1
        }) { client in
            try await sendAll(try batch(2), with: client)
        }
        for outcome in outcomes {
            #expect(outcome.failure?.code == .connectionFailed, "\(outcome.result)")
            #expect(
                outcome.failure?.message == "127.0.0.1:\(server.port) did not complete TLS and HTTP/2 setup within \(TimeAmount.seconds(1))",
                "\(outcome.result)"
            )
        }
        try await server.stop()
    }

    @Test("a CONTINUATION flood (empty frames, a block never ended) ends the connection with ENHANCE_YOUR_CALM")
    func continuationFlood() async throws {
        let server = try HostileHTTP2Server { event, writer in
            switch event {
            case .connected:
                writer.bytes.writeHTTP2Settings([(.maxConcurrentStreams, 100)])
            case .request(let request):
                writer.bytes.writeHTTP2FrameHeader(length: 1, type: .headers, flags: 0, streamID: request.streamID)
                writer.bytes.writeInteger(UInt8(0x88))  // :status 200, and no END_HEADERS
                for _ in 0..<10_000 { writer.bytes.writeHTTP2FrameHeader(length: 0, type: .continuation, flags: 0, streamID: request.streamID) }
            case .frame:
                break
            }
        }
        try await server.start()
        let outcomes = try await withAPNSClient(configuration: Self.configuration(server) { $0.pool.maximumConnectAttempts = 1 }) { client in
            try await sendAll(try batch(1), with: client)
        }
        #expect(outcomes.first?.failure != nil)
        #expect(server.receivedGoAwayCodes.contains(.enhanceYourCalm), "\(server.receivedGoAwayCodes)")
        try await server.stop()
    }

    @Test("a 1xx response is not the answer: the final one that follows is")
    func informational() async throws {
        let server = try HostileHTTP2Server.answering { request, writer in
            writer.headers([(":status", "100")], streamID: request.streamID, endStream: false)
            writer.headers([(":status", "200"), ("apns-id", "11111111-2222-4333-8444-555555555555")], streamID: request.streamID, endStream: true)
        }
        try await server.start()
        let response = try await withAPNSClient(configuration: Self.configuration(server)) { client in
            try await client.send(try notification(to: token(1)))
        }
        #expect(response.apnsID == "11111111-2222-4333-8444-555555555555")
        try await server.stop()
    }

    @Test("a 410 whose timestamp is 1e300, NaN or negative: rejected as Unregistered, the timestamp dropped, said so")
    func outOfRangeTimestamps() async throws {
        let bodies = [
            #"{"reason":"Unregistered","timestamp":1e300}"#, #"{"reason":"Unregistered","timestamp":"NaN"}"#,
            #"{"reason":"Unregistered","timestamp":-5}"#, #"{"reason":"Unregistered","timestamp":1700000000000}"#,
        ]
        let server = try HostileHTTP2Server.answering { request, writer in
            let index = Int(request.headers.first(name: ":path")!.suffix(1))!
            writer.rejection(bodies[index], status: 410, streamID: request.streamID)
        }
        try await server.start()
        let outcomes = try await withAPNSClient(configuration: Self.configuration(server)) { client in
            try await sendAll(try (0..<4).map { try notification(to: token($0)) }, with: client)
        }
        for outcome in outcomes {
            #expect(outcome.rejection?.reason == .unregistered)
            if outcome.index == 3 {
                #expect(outcome.rejection?.timestampMilliseconds == 1_700_000_000_000)
            } else {
                #expect(outcome.rejection?.timestamp == nil, "\(bodies[outcome.index])")
                #expect(outcome.rejection?.detail?.contains("ignored") == true)
            }
        }
        try await server.stop()
    }

    @Test("a reason or apns-id with escape sequences reaches the caller escaped: nothing a terminal would act on")
    func escapeSequences() async throws {
        let forged = "\u{1B}[2K\r\u{1B}[32m0000 accepted\u{1B}[0m\u{7}"
        let server = try HostileHTTP2Server.answering { request, writer in
            let json = #"{"reason":"\#(forged.unicodeScalars.map { $0.value < 0x20 ? String(format: "\\u%04x", $0.value) : String($0) }.joined())"}"#
            writer.rejection(json, status: 400, streamID: request.streamID, apnsID: "id\u{1B}]0;owned\u{7}")
        }
        try await server.start()
        let error = await #expect(throws: APNSError.self) {
            try await withAPNSClient(configuration: Self.configuration(server)) { client in
                try await client.send(try notification(to: token(1)))
            }
        }
        let reason = error?.reason.rawValue ?? ""
        #expect(reason.contains("accepted"), "the words are kept: \(reason)")
        #expect(!reason.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "\(reason.debugDescription)")
        #expect(!(error?.apnsID ?? "").unicodeScalars.contains { $0.value < 0x20 }, "\(String(describing: error?.apnsID))")
        #expect(!(error?.description ?? "").unicodeScalars.contains { $0.value < 0x20 })
        try await server.stop()
    }

    @Test("GOAWAY debug data with escape sequences is logged escaped")
    func goAwayDebugData() async throws {
        let server = try HostileHTTP2Server.answering { request, writer in
            writer.bytes.writeHTTP2GoAway(lastStreamID: 0, code: .noError, debugData: Array("{\"reason\":\"\u{1B}[2JShutdown\"}".utf8))
        }
        try await server.start()
        let logs = InMemoryLogHandler()
        var logger = Logger(label: "test", factory: { _ in logs })
        logger.logLevel = .trace
        _ = try? await withAPNSClient(configuration: Self.configuration(server) { $0.pool.maximumConnectAttempts = 1 }, logger: logger) { client in
            try await client.send(try notification(to: token(1)))
        }
        let goAway = logs.entries.first { $0.message.description == "APNs sent GOAWAY" }
        let reason = goAway?.metadata["reason"]?.description ?? ""
        #expect(reason.contains("Shutdown"), "\(logs.entries.map(\.message))")
        #expect(!reason.unicodeScalars.contains { $0.value < 0x20 }, "\(reason.debugDescription)")
        try await server.stop()
    }

    @Test("a response head without :status is a broken stream: reset, and the notification fails saying so")
    func malformedResponse() async throws {
        let server = try HostileHTTP2Server.answering { request, writer in
            writer.headers([("apns-id", "x")], streamID: request.streamID, endStream: true)
        }
        try await server.start()
        let error = await #expect(throws: APNSClientError.self) {
            try await withAPNSClient(configuration: Self.configuration(server)) { client in
                try await client.send(try notification(to: token(1)))
            }
        }
        #expect(error?.code == .connectionLost)
        #expect(error?.message.contains("broke HTTP/2 on the stream") == true, "\(String(describing: error))")
        try await server.stop()
    }
}
