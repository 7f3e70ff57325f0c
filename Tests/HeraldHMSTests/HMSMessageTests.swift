import HeraldCore
import HeraldTransport
@testable import HeraldHMS
import Testing
import _CryptoExtras

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

@Suite("Push Kit messages, tokens and credentials", .timeLimit(.minutes(2)))
struct HMSMessageTests {
    static let token = "AAWWHI94sgUR2RU5_P1ZptUiwLq7W8XWJO2LxaAPuXw4_HOJFXnBlN-q5_3bwlxVW"

    @Test("a typed Android notification gets Push Kit's required click action and validates")
    func androidNotification() throws {
        let message = HMSAndroidMessage(tokens: [Self.token], notification: .init(title: "Hi", body: "There"))
        let body = try message.requestBody()
        let json = try JSONValue(parsing: body)
        #expect(json["validate_only"] == .bool(false))
        #expect(json["message"]?["android"]?["notification"]?["click_action"]?["type"] == .int(3))
        #expect(json["message"]?["token"] == .array([.string(Self.token)]))
    }

    @Test("Android messages Push Kit refuses are refused, naming the field")
    func androidRefusals() {
        func field(_ message: HMSAndroidMessage) -> String? {
            do {
                try message.validate()
                return nil
            } catch {
                return error.field
            }
        }
        #expect(field(HMSAndroidMessage(tokens: [], data: "x")) == "message.token")
        #expect(field(HMSAndroidMessage(tokens: Array(repeating: "t", count: 2).enumerated().map { "t\($0.offset)" } + ["t0"], data: "x")) == "message.token")
        #expect(field(HMSAndroidMessage(tokens: (0..<1001).map { "t\($0)" }, data: "x")) == "message.token")
        #expect(field(HMSAndroidMessage(tokens: ["bad token"], data: "x")) == "message.token")
        #expect(field(HMSAndroidMessage(tokens: [Self.token])) == "message")
        #expect(field(HMSAndroidMessage(tokens: [Self.token], data: String(repeating: "x", count: 4100))) == "message")
        #expect(field(HMSAndroidMessage(tokens: [Self.token], data: "x", android: .init(timeToLive: .seconds(1_296_001)))) == "message.android.ttl")
        #expect(field(HMSAndroidMessage(tokens: [Self.token], data: "x", android: .init(collapseKey: 101))) == "message.android.collapse_key")
        let url = HMSAndroidMessage.AndroidNotification(title: "t", body: "b", clickAction: .openURL("http://plain.example"))
        #expect(field(HMSAndroidMessage(tokens: [Self.token], android: .init(notification: url))) == "message.android.notification.click_action")
        #expect(field(HMSAndroidMessage(tokens: [Self.token], data: "x", android: .init(timeToLive: .seconds(86400), collapseKey: -1))) == nil)
        // 1,000 tokens are fine: the limit counts the message without them.
        #expect(field(HMSAndroidMessage(tokens: (0..<1000).map { "token\($0)" }, data: String(repeating: "x", count: 3000))) == nil)
    }

    @Test("raw Android messages: data must be a string, topic is refused")
    func raw() throws {
        #expect(throws: HMSError.self) { try HMSAndroidMessage(raw: .object(["data": .int(1)]), tokens: [Self.token]).validate() }
        #expect(throws: HMSError.self) { try HMSAndroidMessage(raw: .object(["data": .string("x"), "topic": .string("t")]), tokens: [Self.token]).validate() }
        try HMSAndroidMessage(raw: .object(["data": .string("{\"k\":1}")]), tokens: [Self.token]).validate()
    }

    @Test("HarmonyOS messages: shape, push type, test-message token count, options")
    func harmony() throws {
        let message = HMSHarmonyMessage.notification(tokens: [Self.token], title: "Hi", body: "There")
        let json = try JSONValue(parsing: message.requestBody())
        #expect(json["target"]?["token"] == .array([.string(Self.token)]))
        #expect(json["payload"]?["notification"]?["clickAction"]?["actionType"] == .int(0))
        #expect(throws: HMSError.self) { try HMSHarmonyMessage(pushType: .alert, tokens: [Self.token], payload: .object(["x": .int(1)])).validate() }
        #expect(throws: HMSError.self) { try HMSHarmonyMessage(pushType: .background, tokens: [Self.token], payload: .object([:])).validate() }
        let test = HMSHarmonyMessage.notification(tokens: (0..<11).map { "t\($0)" }, title: "a", body: "b", options: .init(testMessage: true))
        #expect(throws: HMSError.self) { try test.validate() }
        let ttl = HMSHarmonyMessage.notification(tokens: [Self.token], title: "a", body: "b", options: .init(timeToLiveSeconds: 1_296_001))
        #expect(throws: HMSError.self) { try ttl.validate() }
        #expect(throws: HMSError.self) { try HMSHarmonyMessage.validate(json, pushType: 3) }
    }

