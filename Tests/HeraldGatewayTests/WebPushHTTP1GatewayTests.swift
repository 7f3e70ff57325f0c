import Crypto
import Foundation
import HeraldCore
import HeraldHostilePeers
import HeraldGateway
import HeraldTestSupport
import HeraldWebPush
import Testing

/// The gateway's browsers at a push service written apart from Herald that speaks only HTTP/1.1
/// (`Tests/Peers/http1_push_service.py`): the first notification to it is delivered over HTTP/1.1
/// and the gateway lives on to deliver the next.
@Suite("Gateway Web Push to an HTTP/1.1-only push service", .serialized, .timeLimit(.minutes(4)))
struct WebPushHTTP1GatewayTests {
    static let vapid = VAPIDKey.generate()

    @Test("one browser, then two: each notification is accepted over HTTP/1.1, and the gateway keeps delivering", arguments: [Backend.sqlite])
    func delivered(backend: Backend) async throws {
        if let reason = HTTP1PushService.unavailableReason {
            if HTTP1PushService.isRequired { Issue.record(Comment(rawValue: reason)) }
            try Test.cancel(Comment(rawValue: reason))
        }
        let (service, trusted) = try HTTP1PushService.started(.accept)
        defer { service.stop() }
        try await GatewayHarness.run(backend, gateway: { configuration in
            var settings = GatewayConfiguration.WebPushSettings(key: Self.vapid, subject: "mailto:ops@example.com", defaultURL: "https://shop.example.com/")
            settings.allowsPrivateAddresses = true
            settings.trustRoots = [trusted]
            configuration.apps[0].webPush = settings
        }) { harness in
            var ids: [String] = []
            for name in ["first", "second"] {
                let browser = P256.KeyAgreement.PrivateKey()
                let body: JSONValue = [
                    "endpoint": .string("\(service.origin)/push/\(name)"),
                    "keys": ["p256dh": .string(Base64URL.encode(Array(browser.publicKey.x963Representation))), "auth": .string(Base64URL.encode((0..<16).map { _ in UInt8.random(in: 0...255) }))],
                ]
                let answer = try await harness.call(.post, "/v1/apps/\(appID)/webpush/subscriptions", body)
                #expect(answer.status == 201, "\(answer.json?.jsonString ?? "")")
                ids.append(try #require(answer.json?["token"]?.stringValue))
            }
            let one = try await harness.waitUntilDone(try await harness.send(["tokens": [.string(ids[0])]], alert: "one"))
            #expect(one.count("accepted") == 1, "\(one.jsonString)")
            let two = try await harness.waitUntilDone(try await harness.send(["tokens": .array(ids.map { JSONValue.string($0) })], alert: "two"))
            #expect(two.count("accepted") == 2, "\(two.jsonString)")
            #expect(service.received.count == 3 && service.received.allSatisfy { $0.version == "HTTP/1.1" })
        }
    }
}
