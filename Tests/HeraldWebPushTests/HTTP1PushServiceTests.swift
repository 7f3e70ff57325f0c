import Crypto
import Foundation
import HeraldCore
import HeraldHostilePeers
import HeraldTestSupport
import HeraldWebPush
import NIOSSL
import Testing

/// The client against a push service written apart from Herald that speaks only HTTP/1.1
/// (Python's standard library, `Tests/Peers/http1_push_service.py`): the first message to it is
/// refused HTTP/2 by ALPN and goes over HTTP/1.1, alone or in a group, and every answer of a
/// hostile one comes back as an outcome, never a trap.
@Suite("Web Push client against an independent HTTP/1.1-only push service", .serialized, .timeLimit(.minutes(4)))
struct HTTP1PushServiceTests {
    static let key = VAPIDKey.generate()
    static let fast = WebPushRetryPolicy(maximumAttempts: 3, backoff: Backoff(initial: .milliseconds(10), maximum: .milliseconds(50)), maximumRetryAfterSeconds: 2)

    /// A running service with its CA, or the test is skipped (failed in CI) when python3 is missing.
    static func service(_ mode: HTTP1PushService.Mode) throws -> (HTTP1PushService, NIOSSLCertificate) {
        if let reason = HTTP1PushService.unavailableReason {
            if HTTP1PushService.isRequired { Issue.record(Comment(rawValue: reason)) }
            try Test.cancel(Comment(rawValue: reason))
        }
        return try HTTP1PushService.started(mode)
    }

    /// A browser's subscription at `service`: its own P-256 key and auth secret.
    static func subscription(at service: HTTP1PushService, _ name: String) throws -> WebPushSubscription {
        let browser = P256.KeyAgreement.PrivateKey()
        let auth = (0..<16).map { _ in UInt8.random(in: 0...255) }
        return try WebPushSubscription(
            endpoint: "\(service.origin)/push/\(name)", p256dh: Base64URL.encode(Array(browser.publicKey.x963Representation)), auth: Base64URL.encode(auth),
            policy: .init(allowsPrivateAddresses: true))
    }

    static func configuration(trusting authority: NIOSSLCertificate, retry: WebPushRetryPolicy = .none) throws -> WebPushClient.Configuration {
        var configuration = WebPushClient.Configuration(vapid: try VAPIDSigner(key: key, subject: "mailto:ops@example.com"))
        configuration.additionalTrustRoots = [authority]
        configuration.retry = retry
        configuration.requestTimeout = .seconds(5)
        configuration.subscriptionPolicy = .init(allowsPrivateAddresses: true)
        return configuration
    }

