import Foundation
import HeraldCore
import HeraldHMS
import HeraldHMSMock
import HeraldStore
import HeraldTestSupport
import Testing
import _CryptoExtras

@testable import HeraldGateway

/// Huawei devices beside iPhones: a Push Kit token registers as a device of the app
/// (`platform: hms`, with `hmsAPI` `android` or `harmony`), and the same notification reaches a
/// user's every device, through APNs and Push Kit's Android (v1) and HarmonyOS NEXT (v3) APIs,
/// against the mocks.
@Suite("Gateway HMS", .timeLimit(.minutes(6)))
struct HMSGatewayTests {
    /// An Android Push Kit token (with a `.`, which FCM's tokens never have: found by its token too).
    static func androidToken(_ number: Int) -> String {
        "IQAAAACy0\(number)Xq.Kp2_Lm-" + String(repeating: "Hk\(number % 10)x", count: 28)
    }

    /// A HarmonyOS NEXT token (letters and digits only).
    static func harmonyToken(_ number: Int) -> String {
        "MAMzLgMAAAA\(number)" + String(repeating: "Ab\(number % 10)Z", count: 25)
    }

    /// A gateway whose app reaches Huawei devices through the mock (unless `hms` is false), with
    /// the mock's CA trusted.
    static func run(_ backend: Backend, hms: Bool = true, _ body: (GatewayHarness, MockHMSServer) async throws -> Void) async throws {
        try await withMockHMSServer { huawei in
            try await GatewayHarness.run(backend, gateway: { configuration in
                guard hms else { return }
                var settings = GatewayConfiguration.HMSSettings(app: huawei.appCredentials, serviceAccount: huawei.serviceAccount)
                settings.endpoint = huawei.origin
                settings.trustRoots = [huawei.certificateAuthority]
                configuration.apps[0].hms = settings
            }) { harness in
                try await body(harness, huawei)
            }
        }
    }

    /// Registers a Huawei device of `api` for `user`; returns its device ID.
    static func register(_ pushToken: String, api: String, user: String?, harness: GatewayHarness, expect status: Int = 201) async throws -> String {
        var body: [String: JSONValue] = ["platform": "hms", "hmsAPI": .string(api)]
        if let user { body["user"] = .string(user) }
        let answer = try await harness.call(.put, "/v1/apps/\(appID)/devices/\(pushToken)", .object(body))
        #expect(answer.status == status, "\(answer.json?.jsonString ?? "")")
        #expect(answer.json?["platform"]?.stringValue == "hms" && answer.json?["pushToken"]?.stringValue == pushToken)
        #expect(answer.json?["hmsAPI"]?.stringValue == api)
        return try #require(answer.json?["token"]?.stringValue)
    }

