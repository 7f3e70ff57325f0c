import AsyncHTTPClient
import HeraldHTTP2
import HeraldHostilePeers
import HeraldAPNSMock
import HeraldMockHTTP
import Logging
import NIOCore
import NIOSSL
import Synchronization
import Testing

/// The mocks' own HTTP/2 server (``MockHTTPSHost`` with ``MockHTTP2Handler``), behind the Web
/// Push and FCM mocks: friendly clients over h2 and HTTP/1.1 get the same handler's answers, and
/// hostile ones, written byte by byte, meet its bounds while others are served.
@Suite("Mock HTTP/2 server", .timeLimit(.minutes(3)))
struct MockHTTP2ServerTests {
    /// Echoes `POST /echo` (body bounded at ``maximumBody``), answers `POST /big` with
    /// ``bigBody`` bytes, holds `POST /slow` for a few seconds, and 404s the rest.
    final class Echo: MockHTTPHandler {
        static let maximumBody = 64
        static let bigBody = 16 << 10
        let answered = Atomic(0)

        func maximumBodyCount(method: String, path: String) -> Int { Self.maximumBody }

        func respond(to request: MockHTTPRequest) -> MockHTTPReply {
            answered.add(1, ordering: .relaxed)
            let version = ("x-http-version", String(request.httpVersion))
            switch (request.method, request.path) {
            case ("POST", "/echo"):
                guard case .bytes(let body) = request.body else { return .now(MockHTTPResponse(status: 413, headers: [version])) }
                return .now(MockHTTPResponse(status: 200, headers: [("content-type", "text/plain"), version], body: Array(body.readableBytesView)))
            case ("POST", "/big"):
                return .now(MockHTTPResponse(status: 200, body: [UInt8](repeating: 0x61, count: Self.bigBody)))
            case ("POST", "/slow"):
                return .after(.seconds(5)) { MockHTTPResponse(status: 204) }
            default:
                return .now(MockHTTPResponse(status: 404))
            }
        }
    }

