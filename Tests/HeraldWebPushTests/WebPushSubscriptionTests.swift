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
        let withPort = try WebPushSubscription(endpoint: "https://127.0.0.1:8443/push/1", p256dh: Self.p256dh, auth: Self.auth, policy: .init(allowsPrivateAddresses: true))
        #expect(withPort.origin == "https://127.0.0.1:8443")
        let expiring = try WebPushSubscription(
            json: Array(#"{"endpoint":"https://fcm.googleapis.com/fcm/send/x","expirationTime":1790000000000,"keys":{"p256dh":"\#(Self.p256dh)","auth":"\#(Self.auth)"}}"#.utf8))
        #expect(expiring.expirationTime == Date(timeIntervalSince1970: 1_790_000_000))
    }

    @Test("bad input is refused naming the field: http, a point off the curve, 15-byte auth, a 4 KB endpoint")
    func refusals() throws {
        func message(endpoint: String = "https://fcm.googleapis.com/fcm/send/x", p256dh: String = Self.p256dh, auth: String = Self.auth,
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
        #expect(message(endpoint: "https://fcm.googleapis.com/" + String(repeating: "a", count: 4096)).hasPrefix("endpoint: at most 2048 bytes"))
        #expect(message(endpoint: "/relative").hasPrefix("endpoint:"))
        #expect(message(endpoint: "https://user:pw@fcm.googleapis.com/x").hasPrefix("endpoint:"))
        var offCurve = [UInt8](repeating: 1, count: 65)
        offCurve[0] = 4
        #expect(message(p256dh: Base64URL.encode(offCurve)).hasPrefix("keys.p256dh: must be an uncompressed P-256 point on the curve"))
        #expect(message(p256dh: Base64URL.encode([UInt8](repeating: 4, count: 33))).hasPrefix("keys.p256dh:"))
        #expect(message(p256dh: "not base64!").hasPrefix("keys.p256dh: not base64url"))
        #expect(message(auth: Base64URL.encode([UInt8](repeating: 1, count: 15))) == "keys.auth: must be 16 bytes; this one is 15")
        for (json, field) in [
            (#"{"keys":{"p256dh":"x","auth":"y"}}"#, "endpoint"), (#"{"endpoint":"https://fcm.googleapis.com/fcm/send/x","keys":{"auth":"y"}}"#, "keys.p256dh"),
            (#"[]"#, "object"), (#"{"endpoint":"https://fcm.googleapis.com/fcm/send/x","expirationTime":"soon","keys":{"p256dh":"\#(Self.p256dh)","auth":"\#(Self.auth)"}}"#, "expirationTime"),
        ] {
            let error = #expect(throws: WebPushError.self) { _ = try WebPushSubscription(json: Array(json.utf8)) }
            #expect(error?.message.contains(field) == true, "\(json): \(String(describing: error))")
        }
    }

    @Test("endpoints outside the known push services, or at a private network's address, are refused naming the host; allowedHosts and allowPrivateAddresses open them")
    func endpointPolicy() throws {
        func refusal(_ endpoint: String, _ policy: WebPushSubscription.Policy = .standard) -> String? {
            do {
                _ = try WebPushSubscription(endpoint: endpoint, p256dh: Self.p256dh, auth: Self.auth, policy: policy)
                return nil
            } catch {
                #expect(error.code == .endpointNotAllowed, "\(endpoint): \(error)")
                return error.message
            }
        }
        // The browsers' own push services.
        for endpoint in [
            "https://web.push.apple.com/QGuQyavXutnMH", "https://fcm.googleapis.com/fcm/send/dXN", "https://android.googleapis.com/gcm/send/x",
            "https://updates.push.services.mozilla.com/wpush/v2/gAAA", "https://wns2-par02p.notify.windows.com/w/?token=BQY", "https://WEB.PUSH.APPLE.COM./x",
        ] {
            #expect(refusal(endpoint) == nil, "\(endpoint)")
        }
        // Private, shared, link-local, loopback and unspecified addresses, however written.
        for (endpoint, host, kind) in [
            ("https://10.1.2.3/x", "10.1.2.3", "private"), ("https://169.254.169.254/latest/meta-data", "169.254.169.254", "link-local"),
            ("https://localhost/x", "localhost", "loopback"), ("https://[::1]/x", "::1", "loopback"), ("https://192.168.0.1:8443/x", "192.168.0.1", "private"),
            ("https://172.16.5.4/x", "172.16.5.4", "private"), ("https://100.64.0.1/x", "100.64.0.1", "shared"), ("https://0.0.0.0/x", "0.0.0.0", "unspecified"),
            ("https://2130706433/x", "2130706433", "loopback"), ("https://0x7f.1/x", "0x7f.1", "loopback"), ("https://0177.0.0.1/x", "0177.0.0.1", "loopback"),
            ("https://[::ffff:169.254.169.254]/x", "169.254.169.254", "link-local"), ("https://[fd00::1]/x", "fd00::1", "unique local"),
            ("https://[fe80::1]/x", "fe80::1", "link-local"), ("https://224.0.0.1/x", "224.0.0.1", "multicast"), ("https://push.localhost/x", "push.localhost", "loopback"),
        ] {
            let message = refusal(endpoint)
            #expect(message?.contains(host) == true && message?.contains(kind) == true, "\(endpoint): \(message ?? "accepted")")
            #expect(refusal(endpoint, .init(allowsPrivateAddresses: true)) == nil, "\(endpoint) with allowPrivateAddresses")
        }
        // Hosts that are not push services, public addresses among them.
        for endpoint in ["https://push.example.net/x", "https://8.8.8.8/x", "https://fcm.googleapis.com.evil.example/x", "https://evilfcm.googleapis.com/x"] {
            #expect(refusal(endpoint)?.contains("not a known push service") == true, "\(endpoint)")
        }
        // An app's own push services.
        let ntfy = WebPushSubscription.Policy(allowedHosts: ["push.example.net", ".up.example.org", "8.8.8.8"])
        #expect(refusal("https://push.example.net/up/x", ntfy) == nil && refusal("https://a.up.example.org/x", ntfy) == nil && refusal("https://8.8.8.8/x", ntfy) == nil)
        #expect(refusal("https://up.example.org/x", ntfy) != nil && refusal("https://other.example.net/x", ntfy) != nil)
        // An allowed host is still not a private address.
        #expect(refusal("https://10.0.0.1/x", .init(allowedHosts: ["10.0.0.1"]))?.contains("private") == true)
    }

    @Test("at connect: an address the name resolved to is refused when it is not public, unless private addresses are allowed")
    func connectPolicy() throws {
        let standard = WebPushSubscription.Policy.standard
        for text in ["127.0.0.1", "10.0.0.7", "169.254.169.254", "::1", "fd12::3", "::ffff:10.0.0.1", "64:ff9b::a00:1", "2002:a00:1::1"] {
            let address = try #require(IPAddress(text))
            #expect(standard.refusal(connectingTo: address, for: "push.example.net")?.contains("push.example.net resolved to") == true, "\(text)")
            #expect(WebPushSubscription.Policy(allowsPrivateAddresses: true).refusal(connectingTo: address, for: "push.example.net") == nil)
        }
        for text in ["17.188.180.1", "142.250.74.10", "2a00:1450:4001:82f::200a"] {
            #expect(standard.refusal(connectingTo: try #require(IPAddress(text)), for: "fcm.googleapis.com") == nil, "\(text)")
        }
    }
}
