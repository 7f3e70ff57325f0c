import Crypto
import HeraldCore
import HeraldHostilePeers
import HeraldHTTP2
import HeraldWebPush
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// The Web Push client against an HTTP/2 push service that answers as a script says (frames
/// written by hand): answers out of order, a body far past the bound, 429 with and without
/// Retry-After, a 5xx storm. Every message comes back with its own outcome; nothing traps.
@Suite("Web Push client against a hostile HTTP/2 push service", .timeLimit(.minutes(3)))
struct HostilePushServiceTests {
    static let key = VAPIDKey.generate()
    static let fast = WebPushRetryPolicy(maximumAttempts: 3, backoff: Backoff(initial: .milliseconds(10), maximum: .milliseconds(50)), maximumRetryAfterSeconds: 1)

    static func subscriptions(_ server: HostileHTTP2Server, count: Int) throws -> [WebPushSubscription] {
        try (0..<count).map { index in
            try WebPushSubscription(
                endpoint: "https://127.0.0.1:\(server.port)/push/s\(index)", p256dh: Base64URL.encode(Array(P256.KeyAgreement.PrivateKey().publicKey.x963Representation)),
                auth: Base64URL.encode([UInt8](repeating: UInt8(index & 0xFF), count: 16)), policy: .init(allowsPrivateAddresses: true))
        }
    }

    static func send(_ server: HostileHTTP2Server, count: Int, retry: WebPushRetryPolicy = .none) async throws -> [Result<WebPushReceipt, WebPushSendError>] {
        var configuration = WebPushClient.Configuration(vapid: try VAPIDSigner(key: key, subject: "mailto:ops@example.com"))
        configuration.additionalTrustRoots = server.trustRoots
        configuration.subscriptionPolicy = .init(allowsPrivateAddresses: true)
        configuration.retry = retry
        configuration.requestTimeout = .seconds(5)
        let message = try WebPushMessage(payload: Array("hostile".utf8), timeToLive: 60)
        let subscriptions = try Self.subscriptions(server, count: count)
        return try await withWebPushClient(configuration: configuration) { client in
            await client.send(message, toEach: subscriptions)
        }
    }

    static func path(_ request: HostileHTTP2Server.Request) -> String { request.headers.first(name: ":path") ?? "?" }

    @Test("answers in the reverse order of the requests: each message gets its own Location")
    func outOfOrder() async throws {
        let count = 6
        let held = NIOLockedValueBox<[HostileHTTP2Server.Request]>([])
        let server = try HostileHTTP2Server { event, writer in
            switch event {
            case .connected: writer.bytes.writeHTTP2Settings([(.maxConcurrentStreams, 100)])
            case .request(let request):
                let ready = held.withLockedValue { held -> [HostileHTTP2Server.Request] in
                    held.append(request)
                    guard held.count == count else { return [] }
                    defer { held.removeAll() }
                    return held.reversed()
                }
                for request in ready {
                    writer.headers([(":status", "201"), ("location", "/m" + Self.path(request))], streamID: request.streamID, endStream: true)
                }
            case .frame: break
            }
        }
        try await server.start()
        let results = try await Self.send(server, count: count)
        for (index, result) in results.enumerated() {
            #expect((try? result.get())?.location == "/m/push/s\(index)", "\(index): \(result)")
        }
        try await server.stop()
    }

    @Test("a 201 with a body far past the bound, 429 with and without Retry-After, a 503 storm: each message has one outcome")
    func hostileAnswers() async throws {
        let huge = try HostileHTTP2Server.answering { request, writer in
            writer.headers([(":status", "201"), ("location", "/m/1")], streamID: request.streamID, endStream: false)
            for _ in 0..<16 { writer.data([UInt8](repeating: 0x41, count: 16_000), streamID: request.streamID, endStream: false) }
            writer.data([], streamID: request.streamID, endStream: true)
        }
        try await huge.start()
        let big = try await Self.send(huge, count: 3)
        #expect(big.count == 3)
        for result in big {
            // Accepted, or refused with the transport's reason; never sent again and again.
            if case .failure(let error) = result { #expect(error.attempts <= 1, "\(error)") }
        }
        try await huge.stop()

        for retryAfter in [Optional("0"), nil] {
            let seen = NIOLockedValueBox<[String: Int]>([:])
            let limited = try HostileHTTP2Server.answering { request, writer in
                let times = seen.withLockedValue { seen -> Int in
                    seen[Self.path(request), default: 0] += 1
                    return seen[Self.path(request)]!
                }
                if times == 1 {
                    writer.headers([(":status", "429")] + (retryAfter.map { [("retry-after", $0)] } ?? []), streamID: request.streamID, endStream: true)
                } else {
                    writer.headers([(":status", "201"), ("location", "/m" + Self.path(request))], streamID: request.streamID, endStream: true)
                }
            }
            try await limited.start()
            let results = try await Self.send(limited, count: 4, retry: Self.fast)
            #expect(results.allSatisfy { (try? $0.get())?.attempts == 2 }, "\(results)")
            try await limited.stop()
        }

        let storm = try HostileHTTP2Server.answering { request, writer in
            writer.headers([(":status", "503"), ("content-type", "application/json")], streamID: request.streamID, endStream: false)
            writer.data(Array(#"{"reason":"\u001b[31mdown"}"#.utf8), streamID: request.streamID)
        }
        try await storm.start()
        let stormed = try await Self.send(storm, count: 5, retry: Self.fast)
        for result in stormed {
            guard case .failure(let error) = result else {
                Issue.record("accepted in a storm: \(result)")
                continue
            }
            #expect(error.code == .serviceUnavailable && error.status == 503 && error.attempts == 3, "\(error)")
            #expect(!error.reason.contains("\u{1b}"), "the service's reason reaches the caller escaped: \(error.reason)")
        }
        try await storm.stop()
    }
}
