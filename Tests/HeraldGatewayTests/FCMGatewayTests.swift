import Foundation
import HeraldCore
import HeraldFCMMock
import HeraldGateway
import HeraldTestSupport
import HeraldWebPush
import HeraldWebPushMock
import HTTPTypes
import Testing

/// Android devices beside iPhones and browsers: an FCM registration token registers as a device
/// of the app (`platform: fcm`), and the same notification reaches a user's every device, through
/// APNs, Web Push and FCM, against the three mocks.
@Suite("Gateway FCM", .timeLimit(.minutes(6)))
struct FCMGatewayTests {
    /// An FCM registration token, as Firebase's SDK makes them (letters, digits, `-`, `_`, `:`).
    static func registrationToken(_ number: Int) -> String {
        "d\(number)Xq-Kp2_Lm:APA91b" + String(repeating: "Hk\(number % 10)x", count: 34)
    }

    /// A gateway whose app reaches Android devices through the FCM mock (and browsers through the
    /// Web Push mock when `browsers` is set), with the mocks' CAs trusted.
    static func run(
        _ backend: Backend, fcm: Bool = true, browsers webPush: Bool = false, _ body: (GatewayHarness, MockFCMServer, MockWebPushServer) async throws -> Void
    ) async throws {
        try await withMockFCMServer { android in
            try await withMockWebPushServer { browsers in
                try await GatewayHarness.run(backend, gateway: { configuration in
                    if fcm {
                        var settings = GatewayConfiguration.FCMSettings(serviceAccount: android.serviceAccount)
                        settings.endpoint = android.origin
                        settings.trustRoots = [android.certificateAuthority]
                        settings.connections = 2
                        configuration.apps[0].fcm = settings
                    }
                    if webPush {
                        var settings = GatewayConfiguration.WebPushSettings(key: WebPushGatewayTests.vapid, subject: "mailto:ops@example.com", defaultURL: "https://shop.example.com/")
                        settings.allowsPrivateAddresses = true
                        settings.trustRoots = [browsers.certificateAuthority]
                        configuration.apps[0].webPush = settings
                    }
                }) { harness in
                    try await body(harness, android, browsers)
                }
            }
        }
    }

    /// Registers an Android device for `user`; returns its device ID.
    static func register(_ registrationToken: String, user: String?, harness: GatewayHarness, expect status: Int = 201) async throws -> String {
        var body: [String: JSONValue] = ["platform": "fcm"]
        if let user { body["user"] = .string(user) }
        let answer = try await harness.call(.put, "/v1/apps/\(appID)/devices/\(registrationToken)", .object(body))
        #expect(answer.status == status, "\(answer.json?.jsonString ?? "")")
        #expect(answer.json?["platform"]?.stringValue == "fcm" && answer.json?["registrationToken"]?.stringValue == registrationToken)
        return try #require(answer.json?["token"]?.stringValue)
    }

