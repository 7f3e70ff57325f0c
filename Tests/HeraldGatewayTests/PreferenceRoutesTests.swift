import Crypto
import Foundation
import HeraldCore
import HeraldGateway
import HeraldStore
import HeraldTestSupport
import HeraldWebPush
import Hummingbird
import Testing

/// Users' preferences, the app's categories, and a device's own locale and preferences, in router
/// mode: every answer checked against the OpenAPI document by ``RouterHarness``, each bad input a
/// 400 whose message names the field.
@Suite("Preference routes", .timeLimit(.minutes(4)))
struct PreferenceRoutesTests {
    static let devices = "/v1/apps/\(appID)/devices"

    /// The router, the shop app with three categories (orders transactional, marketing capped,
    /// news opt-in), German as its default language, and browsers through Web Push.
    static func run(_ body: @escaping @Sendable (RouterHarness) async throws -> Void) async throws {
        try await RouterHarness.run(configure: { configuration in
            configuration.apps[0].categories = [
                "orders": NotificationCategory(transactional: true),
                "marketing": NotificationCategory(commercial: true, caps: [FrequencyCap(count: 1, windowSeconds: 600), FrequencyCap(count: 3, windowSeconds: 86400)]),
                "news": NotificationCategory(commercial: true, optIn: true),
            ]
            configuration.apps[0].defaultLanguage = "de"
            configuration.apps[0].webPush = GatewayConfiguration.WebPushSettings(key: VAPIDKey.generate(), subject: "mailto:ops@example.com", defaultURL: "https://shop.example.com/")
        }, body)
    }

