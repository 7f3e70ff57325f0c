import Foundation
import HeraldCore
import HeraldWebPush
import HeraldWebPushMock
import Testing

/// The client against the mock push service over loopback TLS: HTTP/2 on Herald's own pool,
/// HTTP/1.1 on async-http-client's; every answer and fault as a caller sees it.
@Suite("Web Push client against the mock push service", .timeLimit(.minutes(6)))
struct WebPushClientTests {
    static let key = VAPIDKey.generate()

    static func configuration(_ server: MockWebPushServer, http2: Bool = true, retry: WebPushRetryPolicy = .none) throws -> WebPushClient.Configuration {
        var configuration = WebPushClient.Configuration(vapid: try VAPIDSigner(key: key, subject: "mailto:ops@example.com"))
        configuration.additionalTrustRoots = [server.certificateAuthority]
        configuration.allowsHTTP2 = http2
        configuration.subscriptionPolicy = MockWebPushServer.subscriptionPolicy
        configuration.retry = retry
        configuration.requestTimeout = .seconds(5)
        return configuration
    }

    static let fast = WebPushRetryPolicy(maximumAttempts: 3, backoff: Backoff(initial: .milliseconds(10), maximum: .milliseconds(50)), maximumRetryAfterSeconds: 1)

    @Test("a message reaches the browser decrypted, with its TTL, urgency and topic, over HTTP/2 and over HTTP/1.1", arguments: [true, false])
    func delivers(http2: Bool) async throws {
        try await withMockWebPushServer { server in
            let subscription = server.subscribe(applicationServerKey: Array(Self.key.publicKey.x963Representation))
            let text = Array(#"{"web_push":8030,"notification":{"title":"Shipped","navigate":"https://example.com/o/42"}}"#.utf8)
            let message = try WebPushMessage(payload: text, timeToLive: 600, urgency: .high, topic: "order-42")
            let receipt = try await withWebPushClient(configuration: try Self.configuration(server, http2: http2)) { client in
                try await client.send(message, to: subscription)
            }
            #expect(receipt.attempts == 1 && receipt.location?.hasPrefix("/message/") == true)
            let received = try #require(server.received.first)
            #expect(received.plaintext == text)
            #expect(received.ttl == 600 && received.urgency == "high" && received.topic == "order-42")
            #expect(received.httpVersion == (http2 ? 2 : 1))
            #expect(received.vapidSubject == "mailto:ops@example.com")
        }
    }

    @Test("a thousand messages to fifty subscriptions, sent at once: each reaches its browser exactly once, on one pool")
    func many() async throws {
        try await withMockWebPushServer { server in
            let subscriptions = (0..<50).map { _ in server.subscribe() }
            try await withWebPushClient(configuration: try Self.configuration(server)) { client in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<1000 {
                        group.addTask {
                            let message = try WebPushMessage(payload: Array("message \(index)".utf8), timeToLive: 60)
                            try await client.send(message, to: subscriptions[index % 50])
                        }
                    }
                    try await group.waitForAll()
                }
            }
            let texts = server.received.compactMap { $0.plaintext.map { String(decoding: $0, as: UTF8.self) } }
            #expect(texts.count == 1000 && Set(texts).count == 1000)
            #expect(server.received.allSatisfy { $0.httpVersion == 2 })
        }
    }

    @Test("send(toEach:): a group goes to the pool together; each answer comes back in its place, retries included", arguments: [true, false])
    func together(http2: Bool) async throws {
        try await withMockWebPushServer { server in
            var subscriptions = (0..<300).map { _ in server.subscribe() }
            server.unsubscribe(subscriptions[7])
            server.script(.tooManyRequests(retryAfterSeconds: 0, times: 1), for: subscriptions[11])
            server.script(.serverError(status: 503, times: 1), for: subscriptions[12])
            // Not a subscription of this service's: nothing listens there.
            subscriptions[13] = try WebPushSubscription(
                endpoint: "https://127.0.0.1:9/push/x", p256dh: Base64URL.encode(subscriptions[0].p256dh), auth: Base64URL.encode(subscriptions[0].authSecret), policy: MockWebPushServer.subscriptionPolicy)
            let message = try WebPushMessage(payload: Array("together".utf8), timeToLive: 60)
            var configuration = try Self.configuration(server, http2: http2, retry: Self.fast)
            configuration.maximumInFlight = 64
            let results = try await withWebPushClient(configuration: configuration) { client in
                await client.send(message, toEach: subscriptions)
            }
            #expect(results.count == 300)
            for (index, result) in results.enumerated() {
                switch index {
                case 7: #expect((try? result.get()) == nil && { if case .failure(let e) = result { e.isSubscriptionGone } else { false } }())
                case 11, 12: #expect((try? result.get())?.attempts == 2, "\(index): \(result)")
                case 13: #expect({ if case .failure(let e) = result { e.code == .connectionFailed } else { false } }(), "\(result)")
                default: #expect((try? result.get())?.attempts == 1, "\(index): \(result)")
                }
            }
            #expect(server.received.count == 298 && Set(server.received.map(\.subscriptionID)).count == 298)
            #expect(server.received.allSatisfy { $0.httpVersion == (http2 ? 2 : 1) })
        }
    }

    @Test("a push service that refuses h2 by ALPN is sent to over HTTP/1.1 from then on, singly and in groups")
    func alpnFallback() async throws {
        var configuration = MockWebPushServer.Configuration()
        configuration.offersHTTP2 = false
        try await withMockWebPushServer(configuration: configuration) { server in
            let subscriptions = (0..<20).map { _ in server.subscribe() }
            let message = try WebPushMessage(payload: Array("fallback".utf8), timeToLive: 60)
            try await withWebPushClient(configuration: try Self.configuration(server)) { client async throws -> Void in
                let first = try await client.send(message, to: subscriptions[0])
                #expect(first.attempts == 1, "the refusal is not an attempt")
                let group = await client.send(message, toEach: Array(subscriptions.dropFirst()))
                #expect(group.allSatisfy { (try? $0.get())?.attempts == 1 })
            }
            #expect(server.received.count == 20 && server.received.allSatisfy { $0.httpVersion == 1 })
        }
    }

