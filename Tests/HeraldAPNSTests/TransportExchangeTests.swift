import HeraldHostilePeers
import HeraldAPNSMock
import HeraldHTTP2
@testable import HeraldTransport
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization
import Testing

/// The transport's HTTP/2 client as Web Push and FCM use it (``HTTP2ExchangeClient``), with no
/// platform's rules: against a server written frame by frame, every answer is the caller's
/// whatever its status, and what a server sends is kept within the transport's named bounds.
@Suite("Transport: the HTTP/2 client that belongs to no platform", .timeLimit(.minutes(2)))
struct TransportExchangeTests {
    static func client(port: Int, trusting roots: [NIOSSLCertificate]) throws -> HTTP2ExchangeClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(roots)
        var configuration = HTTP2Client.Configuration(host: "127.0.0.1", port: port, platform: "test", tls: tls)
        configuration.maximumConnectAttempts = 1
        configuration.requestTimeout = .seconds(5)
        return try HTTP2ExchangeClient(
            configuration: configuration, maximumInFlight: 10, eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        )
    }

    static func request(_ path: String = "/push/1") -> HTTP2Request {
        HTTP2Request(method: "POST", path: path, headers: [("ttl", "60")], body: Array("hello".utf8))
    }

    @Test("any status is the caller's, with its location and retry-after; nothing is retried but what was never processed")
    func everyStatusPasses() async throws {
        let requests = Mutex(0)
        let server = try HostileHTTP2Server.answering { request, writer in
            let seen = requests.withLock { $0 += 1; return $0 }
            // The first stream is refused unprocessed: sent again, and not counted as an attempt.
            if seen == 1 {
                writer.bytes.writeHTTP2RstStream(streamID: request.streamID, code: .refusedStream)
                return
            }
            let status = request.headers.first(name: ":path") == "/gone" ? "410" : "429"
            writer.headers([(":status", status), ("location", "https://push.example/m/1"), ("retry-after", "7")], streamID: request.streamID, endStream: true)
        }
        let port = try await server.start()
        let client = try Self.client(port: port, trusting: server.trustRoots)
        let answers = await client.exchange([Self.request(), Self.request("/gone")])
        await client.shutdown()
        try await server.stop()
        let first = try answers[0].get()
        let second = try answers[1].get()
        #expect(first.status == 429 && first.retryAfter == "7" && first.location == "https://push.example/m/1")
        #expect(second.status == 410)
        #expect(requests.withLock { $0 } == 3, "the refused stream once more, nothing else")
    }

    @Test("an answer's fields past 16 are dropped, its body is cut at 16 KiB, and its text is escaped")
    func answersAreBounded() async throws {
        let server = try HostileHTTP2Server.answering { request, writer in
            var fields = [(":status", "201"), ("location", "https://push.example/\u{1B}[2J")]
            if request.headers.first(name: ":path") == "/many" {
                // The location comes after the bound: not kept.
                fields = [(":status", "201")] + (0..<40).map { ("x-field-\($0)", "v") } + [("location", "https://push.example/late")]
            }
            writer.headers(fields, streamID: request.streamID, endStream: false)
            for part in 0..<3 { writer.data(Array(repeating: UInt8(ascii: "a"), count: 15_000), streamID: request.streamID, endStream: part == 2) }
        }
        let port = try await server.start()
        let client = try Self.client(port: port, trusting: server.trustRoots)
        let answers = await client.exchange([Self.request(), Self.request("/many")])
        await client.shutdown()
        try await server.stop()
        let escaped = try answers[0].get()
        #expect(escaped.status == 201)
        #expect(escaped.body.count == HTTP2Answer.maximumBody, "45,000 bytes sent, \(HTTP2Answer.maximumBody) kept")
        #expect(escaped.location.map { !$0.unicodeScalars.contains { $0.value < 0x20 } } == true, "\(String(describing: escaped.location))")
        let many = try answers[1].get()
        #expect(many.status == 201 && many.location == nil, "only the first \(HTTP2Answer.maximumFields) fields are kept")
    }

    @Test("a TLS server that does not agree to h2 fails each request with the typed http2NotOffered, for a fallback to HTTP/1.1")
    func noHTTP2() async throws {
        let server = try await HTTP1OnlyTLSServer.start()
        let client = try Self.client(port: server.port, trusting: [try server.authority.tlsCertificate])
        let answers = await client.exchange([Self.request(), Self.request()])
        await client.shutdown()
        try await server.channel.close()
        for answer in answers {
            guard case .failure(let error) = answer else {
                Issue.record("expected a failure, got \(answer)")
                continue
            }
            #expect(error.code == .http2NotOffered, "\(error)")
        }
    }
}
