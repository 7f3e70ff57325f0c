import Foundation
import HeraldCore
import HeraldGateway
import HeraldTestSupport
import Hummingbird
import Testing

/// The template routes in router mode: stored, versioned, listed, previewed and deleted, every
/// answer checked against the OpenAPI document by ``RouterHarness``, and each bad input a 4xx
/// whose message names the field.
@Suite("Template routes", .timeLimit(.minutes(4)))
struct TemplateRoutesTests {
    static let templates = "/v1/apps/\(appID)/templates"

    static let shipping = #"""
        {"defaultLanguage": "en",
         "variants": {"en": {"title": "Your order {{order}} shipped", "body": "Hi {{ name | default: \"there\" }}",
                             "navigate": "https://shop.example/o/{{order}}", "clickAction": "OPEN_ORDER"},
                      "de": {"title": "Bestellung {{order}} ist unterwegs", "body": "Hallo {{name}}"},
                      "pt-br": {"body": "Pedido {{order}}"}},
         "data": {"orderID": "{{order}}", "kind": "shipping"}}
        """#

    /// The router, the shop app's default language German.
    static func run(_ body: @escaping @Sendable (RouterHarness) async throws -> Void) async throws {
        try await RouterHarness.run(configure: { $0.apps[0].defaultLanguage = "de" }, body)
    }

    /// Expects a 4xx `status` whose message contains each of `words`.
    static func expectRefused(
        _ answer: (status: Int, json: JSONValue?, headers: HTTPFields), _ status: Int, _ words: String..., sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let message = answer.json?["error"]?["message"]?.stringValue ?? ""
        #expect(answer.status == status, "\(answer.status) \(message)", sourceLocation: sourceLocation)
        for word in words { #expect(message.contains(word), "'\(message)' should say '\(word)'", sourceLocation: sourceLocation) }
    }

    @Test("stored (version 1, then 2), read, listed a page at a time, deleted (204, then 404 templateNotFound)")
    func lifecycle() async throws {
        try await Self.run { api in
            let stored = try await api.call(.put, "\(Self.templates)/shipping", body: Self.shipping)
            #expect(stored.status == 200, "\(stored.json?.jsonString ?? "")")
            let json = try #require(stored.json)
            #expect(json["name"] == "shipping" && json.count("version") == 1 && json["defaultLanguage"] == "en")
            #expect(json["languages"] == ["de", "en", "pt-BR"], "canonical tags, sorted")
            #expect(json["variables"] == ["name", "order"])
            #expect(json["requiredVariables"] == ["name", "order"], "name has a default in en, none in de")
            #expect(json["template"]?["variants"]?["pt-BR"]?["body"] == "Pedido {{order}}", "the stored, canonical form")
            #expect(json["template"]?["data"]?["kind"] == "shipping")
            #expect(json["updatedAt"]?.stringValue != nil)

            let replaced = try await api.call(.put, "\(Self.templates)/shipping", body: #"{"defaultLanguage": "en", "variants": {"en": {"body": "Shipped"}}}"#)
            #expect(replaced.status == 200 && replaced.json?.count("version") == 2)
            #expect(replaced.json?["requiredVariables"] == [] && replaced.json?["languages"] == ["en"])
            let read = try await api.call(.get, "\(Self.templates)/shipping")
            #expect(read.status == 200 && read.json == replaced.json)

            for name in ["a.welcome", "b_reminder", "c-digest"] {
                #expect(try await api.call(.put, "\(Self.templates)/\(name)", body: Self.shipping).status == 200)
            }
            var listed: [String] = []
            var after: String?
            for _ in 0..<10 {
                let page = try await api.call(.get, Self.templates + "?limit=3" + (after.map { "&after=\($0)" } ?? ""))
                #expect(page.status == 200)
                listed += page.json?["templates"]?.arrayItems.compactMap { $0["name"]?.stringValue } ?? []
                after = page.json?["next"]?.stringValue
                if after == nil { break }
            }
            #expect(listed == ["a.welcome", "b_reminder", "c-digest", "shipping"], "by name, each once")
            let second = try await api.call(.get, Self.templates + "?limit=2&cursor=b_reminder")
            #expect(second.json?["templates"]?.arrayItems.compactMap { $0["name"]?.stringValue } == ["c-digest", "shipping"])
            #expect(second.json?["next"] == .null)

            #expect(try await api.call(.delete, "\(Self.templates)/shipping").status == 204)
            let gone = try await api.call(.delete, "\(Self.templates)/shipping")
            Self.expectRefused(gone, 404, "shipping")
            #expect(gone.json?["error"]?["code"] == "templateNotFound")
            let missing = try await api.call(.get, "\(Self.templates)/shipping")
            #expect(missing.status == 404 && missing.json?["error"]?["code"] == "templateNotFound")
            #expect(try await api.call(.post, "\(Self.templates)/shipping/preview", body: "{}").json?["error"]?["code"] == "templateNotFound")

            // Another app's key, and an app that is not there.
            #expect(try await api.call(.get, Self.templates, key: api.otherKey).status == 403)
            #expect(try await api.call(.put, "\(Self.templates)/x", body: Self.shipping, key: api.otherKey).status == 403)
            #expect(try await api.call(.get, "/v1/apps/nowhere/templates").status == 404)
            #expect(try await api.call(.get, "/v1/apps/other/templates", key: api.otherKey).json?["templates"] == [], "templates are per app")
        }
    }

    @Test("a preview: the locale's variant, else the app's default language; the payload, webPush and fcm as a notification's")
    func preview() async throws {
        try await Self.run { api in
            #expect(try await api.call(.put, "\(Self.templates)/shipping", body: Self.shipping).status == 200)
            let preview = "\(Self.templates)/shipping/preview"

            let german = try await api.call(.post, preview, body: #"{"locale": "de-AT", "data": {"order": 42, "name": "Eva"}}"#)
            #expect(german.status == 200, "\(german.json?.jsonString ?? "")")
            #expect(german.json?["language"] == "de")
            #expect(german.json?["payload"] == ["aps": ["alert": ["title": "Bestellung 42 ist unterwegs", "body": "Hallo Eva"]], "orderID": "42", "kind": "shipping"])
            #expect(german.json?["webPush"] == nil && german.json?["fcm"] == nil, "the German variant has no navigate or clickAction")

            let english = try await api.call(.post, preview, body: #"{"locale": "en_GB", "data": {"order": "A-7"}, "payload": {"aps": {"sound": "default"}, "orderID": "old"}}"#)
            #expect(english.json?["language"] == "en")
            #expect(english.json?["payload"]?["aps"] == ["sound": "default", "alert": ["title": "Your order A-7 shipped", "body": "Hi there"]])
            #expect(english.json?["payload"]?["orderID"] == "A-7", "the template's data over the payload's")
            #expect(english.json?["webPush"] == ["navigate": "https://shop.example/o/A-7"])
            #expect(english.json?["fcm"] == ["message": ["android": ["notification": ["click_action": "OPEN_ORDER"]]]])

            // No locale, or one without a variant: the app's default language (de), not the template's (en).
            let french = try await api.call(.post, preview, body: #"{"locale": "fr-FR", "data": {"order": 1, "name": "Zoé"}}"#)
            #expect(french.json?["language"] == "de")
            #expect(try await api.call(.post, preview, body: #"{"data": {"order": 1, "name": "Zoé"}}"#).json?["language"] == "de")
            #expect(try await api.call(.post, preview, body: #"{"locale": "pt-BR", "data": {"order": 5}}"#).json?["payload"]?["aps"]?["alert"] == ["body": "Pedido 5"])

            // A render error names the variable and the field.
            Self.expectRefused(try await api.call(.post, preview, body: #"{"locale": "de", "data": {"order": 1}}"#), 400, "name", "variants.de.body")
            Self.expectRefused(try await api.call(.post, preview, body: ""), 400, "order")
            Self.expectRefused(try await api.call(.post, preview, body: #"{"locale": "en", "data": {"order": {"id": 1}}}"#), 400, "order")
            Self.expectRefused(try await api.call(.post, preview, body: #"{"locale": "en", "data": {"order": "a b"}}"#), 400, "variants.en.navigate")
            Self.expectRefused(try await api.call(.post, preview, body: #"{"locale": "not a tag", "data": {}}"#), 400, "locale:")
            Self.expectRefused(try await api.call(.post, preview, body: #"{"data": [1]}"#), 400, "data:")
            Self.expectRefused(try await api.call(.post, preview, body: #"{"payload": "x"}"#), 400, "payload:")
            Self.expectRefused(try await api.call(.post, preview, body: #"{"variables": {}}"#), 400, "variables: unknown field")
        }
    }

    @Test("a hostile value (quotes, backslashes, </script>, a line break) previews as valid JSON holding exactly that text")
    func hostileValue() async throws {
        try await Self.run { api in
            let template = #"{"defaultLanguage": "en", "variants": {"en": {"title": "{{name}}", "body": "said: {{name}}"}}, "data": {"who": "{{name}}"}}"#
            #expect(try await api.call(.put, "\(Self.templates)/echo", body: template).status == 200)
            let hostile = "\"quoted\" back\\slash </script><script>alert(1)</script> \u{2028}line\nbreak {{name}}"
            let body = JSONValue.object(["data": .object(["name": .string(hostile)])]).jsonString
            let answer = try await api.call(.post, "\(Self.templates)/echo/preview", body: body)
            #expect(answer.status == 200)
            let payload = try #require(answer.json?["payload"], "the answer is valid JSON")
            #expect(payload["aps"]?["alert"]?["title"]?.stringValue == hostile)
            #expect(payload["aps"]?["alert"]?["body"]?.stringValue == "said: " + hostile)
            #expect(payload["who"]?.stringValue == hostile, "a value is text: its {{name}} is not rendered again")
        }
    }

    @Test("bad templates and names: a 4xx whose message names the field")
    func badInput() async throws {
        try await Self.run { api in
            let long = String(repeating: "x", count: 2000)
            let languages = ["da", "de", "en", "es", "fr", "it", "nl", "pt", "sv"]
            let oversized = #"{"defaultLanguage": "en", "variants": {"# + languages.map { #""\#($0)": {"body": "\#(long)"}"# }.joined(separator: ", ") + "}}"
            let cases: [(HTTPRequest.Method, String, String?, Int, [String])] = [
                (.put, "shipping", #"{"defaultLanguage": "en", "variants": {"en": {"body": "Hi"}, "de": {"body": "Hallo {{name"}}}"#, 400, ["variants.de.body: unclosed"]),
                (.put, "shipping", #"{"variants": {"en": {"body": "Hi"}}}"#, 400, ["defaultLanguage: is required"]),
                (.put, "shipping", #"{"defaultLanguage": "fr", "variants": {"en": {"body": "Hi"}}}"#, 400, ["defaultLanguage", "no variant"]),
                (.put, "shipping", #"{"defaultLanguage": "en", "variants": {}}"#, 400, ["variants"]),
                (.put, "shipping", #"{"defaultLanguage": "en", "variants": {"en": {"body": "Hi"}}, "colour": 1}"#, 400, ["colour: unknown field"]),
                (.put, "shipping", #"{"defaultLanguage": "en", "variants": {"en": {"body": "Hi {{x | upper}}"}}}"#, 400, ["variants.en.body"]),
                (.put, "shipping", #"{"defaultLanguage": "en", "variants": {"en": {"body": "Hi"}}, "data": {"aps": {}}}"#, 400, ["data.aps"]),
                (.put, "shipping", "", 400, ["empty"]),
                (.put, "shipping", oversized, 400, ["16384"]),
                (.put, "shipping", "{\"defaultLanguage\": \"en\", \"variants\": {\"en\": {\"body\": \"" + String(repeating: "y", count: 70_000) + "\"}}}", 413, ["over"]),
                (.put, "has~tilde", Self.shipping, 400, ["name:"]),
                (.put, String(repeating: "n", count: 65), Self.shipping, 400, ["name:", "64"]),
                (.get, "has~tilde", nil, 400, ["name:"]),
                (.delete, "has~tilde", nil, 400, ["name:"]),
                (.get, "?limit=101", nil, 400, ["limit"]),
                (.get, "?limit=0", nil, 400, ["limit"]),
            ]
            for (method, suffix, body, status, words) in cases {
                let path = suffix.hasPrefix("?") ? Self.templates + suffix : "\(Self.templates)/\(suffix)"
                let answer = try await api.call(method, path, body: body)
                let message = answer.json?["error"]?["message"]?.stringValue ?? ""
                #expect(answer.status == status, "\(method) \(suffix.prefix(40)) \(body?.prefix(60) ?? ""): \(answer.status) \(message)")
                for word in words { #expect(message.contains(word), "\(body.map { String($0.prefix(60)) } ?? suffix): '\(message)' should say '\(word)'") }
            }
            #expect(try await api.call(.get, Self.templates).json?["templates"] == [], "nothing was stored")
        }
    }
}