    @Test("a user with an iPhone, an Android phone and a browser: one notification reaches each once; Android's message is derived from the payload", arguments: Backend.allCases)
    func everyDevice(backend: Backend) async throws {
        try await Self.run(backend, browsers: true) { harness, android, browsers in
            try await harness.register([1], user: { _ in "ann" })
            let phone = Self.registrationToken(1)
            let id = try await Self.register(phone, user: "ann", harness: harness)
            #expect(id.hasPrefix("fcm_"))
            #expect(try await Self.register(phone, user: "ann", harness: harness, expect: 200) == id, "the same token again is the same device")
            let safari = browsers.subscribe(applicationServerKey: Array(WebPushGatewayTests.vapid.publicKey.x963Representation))
            _ = try await WebPushGatewayTests.register(safari, user: "ann", harness: harness)

            // Found by its registration token or its ID; listed and counted by platform.
            for path in [phone, id] {
                let read = try await harness.call(.get, "/v1/apps/\(appID)/devices/\(path)")
                #expect(read.status == 200 && read.json?["token"]?.stringValue == id && read.json?["environment"] == nil, "\(read.json?.jsonString ?? "")")
            }
            let listed = try await harness.call(.get, "/v1/apps/\(appID)/devices?platform=fcm").json?["devices"]?.arrayItems ?? []
            #expect(listed.compactMap { $0["token"]?.stringValue } == [id])
            let apnsOnly = try await harness.call(.get, "/v1/apps/\(appID)/devices?platform=apns").json?["devices"]?.arrayItems ?? []
            #expect(apnsOnly.compactMap { $0["token"]?.stringValue } == [token(1)])
            let summary = try await harness.call(.get, "/v1/apps/\(appID)/summary").json?["devices"]
            #expect(summary?["byPlatform"] == ["apns": 1, "webpush": 1, "fcm": 1, "hms": 0], "\(summary?.jsonString ?? "")")

            let sent = try await harness.send(["users": ["ann"]], extra: [
                "payload": ["aps": ["alert": ["title": "Shipped", "body": "Arrives Tuesday"]], "order": 42, "note": "fragile"],
                "priority": 10, "collapseID": "order-42",
            ])
            let done = try await harness.waitUntilDone(sent)
            #expect(done.count("accepted") == 3, "\(done.jsonString)")
            #expect(done["platforms"]?["fcm"] == ["accepted": 1, "rejected": 0, "failed": 0] && done["platforms"]?["apns"]?["accepted"]?.intValue == 1, "\(done.jsonString)")
            #expect(harness.received() == [token(1): 1] && browsers.received(for: safari).count == 1)
            let received = android.received.filter { $0.token == phone }
            #expect(received.count == 1)
            let message = try #require(received.first)
            #expect(message.title == "Shipped" && message.body == "Arrives Tuesday")
            #expect(message.data.withoutReceipt == ["order": "42", "note": "fragile"] && message.data["herald"]?.utf8.count == 48, "custom keys as strings, and its receipt")
            #expect(message.message["android"]?["priority"]?.stringValue == "high" && message.message["android"]?["collapse_key"]?.stringValue == "order-42")
            let ttl = message.message["android"]?["ttl"]?.stringValue ?? ""
            #expect(ttl.hasSuffix("s") && (Int(ttl.dropLast()) ?? 0) > 0, "the TTL is what is left of the maximum age: \(ttl)")

            // A notification's own fcm.message: a merge patch over the derived message.
            let refined = try await harness.send(["tokens": [.string(id)]], extra: [
                "payload": ["aps": ["alert": "Hi"], "order": 42],
                "fcm": ["message": ["data": ["order": .null, "kind": "promo"], "android": ["notification": ["channel_id": "offers"]]]],
            ])
            #expect(try await harness.waitUntilDone(refined).count("accepted") == 1)
            let patched = try #require(android.received.last)
            #expect(patched.body == "Hi" && patched.data.withoutReceipt == ["kind": "promo"], "\(patched.message.jsonString)")
            #expect(patched.message["android"]?["notification"]?["channel_id"]?.stringValue == "offers" && patched.message["android"]?["ttl"] != nil)
        }
    }

    @Test("UNREGISTERED retires the Android device: nothing is sent to it again, until it registers again", arguments: Backend.allCases)
    func unregistered(backend: Backend) async throws {
        try await Self.run(backend) { harness, android, _ in
            let phone = Self.registrationToken(2)
            let id = try await Self.register(phone, user: "bo", harness: harness)
            android.unregister(phone)
            let first = try await harness.waitUntilDone(try await harness.send(["users": ["bo"]]))
            #expect(first["rejected"]?["FCMUnregistered"]?.intValue == 1, "\(first.jsonString)")
            let device = try await harness.call(.get, "/v1/apps/\(appID)/devices/\(id)").json
            #expect(device?["status"]?.stringValue == "unregistered" && device?["reason"]?.stringValue == "FCMUnregistered", "\(device?.jsonString ?? "")")
            let requests = android.requestCount
            let second = try await harness.waitUntilDone(try await harness.send(["users": ["bo"]]))
            #expect(second.count("targeted") == 0 && android.requestCount == requests, "a retired device is not sent to: \(second.jsonString)")
            // The app registers it again (a new install gets a new token; the same one is active again).
            _ = try await Self.register(phone, user: "bo", harness: harness, expect: 200)
            #expect(try await harness.call(.get, "/v1/apps/\(appID)/devices/\(id)").json?["status"]?.stringValue == "active")
        }
    }