    @Test("tokens: alphabet and length")
    func tokens() {
        #expect(HMSPushToken.isValid(Self.token))
        #expect(HMSPushToken.isValid("MAM0Ku+/abc="))
        #expect(!HMSPushToken.isValid(""))
        #expect(!HMSPushToken.isValid("a b"))
        #expect(!HMSPushToken.isValid("\"quote"))
        #expect(!HMSPushToken.isValid(String(repeating: "a", count: 1025)))
    }

    @Test("app credentials: a numeric client ID; the secret never printed")
    func credentials() throws {
        #expect(throws: HMSError.self) { try HMSAppCredentials(clientID: "abc", clientSecret: "s") }
        #expect(throws: HMSError.self) { try HMSAppCredentials(clientID: "123", clientSecret: "") }
        #expect(throws: HMSError.self) { try HMSAppCredentials(clientID: "123", clientSecret: "s", tokenURI: "http://example.com/token") }
        let credentials = try HMSAppCredentials(clientID: "104567891", clientSecret: "top-secret-value")
        #expect(!"\(credentials)".contains("top-secret") && !String(reflecting: credentials).contains("top-secret"))
    }

    @Test("service-account JWT: PS256, kid, iss, aud; round trip, tampering and expiry refused; key file round trip")
    func jwt() throws {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let account = try HMSServiceAccount(projectID: "101653523863785276", keyID: "key-1", subAccount: "sub-1", privateKey: key)
        let jwt = try HMSServiceAccountJWT.sign(for: account)
        let header = try JSONValue(parsing: Base64URL.decode(jwt.split(separator: ".")[0]) ?? [])
        #expect(header == .object(["kid": .string("key-1"), "typ": .string("JWT"), "alg": .string("PS256")]))
        let claims = try HMSServiceAccountJWT.verify(jwt, publicKey: account.publicKey, keyID: "key-1", issuer: "sub-1")
        #expect(claims.audience == "https://oauth-login.cloud.huawei.com/oauth2/v3/token" && claims.expiresAt - claims.issuedAt == 3600)
        #expect(throws: HMSError.self) { try HMSServiceAccountJWT.verify(jwt, publicKey: account.publicKey, keyID: "key-2", issuer: "sub-1") }
        #expect(throws: HMSError.self) { try HMSServiceAccountJWT.verify(jwt + "A", publicKey: account.publicKey, keyID: "key-1", issuer: "sub-1") }
        let old = try HMSServiceAccountJWT.sign(for: account, now: Date(timeIntervalSinceNow: -7200))
        #expect(throws: HMSError.self) { try HMSServiceAccountJWT.verify(old, publicKey: account.publicKey, keyID: "key-1", issuer: "sub-1") }
        let reread = try HMSServiceAccount(json: account.jsonRepresentation)
        #expect(reread.projectID == account.projectID && reread.subAccount == "sub-1" && reread.keyID == "key-1")
        #expect(!"\(account)".contains("PRIVATE KEY"))
        #expect(throws: HMSError.self) { try HMSServiceAccount(json: Array(#"{"project_id":"1"}"#.utf8)) }
    }

    @Test("the token cache renews a tenth of the lifetime early and drops only the refused token")
    func cache() {
        var cache = BearerTokenCache()
        let start = ContinuousClock.now
        #expect(cache.next(now: start) == .wait)
        cache.store("a", lifetime: .seconds(100), requested: start)
        #expect(cache.next(now: start + .seconds(89)) == .use("a"))
        #expect(cache.next(now: start + .seconds(91)) == .useAndRefresh("a"))
        #expect(cache.next(now: start + .seconds(100)) == .wait)
        cache.invalidate("b")
        #expect(cache.next(now: start) == .use("a"))
        cache.invalidate("a")
        #expect(cache.next(now: start) == .wait)
    }
}
