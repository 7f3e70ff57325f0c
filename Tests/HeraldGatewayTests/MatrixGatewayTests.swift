import Foundation
import HeraldAPNSMock
import HeraldCore
import HeraldFCMMock
@testable import HeraldGateway
import HeraldStore
import HeraldTestSupport
import Testing

/// The Matrix Push Gateway API (`POST /_matrix/push/v1/notify`, docs/matrix.md): a homeserver's
/// notification reaches the pushers' devices through the APNs and FCM mocks, ids only when the
/// pusher asks for `event_id_only`; retired devices and unknown app IDs are rejected; a malformed
/// request is a 400 in the Matrix spec's shape and stores nothing.
@Suite("Matrix push gateway", .timeLimit(.minutes(6)))
struct MatrixGatewayTests {
    static let notify = "/_matrix/push/v1/notify"
    static let iOS = "com.example.chat.ios"
    static let android = "com.example.chat.android"

    /// APNs token `number` as Element iOS sends a pushkey: base64 of its bytes.
    static func base64Pushkey(_ number: Int) -> String {
        let hex = Array(token(number).utf8)
        let bytes = stride(from: 0, to: hex.count, by: 2).map { UInt8(String(decoding: hex[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
        return Data(bytes).base64EncodedString()
    }

    /// A homeserver's request: `devices` with the notification's fields.
    static func body(devices: [JSONValue], _ fields: [String: JSONValue] = full) -> JSONValue {
        var notification = fields
        notification["devices"] = .array(devices)
        return ["notification": .object(notification)]
    }

    /// A message in a named room, as Synapse sends it for a pusher of the full format.
    static let full: [String: JSONValue] = [
        "event_id": "$3957tyerfgewrf384", "room_id": "!slw48wfj34rtnrf:example.com", "type": "m.room.message",
        "sender": "@exampleuser:example.com", "sender_display_name": "Major Tom", "room_name": "Mission Control", "prio": "high",
        "content": ["msgtype": "m.text", "body": "I'm floating in a most peculiar way."], "counts": ["unread": 3, "missed_calls": 1],
    ]

    static func device(_ appID: String, _ pushkey: String, data: [String: JSONValue]? = nil, pushkeyTS: Int = 1_700_000_000) -> JSONValue {
        var device: [String: JSONValue] = ["app_id": .string(appID), "pushkey": .string(pushkey), "pushkey_ts": .int(pushkeyTS), "tweaks": ["sound": "bing"]]
        if let data { device["data"] = .object(data) }
        return .object(device)
    }

    /// A gateway whose app reaches APNs and, through the FCM mock, Android devices, with Matrix
    /// app IDs for both.
    static func run(
        mock configureMock: @escaping (inout MockAPNSServer.Configuration) -> Void = { _ in }, _ body: (GatewayHarness, MockFCMServer) async throws -> Void
    ) async throws {
        try await withMockFCMServer { fcm in
            try await GatewayHarness.run(.sqlite, mock: configureMock, gateway: { configuration in
                var settings = GatewayConfiguration.FCMSettings(serviceAccount: fcm.serviceAccount)
                settings.endpoint = fcm.origin
                settings.trustRoots = [fcm.certificateAuthority]
                settings.connections = 2
                configuration.apps[0].fcm = settings
                configuration.apps[0].matrix = GatewayConfiguration.MatrixSettings(appIDs: [iOS: .apns, android: .fcm])
            }) { harness in
                try await body(harness, fcm)
            }
        }
    }

    /// Waits until `condition` holds (at most 30 s).
    static func waitFor(_ what: String, _ condition: () async throws -> Bool) async throws {
        let met = try await eventually(within: .seconds(30), every: .milliseconds(50), condition)
        if !met { Issue.record("not within 30 s: \(what)") }
    }

    @Test("the full format reaches an iPhone (alert from sender, room and body; badge from counts.unread) and an Android phone (Sygnal's data); a retry is not sent twice")
    func fullFormat() async throws {
        try await Self.run { harness, fcm in
            let phone = FCMGatewayTests.registrationToken(5)
            let request = Self.body(devices: [Self.device(Self.iOS, Self.base64Pushkey(5)), Self.device(Self.android, phone)])
            let answer = try await harness.call(.post, Self.notify, request, key: "")
            #expect(answer.status == 200 && answer.json == ["rejected": []], "\(answer.json?.jsonString ?? "")")

            try await Self.waitFor("both devices sent") { harness.mock.accepted.count == 1 && fcm.received.count == 1 }
            let apns = try #require(harness.mock.accepted.first)
            #expect(apns.token == token(5), "the base64 pushkey is the token's bytes")
            let payload = try JSONValue(parsing: apns.payload)
            #expect(payload["aps"]?["alert"] == ["title": "Major Tom", "subtitle": "Mission Control", "body": "I'm floating in a most peculiar way."], "\(payload.jsonString)")
            #expect(payload["aps"]?["badge"] == 3 && payload["aps"]?["sound"] == "bing")
            #expect(payload["room_id"] == "!slw48wfj34rtnrf:example.com" && payload["event_id"] == "$3957tyerfgewrf384" && payload["missed_calls"] == 1)

            let android = try #require(fcm.received.first)
            #expect(android.token == phone && android.title == nil, "a data message: the app makes its own notification")
            #expect(
                android.data.withoutReceipt == [
                    "event_id": "$3957tyerfgewrf384", "room_id": "!slw48wfj34rtnrf:example.com", "type": "m.room.message", "sender": "@exampleuser:example.com",
                    "sender_display_name": "Major Tom", "room_name": "Mission Control", "content_msgtype": "m.text",
                    "content_body": "I'm floating in a most peculiar way.", "prio": "high", "unread": "3", "missed_calls": "1",
                ], "\(android.message.jsonString)")
            #expect(android.message["android"]?["priority"] == "high")

            // Both pushkeys are devices of the app now.
            #expect(try await harness.call(.get, "/v1/apps/\(appID)/devices/\(token(5))").status == 200)
            #expect(try await harness.call(.get, "/v1/apps/\(appID)/devices/\(phone)").json?["platform"] == "fcm")

            // The homeserver sends the same event again (it never got the answer): queued once.
            #expect(try await harness.call(.post, Self.notify, request, key: "").json == ["rejected": []])
            let listed = try await harness.call(.get, "/v1/apps/\(appID)/notifications").json?["notifications"]?.arrayItems ?? []
            #expect(listed.count == 2, "one notification per device, whatever the retries")
            try await Task.sleep(for: .milliseconds(300))
            #expect(harness.mock.accepted.count == 1 && fcm.received.count == 1)
        }
    }

    @Test("event_id_only: the devices get the ids and counts, never the content; APNs as a background push")
    func eventIDOnly() async throws {
        try await Self.run { harness, fcm in
            let phone = FCMGatewayTests.registrationToken(6)
            let idsOnly: [String: JSONValue] = ["format": "event_id_only"]
            // As Synapse sends it for such a pusher (here with the content too: the pusher's format decides).
            var fields = Self.full
            fields["prio"] = "low"
            let request = Self.body(devices: [Self.device(Self.iOS, token(6), data: idsOnly), Self.device(Self.android, phone, data: idsOnly)], fields)
            let answer = try await harness.call(.post, Self.notify, request, key: "")
            #expect(answer.status == 200 && answer.json == ["rejected": []], "\(answer.json?.jsonString ?? "")")

            try await Self.waitFor("both devices sent") { harness.mock.accepted.count == 1 && fcm.received.count == 1 }
            let payload = try JSONValue(parsing: try #require(harness.mock.accepted.first).payload).withoutReceipt
            #expect(
                payload == ["aps": ["content-available": 1], "room_id": "!slw48wfj34rtnrf:example.com", "event_id": "$3957tyerfgewrf384", "unread_count": 3, "missed_calls": 1],
                "\(payload.jsonString)")
            let android = try #require(fcm.received.first)
            #expect(
                android.data.withoutReceipt == ["event_id": "$3957tyerfgewrf384", "room_id": "!slw48wfj34rtnrf:example.com", "prio": "normal", "unread": "3", "missed_calls": "1"],
                "\(android.message.jsonString)")
            #expect(android.message["android"]?["priority"] == "normal")
        }
    }

    @Test("a device APNs retired is rejected, so the homeserver drops its pusher; a pusher set again after is taken again")
    func retired() async throws {
        let gone = Date().addingTimeInterval(3600)
        try await Self.run(mock: { $0.script.unregister(token(7), since: gone) }) { harness, _ in
            let first = try await harness.call(.post, Self.notify, Self.body(devices: [Self.device(Self.iOS, token(7))]), key: "")
            #expect(first.json == ["rejected": []])
            try await Self.waitFor("the device retired") {
                try await harness.call(.get, "/v1/apps/\(appID)/devices/\(token(7))").json?["status"] == "unregistered"
            }
            var fields = Self.full
            fields["event_id"] = "$second"
            let again = try await harness.call(.post, Self.notify, Self.body(devices: [Self.device(Self.iOS, token(7))], fields), key: "")
            #expect(again.status == 200 && again.json == ["rejected": [.string(token(7))]], "\(again.json?.jsonString ?? "")")
            let listed = try await harness.call(.get, "/v1/apps/\(appID)/notifications").json?["notifications"]?.arrayItems ?? []
            #expect(listed.count == 1, "nothing queued for a rejected pushkey")

            // The app set its pusher again after APNs saw the token go: registered again.
            fields["event_id"] = "$third"
            let later = Int(gone.timeIntervalSince1970) + 60
            let renewed = try await harness.call(.post, Self.notify, Self.body(devices: [Self.device(Self.iOS, token(7), pushkeyTS: later)], fields), key: "")
            #expect(renewed.json == ["rejected": []], "\(renewed.json?.jsonString ?? "")")
            // (The mock still says the token is gone: the device is sent to, and retired again.)
            let queued = try await harness.call(.get, "/v1/apps/\(appID)/notifications").json?["notifications"]?.arrayItems ?? []
            #expect(queued.count == 2, "queued for the device registered again")
        }
    }

    // MARK: Router mode: the contract

    static func withMatrix(_ configuration: inout GatewayConfiguration) {
        configuration.apps[0].matrix = GatewayConfiguration.MatrixSettings(appIDs: [iOS: .apns])
    }

    @Test("malformed requests: 400 with the Matrix errcode naming what is wrong, and nothing stored")
    func malformed() async throws {
        try await RouterHarness.run(configure: Self.withMatrix) { api in
            let good = Self.device(Self.iOS, token(1)).jsonString
            let cases: [(body: String, errcode: String, names: String)] = [
                ("{not json", "M_NOT_JSON", "JSON"),
                ("", "M_NOT_JSON", "JSON"),
                ("[]", "M_BAD_JSON", "object"),
                ("{}", "M_BAD_JSON", "notification"),
                (#"{"notification": []}"#, "M_BAD_JSON", "notification"),
                (#"{"notification": {}}"#, "M_BAD_JSON", "notification.devices"),
                (#"{"notification": {"devices": []}}"#, "M_BAD_JSON", "notification.devices"),
                (#"{"notification": {"devices": [{"pushkey": "ab"}]}}"#, "M_BAD_JSON", "notification.devices[0].app_id"),
                (#"{"notification": {"devices": [{"app_id": "com.example.chat.ios"}]}}"#, "M_BAD_JSON", "notification.devices[0].pushkey"),
                (#"{"notification": {"devices": [{"app_id": 7, "pushkey": "ab"}]}}"#, "M_BAD_JSON", "notification.devices[0].app_id"),
                (#"{"notification": {"devices": [\#(good), {"app_id": "com.example.chat.ios", "pushkey": "ab", "pushkey_ts": "soon"}]}}"#, "M_BAD_JSON", "notification.devices[1].pushkey_ts"),
                (#"{"notification": {"prio": "urgent", "devices": [\#(good)]}}"#, "M_BAD_JSON", "notification.prio"),
                (#"{"notification": {"counts": {"unread": "3"}, "devices": [\#(good)]}}"#, "M_BAD_JSON", "notification.counts.unread"),
                (#"{"notification": {"event_id": 12, "devices": [\#(good)]}}"#, "M_BAD_JSON", "notification.event_id"),
                (#"{"notification": {"content": "hi", "devices": [\#(good)]}}"#, "M_BAD_JSON", "notification.content"),
                (#"{"notification": {"devices": [{"app_id": "com.example.chat.ios", "pushkey": "ab", "data": {"format": 1}}]}}"#, "M_BAD_JSON", "notification.devices[0].data.format"),
            ]
            for (body, errcode, names) in cases {
                let answer = try await api.call(.post, Self.notify, body: body, key: .some(nil))
                #expect(answer.status == 400 && answer.json?["errcode"]?.stringValue == errcode, "\(body) → \(answer.status) \(answer.json?.jsonString ?? "")")
                #expect(answer.json?["error"]?.stringValue?.contains(names) == true, "\(body) → \(answer.json?.jsonString ?? "")")
            }
            #expect(try await api.call(.get, "/v1/apps/\(appID)/devices").json?["devices"] == [], "a malformed request registers nothing")
            #expect(try await api.call(.get, "/v1/apps/\(appID)/notifications").json?["notifications"] == [], "and queues nothing")
        }
    }

    @Test("unknown app IDs and pushkeys that can never reach a device are rejected; the others are queued")
    func rejectedPushkeys() async throws {
        try await RouterHarness.run(configure: Self.withMatrix) { api in
            let devices: [JSONValue] = [
                Self.device("org.example.unknown", "cHVzaGtleQ=="),
                Self.device(Self.iOS, "not a token!"),
                Self.device(Self.iOS, token(2), data: ["default_payload": "not an object"]),
                Self.device(Self.iOS, Self.base64Pushkey(3)),
                Self.device(Self.iOS, token(4).uppercased()),
            ]
            let answer = try await api.call(.post, Self.notify, body: Self.body(devices: devices).jsonString, key: .some(nil))
            #expect(answer.status == 200 && answer.json == ["rejected": ["cHVzaGtleQ==", "not a token!", .string(token(2))]], "\(answer.json?.jsonString ?? "")")
            let registered = try await api.call(.get, "/v1/apps/\(appID)/devices").json?["devices"]?.arrayItems.compactMap { $0["token"]?.stringValue } ?? []
            #expect(Set(registered) == [token(3), token(4)], "hex and base64 pushkeys are the same tokens")
            #expect(try await api.call(.get, "/v1/apps/\(appID)/notifications").json?["notifications"]?.arrayItems.count == 2)

            // A count update alone (no event): the badge, as an alert push.
            let counts = Self.body(devices: [Self.device(Self.iOS, token(3))], ["counts": ["unread": 0]])
            #expect(try await api.call(.post, Self.notify, body: counts.jsonString, key: .some(nil)).json == ["rejected": []])
        }
    }

    @Test("without an app that has matrix, the route answers 404 M_UNRECOGNIZED")
    func notServed() async throws {
        try await RouterHarness.run { api in
            let answer = try await api.call(.post, Self.notify, body: Self.body(devices: [Self.device(Self.iOS, token(1))]).jsonString, key: .some(nil))
            #expect(answer.status == 404 && answer.json?["errcode"] == "M_UNRECOGNIZED", "\(answer.json?.jsonString ?? "")")
        }
    }

    // MARK: Values

    @Test("pushkeys: APNs hex or base64, Web Push's endpoint and auth from data")
    func pushkeys() throws {
        #expect(try MatrixPushkey.apnsToken(token(9)).hex == token(9))
        #expect(try MatrixPushkey.apnsToken(Self.base64Pushkey(9)).hex == token(9))
        #expect(try MatrixPushkey.apnsToken(Self.base64Pushkey(9).replacingOccurrences(of: "=", with: "")).hex == token(9))
        #expect(throws: (any Error).self) { try MatrixPushkey.apnsToken("***") }
        let device = MatrixNotification.Device(appID: "web", pushkey: "BNcRd", pushkeyTimestamp: nil, data: [:], tweaks: [:])
        guard case .unusable = MatrixPushkey.reading(device, platform: .webpush, webPush: .standard) else {
            Issue.record("a Web Push pushkey without data.endpoint and data.auth is unusable")
            return
        }
    }

    @Test("configuration: matrix.appIds must name platforms the app reaches, each Matrix app ID once")
    func configuration() throws {
        let scratch = try ScratchDirectory()
        _ = try scratch.write("AuthKey_ABC123DEFG.p8", ProviderKey.generate().pemRepresentation)
        let key = APIKey.generate(name: "backend", apps: ["shop"]).entry
        func file(_ matrix: String, second: String = "") throws -> String {
            let app = { (id: String, matrix: String) in
                #"{ "id": "\#(id)", "apns": { "topic": "com.example.\#(id)", "environment": "sandbox", "authKey": { "file": "AuthKey_ABC123DEFG.p8", "keyID": "ABC123DEFG", "teamID": "DEF123GHIJ" } }\#(matrix.isEmpty ? "" : ", \"matrix\": " + matrix) }"#
            }
            let apps = [app("shop", matrix)] + (second.isEmpty ? [] : [app("other", second)])
            return try scratch.write(
                "herald.json",
                #"{ "database": "sqlite:herald.db", "apps": [ \#(apps.joined(separator: ", ")) ], "apiKeys": [ { "name": "backend", "sha256": "\#(key.sha256Hex)", "apps": ["shop"] } ] }"#)
        }
        let loaded = try GatewayConfiguration.load(file: try file(#"{"appIds": {"com.example.chat.ios": "apns"}}"#))
        #expect(loaded.apps[0].matrix?.appIDs == ["com.example.chat.ios": .apns])
        for (matrix, second, field) in [
            (#"{"appIds": {"com.example.chat.android": "fcm"}}"#, "", "apps[0].matrix.appIds.com.example.chat.android"),
            (#"{"appIds": {"x": "carrier-pigeon"}}"#, "", "apps[0].matrix.appIds.x"),
            (#"{"appIds": {}}"#, "", "apps[0].matrix.appIds"),
            (#"{"appId": {}}"#, "", "apps[0].matrix.appId"),
            (#"{"appIds": {"x": "apns"}}"#, #"{"appIds": {"x": "apns"}}"#, "apps[1].matrix.appIds.x"),
        ] {
            let error = #expect(throws: ConfigurationError.self, "\(matrix)") { try GatewayConfiguration.load(file: try file(matrix, second: second)) }
            #expect(error?.field == field, "\(error?.description ?? "")")
        }
    }
}