    @Test("a 503 and 429 storm at FCM is retried by the queue until the device has it; a malformed token and another project's are marked invalid")
    func stormsAndInvalidTokens() async throws {
        try await Self.run(.sqlite) { harness, android, _ in
            let phone = Self.registrationToken(3)
            _ = try await Self.register(phone, user: "cy", harness: harness)
            android.scriptAll(.unavailable(times: 3))
            android.scriptAll(.quotaExceeded(retryAfterSeconds: 1, times: 2))
            let stormy = try await harness.waitUntilDone(try await harness.send(["users": ["cy"]]))
            #expect(stormy.count("accepted") == 1 && android.received.filter { $0.token == phone }.count == 1, "\(stormy.jsonString)")

            for (number, fault, reason) in [(4, MockFCMFault.invalidToken, "FCMInvalidToken"), (5, .senderIDMismatch, "FCMSenderIdMismatch")] {
                let token = Self.registrationToken(number)
                let id = try await Self.register(token, user: nil, harness: harness)
                android.script(fault, for: token)
                let done = try await harness.waitUntilDone(try await harness.send(["tokens": [.string(id)]]))
                #expect(done["rejected"]?[reason]?.intValue == 1, "\(done.jsonString)")
                #expect(try await harness.call(.get, "/v1/apps/\(appID)/devices/\(id)").json?["status"]?.stringValue == "invalid")
            }
            // FCM's own APNs credentials refused: a final failure with its reason, the device kept.
            let token = Self.registrationToken(6)
            let id = try await Self.register(token, user: nil, harness: harness)
            android.script(.thirdPartyAuthError, for: token)
            let done = try await harness.waitUntilDone(try await harness.send(["tokens": [.string(id)]]))
            #expect(done.count("failed") == 1 && done["platforms"]?["fcm"]?["failed"]?.intValue == 1, "\(done.jsonString)")
            #expect(try await harness.call(.get, "/v1/apps/\(appID)/devices/\(id)").json?["status"]?.stringValue == "active")
        }
    }