    @Test("a group as the first send to a service that refuses h2: every message is accepted over HTTP/1.1 once", arguments: [1, 2, 40])
    func firstGroup(count: Int) async throws {
        let (service, authority) = try Self.service(.accept)
        defer { service.stop() }
        let subscriptions = try (0..<count).map { try Self.subscription(at: service, "s\($0)") }
        let message = try WebPushMessage(payload: Array(#"{"title":"over HTTP/1.1"}"#.utf8), timeToLive: 60)
        let results = try await withWebPushClient(configuration: try Self.configuration(trusting: authority)) { client in
            await client.send(message, toEach: subscriptions)
        }
        #expect(results.count == count)
        for result in results {
            let receipt = try result.get()
            #expect(receipt.attempts == 1, "the refusal of h2 is not an attempt")
            #expect(receipt.location?.hasPrefix("/m/") == true)
        }
        let received = service.received
        #expect(received.count == count && Set(received.map(\.path)).count == count, "\(received.map(\.path))")
        #expect(received.allSatisfy { $0.version == "HTTP/1.1" && $0.encoding == "aes128gcm" && $0.authorization == "vapid" && $0.ttl == "60" })
    }

    @Test("a single send first, then groups, then single sends: all over HTTP/1.1")
    func mixed() async throws {
        let (service, authority) = try Self.service(.accept)
        defer { service.stop() }
        let subscriptions = try (0..<6).map { try Self.subscription(at: service, "m\($0)") }
        let message = try WebPushMessage(payload: Array("mixed".utf8), timeToLive: 60)
        try await withWebPushClient(configuration: try Self.configuration(trusting: authority)) { client async throws -> Void in
            _ = try await client.send(message, to: subscriptions[0])
            let group = await client.send(message, toEach: Array(subscriptions[1...4]))
            #expect(group.allSatisfy { (try? $0.get())?.attempts == 1 })
            _ = try await client.send(message, to: subscriptions[5])
        }
        #expect(service.received.count == 6)
    }

    @Test("hostile answers over HTTP/1.1 come back as outcomes: 410, 429 with and without Retry-After, a 503 storm, a body past the bound, a cut answer, 1xx before the answer")
    func hostile() async throws {
        let message = try WebPushMessage(payload: Array("hostile".utf8), timeToLive: 60)
        for mode in [HTTP1PushService.Mode.gone, .limited, .limitedAfter, .storm, .huge, .cut, .informational] {
            let (service, authority) = try Self.service(mode)
            defer { service.stop() }
            let subscriptions = try (0..<3).map { try Self.subscription(at: service, "\(mode.rawValue)\($0)") }
            let results = try await withWebPushClient(configuration: try Self.configuration(trusting: authority, retry: Self.fast)) { client in
                await client.send(message, toEach: subscriptions)
            }
            #expect(results.count == 3)
            for result in results {
                switch (mode, result) {
                case (.gone, .failure(let error)): #expect(error.isSubscriptionGone && error.status == 410 && error.reason.contains("unsubscribed"), "\(error)")
                case (.limited, .success(let receipt)), (.limitedAfter, .success(let receipt)): #expect(receipt.attempts == 2)
                case (.storm, .failure(let error)): #expect(error.code == .serviceUnavailable && error.status == 503 && error.attempts == 3, "\(error)")
                // The status is the answer: a 201 whose body runs past the bound is accepted once, not sent again.
                case (.huge, .success(let receipt)): #expect(receipt.attempts == 1 && receipt.location?.hasPrefix("/m/") == true)
                case (.cut, .failure(let error)): #expect(error.code == .connectionFailed, "\(mode): \(error)")
                // A 1xx is not the answer: the 201 after it is (NIO's response decoder drops 1xx).
                case (.informational, .success(let receipt)): #expect(receipt.attempts == 1 && receipt.location?.hasPrefix("/m/") == true)
                default: Issue.record("\(mode): unexpected \(result)")
                }
            }
            let requests = service.received.count
            switch mode {
            case .gone: #expect(requests == 3)
            case .limited, .limitedAfter: #expect(requests == 6)
            case .huge, .informational: #expect(requests == 3)
            case .storm, .cut: #expect(requests == 9, "\(mode): \(requests) requests")
            default: break
            }
        }
    }

    @Test("a name the policy allows that resolves to a loopback address is refused at connect, over HTTP/2 and HTTP/1.1, before any packet leaves", arguments: [true, false])
    func rebinding(http2: Bool) async throws {
        let (service, authority) = try Self.service(.accept)
        defer { service.stop() }
        // This machine's own name: /etc/hosts has it at 127.0.0.1 here, as a rebinding name
        // would resolve to an address in the operator's network.
        let name = ProcessInfo.processInfo.hostName
        let resolved = await HostAddresses.of(name)
        guard let address = resolved.first, resolved.allSatisfy({ IPAddress($0)?.restrictedKind != nil }), IPAddress(address)?.restrictedKind == "loopback" else {
            try Test.cancel("this machine's name \(name) does not resolve to loopback only (\(resolved))")
        }
        let policy = WebPushSubscription.Policy(allowedHosts: [name])
        let browser = P256.KeyAgreement.PrivateKey()
        let subscription = try WebPushSubscription(
            endpoint: "https://\(name):\(service.port)/push/rebound", p256dh: Base64URL.encode(Array(browser.publicKey.x963Representation)),
            auth: Base64URL.encode([UInt8](repeating: 3, count: 16)), policy: policy)
        var configuration = try Self.configuration(trusting: authority, retry: Self.fast)
        configuration.subscriptionPolicy = policy
        configuration.allowsHTTP2 = http2
        let message = try WebPushMessage(payload: Array("rebound".utf8), timeToLive: 60)
        let (single, group) = try await withWebPushClient(configuration: configuration) { client in
            let single = await #expect(throws: WebPushSendError.self) { try await client.send(message, to: subscription) }
            return (single, await client.send(message, toEach: [subscription, subscription]))
        }
        #expect(single?.code == .endpointNotAllowed && single?.reason.contains("resolved to \(address)") == true, "\(String(describing: single))")
        #expect(group.allSatisfy { if case .failure(let error) = $0 { error.code == .endpointNotAllowed } else { false } }, "\(group)")
        #expect(service.connections == 0 && service.received.isEmpty, "no connection reached the service")
    }
}