    @Test("410 and 404: the subscription is gone, never retried; 413 too large; 403 BadJwtToken with the service's reason")
    func refusals() async throws {
        try await withMockWebPushServer { server in
            let gone = server.subscribe()
            server.unsubscribe(gone)
            let notFound = server.subscribe()
            server.script(.notFound, for: notFound)
            let large = server.subscribe()
            server.script(.tooLarge, for: large)
            // Bound to another application server key: this client's tokens are refused.
            let bound = server.subscribe(applicationServerKey: Array(VAPIDKey.generate().publicKey.x963Representation))
            let message = try WebPushMessage(payload: Array("hi".utf8), timeToLive: 60)
            try await withWebPushClient(configuration: try Self.configuration(server, retry: Self.fast)) { client in
                for (subscription, code, status) in [
                    (gone, WebPushSendError.Code.subscriptionGone, 410), (notFound, .subscriptionGone, 404), (large, .payloadTooLarge, 413), (bound, .rejected, 403),
                ] {
                    let error = await #expect(throws: WebPushSendError.self) { try await client.send(message, to: subscription) }
                    #expect(error?.code == code && error?.status == status && error?.attempts == 1, "\(String(describing: error))")
                }
            }
            #expect(server.received.isEmpty)
            #expect(server.rejectionsByReason.keys.contains { $0.contains("Jwt") || $0.contains("Vapid") } || !server.rejectionsByReason.isEmpty)
        }
    }

    @Test("429 with Retry-After and a 503 storm are retried and then accepted; retries run out with the last status")
    func transient() async throws {
        try await withMockWebPushServer { server in
            let limited = server.subscribe()
            server.script(.tooManyRequests(retryAfterSeconds: 0, times: 1), for: limited)
            let storm = server.subscribe()
            server.script(.serverError(status: 503, times: 2), for: storm)
            let hopeless = server.subscribe()
            server.script(.serverError(status: 500, times: 10), for: hopeless)
            let message = try WebPushMessage(payload: Array("retry".utf8), timeToLive: 60)
            try await withWebPushClient(configuration: try Self.configuration(server, retry: Self.fast)) { client async throws -> Void in
                let first = try await client.send(message, to: limited)
                #expect(first.attempts == 2)
                let second = try await client.send(message, to: storm)
                #expect(second.attempts == 3)
                let error = await #expect(throws: WebPushSendError.self) { try await client.send(message, to: hopeless) }
                #expect(error?.code == .serviceUnavailable && error?.status == 500 && error?.attempts == 3)
            }
            #expect(server.received.count == 2)
        }
    }

    @Test("a service slower than the deadline times out; one that is not there is unreachable; a closed client refuses")
    func noAnswer() async throws {
        try await withMockWebPushServer { server in
            let slow = server.subscribe()
            server.script(.delay(.seconds(3), times: 1), for: slow)
            var configuration = try Self.configuration(server)
            configuration.requestTimeout = .milliseconds(300)
            let message = try WebPushMessage(payload: Array("late".utf8), timeToLive: 60)
            let client = WebPushClient(configuration: configuration)
            let error = await #expect(throws: WebPushSendError.self) { try await client.send(message, to: slow) }
            #expect(error?.code == .timedOut)
            let nowhere = try WebPushSubscription(
                endpoint: "https://127.0.0.1:9/push/x", p256dh: Base64URL.encode(slow.p256dh), auth: Base64URL.encode(slow.authSecret), policy: MockWebPushServer.subscriptionPolicy)
            try await client.shutdown()
            // Nothing listens there: the pool's connection attempts fail, and so does the message.
            let patient = WebPushClient(configuration: try Self.configuration(server))
            let unreachable = await #expect(throws: WebPushSendError.self) { try await patient.send(message, to: nowhere) }
            #expect(unreachable?.code == .connectionFailed, "\(String(describing: unreachable))")
            try await patient.shutdown()
            let closed = await #expect(throws: WebPushSendError.self) { try await client.send(message, to: slow) }
            #expect(closed?.code == .shutdown)
        }
    }

    @Test("a hostile push service's reason (5 KB, control characters) reaches the caller bounded and escaped")
    func hostileReason() async throws {
        try await withMockWebPushServer { server in
            let subscription = server.subscribe()
            server.script(.reject(status: 400, reason: String(repeating: "\u{1b}[2J", count: 1200), times: 1), for: subscription)
            let message = try WebPushMessage(payload: Array("hi".utf8), timeToLive: 60)
            try await withWebPushClient(configuration: try Self.configuration(server)) { client async throws -> Void in
                let error = await #expect(throws: WebPushSendError.self) { try await client.send(message, to: subscription) }
                #expect(error?.code == .rejected && error?.status == 400)
                #expect((error?.reason.count ?? 0) < 1300, "at most 200 of its characters, each escaped: \(error?.reason.count ?? 0) of 4,800")
                #expect(error?.reason.contains("\u{1b}") == false, "no raw escape reaches a terminal")
            }
        }
    }

    @Test("a payload over 3,993 bytes is refused before anything is sent")
    func tooLargeLocally() async throws {
        #expect(throws: WebPushError.self) { _ = try WebPushMessage(payload: [UInt8](repeating: 1, count: 3994)) }
    }
}