    static func start(_ handler: Echo, limits: MockHTTP2Limits = MockHTTP2Limits()) async throws -> MockHTTPSHost {
        try await MockHTTPSHost.start(
            handler: handler, host: "127.0.0.1", port: 0, offersHTTP2: true, maximumConnections: 16, issuer: nil, authorityName: "Herald Test CA",
            http2Limits: limits, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    static func request(_ path: String, contentLength: Int? = nil) -> [(String, String)] {
        [(":method", "POST"), (":scheme", "https"), (":path", path), (":authority", "127.0.0.1")] + (contentLength.map { [("content-length", String($0))] } ?? [])
    }

    /// Sends `body` to `/echo` with a real client (async-http-client) over `version`.
    static func echo(_ host: MockHTTPSHost, _ body: String, version: HTTPClient.Configuration.HTTPVersion) async throws -> (Int, String?, String) {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([host.certificate])
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = version
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        do {
            var request = HTTPClientRequest(url: "https://127.0.0.1:\(host.port)/echo?ignored=1")
            request.method = .POST
            request.body = .bytes(ByteBuffer(string: body))
            let response = try await client.execute(request, timeout: .seconds(30))
            let answer = try await response.body.collect(upTo: 1 << 16)
            try await client.shutdown()
            return (Int(response.status.code), response.headers.first(name: "x-http-version"), String(buffer: answer))
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    /// RST_STREAM frames received, by stream.
    static func resets(_ client: RawTLSClient) -> [UInt32: HTTP2ErrorCode] {
        var resets: [UInt32: HTTP2ErrorCode] = [:]
        for frame in client.frames where frame.type == HTTP2FrameType.rstStream.rawValue {
            var payload = frame.payload
            resets[frame.streamID] = HTTP2ErrorCode(payload.readInteger(as: UInt32.self)!)
        }
        return resets
    }

    @Test("a request over h2 and one over HTTP/1.1 on the same port get the same handler's answer")
    func friendly() async throws {
        let handler = Echo()
        let host = try await Self.start(handler)
        let overHTTP2 = try await Self.echo(host, "hello", version: .automatic)
        #expect(overHTTP2 == (200, "2", "hello"))
        let overHTTP1 = try await Self.echo(host, "hello", version: .http1Only)
        #expect(overHTTP1 == (200, "1", "hello"))
        try await host.shutdown()
    }

    @Test("streams past the limit are refused with REFUSED_STREAM; the others are answered")
    func tooManyStreams() async throws {
        var limits = MockHTTP2Limits()
        limits.maximumConcurrentStreams = 2
        let host = try await Self.start(Echo(), limits: limits)
        let attacker = try await RawTLSClient.connect(port: host.port, trustRoots: [host.certificate])
        attacker.sendPreface()
        for stream in [1, 3, 5, 7] as [UInt32] { attacker.send(attacker.request(stream: stream, fields: Self.request("/slow"), body: nil)) }
        #expect(await attacker.wait { Self.resets($0)[5] == .refusedStream && Self.resets($0)[7] == .refusedStream })
        // The two within the limit are answered once their delay ends.
        #expect(await attacker.wait { $0.frames.filter { $0.type == HTTP2FrameType.headers.rawValue }.map(\.streamID).sorted() == [1, 3] })
        #expect(Self.resets(attacker)[1] == nil && !attacker.isClosed)
        let served = try await Self.echo(host, "still", version: .automatic)
        #expect(served == (200, "2", "still"))
        await attacker.close()
        try await host.shutdown()
    }

    @Test("a body past the route's bound is answered at once and its stream reset with NO_ERROR, declared or not")
    func bodyPastTheBound() async throws {
        let handler = Echo()
        let host = try await Self.start(handler)
        let attacker = try await RawTLSClient.connect(port: host.port, trustRoots: [host.certificate])
        attacker.sendPreface()
        var bytes = attacker.request(stream: 1, fields: Self.request("/echo"), body: nil)
        bytes.setInteger(UInt8(HTTP2Flag.endHeaders), at: 4)  // the body follows, and never ends
        bytes.writeHTTP2Data(streamID: 1, bytes: [UInt8](repeating: 1, count: Echo.maximumBody + 1), endStream: false)
        attacker.send(bytes)
        var declared = attacker.request(stream: 3, fields: Self.request("/echo", contentLength: 1 << 30), body: nil)
        declared.setInteger(UInt8(HTTP2Flag.endHeaders), at: 4)
        attacker.send(declared)
        #expect(await attacker.wait { Self.resets($0)[1] == .noError && Self.resets($0)[3] == .noError })
        #expect(attacker.frames.filter { $0.type == HTTP2FrameType.headers.rawValue }.map(\.streamID).sorted() == [1, 3], "both answered (413)")
        let answered = handler.answered.load(ordering: .relaxed)
        #expect(answered == 2)
        await attacker.close()
        try await host.shutdown()
    }

    @Test("bodies held over a connection past its budget: the stream is refused")
    func bodyBudget() async throws {
        var limits = MockHTTP2Limits()
        limits.maximumBufferedBodyBytes = Echo.maximumBody
        let host = try await Self.start(Echo(), limits: limits)
        let attacker = try await RawTLSClient.connect(port: host.port, trustRoots: [host.certificate])
        attacker.sendPreface()
        var bytes = ByteBuffer()
        for stream in [1, 3] as [UInt32] {
            var headers = attacker.request(stream: stream, fields: Self.request("/echo"), body: nil)
            headers.setInteger(UInt8(HTTP2Flag.endHeaders), at: 4)
            bytes.writeBuffer(&headers)
            bytes.writeHTTP2Data(streamID: stream, bytes: [UInt8](repeating: 1, count: Echo.maximumBody / 2 + 1), endStream: false)
        }
        attacker.send(bytes)
        #expect(await attacker.wait { Self.resets($0)[3] == .refusedStream })
        #expect(Self.resets(attacker)[1] == nil && !attacker.isClosed)
        await attacker.close()
        try await host.shutdown()
    }

    @Test("a client that sends requests and never reads the answers: the mock stops reading, and serves others")
    func neverReads() async throws {
        var limits = MockHTTP2Limits()
        limits.maximumQueuedResponseBytes = 64 << 10
        // Not the stream limit's test: answers are not held by flow control here.
        limits.maximumConcurrentStreams = 1_000_000
        // Small socket buffers on both sides, so a client that does not read fills them at once.
        limits.socketSendBufferSize = 4096
        let handler = Echo()
        let host = try await Self.start(handler, limits: limits)
        let attacker = try await RawTLSClient.connect(port: host.port, trustRoots: [host.certificate], reading: false, receiveBuffer: 4096)
        // All the window the protocol allows, so answers go to the socket rather than wait.
        attacker.send { buffer in
            buffer.writeBytes(http2ClientPreface)
            buffer.writeHTTP2Settings([(.initialWindowSize, (1 << 31) - 1)])
            buffer.writeHTTP2SettingsAck()
            buffer.writeHTTP2WindowUpdate(streamID: 0, increment: (1 << 31) - 1 - 65_535)
        }
        let sent = 10_000
        for index in 0..<sent {
            attacker.send(attacker.request(stream: UInt32(2 * index + 1), fields: Self.request("/big"), body: nil))
        }
        // The mock stops reading: the requests it takes stop growing (unchanged over half a
        // second of polls) with requests still unread.
        let counters = host.http2Counters
        var seen = -1
        var steady = 0
        #expect(await attacker.wait { _ in
            let count = counters.requests.load(ordering: .relaxed)
            steady = count == seen ? steady + 1 : 0
            seen = count
            return steady >= 50
        })
        let read = counters.requests.load(ordering: .relaxed)
        let answered = handler.answered.load(ordering: .relaxed)
        #expect(read < sent, "the mock stopped reading after \(read) of \(sent) requests, answering \(answered)")
        #expect(answered * Echo.bigBody <= 2 * limits.maximumQueuedResponseBytes + 64 << 10, "the bound, and the answers of the read that crossed it: \(answered)")
        #expect(!attacker.isClosed, "and holds the connection open meanwhile")
        let served = try await Self.echo(host, "others", version: .automatic)
        #expect(served == (200, "2", "others"))
        await attacker.close()
        try await host.shutdown()
    }
}