    @Test("bad input is a 400 naming the field; an app without fcm answers 409; the bulk import takes Android lines")
    func badInput() async throws {
        try await Self.run(.sqlite) { harness, android, _ in
            let phone = Self.registrationToken(7)
            let cases: [(path: String, body: JSONValue, words: String)] = [
                ("/v1/apps/\(appID)/devices/\(phone)", ["platform": "fcm", "kind": "voip"], "kind"),
                ("/v1/apps/\(appID)/devices/\(phone)", ["platform": "fcm", "environment": "sandbox"], "environment"),
                ("/v1/apps/\(appID)/devices/\(phone)", ["platform": "android"], "platform"),
                ("/v1/apps/\(appID)/devices/\(phone)", [:], "platform"),
                ("/v1/apps/\(appID)/devices/\(String(repeating: "a", count: 4097))", ["platform": "fcm"], "4096"),
                ("/v1/apps/\(appID)/devices/with%20space", ["platform": "fcm"], "letters, digits"),
            ]
            for (path, body, words) in cases {
                let answer = try await harness.call(.put, path, body)
                let message = answer.json?["error"]?["message"]?.stringValue ?? ""
                #expect(answer.status == 400 && message.contains(words), "\(path.prefix(60)) \(body.jsonString): \(answer.status) \(message)")
            }
            let notifications: [(extra: [String: JSONValue], words: String)] = [
                (["payload": ["aps": ["alert": "x"], "from": "me"]], "from"),
                (["payload": ["aps": ["alert": "x"], "google.c.a": "1"]], "google"),
                // Within APNs's 4,096 bytes; past FCM's once the refinement adds to it.
                (["payload": ["aps": ["alert": "x"], "blob": .string(String(repeating: "b", count: 3000))], "fcm": ["message": ["data": ["more": .string(String(repeating: "m", count: 1100))]]]], "4096"),
                (["fcm": ["message": "text"]], "fcm.message"),
                (["fcm": ["color": 1]], "fcm.color"),
                (["fcm": ["message": ["android": ["ttl": "forever"]]]], "ttl"),
                (["analyticsLabel": "spring sale!"], "analyticsLabel"),
                (["analyticsLabel": .string(String(repeating: "l", count: 51))], "analyticsLabel"),
                (["fcm": ["message": ["fcm_options": ["analytics_label": "has space"]]]], "analytics_label"),
            ]
            for (extra, words) in notifications {
                var body: [String: JSONValue] = ["to": ["all": true], "payload": ["aps": ["alert": "x"]]]
                body.merge(extra) { _, new in new }
                let answer = try await harness.call(.post, "/v1/apps/\(appID)/notifications", .object(body))
                let message = answer.json?["error"]?["message"]?.stringValue ?? ""
                #expect(answer.status == 400 && message.contains(words), "\(extra): \(answer.status) \(message)")
            }
            // The bulk import: Android lines beside APNs tokens; a bad one reported with its line.
            let lines = [
                #"{"token": "\#(token(9))"}"#, #"{"token": "\#(phone)", "platform": "fcm", "user": "di"}"#, #"{"token": "bad token", "platform": "fcm"}"#,
            ].joined(separator: "\n")
            let imported = try await harness.raw(.post, "/v1/apps/\(appID)/devices", Array(lines.utf8), key: harness.key, contentType: "application/x-ndjson")
            #expect(imported.json?["upserted"]?.intValue == 2 && imported.json?["errors"]?.arrayItems.first?["line"]?.intValue == 3, "\(imported.json?.jsonString ?? "")")
            let done = try await harness.waitUntilDone(try await harness.send(["users": ["di"]]))
            #expect(done.count("accepted") == 1 && android.received.contains { $0.token == phone })
            // The analytics label reaches FCM as fcm_options.analytics_label.
            let labelled = try await harness.call(
                .post, "/v1/apps/\(appID)/notifications", ["to": ["users": ["di"]], "payload": ["aps": ["alert": "sale"]], "analyticsLabel": "spring_sale-2027"])
            _ = try await harness.waitUntilDone(try #require(labelled.json?["id"]?.stringValue))
            let message = android.received.last { $0.token == phone }?.message
            #expect(message?["fcm_options"]?["analytics_label"] == "spring_sale-2027", "\(message?.jsonString ?? "none")")
        }
        try await Self.run(.sqlite, fcm: false) { harness, _, _ in
            let answer = try await harness.call(.put, "/v1/apps/\(appID)/devices/\(Self.registrationToken(8))", ["platform": "fcm"])
            #expect(answer.status == 409 && answer.json?["error"]?["code"]?.stringValue == "fcmNotConfigured", "\(answer.json?.jsonString ?? "")")
            let options = try await harness.call(.post, "/v1/apps/\(appID)/notifications", ["to": ["all": true], "payload": ["aps": ["alert": "x"]], "fcm": ["message": [:]]])
            #expect(options.status == 400 && options.json?["error"]?["message"]?.stringValue?.contains("no fcm") == true, "\(options.json?.jsonString ?? "")")
        }
    }
}
