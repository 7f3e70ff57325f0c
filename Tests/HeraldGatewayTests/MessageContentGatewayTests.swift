import Foundation
import HeraldAPNSMock
import HeraldCore
import HeraldFCMMock
@testable import HeraldGateway
import HeraldStore
import HeraldTestSupport
import HeraldWebPushMock
import Testing

/// Templates rendered per device's language, preferences, frequency caps and digests, through
/// the gateway's API to the mock APNs: what each phone is shown, and what is never sent.
@Suite("Templates, preferences, caps and digests", .timeLimit(.minutes(4)))
struct MessageContentGatewayTests {
    /// The app's categories: orders transactional; marketing commercial, opt-out, at most 2 in 10 minutes.
    static func configure(_ configuration: inout GatewayConfiguration) {
        var app = configuration.apps[0]
        app.categories = [
            "orders": NotificationCategory(transactional: true),
            "marketing": NotificationCategory(commercial: true, caps: [FrequencyCap(count: 2, windowSeconds: 600)]),
            "news": NotificationCategory(commercial: true, optIn: true),
        ]
        app.defaultLanguage = "en"
        configuration.apps = [app]
    }

    static let shipped: JSONValue = [
        "defaultLanguage": "en",
        "variants": [
            "en": ["title": "Order {{order}} shipped", "body": "Hi {{name | default: \"there\"}}"],
            "de": ["title": "Bestellung {{order}} verschickt", "body": "Hallo {{name | default: \"du\"}}"],
            "pt": ["title": "Pedido {{order}} enviado", "body": "Olá {{name | default: \"você\"}}"],
        ],
        "data": ["orderID": "{{order}}"],
    ]

    static func storeTemplate(_ harness: GatewayHarness, name: String, _ template: JSONValue) async throws {
        let parsed = try NotificationTemplate.parse(template)
        _ = try await harness.gateway.store.putTemplate(app: appID, name: name, body: parsed.encoded())
    }

    static func payloads(_ harness: GatewayHarness) -> [String: [JSONValue]] {
        var payloads: [String: [JSONValue]] = [:]
        for record in harness.mock.accepted { payloads[record.token, default: []].append((try? JSONValue(parsing: record.payload)) ?? .null) }
        return payloads
    }

