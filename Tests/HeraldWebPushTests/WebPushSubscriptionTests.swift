import Crypto
import Foundation
import HeraldCore
import HeraldWebPush
import Testing

@Suite("Web Push subscriptions: what a page's subscription.toJSON() gives, checked")
struct WebPushSubscriptionTests {
    static let p256dh = Base64URL.encode(P256.KeyAgreement.PrivateKey().publicKey.x963Representation)
    static let auth = Base64URL.encode([UInt8](repeating: 9, count: 16))

    @Test("a browser's JSON round-trips; the origin is the VAPID audience; the description hides the secret and path")
    func parses() throws {
        let json = #"{"endpoint":"https://web.push.apple.com/QGuQyavXutnMH/abc","expirationTime":null,"keys":{"p256dh":"\#(Self.p256dh)","auth":"\#(Self.auth)"}}"#
        let subscription = try WebPushSubscription(json: Array(json.utf8))
        #expect(subscription.origin == "https://web.push.apple.com")
        #expect(subscription.authSecret.count == 16)
        #expect(try WebPushSubscription(json: subscription.json) == subscription)
        #expect(!"\(subscription)".contains("QGuQyavXutnMH") && !"\(subscription)".contains(Self.auth))
        let withPort = try WebPushSubscription(endpoint: "https://127.0.0.1:8443/push/1", p256dh: Self.p256dh, auth: Self.auth)
        #expect(withPort.origin == "https://127.0.0.1:8443")
        let expiring = try WebPushSubscription(
            json: Array(#"{"endpoint":"https://a.example/x","expirationTime":1790000000000,"keys":{"p256dh":"\#(Self.p256dh)","auth":"\#(Self.auth)"}}"#.utf8))
        #expect(expiring.expirationTime == Date(timeIntervalSince1970: 1_790_000_000))
    }

    @Test("bad input is refused naming the field: http, a point off the curve, 15-byte auth, a 4 KB endpoint")
    func refusals() throws {
        func message(endpoint: String = "https://push.example.net/x", p256dh: String = Self.p256dh, auth: String = Self.auth,
                     policy: WebPushSubscription.Policy = .standard) -> String {
            do {
                _ = try WebPushSubscription(endpoint: endpoint, p256dh: p256dh, auth: auth, policy: policy)
                return "accepted"
            } catch {
                #expect(error.code == .invalidSubscription)
                return error.message
            }
        }
        #expect(message(endpoint: "http://push.example.net/x").hasPrefix("endpoint: must be an https: URL"))
        #expect(message(endpoint: "http://127.0.0.1:9/x").hasPrefix("endpoint:"))
        #expect(message(endpoint: "http://127.0.0.1:9/x", policy: .init(allowsLoopbackHTTP: true)) == "accepted")
        #expect(message(endpoint: "http://push.example.net/x", policy: .init(allowsLoopbackHTTP: true)).hasPrefix("endpoint:"))
        #expect(message(endpoint: "https://push.example.net/" + String(repeating: "a", count: 4096)).hasPrefix("endpoint: at most 2048 bytes"))
        #expect(message(endpoint: "/relative").hasPrefix("endpoint:"))
        #expect(message(endpoint: "https://user:pw@push.example.net/x").hasPrefix("endpoint:"))
        var offCurve = [UInt8](repeating: 1, count: 65)
        offCurve[0] = 4
        #expect(message(p256dh: Base64URL.encode(offCurve)).hasPrefix("keys.p256dh: must be an uncompressed P-256 point on the curve"))
        #expect(message(p256dh: Base64URL.encode([UInt8](repeating: 4, count: 33))).hasPrefix("keys.p256dh:"))
        #expect(message(p256dh: "not base64!").hasPrefix("keys.p256dh: not base64url"))
        #expect(message(auth: Base64URL.encode([UInt8](repeating: 1, count: 15))) == "keys.auth: must be 16 bytes; this one is 15")
        for (json, field) in [
            (#"{"keys":{"p256dh":"x","auth":"y"}}"#, "endpoint"), (#"{"endpoint":"https://a.example/x","keys":{"auth":"y"}}"#, "keys.p256dh"),
            (#"[]"#, "object"), (#"{"endpoint":"https://a.example/x","expirationTime":"soon","keys":{"p256dh":"\#(Self.p256dh)","auth":"\#(Self.auth)"}}"#, "expirationTime"),
        ] {
            let error = #expect(throws: WebPushError.self) { _ = try WebPushSubscription(json: Array(json.utf8)) }
            #expect(error?.message.contains(field) == true, "\(json): \(String(describing: error))")
        }
    }
}