    /// Expects a 400 whose message contains each of `words`.
    static func expectRefused(
        _ answer: (status: Int, json: JSONValue?, headers: HTTPFields), _ words: String..., sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let message = answer.json?["error"]?["message"]?.stringValue ?? ""
        #expect(answer.status == 400, "\(answer.status) \(message)", sourceLocation: sourceLocation)
        for word in words { #expect(message.contains(word), "'\(message)' should say '\(word)'", sourceLocation: sourceLocation) }
    }

    @Test("the app's categories and default language, for the console; an app without any has none")
    func categories() async throws {
        try await Self.run { api in
            let answer = try await api.call(.get, "/v1/apps/\(appID)/categories")
            #expect(answer.status == 200)
            #expect(answer.json?["defaultLanguage"] == "de")
            #expect(answer.json?["categories"]?["orders"] == ["transactional": true, "commercial": false, "optIn": false, "caps": []])
            #expect(answer.json?["categories"]?["news"] == ["transactional": false, "commercial": true, "optIn": true, "caps": []])
            #expect(answer.json?["categories"]?["marketing"]?["caps"] == [["count": 1, "windowSeconds": 600], ["count": 3, "windowSeconds": 86400]])
            let other = try await api.call(.get, "/v1/apps/other/categories", key: api.otherKey)
            #expect(other.json == ["categories": [:], "defaultLanguage": .null])
            #expect(try await api.call(.get, "/v1/apps/other/categories").status == 403)
            #expect(try await api.call(.get, "/v1/apps/nowhere/categories").status == 404)
        }
    }

    @Test("a user's preferences round trip: a boolean for every platform, an object per platform; replaced whole; defaults beside")
    func roundTrip() async throws {
        try await Self.run { api in
            // A user ID with @ and a space, percent-encoded in the path.
            let path = "/v1/apps/\(appID)/users/ann%40example.com%20x/preferences"
            let none = try await api.call(.get, path)
            #expect(none.status == 200)
            #expect(none.json == ["user": "ann@example.com x", "categories": [:], "defaults": ["marketing": true, "news": false], "updatedAt": .null])

            let put = try await api.call(.put, path, body: #"{"categories": {"marketing": false, "news": {"all": false, "webpush": true, "fcm": true}}}"#)
            #expect(put.status == 200, "\(put.json?.jsonString ?? "")")
            #expect(put.json?["categories"] == ["marketing": false, "news": ["all": false, "webpush": true, "fcm": true]])
            #expect(put.json?["defaults"] == ["marketing": true, "news": false])
            #expect(put.json?["updatedAt"]?.stringValue != nil)
            #expect(try await api.call(.get, path).json == put.json)

            let replaced = try await api.call(.put, path, body: #"{"categories": {"news": {"apns": true}}}"#)
            #expect(replaced.json?["categories"] == ["news": ["apns": true]], "marketing is back to its default")
            let cleared = try await api.call(.put, path, body: #"{"categories": {}}"#)
            #expect(cleared.json?["categories"] == [:])

            // Per app, and per user.
            #expect(try await api.call(.get, "/v1/apps/\(appID)/users/bob/preferences").json?["categories"] == [:])
            #expect(try await api.call(.get, path, key: api.otherKey).status == 403)
        }
    }

    @Test("bad preferences: an unknown or transactional category, an unknown platform, a value not a boolean, a bad user, each named")
    func badPreferences() async throws {
        try await Self.run { api in
            let path = "/v1/apps/\(appID)/users/ann/preferences"
            Self.expectRefused(try await api.call(.put, path, body: #"{"categories": {"promo": false}}"#), "categories.promo: unknown category (the app's: marketing, news, orders)")
            Self.expectRefused(try await api.call(.put, path, body: #"{"categories": {"orders": false}}"#), "categories.orders", "cannot opt out of transactional")
            Self.expectRefused(try await api.call(.put, path, body: #"{"categories": {"marketing": {"pager": false}}}"#), "categories.marketing.pager: unknown field")
            Self.expectRefused(try await api.call(.put, path, body: #"{"categories": {"marketing": {"apns": "no"}}}"#), "categories.marketing.apns: must be true or false")
            Self.expectRefused(try await api.call(.put, path, body: #"{"categories": {"marketing": "off"}}"#), "categories.marketing: must be true, false or an object")
            Self.expectRefused(try await api.call(.put, path, body: #"{"categories": {"marketing": null}}"#), "categories.marketing")
            Self.expectRefused(try await api.call(.put, path, body: #"{"categories": [1]}"#), "categories")
            Self.expectRefused(try await api.call(.put, path, body: #"{}"#), "categories: is required")
            Self.expectRefused(try await api.call(.put, path, body: #"{"categories": {}, "user": "x"}"#), "user: unknown field")
            Self.expectRefused(try await api.call(.put, path, body: ""), "empty")
            let long = String(repeating: "u", count: 257)
            Self.expectRefused(try await api.call(.get, "/v1/apps/\(appID)/users/\(long)/preferences"), "user:")
            Self.expectRefused(try await api.call(.put, "/v1/apps/\(appID)/users/\(long)/preferences", body: #"{"categories": {}}"#), "user:")
            // The other app has no categories: every name is unknown, and it says where they are set.
            Self.expectRefused(
                try await api.call(.put, "/v1/apps/other/users/ann/preferences", body: #"{"categories": {"marketing": false}}"#, key: api.otherKey),
                "categories.marketing: unknown category (the app's: none")
            #expect(try await api.call(.get, path).json?["categories"] == [:], "nothing was stored")
        }
    }

    @Test("a device's locale and preferences round trip through PUT: shown when set, kept when left out, cleared with \"\" and {}")
    func deviceFields() async throws {
        try await Self.run { api in
            let path = "\(Self.devices)/\(token(3))"
            let created = try await api.call(.put, path, body: #"{"user": "ann", "locale": "pt_BR", "preferences": {"marketing": false, "news": true}, "timeZone": "Europe/Lisbon"}"#)
            #expect(created.status == 201, "\(created.json?.jsonString ?? "")")
            #expect(created.json?["locale"] == "pt_BR" && created.json?["preferences"] == ["marketing": false, "news": true])
            #expect(try await api.call(.get, path).json == created.json)

            let kept = try await api.call(.put, path, body: #"{"badge": 1}"#)
            #expect(kept.json?["locale"] == "pt_BR" && kept.json?["preferences"] == ["marketing": false, "news": true])
            let changed = try await api.call(.put, path, body: #"{"locale": "de-AT", "preferences": {"news": false}}"#)
            #expect(changed.json?["locale"] == "de-AT" && changed.json?["preferences"] == ["news": false], "preferences are replaced whole")
            let cleared = try await api.call(.put, path, body: #"{"locale": "", "preferences": {}}"#)
            #expect(cleared.json?["locale"] == nil && cleared.json?["preferences"] == nil, "\(cleared.json?.jsonString ?? "")")
            #expect(cleared.json?["timeZone"] == "Europe/Lisbon")

            Self.expectRefused(try await api.call(.put, path, body: #"{"locale": "english please"}"#), "locale:", "BCP 47")
            Self.expectRefused(try await api.call(.put, path, body: #"{"locale": 7}"#), "locale: must be a string")
            Self.expectRefused(try await api.call(.put, path, body: #"{"preferences": {"orders": false}}"#), "preferences.orders", "transactional")
            Self.expectRefused(try await api.call(.put, path, body: #"{"preferences": {"promo": false}}"#), "preferences.promo: unknown category")
            Self.expectRefused(try await api.call(.put, path, body: #"{"preferences": {"marketing": "no"}}"#), "preferences.marketing: must be true or false")
            Self.expectRefused(try await api.call(.put, path, body: #"{"preferences": {"marketing": {"apns": false}}}"#), "preferences.marketing: must be true or false")
            Self.expectRefused(try await api.call(.put, path, body: #"{"preferences": ["marketing"]}"#), "preferences")
        }
    }

    @Test("a bulk import's lines and a browser's subscription take locale and preferences; a bad one is reported by its field")
    func importAndWebPush() async throws {
        try await Self.run { api in
            let lines = [
                #"{"token": "\#(token(10))", "locale": "fr-CA", "preferences": {"news": true}}"#,
                #"{"token": "\#(token(11))", "preferences": {"orders": false}}"#,
                #"{"token": "\#(token(12))", "locale": "x"}"#,
                #"{"token": "\#(token(13))", "locale": "zh-Hant-TW"}"#,
            ].joined(separator: "\n")
            let imported = try await api.call(.post, Self.devices, body: lines, contentType: "application/x-ndjson")
            #expect(imported.status == 200 && imported.json?.count("upserted") == 2, "\(imported.json?.jsonString ?? "")")
            let errors = imported.json?["errors"]?.arrayItems ?? []
            #expect(errors.map { $0.count("line") } == [2, 3])
            #expect(errors.first?["message"]?.stringValue?.contains("preferences.orders") == true, "\(errors)")
            #expect(errors.last?["message"]?.stringValue?.contains("locale:") == true, "\(errors)")
            let first = try await api.call(.get, "\(Self.devices)/\(token(10))")
            #expect(first.json?["locale"] == "fr-CA" && first.json?["preferences"] == ["news": true])
            #expect(try await api.call(.get, "\(Self.devices)/\(token(13))").json?["locale"] == "zh-Hant-TW")

            let keys: JSONValue = [
                "p256dh": .string(Base64URL.encode(Array(P256.KeyAgreement.PrivateKey().publicKey.x963Representation))),
                "auth": .string(Base64URL.encode([UInt8](repeating: 7, count: 16))),
            ]
            let subscription: JSONValue = ["endpoint": "https://web.push.apple.com/QGuQyavXutnMH", "keys": keys, "locale": "it", "preferences": ["marketing": false]]
            let browser = try await api.call(.post, "/v1/apps/\(appID)/webpush/subscriptions", body: subscription.jsonString)
            #expect(browser.status == 201, "\(browser.json?.jsonString ?? "")")
            #expect(browser.json?["locale"] == "it" && browser.json?["preferences"] == ["marketing": false])
            var refused = subscription.objectValue!
            refused["preferences"] = ["orders": false]
            Self.expectRefused(try await api.call(.post, "/v1/apps/\(appID)/webpush/subscriptions", body: JSONValue.object(refused).jsonString), "preferences.orders")
            refused["preferences"] = nil
            refused["locale"] = "?"
            Self.expectRefused(try await api.call(.post, "/v1/apps/\(appID)/webpush/subscriptions", body: JSONValue.object(refused).jsonString), "locale:")

            // A browser's subscription in an import, the same way.
            var line = subscription.objectValue!
            line["endpoint"] = "https://web.push.apple.com/another"
            line["locale"] = "nl"
            let again = try await api.call(.post, Self.devices, body: JSONValue.object(line).jsonString, contentType: "application/x-ndjson")
            #expect(again.json?.count("upserted") == 1, "\(again.json?.jsonString ?? "")")
            let browsers = try await api.call(.get, "\(Self.devices)?platform=webpush").json?["devices"]?.arrayItems ?? []
            #expect(Set(browsers.compactMap { $0["locale"]?.stringValue }) == ["it", "nl"])
        }
    }
}
