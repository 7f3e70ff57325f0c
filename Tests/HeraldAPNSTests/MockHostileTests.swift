import Foundation
import HeraldAPNS
import HeraldCore
import HeraldHTTP2
import HeraldHostilePeers
import HeraldAPNSMock
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// Attacks on the mock over real TLS, written byte by byte: it never crashes, holds no more than
/// its ``MockAPNSServer/Limits`` say, ends abusive connections with the right code, and keeps
/// answering other clients throughout.
@Suite("Mock against hostile clients", .timeLimit(.minutes(6)))
struct MockHostileTests {
    static let request = [(":method", "POST"), (":scheme", "https"), (":path", "/3/device/" + token(1)), (":authority", "127.0.0.1"), ("apns-topic", MockFixture.topic)]
    static let body = Array(#"{"aps":{"alert":"hi"}}"#.utf8)

    /// A provider token with any `iat`: without registered keys the mock takes any well-formed one.
    static func jwt(issuedAt: String) -> String {
        let header = Base64URL.encode(Array(#"{"alg":"ES256","kid":"ABC123DEFG"}"#.utf8))
        let claims = Base64URL.encode(Array(#"{"iss":"DEF123GHIJ","iat":\#(issuedAt)}"#.utf8))
        return header + "." + claims + "." + Base64URL.encode([UInt8](repeating: 1, count: 64))
    }

    /// Checks that the mock still serves a well-behaved client.
    static func expectServing(_ server: MockAPNSServer, key: ProviderKey? = nil, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        var configuration = APNSClient.Configuration(environment: server.environment, credentials: .providerToken(key ?? .generate()))
        configuration.trustRoots = .only(server.trustRoots)
        let response = try await withAPNSClient(configuration: configuration) { client in
            try await client.send(try notification(to: token(7)))
        }
        #expect(!response.apnsID.isEmpty, sourceLocation: sourceLocation)
    }

    @Test("a provider token whose iat is Int.min after a normal one is refused, not a crash")
    func issuedAtOverflow() async throws {
        let server = try MockAPNSServer(configuration: .init())
        try await server.start()
        let client = try await NIOHTTP2TestClient.connect(to: server)
        let now = Int(Date().timeIntervalSince1970)
        let first = try await client.request(Self.request + [("authorization", "bearer " + Self.jwt(issuedAt: "\(now)"))], body: Self.body)
        #expect(first.status == 200)
        let minimum = try await client.request(Self.request + [("authorization", "bearer " + Self.jwt(issuedAt: "\(Int.min)"))], body: Self.body)
        #expect(minimum.reason == "TooManyProviderTokenUpdates")
        try await client.close()

        // A gap too large for Int is more than 20 minutes: Int.min, then Int.max, is a new token.
        let second = try await NIOHTTP2TestClient.connect(to: server)
        _ = try await second.request(Self.request + [("authorization", "bearer " + Self.jwt(issuedAt: "\(Int.min)"))], body: Self.body)
        let maximum = try await second.request(Self.request + [("authorization", "bearer " + Self.jwt(issuedAt: "\(Int.max)"))], body: Self.body)
        #expect(maximum.reason != "TooManyProviderTokenUpdates")
        try await second.close()
        try await Self.expectServing(server)
        try await server.shutdown()
    }

    @Test("connections past maximumConnections are closed at once; others are served")
    func connectionLimit() async throws {
        var configuration = MockAPNSServer.Configuration()
        configuration.limits.maximumConnections = 2
        let server = try MockAPNSServer(configuration: configuration)
        try await server.start()
        var held: [RawTLSClient] = []
        for _ in 0..<2 {
            let client = try await RawTLSClient.connect(port: server.port, trustRoots: server.trustRoots)
            client.sendPreface()
            held.append(client)
        }
        #expect(await held[1].wait { $0.frames.contains { $0.type == HTTP2FrameType.settings.rawValue } })
        let third = try? await RawTLSClient.connect(port: server.port, trustRoots: server.trustRoots)
        if let third { #expect(await third.wait { $0.isClosed }) }
        #expect(server.openConnectionCount == 2)
        await held[0].close()
        #expect(await held[1].wait { _ in server.openConnectionCount == 1 })
        try await Self.expectServing(server)
        for client in held { await client.close() }
        try await server.shutdown()
    }

    @Test("a client that never completes the preface is closed after handshakeTimeout; one idle too long gets GOAWAY")
    func handshakeAndIdleTimeouts() async throws {
        var quick = MockAPNSServer.Configuration()
        quick.limits.handshakeTimeout = .seconds(2)
        let handshaking = try MockAPNSServer(configuration: quick)
        try await handshaking.start()
        let silent = try await RawTLSClient.connect(port: handshaking.port, trustRoots: handshaking.trustRoots)
        #expect(await silent.wait { $0.isClosed })
        #expect(silent.goAwayCode == nil, "closed before HTTP/2 began: no GOAWAY")
        try await handshaking.shutdown()

        // A server of its own: under load a handshake may take longer than this idle timeout.
        var idling = MockAPNSServer.Configuration()
        idling.limits.idleTimeout = .seconds(2)
        let server = try MockAPNSServer(configuration: idling)
        try await server.start()
        let idle = try await RawTLSClient.connect(port: server.port, trustRoots: server.trustRoots)
        idle.sendPreface()
        #expect(await idle.wait { $0.isClosed })
        #expect(idle.goAwayCode == .noError)
        #expect(await idle.wait { _ in server.openConnectionCount == 0 })
        try await server.shutdown()
    }

    @Test("a request that never finishes arriving is reset after requestTimeout, its memory given back")
    func requestTimeout() async throws {
        var configuration = MockAPNSServer.Configuration()
        // Long enough that the check below sees the bytes held before the reset, on a loaded CPU too.
        configuration.limits.requestTimeout = .seconds(3)
        let server = try MockAPNSServer(configuration: configuration)
        try await server.start()
        let client = try await RawTLSClient.connect(port: server.port, trustRoots: server.trustRoots)
        client.sendPreface()
        var headers = client.request(stream: 1, fields: Self.request, body: nil)
        headers.setInteger(UInt8(HTTP2Flag.endHeaders), at: 4)  // no END_STREAM: the body never comes
        client.send(headers)
        client.send { $0.writeHTTP2Data(streamID: 1, bytes: [UInt8](repeating: 0x20, count: 100), endStream: false) }
        #expect(await client.wait { _ in server.bufferedRequestBytes > 0 })
        #expect(await client.wait { $0.frames.contains { $0.type == HTTP2FrameType.rstStream.rawValue && $0.streamID == 1 } })
        #expect(server.bufferedRequestBytes == 0)
        #expect(!client.isClosed)
        await client.close()
        try await server.shutdown()
    }

    @Test("a client that sends requests and never reads the answers: the mock stops reading, holding at most its bound")
    func neverReads() async throws {
        var configuration = MockAPNSServer.Configuration()
        configuration.limits.maximumQueuedResponseBytes = 64 << 10
        // Not the stream limit's test: a client that opens more streams at once than it allows
        // is cut off with ENHANCE_YOUR_CALM sooner (see the stream-error tests).
        configuration.maximumConcurrentStreams = 1_000_000
        // Small socket buffers on both sides, so a client that does not read fills them at once.
        configuration.socketSendBufferSize = 4096
        let server = try MockAPNSServer(configuration: configuration)
        try await server.start()
        // Channel lists make each small request earn a 13 KB answer.
        var setup = APNSClient.Configuration(environment: server.environment, credentials: .providerToken(.generate()))
        setup.trustRoots = .only(server.trustRoots)
        try await withAPNSClient(configuration: setup) { client in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<500 { group.addTask { _ = try await client.createChannel(bundleID: "com.example.big", storagePolicy: .noStorage) } }
                try await group.waitForAll()
            }
        }
        try await server.openConnections(atMost: 0)
        let baseline = server.requestCount
        let attacker = try await RawTLSClient.connect(port: server.port, trustRoots: server.trustRoots, reading: false, receiveBuffer: 4096)
        attacker.sendPreface()
        let list = [(":method", "GET"), (":scheme", "https"), (":path", "/1/apps/com.example.big/all-channels"), (":authority", "x"), ("authorization", "bearer " + Self.jwt(issuedAt: "\(Int(Date().timeIntervalSince1970))"))]
        let sent = 10_000
        for index in 0..<sent {
            attacker.send(attacker.request(stream: UInt32(2 * index + 1), fields: list, body: nil))
        }
        // The mock stops reading: what it takes stops growing (unchanged over half a second of
        // polls) with requests still unread, and what it holds for the client stays small.
        var seen = -1
        var steady = 0
        #expect(await attacker.wait { _ in
            let count = server.requestCount
            steady = count == seen ? steady + 1 : 0
            seen = count
            return steady >= 50 && server.peakQueuedResponseBytes > 0
        }, "open \(server.openConnectionCount), read \(server.requestCount), refused \(server.refusedStreamCount), peak queued \(server.peakQueuedResponseBytes)")
        #expect(server.requestCount - baseline < sent, "the mock stopped reading after \(server.requestCount - baseline) of \(sent) requests; refused \(server.refusedStreamCount), peak \(server.peakQueuedResponseBytes)")
        #expect(server.openConnectionCount == 1, "and holds the connection open meanwhile")
        // The bound, plus the answers of the read that crossed it (a list, or RST_STREAMs).
        #expect(server.peakQueuedResponseBytes <= 2 * configuration.limits.maximumQueuedResponseBytes + 60_000, "\(server.peakQueuedResponseBytes)")
        #expect(server.bufferedRequestBytes == 0)
        try await Self.expectServing(server)
        await attacker.close()
        try await server.shutdown()
    }

    @Test("rapid reset over the wire (CVE-2023-44487): GOAWAY ENHANCE_YOUR_CALM, and other clients are served")
    func rapidReset() async throws {
        let server = try MockAPNSServer(configuration: .init())
        try await server.start()
        let attacker = try await RawTLSClient.connect(port: server.port, trustRoots: server.trustRoots)
        attacker.sendPreface()
        var bytes = ByteBuffer()
        for index in 0..<1000 {
            let stream = UInt32(2 * index + 1)
            var headers = attacker.request(stream: stream, fields: Self.request, body: nil)
            headers.setInteger(UInt8(HTTP2Flag.endHeaders), at: 4)
            bytes.writeBuffer(&headers)
            bytes.writeHTTP2RstStream(streamID: stream, code: .cancel)
        }
        attacker.send(bytes)
        #expect(await attacker.wait { $0.isClosed })
        #expect(attacker.goAwayCode == .enhanceYourCalm)
        #expect(server.bufferedRequestBytes == 0)
        try await Self.expectServing(server)
        try await server.shutdown()
    }

    @Test("protocol violations over the wire end the connection with GOAWAY and the right code")
    func violationsOverTheWire() async throws {
        let server = try MockAPNSServer(configuration: .init())
        try await server.start()
        let cases: [(String, HTTP2ErrorCode, (inout ByteBuffer) -> Void)] = [
            ("DATA on an idle stream", .protocolError, { $0.writeHTTP2Data(streamID: 5, bytes: [1], endStream: true) }),
            ("WINDOW_UPDATE past 2^31-1", .flowControlError, {
                $0.writeHTTP2WindowUpdate(streamID: 0, increment: http2MaximumWindow)
                $0.writeHTTP2WindowUpdate(streamID: 0, increment: http2MaximumWindow)
            }),
            ("a frame over SETTINGS_MAX_FRAME_SIZE", .frameSizeError, { $0.writeHTTP2FrameHeader(length: 20_000, type: .data, flags: 0, streamID: 1) }),
        ]
        for (name, code, frames) in cases {
            let client = try await RawTLSClient.connect(port: server.port, trustRoots: server.trustRoots)
            client.sendPreface()
            client.send(frames)
            #expect(await client.wait { $0.isClosed }, "\(name)")
            #expect(client.goAwayCode == code, "\(name)")
        }
        try await Self.expectServing(server)
        try await server.shutdown()
    }

    @Test("provider tokens and channels are remembered up to their bounds")
    func rememberedState() async throws {
        var configuration = MockAPNSServer.Configuration()
        configuration.limits.maximumRememberedProviderTokens = 5
        configuration.limits.maximumChannels = 3
        let server = try MockAPNSServer(configuration: configuration)
        try await server.start()
        let now = Int(Date().timeIntervalSince1970)
        for index in 0..<12 {
            // A connection each: a token may not change on one connection within 20 minutes.
            let client = try await NIOHTTP2TestClient.connect(to: server)
            _ = try await client.request(Self.request + [("authorization", "bearer " + Self.jwt(issuedAt: "\(now - index)"))], body: Self.body)
            try await client.close()
        }
        #expect(server.providerTokenCount == 12)
        #expect(server.rememberedProviderTokenCount == 5)
        var setup = APNSClient.Configuration(environment: server.environment, credentials: .providerToken(.generate()))
        setup.trustRoots = .only(server.trustRoots)
        try await withAPNSClient(configuration: setup) { client in
            for _ in 0..<3 { _ = try await client.createChannel(bundleID: "com.example.app\(UUID().uuidString)", storagePolicy: .noStorage) }
            let error = await #expect(throws: APNSError.self) {
                _ = try await client.createChannel(bundleID: "com.example.another", storagePolicy: .noStorage)
            }
            #expect(error?.reason == .cannotCreateChannelConfig)
        }
        try await server.shutdown()
    }
}