    @Test("a template goes to each device in its language (pt_BR → pt, fr → the app's en), with each user's own data, JSON-escaped", arguments: Backend.allCases)
    func localized(backend: Backend) async throws {
        try await GatewayHarness.run(backend, gateway: Self.configure) { harness in
            try await Self.storeTemplate(harness, name: "order_shipped", Self.shipped)
            for (number, locale) in [(1, "de-AT"), (2, "pt_BR"), (3, nil), (4, "fr")] {
                var fields: [String: JSONValue] = ["user": .string("u\(number)")]
                if let locale { fields["locale"] = .string(locale) }
                let answer = try await harness.call(.put, "/v1/apps/\(appID)/devices/\(token(number))", .object(fields))
                #expect(answer.status == 201, "\(answer.json?.jsonString ?? "")")
            }
            let hostile = "Jörg \"J\" \\ </script>\n"
            let sent = try await harness.call(.post, "/v1/apps/\(appID)/notifications", [
                "to": ["users": ["u1", "u2", "u3", "u4"]], "template": "order_shipped", "data": ["order": "A-1"],
                "dataByUser": ["u1": ["name": .string(hostile)]], "category": "orders",
            ])
            #expect(sent.status == 202, "\(sent.json?.jsonString ?? "")")
            let id = try #require(sent.json?["id"]?.stringValue)
            let done = try await harness.waitUntilDone(id)
            #expect(done.count("accepted") == 4, "\(done.jsonString)")
            #expect(done["template"]?["name"]?.stringValue == "order_shipped" && done["template"]?["version"]?.intValue == 1)
            let payloads = Self.payloads(harness)
            func alert(_ number: Int) -> (String?, String?) {
                let alert = payloads[token(number)]?.first?["aps"]?["alert"]
                return (alert?["title"]?.stringValue, alert?["body"]?.stringValue)
            }
            #expect(alert(1) == ("Bestellung A-1 verschickt", "Hallo \(hostile)"))
            #expect(alert(2) == ("Pedido A-1 enviado", "Olá você"))
            #expect(alert(3) == ("Order A-1 shipped", "Hi there"))
            #expect(alert(4) == ("Order A-1 shipped", "Hi there"))
            #expect(payloads[token(1)]?.first?["orderID"]?.stringValue == "A-1")

            // Editing the template changes later notifications only.
            var edited = Self.shipped
            if case .object(var root) = edited, case .object(var variants)? = root["variants"] {
                variants["en"] = ["title": "Shipped: {{order}}", "body": "Hi"]
                root["variants"] = .object(variants)
                edited = .object(root)
            }
            try await Self.storeTemplate(harness, name: "order_shipped", edited)
            let again = try #require(try await harness.call(.post, "/v1/apps/\(appID)/notifications", [
                "to": ["users": ["u3"]], "template": "order_shipped", "data": ["order": "A-2"],
            ]).json?["id"]?.stringValue)
            let second = try await harness.waitUntilDone(again)
            #expect(second["template"]?["version"]?.intValue == 2)
            #expect(Self.payloads(harness)[token(3)]?.last?["aps"]?["alert"]?["title"]?.stringValue == "Shipped: A-2")
        }
    }

    @Test("one template on every platform: an iPhone in German, an Android phone in Portuguese with its click action, a browser in English with its click URL", arguments: Backend.allCases)
    func everyPlatform(backend: Backend) async throws {
        try await FCMGatewayTests.run(backend, browsers: true) { harness, fcm, browsers in
            try await Self.storeTemplate(harness, name: "order_shipped", [
                "defaultLanguage": "en",
                "variants": [
                    "en": ["title": "Order {{order}} shipped", "body": "Hi", "navigate": "https://shop.example/o/{{order}}", "clickAction": "OPEN_{{order}}"],
                    "de": ["title": "Bestellung {{order}} verschickt", "body": "Hallo"],
                    "pt": ["title": "Pedido {{order}} enviado", "body": "Olá", "clickAction": "ABRIR_{{order}}"],
                ],
            ])
            let phone = try await harness.call(.put, "/v1/apps/\(appID)/devices/\(token(1))", ["user": "ann", "locale": "de-CH"])
            #expect(phone.status == 201, "\(phone.json?.jsonString ?? "")")
            let android = FCMGatewayTests.registrationToken(1)
            let registered = try await harness.call(.put, "/v1/apps/\(appID)/devices/\(android)", ["platform": "fcm", "user": "ann", "locale": "pt_BR"])
            #expect(registered.status == 201 && registered.json?["locale"]?.stringValue == "pt_BR", "\(registered.json?.jsonString ?? "")")
            let safari = browsers.subscribe(applicationServerKey: Array(WebPushGatewayTests.vapid.publicKey.x963Representation))
            _ = try await WebPushGatewayTests.register(safari, user: "ann", harness: harness)

            let sent = try await harness.call(.post, "/v1/apps/\(appID)/notifications", ["to": ["users": ["ann"]], "template": "order_shipped", "data": ["order": "7"]])
            let done = try await harness.waitUntilDone(try #require(sent.json?["id"]?.stringValue))
            #expect(done.count("accepted") == 3, "\(done.jsonString)")
            let apns = (try? JSONValue(parsing: harness.mock.accepted.first?.payload ?? []))?["aps"]?["alert"]?["title"]?.stringValue
            #expect(apns == "Bestellung 7 verschickt")
            let message = try #require(fcm.received.first)
            #expect(message.title == "Pedido 7 enviado" && message.body == "Olá", "\(message.message.jsonString)")
            #expect(message.message["android"]?["notification"]?["click_action"]?.stringValue == "ABRIR_7", "\(message.message.jsonString)")
            let browser = try #require(browsers.received(for: safari).first?.plaintext)
            let shown = try JSONValue(parsing: browser)
            #expect(shown.jsonString.contains("Order 7 shipped") && shown.jsonString.contains("https://shop.example/o/7"), "\(shown.jsonString)")
        }
    }

    @Test("categories in the file: read as given; a cap of 0, a window over the retention, transactional with caps or opt-in, an unknown field are refused by path")
    func categoriesConfiguration() throws {
        let scratch = try ScratchDirectory()
        try scratch.write("AuthKey.p8", ProviderKey.generate(keyID: "KEY1234567", teamID: "TEAM123456").pemRepresentation)
        func load(_ categories: String, queue: String = "") throws -> GatewayConfiguration.App {
            let file = try scratch.write(
                "herald.json",
                #"{"database": "sqlite:h.db", \#(queue)"apps": [{"id": "shop", "topic": "com.example.shop", "environment": "production", "authKey": {"file": "AuthKey.p8", "keyID": "KEY1234567", "teamID": "TEAM123456"}, "defaultLanguage": "pt-BR", "categories": \#(categories)}], "apiKeys": []}"#)
            return try #require(try GatewayConfiguration.load(file: file).apps.first)
        }
        let app = try load(#"{"orders": {"transactional": true}, "marketing": {"commercial": true, "caps": [{"count": 1, "windowSeconds": 600}, {"count": 3, "windowSeconds": 86400}]}, "news": {"commercial": true, "optIn": true}}"#)
        #expect(app.defaultLanguage == "pt-BR")
        #expect(app.categories["marketing"]?.caps == [FrequencyCap(count: 1, windowSeconds: 600), FrequencyCap(count: 3, windowSeconds: 86400)])
        #expect(app.categories["orders"]?.transactional == true && app.categories["news"]?.optIn == true)
        for (categories, queue, expected) in [
            (#"{"m": {"caps": [{"count": 0, "windowSeconds": 60}]}}"#, "", "categories.m.caps[0].count"),
            (#"{"m": {"caps": [{"count": 1, "windowSeconds": 7200}]}}"#, #""queue": {"retentionSeconds": 3600}, "#, "apps[0].categories.m.caps[0].windowSeconds"),
            (#"{"o": {"transactional": true, "caps": [{"count": 1, "windowSeconds": 60}]}}"#, "", "categories.o.caps"),
            (#"{"o": {"transactional": true, "optIn": true}}"#, "", "categories.o.optIn"),
            (#"{"m": {"commercial": true, "limit": 3}}"#, "", "categories.m.limit"),
            (#"{"Bad Name": {}}"#, "", "categories"),
        ] {
            do {
                _ = try load(categories, queue: queue)
                Issue.record("\(categories) was taken")
            } catch {
                #expect("\(error)".contains(expected), "\(error)")
            }
        }
    }

    @Test("bad input names the field: unknown template, missing variable, unknown category, digest not to users, critical without a category", arguments: [Backend.sqlite])
    func refusals(backend: Backend) async throws {
        try await GatewayHarness.run(backend, gateway: Self.configure) { harness in
            try await Self.storeTemplate(harness, name: "order_shipped", Self.shipped)
            let cases: [(JSONValue, String)] = [
                (["to": ["users": ["u1"]], "template": "nope"], "template"),
                (["to": ["users": ["u1"]], "template": "order_shipped"], "order"),
                (["to": ["users": ["u1"]], "template": "order_shipped", "data": ["order": "1"], "category": "sales"], "category"),
                (["to": ["tokens": [.string(token(1))]], "payload": ["aps": ["alert": "x"]], "digest": ["key": "k", "windowSeconds": 60]], "digest"),
                (["to": ["users": ["u1"]], "payload": ["aps": ["alert": "x"]], "critical": true], "critical"),
                (["to": ["users": ["u1"]], "payload": ["aps": ["alert": "x"]], "digest": ["key": "k", "windowSeconds": 0]], "digest.windowSeconds"),
            ]
            for (body, field) in cases {
                let answer = try await harness.call(.post, "/v1/apps/\(appID)/notifications", body)
                #expect(answer.status == 400, "\(body.jsonString): \(answer.status)")
                #expect(answer.json?["error"]?["message"]?.stringValue?.contains(field) == true, "\(body.jsonString): \(answer.json?.jsonString ?? "")")
            }
        }
    }

    @Test("opted-out devices and capped users are never sent, counted and listed; transactional and critical pass", arguments: Backend.allCases)
    func preferencesAndCaps(backend: Backend) async throws {
        try await GatewayHarness.run(backend, gateway: Self.configure) { harness in
            let store = harness.gateway.store
            // u1 opted out of marketing; u2 opted out on this platform only; u3's device itself
            // opted out; u4 has two devices and no choice; device 6 has no user.
            try await harness.register([1, 2, 3, 4, 5, 6], user: { $0 == 6 ? nil : "u\(min($0, 4))" })
            try await store.setPreferences(UserPreferences(user: "u1", categories: ["marketing": .init(all: false)]), app: appID)
            try await store.setPreferences(UserPreferences(user: "u2", categories: ["marketing": .init(platforms: [.apns: false])]), app: appID)
            var own = try DeviceRegistration(token: token(3))
            try own.setPreferences(["marketing": false])
            try await store.register(own, app: appID)

            var ids: [String] = []
            for round in 0..<3 {
                ids.append(try await harness.send(["all": true], alert: "sale \(round)", extra: ["category": "marketing"]))
                _ = try await harness.waitUntilDone(ids.last!)
            }
            let first = try await harness.waitUntilDone(ids[0])
            #expect(first.count("accepted") == 3 && first.count("optedOut") == 3 && first.count("capped") == 0, "\(first.jsonString)")
            let third = try await harness.waitUntilDone(ids[2])
            #expect(third.count("accepted") == 0 && third.count("optedOut") == 3 && third.count("capped") == 3, "\(third.jsonString)")
            #expect(third.count("targeted") == 6 && third.count("pending") == 0)
            #expect(harness.received(alert: "sale 2").isEmpty)
            #expect(harness.received(alert: "sale 0") == [token(4): 1, token(5): 1, token(6): 1])

            // A critical one passes the cap; a transactional one ignores preferences and caps.
            let critical = try await harness.send(["all": true], alert: "critical", extra: ["category": "marketing", "critical": true])
            #expect(try await harness.waitUntilDone(critical).count("accepted") == 3)
            let order = try await harness.send(["all": true], alert: "order", extra: ["category": "orders"])
            #expect(try await harness.waitUntilDone(order).count("accepted") == 6)
            // Opt-in: nobody but who opted in.
            try await store.setPreferences(UserPreferences(user: "u4", categories: ["news": .init(all: true)]), app: appID)
            let news = try await harness.send(["users": ["u1", "u4"]], alert: "news", extra: ["category": "news"])
            let newsDone = try await harness.waitUntilDone(news)
            #expect(newsDone.count("accepted") == 2 && newsDone.count("optedOut") == 1, "\(newsDone.jsonString)")
            let listed = try await harness.call(.get, "/v1/notifications/\(news)/deliveries?outcome=optedOut")
            #expect(listed.status == 200 && listed.json?.jsonString.contains(token(1)) == true, "\(listed.json?.jsonString ?? "")")
        }
    }

    @Test("a digest: the first notification holds the window, later ones fold into it; one push per user with the count and items, collapsed by key", arguments: Backend.allCases)
    func digest(backend: Backend) async throws {
        try await GatewayHarness.run(backend, gateway: Self.configure) { harness in
            try await Self.storeTemplate(harness, name: "comments", [
                "defaultLanguage": "en",
                "variants": ["en": ["title": "{{count}} new comments", "body": "{{items | join: \" / \"}}"]],
            ])
            try await harness.register([1, 2], user: { _ in "u1" })
            var ids: [String] = []
            for name in ["Ann", "Bob", "Cy"] {
                let answer = try await harness.call(.post, "/v1/apps/\(appID)/notifications", [
                    "to": ["users": ["u1"]], "template": "comments", "digest": ["key": "comments:post-42", "windowSeconds": 2, "item": .string(name)],
                ])
                #expect(answer.status == 202, "\(answer.json?.jsonString ?? "")")
                ids.append(try #require(answer.json?["id"]?.stringValue))
            }
            for id in ids.dropFirst() {
                let folded = try await harness.waitUntilDone(id)
                #expect(folded.count("digested") == 2 && folded.count("accepted") == 0, "\(folded.jsonString)")
            }
            let held = try await harness.waitUntilDone(ids[0], timeout: .seconds(30))
            #expect(held.count("accepted") == 2, "\(held.jsonString)")
            let records = harness.mock.accepted
            #expect(records.count == 2, "one push per device")
            for record in records {
                let alert = (try? JSONValue(parsing: record.payload))?["aps"]?["alert"]
                #expect(alert?["title"]?.stringValue == "3 new comments" && alert?["body"]?.stringValue == "Ann / Bob / Cy", "\(alert?.jsonString ?? "")")
                #expect(record.collapseID == "comments:post-42")
            }
        }
    }

    @Test("two gateways on one PostgreSQL, 20 notifications at once to one user capped at 2: exactly 2 are sent")
    func capAcrossProcesses() async throws {
        try await GatewayHarness.prepare(.postgres, gateway: Self.configure) { configuration, mock, key in
            try await GatewayHarness.run(configuration, mock: mock, key: key) { first in
                try await withGateway(configuration) { _, port in
                    try await first.against(port: port) { second in
                        try await first.register([1, 2], user: { _ in "u1" })
                        let ids = try await withThrowingTaskGroup(of: String.self) { group in
                            for round in 0..<20 {
                                let harness = round.isMultiple(of: 2) ? first : second
                                group.addTask { try await harness.send(["users": ["u1"]], alert: "offer \(round)", extra: ["category": "marketing"]) }
                            }
                            return try await group.reduce(into: []) { $0.append($1) }
                        }
                        var accepted = 0
                        var capped = 0
                        for id in ids {
                            let done = try await first.waitUntilDone(id)
                            accepted += done.count("accepted") ?? 0
                            capped += done.count("capped") ?? 0
                        }
                        #expect(accepted == 4 && capped == 36, "2 notifications × 2 devices sent; the other 18 capped on both devices")
                        #expect(mock.accepted.count == 4)
                        #expect(Set(mock.accepted.compactMap { (try? JSONValue(parsing: $0.payload))?.withoutReceipt.jsonString }).count == 2, "both devices got the same two")
                    }
                }
            }
        }
    }
}