    @Test("a user with an iPhone, a Huawei Android phone and a HarmonyOS NEXT phone: one notification reaches each once, each API's message derived from the payload", arguments: Backend.allCases)
    func everyDevice(backend: Backend) async throws {
        try await Self.run(backend) { harness, huawei in
            try await harness.register([1], user: { _ in "ann" })
            let phone = Self.androidToken(1)
            let tablet = Self.harmonyToken(1)
            let phoneID = try await Self.register(phone, api: "android", user: "ann", harness: harness)
            let tabletID = try await Self.register(tablet, api: "harmony", user: "ann", harness: harness)
            #expect(phoneID.hasPrefix("hms_") && tabletID.hasPrefix("hms_") && phoneID != tabletID)
            #expect(try await Self.register(phone, api: "android", user: "ann", harness: harness, expect: 200) == phoneID, "the same token again is the same device")

            // Found by its ID, and (a token FCM's form does not claim) by its push token; listed and counted by platform.
            for path in [phone, phoneID] {
                let read = try await harness.call(.get, "/v1/apps/\(appID)/devices/\(path)")
                #expect(read.status == 200 && read.json?["token"]?.stringValue == phoneID && read.json?["environment"] == nil, "\(read.json?.jsonString ?? "")")
            }
            // A push token FCM's form claims too (letters and digits only): the one registered is found.
            let lookalike = "IQAAAACy0kFAAABfRnVxM2ZDcGh2Qk5tZ0xPVFhZR1JsTzBKc3dhSnpzWkl"
            let lookalikeID = try await Self.register(lookalike, api: "android", user: nil, harness: harness)
            let byToken = try await harness.call(.get, "/v1/apps/\(appID)/devices/\(lookalike)")
            #expect(byToken.status == 200 && byToken.json?["token"]?.stringValue == lookalikeID, "\(byToken.json?.jsonString ?? "")")
            #expect(try await harness.call(.delete, "/v1/apps/\(appID)/devices/\(lookalike)").status == 204)
            #expect(try await harness.call(.get, "/v1/apps/\(appID)/devices/\(lookalikeID)").status == 404)
            let listed = try await harness.call(.get, "/v1/apps/\(appID)/devices?platform=hms").json?["devices"]?.arrayItems ?? []
            #expect(Set(listed.compactMap { $0["token"]?.stringValue }) == [phoneID, tabletID])
            let summary = try await harness.call(.get, "/v1/apps/\(appID)/summary").json?["devices"]
            #expect(summary?["byPlatform"]?["hms"]?.intValue == 2 && summary?["byPlatform"]?["apns"]?.intValue == 1, "\(summary?.jsonString ?? "")")

            let sent = try await harness.send(["users": ["ann"]], extra: [
                "payload": ["aps": ["alert": ["title": "Shipped", "body": "Arrives Tuesday"]], "order": 42], "collapseID": "order-42",
            ])
            let done = try await harness.waitUntilDone(sent)
            #expect(done.count("accepted") == 3, "\(done.jsonString)")
            #expect(done["platforms"]?["hms"] == ["accepted": 2, "rejected": 0, "failed": 0] && done["platforms"]?["apns"]?["accepted"]?.intValue == 1, "\(done.jsonString)")
            #expect(harness.received() == [token(1): 1])

            let android = try #require(huawei.received.first { $0.apiVersion == 1 })
            #expect(android.tokens == [phone])
            let message = try #require(try JSONValue(parsing: android.body)["message"])
            let notification = message["android"]?["notification"]
            #expect(notification?["title"]?.stringValue == "Shipped" && notification?["body"]?.stringValue == "Arrives Tuesday", "\(message.jsonString)")
            #expect(notification?["tag"]?.stringValue == "order-42" && notification?["click_action"]?["type"]?.intValue == 3)
            #expect(message["data"]?.stringValue.flatMap { try? JSONValue(parsing: Array($0.utf8)) } == ["order": 42], "custom keys as JSON text")
            let ttl = message["android"]?["ttl"]?.stringValue ?? ""
            #expect(ttl.hasSuffix("s") && (Int(ttl.dropLast()) ?? 0) > 0, "the TTL is what is left of the maximum age: \(ttl)")

            let harmony = try #require(huawei.received.first { $0.apiVersion == 3 })
            #expect(harmony.tokens == [tablet] && harmony.pushType == 0)
            let payload = try JSONValue(parsing: harmony.body)["payload"]?["notification"]
            #expect(payload?["title"]?.stringValue == "Shipped" && payload?["body"]?.stringValue == "Arrives Tuesday" && payload?["clickAction"]?["data"] == ["order": 42])

            // A notification's own hms options: merge patches over each API's derived message.
            let refined = try await harness.send(["tokens": [.string(phoneID), .string(tabletID)]], extra: [
                "payload": ["aps": ["alert": "Hi"]],
                "hms": ["android": ["android": ["notification": ["channel_id": "offers"]]], "harmony": ["payload": ["notification": ["category": "IM"]]]],
            ])
            #expect(try await harness.waitUntilDone(refined).count("accepted") == 2)
            let patchedAndroid = try JSONValue(parsing: try #require(huawei.received.last { $0.apiVersion == 1 }).body)["message"]?["android"]?["notification"]
            #expect(patchedAndroid?["channel_id"]?.stringValue == "offers" && patchedAndroid?["body"]?.stringValue == "Hi")
            let patchedHarmony = try JSONValue(parsing: try #require(huawei.received.last { $0.apiVersion == 3 }).body)["payload"]?["notification"]
            #expect(patchedHarmony?["category"]?.stringValue == "IM" && patchedHarmony?["body"]?.stringValue == "Hi")
        }
    }

    @Test("a token Push Kit names as invalid retires its device: nothing is sent to it again, until it registers again", arguments: Backend.allCases)
    func invalidToken(backend: Backend) async throws {
        try await Self.run(backend) { harness, huawei in
            let good = Self.androidToken(2)
            let bad = Self.androidToken(3)
            _ = try await Self.register(good, api: "android", user: "bo", harness: harness)
            let id = try await Self.register(bad, api: "android", user: "bo", harness: harness)
            huawei.invalidate(bad)
            let first = try await harness.waitUntilDone(try await harness.send(["users": ["bo"]]))
            #expect(first["rejected"]?["HMSInvalidToken"]?.intValue == 1 && first.count("accepted") == 1, "\(first.jsonString)")
            let device = try await harness.call(.get, "/v1/apps/\(appID)/devices/\(id)").json
            #expect(device?["status"]?.stringValue == "unregistered" && device?["reason"]?.stringValue == "HMSInvalidToken", "\(device?.jsonString ?? "")")
            let second = try await harness.waitUntilDone(try await harness.send(["users": ["bo"]]))
            #expect(second.count("targeted") == 1 && huawei.received.last?.tokens == [good], "a retired device is not sent to: \(second.jsonString)")
            _ = try await Self.register(bad, api: "android", user: "bo", harness: harness, expect: 200)
            #expect(try await harness.call(.get, "/v1/apps/\(appID)/devices/\(id)").json?["status"]?.stringValue == "active")
        }
    }

    @Test("Push Kit's 503 traffic control and a 500 are retried by the queue until the devices have it")
    func retried() async throws {
        try await Self.run(.sqlite) { harness, huawei in
            let phone = Self.androidToken(4)
            let tablet = Self.harmonyToken(4)
            _ = try await Self.register(phone, api: "android", user: "cy", harness: harness)
            _ = try await Self.register(tablet, api: "harmony", user: "cy", harness: harness)
            huawei.script(.trafficControl(retryAfterSeconds: nil, times: 3))
            huawei.script(.internalError(times: 1))
            let done = try await harness.waitUntilDone(try await harness.send(["users": ["cy"]]))
            #expect(done.count("accepted") == 2, "\(done.jsonString)")
            #expect(huawei.received.filter { $0.tokens == [phone] }.count == 1 && huawei.received.filter { $0.tokens == [tablet] }.count == 1)
            #expect(huawei.requestCount >= 6, "each refused request was sent again: \(huawei.requestCount)")
            #expect((huawei.rejectionsByReason.values.reduce(0, +)) >= 4, "\(huawei.rejectionsByReason)")
        }
    }

    @Test("bad input is a 400 naming the field; an app without hms answers 409; the bulk import takes Huawei lines")
    func badInput() async throws {
        try await Self.run(.sqlite) { harness, huawei in
            let phone = Self.androidToken(5)
            let cases: [(path: String, body: JSONValue, words: String)] = [
                ("/v1/apps/\(appID)/devices/\(phone)", ["platform": "hms"], "hmsAPI"),
                ("/v1/apps/\(appID)/devices/\(phone)", ["platform": "hms", "hmsAPI": "ios"], "hmsAPI"),
                ("/v1/apps/\(appID)/devices/\(phone)", ["platform": "fcm", "hmsAPI": "android"], "hmsAPI"),
                ("/v1/apps/\(appID)/devices/\(phone)", ["platform": "hms", "hmsAPI": "android", "kind": "voip"], "kind"),
                ("/v1/apps/\(appID)/devices/\(phone)", ["platform": "hms", "hmsAPI": "android", "environment": "sandbox"], "environment"),
                ("/v1/apps/\(appID)/devices/\(String(repeating: "a", count: 1025))", ["platform": "hms", "hmsAPI": "android"], "1024"),
            ]
            for (path, body, words) in cases {
                let answer = try await harness.call(.put, path, body)
                let message = answer.json?["error"]?["message"]?.stringValue ?? ""
                #expect(answer.status == 400 && message.contains(words), "\(path.prefix(60)) \(body.jsonString): \(answer.status) \(message)")
            }
            let notifications: [(extra: [String: JSONValue], words: String)] = [
                (["hms": ["android": "text"]], "hms.android"),
                (["hms": ["ios": [:]]], "hms.ios"),
                (["hms": ["android": ["android": ["ttl": "forever"]]]], "ttl"),
                (["hms": ["harmony": ["pushOptions": ["collapseKey": 500]]]], "collapseKey"),
            ]
            for (extra, words) in notifications {
                var body: [String: JSONValue] = ["to": ["all": true], "payload": ["aps": ["alert": "x"]]]
                body.merge(extra) { _, new in new }
                let answer = try await harness.call(.post, "/v1/apps/\(appID)/notifications", .object(body))
                let message = answer.json?["error"]?["message"]?.stringValue ?? ""
                #expect(answer.status == 400 && message.contains(words), "\(extra): \(answer.status) \(message)")
            }
            // The bulk import: Huawei lines beside APNs tokens; a bad one reported with its line.
            let lines = [
                #"{"token": "\#(token(9))"}"#, #"{"token": "\#(phone)", "platform": "hms", "hmsAPI": "android", "user": "di"}"#,
                #"{"token": "\#(Self.harmonyToken(5))", "platform": "hms", "user": "di"}"#,
            ].joined(separator: "\n")
            let imported = try await harness.raw(.post, "/v1/apps/\(appID)/devices", Array(lines.utf8), key: harness.key, contentType: "application/x-ndjson")
            #expect(imported.json?["upserted"]?.intValue == 2 && imported.json?["errors"]?.arrayItems.first?["line"]?.intValue == 3, "\(imported.json?.jsonString ?? "")")
            let done = try await harness.waitUntilDone(try await harness.send(["users": ["di"]]))
            #expect(done.count("accepted") == 1 && huawei.received.contains { $0.tokens == [phone] })
        }
        try await Self.run(.sqlite, hms: false) { harness, _ in
            let answer = try await harness.call(.put, "/v1/apps/\(appID)/devices/\(Self.androidToken(8))", ["platform": "hms", "hmsAPI": "android"])
            #expect(answer.status == 409 && answer.json?["error"]?["code"]?.stringValue == "hmsNotConfigured", "\(answer.json?.jsonString ?? "")")
            let options = try await harness.call(.post, "/v1/apps/\(appID)/notifications", ["to": ["all": true], "payload": ["aps": ["alert": "x"]], "hms": [:]])
            #expect(options.status == 400 && options.json?["error"]?["message"]?.stringValue?.contains("no hms") == true, "\(options.json?.jsonString ?? "")")
        }
    }

    @Test("apps[].hms in the file: the client secret from the environment, the service account from its file; each error names its field, never the secret")
    func configurationFile() throws {
        let scratch = try ScratchDirectory()
        let account = try HMSServiceAccount(
            projectID: "101653523863785276", keyID: "key-1", subAccount: "sub-1", privateKey: try _RSA.Signing.PrivateKey(keySize: .bits2048))
        _ = try scratch.write("huawei.json", account.jsonRepresentation)
        let key = APIKey.generate(name: "backend", apps: ["shop"]).entry
        let file = { (hms: String) in
            try scratch.write(
                "herald.json",
                #"{"database": "sqlite:herald.db", "apps": [{"id": "shop", "hms": \#(hms)}], "apiKeys": [{"name": "backend", "sha256": "\#(key.sha256Hex)", "apps": ["shop"]}]}"#)
        }
        let secret = "s3cr3t-" + String(repeating: "f", count: 40)
        let full = #"{"clientID": "104567891", "clientSecretEnv": "HUAWEI_SECRET", "serviceAccountFile": "huawei.json", "projectID": "101653523863785276", "endpoint": "https://127.0.0.1:4443", "tokenEndpoint": "https://127.0.0.1:4443/oauth2/v3/token", "connections": 3}"#
        let configuration = try GatewayConfiguration.load(file: try file(full), environment: ["HUAWEI_SECRET": secret])
        let settings = try #require(configuration.apps[0].hms)
        #expect(settings.app?.clientID == "104567891" && settings.app?.tokenURI == "https://127.0.0.1:4443/oauth2/v3/token")
        #expect(settings.serviceAccount?.projectID == "101653523863785276" && settings.endpoint == "https://127.0.0.1:4443" && settings.connections == 3)
        #expect(configuration.apps[0].platforms == [.hms])
        // HarmonyOS NEXT only: a service account without client credentials.
        let harmonyOnly = try GatewayConfiguration.load(file: try file(#"{"serviceAccountFile": "huawei.json"}"#), environment: [:])
        #expect(harmonyOnly.apps[0].hms?.app == nil && harmonyOnly.apps[0].hms?.endpoint == HMSClient.huaweiEndpoint)

        let bad: [(hms: String, field: String)] = [
            (#"{"clientID": "104567891", "clientSecretEnv": "MISSING"}"#, "apps[0].hms.clientSecretEnv"),
            (#"{"clientID": "104567891"}"#, "apps[0].hms.clientSecretEnv"),
            (#"{"clientID": "not-digits", "clientSecretEnv": "HUAWEI_SECRET"}"#, "apps[0].hms.clientID"),
            (#"{"clientSecret": "inline"}"#, "apps[0].hms.clientSecret"),
            (#"{}"#, "apps[0].hms"),
            (#"{"serviceAccountFile": "missing.json"}"#, "apps[0].hms.serviceAccountFile"),
            (#"{"serviceAccountFile": "huawei.json", "projectID": "999"}"#, "apps[0].hms.projectID"),
            (#"{"serviceAccountFile": "huawei.json", "endpoint": "http://push-api.cloud.huawei.com"}"#, "apps[0].hms.endpoint"),
            (#"{"serviceAccountFile": "huawei.json", "connections": 0}"#, "apps[0].hms.connections"),
            (#"{"clientID": "104567891", "clientSecretEnv": "HUAWEI_SECRET", "tokenEndpoint": "http://example.com/token"}"#, "apps[0].hms.tokenEndpoint"),
        ]
        for (hms, field) in bad {
            let path = try file(hms)
            let error = #expect(throws: ConfigurationError.self, "\(hms)") { try GatewayConfiguration.load(file: path, environment: ["HUAWEI_SECRET": secret]) }
            #expect(error?.field == field, "\(hms): \(error?.description ?? "")")
            #expect(error?.description.contains(secret) == false)
        }
    }

    @Test("a part's devices are sent by API, at most Push Kit's 1,000 tokens a request")
    func requests() {
        let android = (indices: Array(0..<2500), tokens: (0..<2500).map { "a\($0)" })
        let harmony = (indices: Array(2500..<2501), tokens: ["h"])
        let requests = HMSDelivery.requests([.android: android, .harmony: harmony])
        #expect(requests.map(\.api) == [.android, .android, .android, .harmony])
        #expect(requests.map(\.tokens.count) == [1000, 1000, 500, 1])
        #expect(requests[1].indices.first == 1000 && requests[1].tokens.first == "a1000" && requests[3].indices == [2500])
    }

    @Test("Push Kit's answers, token by token: a partial success retires only the tokens named bad; other named tokens fail, the device kept")
    func answers() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let receipt = HMSReceipt(
            requestID: "req-1", attempts: 1,
            failedTokens: [HMSFailedToken(token: "b", reason: "tokenFormatError", isTokenInvalid: true), HMSFailedToken(token: "c", reason: "noPushTypeRight", isTokenInvalid: false)])
        #expect(
            HuaweiMessages.outcomes(.success(receipt), tokens: ["a", "b", "c"], now: now) == [
                .accepted(receipt: "req-1"), .rejected(reason: .hms(.invalidToken), timestamp: now), .rejected(reason: .hms(.notSent), timestamp: nil),
            ])
        let allInvalid = HMSSendError(.allTokensInvalid, status: 200, resultCode: "80300007", reason: "all invalid", failedTokens: [HMSFailedToken(token: "a", isTokenInvalid: true)])
        #expect(HuaweiMessages.outcomes(.failure(allInvalid), tokens: ["a", "b"], now: now).allSatisfy { $0 == .rejected(reason: .hms(.invalidToken), timestamp: now) })
        #expect(HuaweiMessages.outcomes(.failure(HMSSendError(.notConfigured, reason: "no service account")), tokens: ["a"], now: now) == [.failed(reason: .hms(.notConfigured))])
        #expect(HuaweiMessages.outcome(of: HMSSendError(.tokenRefused, status: 400, reason: "1101")) == .retry(reason: .hms(.senderRefused)))
        #expect(HuaweiMessages.outcome(of: HMSSendError(.untrusted, reason: "bad CA")) == .retry(reason: .gateway(.tlsFailed)))
        #expect(HuaweiMessages.outcome(of: HMSSendError(.rejected, status: 418, reason: "?")) == .rejected(reason: .hms(.rejected), timestamp: nil))
    }

    @Test("the address keeps the API and the token; its ID is the token's, the form the store reads as a Huawei device's")
    func address() throws {
        let address = try HMSAddress(api: .harmony, pushToken: Self.harmonyToken(1))
        #expect(HMSAddress(stored: address.stored) == address && address.stored.hasPrefix("harmony:"))
        #expect(HMSAddress(stored: "ios:abc") == nil && HMSAddress(stored: "android:") == nil)
        #expect(address.id.utf8.count == 36 && HMSAddress.isID(address.id) && DevicePlatform(deviceID: address.id) == .hms)
        #expect(try HMSAddress(api: .android, pushToken: Self.harmonyToken(1)).id == address.id, "the same token is the same device")
        #expect(!HMSAddress.isID(FCMAddress.id(forToken: "f1:APA91b")) && DevicePlatform(deviceID: FCMAddress.id(forToken: "f1:APA91b")) == .fcm)
        #expect(throws: StoreError.self) { try HMSAddress(api: .android, pushToken: "with space") }
    }
}
