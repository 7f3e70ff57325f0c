import Foundation
import HeraldCore
import HeraldFCM
import Testing

@testable import HeraldGateway
@testable import HeraldStore

/// Localized templates as values: what a stored template is, which variant a device gets, and the
/// payload and platform options a message is made of.
@Suite("Templates")
struct TemplateTests {
    static let shipping = #"""
        {"defaultLanguage": "en",
         "variants": {"en": {"title": "Your order {{order}} shipped", "subtitle": "Thanks", "body": "Hi {{ name | default: \"there\" }}",
                             "navigate": "https://shop.example/o/{{order}}", "clickAction": "OPEN_ORDER"},
                      "de": {"title": "Bestellung {{order}} ist unterwegs", "body": "Hallo {{name}}"},
                      "pt-br": {"body": "Pedido {{order}}"},
                      "zh-hant": {"body": "訂單 {{order}}"}},
         "data": {"orderID": "{{order}}", "kind": "shipping", "n": 3, "nested": {"list": ["{{order}}", true, null, {"deep": "{{name | default: \"?\"}}"}]}}}
        """#

    static func template(_ text: String) throws -> NotificationTemplate {
        try NotificationTemplate.parse(try JSONValue(parsing: text))
    }

    /// The parse error of `text`, as its description (`path: message`).
    static func refusal(_ text: String) throws -> String? {
        do {
            _ = try NotificationTemplate.parse(try JSONValue(parsing: text))
            return nil
        } catch let error as FieldError {
            return error.description
        }
    }

    static func variant(_ fields: String) -> String {
        #"{"defaultLanguage": "en", "variants": {"en": \#(fields)}}"#
    }

    static func render(
        _ template: NotificationTemplate, locale: String? = "en", _ variables: [String: JSONValue] = [:], payload: String = "{}",
        options: [DevicePlatform: [UInt8]] = [:]
    ) throws(TemplateError) -> RenderedMessage {
        try template.render(locale: locale, appLanguage: nil, variables: variables, payload: Array(payload.utf8), platformOptions: options)
    }

    static func json(_ bytes: [UInt8]) throws -> JSONValue { try JSONValue(parsing: bytes) }

    @Test("a template is stored as canonical JSON that parses back to an equal template")
    func roundTrip() throws {
        let template = try Self.template(Self.shipping)
        let encoded = template.encoded()
        #expect(try NotificationTemplate.parse(try Self.json(encoded)) == template)
        #expect(try NotificationTemplate.parse(try Self.json(encoded)).encoded() == encoded, "the same bytes again")
        let text = String(decoding: encoded, as: UTF8.self)
        #expect(text.hasPrefix(#"{"data":{"kind":"shipping","n":3,"nested":{"list":["{{order}}",true,null,{"deep":"{{name | default: \"?\"}}"}]},"orderID":"{{order}}"},"defaultLanguage":"en","variants":{"de":"#))
        #expect(text.contains(#""en":{"body":"Hi {{ name | default: \"there\" }}","clickAction":"OPEN_ORDER","navigate":"https://shop.example/o/{{order}}","subtitle":"Thanks","title":"Your order {{order}} shipped"}"#))
        #expect(template.variables == ["name", "order"])
        #expect(template.requiredVariables == ["name", "order"], "de's body uses name without a default")
        let digest = try Self.template(Self.variant(#"{"title": "{{count}} new", "body": "{{items | join: \" · \"}} {{who | default: \"\"}}"}"#))
        #expect(digest.variables == ["count", "items", "who"] && digest.requiredVariables.isEmpty, "count and items are the gateway's")
    }

    @Test("variant keys are stored in canonical case: language lower, script title, region upper")
    func canonicalTags() throws {
        let template = try Self.template(Self.shipping)
        #expect(template.variants.keys.sorted() == ["de", "en", "pt-BR", "zh-Hant"])
        #expect(LanguageTag.canonical("zh-hant-tw") == "zh-Hant-TW")
        #expect(LanguageTag.canonical("EN-us") == "en-US")
        #expect(LanguageTag.canonical("es-419") == "es-419")
        #expect(LanguageTag.canonical("sr-latn-rs-x-ab") == "sr-Latn-RS-x-ab", "after a singleton, lower case")
        for bad in ["e", "english", "1a", "en_US", "en--US", "en-", "-en", "en-toolongsubtag", "", "en-" + Array(repeating: "abcdefgh", count: 4).joined(separator: "-")] {
            #expect(LanguageTag.canonical(bad) == nil, "\(bad)")
        }
        let defaulted = try Self.template(#"{"defaultLanguage": "PT-br", "variants": {"pt-BR": {"body": "x"}}}"#)
        #expect(defaulted.defaultLanguage == "pt-BR")
    }

    @Test("each parse error names its field")
    func parseErrors() throws {
        let cases: [(String, String)] = [
            (#"{"defaultLanguage": "en", "variants": {"en": {"body": "x"}, "de": {"body": "Hallo {{name"}}}"#,
             #"variants.de.body: unclosed tag "{{name" at byte 6 (close it with }})"#),
            (Self.variant(#"{"title": "{{name | upcase}}"}"#), #"variants.en.title: unknown filter "upcase" (filters: default, join)"#),
            (#"{"defaultLanguage": "fr", "variants": {"en": {"body": "x"}, "de": {"body": "y"}}}"#, #"defaultLanguage: "fr" has no variant (variants: de, en)"#),
            (#"{"variants": {"en": {"body": "x"}}}"#, "defaultLanguage: is required"),
            (#"{"defaultLanguage": "en_US", "variants": {"en": {"body": "x"}}}"#, #"defaultLanguage: "en_US" is not a BCP 47 language tag (en, pt-BR, zh-Hant-TW)"#),
            (#"{"defaultLanguage": "en"}"#, #"variants: is required: an object of variants keyed by language ("en", "pt-BR")"#),
            (#"{"defaultLanguage": "en", "variants": {}}"#, "variants: must have at least one variant"),
            (#"{"defaultLanguage": "en", "variants": {"en": {"body": "x"}}, "extra": 1}"#, "extra: unknown field (expected one of: data, defaultLanguage, variants)"),
            (#"{"defaultLanguage": "en", "variants": {"en": {"body": "x"}, "en_US": {"body": "y"}}}"#,
             #"variants.en_US: "en_US" is not a BCP 47 language tag (en, pt-BR, zh-Hant-TW: subtags of 1 to 8 letters or digits joined by -, the first of 2 or 3 letters, at most 35 bytes)"#),
            (#"{"defaultLanguage": "en", "variants": {"en": {"body": "x"}, "pt-BR": {"body": "y"}, "pt-br": {"body": "z"}}}"#,
             #"variants.pt-br: is the same language as "pt-BR" (pt-BR); a language has one variant"#),
            (#"{"defaultLanguage": "en", "variants": {"en": "x"}}"#, "variants.en: must be a JSON object"),
            (Self.variant(#"{"subtitle": "x"}"#), "variants.en: needs a title or a body (the text every platform shows)"),
            (Self.variant(#"{"body": "x", "sound": "default"}"#), "variants.en.sound: unknown field (expected one of: body, clickAction, navigate, subtitle, title)"),
            (Self.variant(#"{"body": 3}"#), "variants.en.body: must be a string"),
            (Self.variant(#"{"body": ""}"#), "variants.en.body: must not be empty (leave it out)"),
            (Self.variant(#"{"body": "x", "navigate": "http://shop.example/"}"#), "variants.en.navigate: must be an https:// URL of at most 2048 bytes"),
            (Self.variant(#"{"body": "{{}}"}"#),
             #"variants.en.body: invalid tag "{{}}" at byte 0: expected a variable name (letters, digits and _, not starting with a digit, at most 64 bytes)"#),
            (Self.variant(#"{"body": "a {{ 1st }}"}"#),
             #"variants.en.body: invalid tag "{{ 1st }}" at byte 2: expected a variable name (letters, digits and _, not starting with a digit, at most 64 bytes)"#),
            (Self.variant(#"{"body": "{{ first last }}"}"#), #"variants.en.body: invalid tag "{{ first last }}" at byte 0: expected | and a filter, or }}, after first"#),
            (Self.variant(#"{"body": "{{ a | default }}"}"#), #"variants.en.body: invalid tag "{{ a | default }}" at byte 0: the filter default takes a string: default: "…""#),
            (Self.variant(#"{"body": "{{ a | join: , }}"}"#), #"variants.en.body: invalid tag "{{ a | join: , }}" at byte 0: the filter join takes a string: join: "…""#),
            (Self.variant(#"{"body": "{{ a | }}"}"#), #"variants.en.body: invalid tag "{{ a | }}" at byte 0: expected a filter after | (default, join)"#),
            (Self.variant(#"{"body": "{{ a | default: \"x\" | default: \"y\" }}"}"#),
             #"variants.en.body: invalid tag "{{ a | default: \"x\" | default: \"y\" }}" at byte 0: the filter default is given twice"#),
            (Self.variant(#"{"body": "{{ a | default: \"\\n\" }}"}"#), #"variants.en.body: invalid tag "{{ a | default: \"\\n\" }}" at byte 0: a string's only escapes are \" and \\"#),
            (Self.variant(#"{"body": "{{ a | default: \"x }}"}"#), #"variants.en.body: unclosed tag "{{ a | default: \"x }}" at byte 0 (close it with }})"#),
            (Self.variant(#"{"body": "{{ \#(String(repeating: "v", count: 65)) }}"}"#),
             #"variants.en.body: invalid tag "{{ \#(String(repeating: "v", count: 61))…" at byte 0: expected a variable name (letters, digits and _, not starting with a digit, at most 64 bytes)"#),
            (Self.variant(#"{"body": "\#(String(repeating: "x", count: 2049))"}"#), "variants.en.body: is 2049 bytes; at most 2048"),
            (#"{"defaultLanguage": "en", "variants": {"en": {"body": "x"}}, "data": {"aps": {"sound": "x"}}}"#,
             "data.aps: is APNs's: the template sets aps.alert, the notification's payload the rest of aps (sound, badge, thread-id)"),
            (#"{"defaultLanguage": "en", "variants": {"en": {"body": "x"}}, "data": [1]}"#, "data: must be a JSON object"),
            (#"{"defaultLanguage": "en", "variants": {"en": {"body": "x"}}, "data": {"a": [{"b": "{{x | up}}"}]}}"#, #"data.a[0].b: unknown filter "up" (filters: default, join)"#),
            (#"{"defaultLanguage": "en", "variants": {"en": {"body": "x"}}, "data": {"a": [[[[[[[[1]]]]]]]]}}"#, "data.a[0][0][0][0][0][0][0]: nested deeper than 8 levels"),
            (#"{"defaultLanguage": "en", "variants": {"en": {"body": "x"}}, "data": {"bad\u001bkey": "{{"}}"#, #"data.bad\u{1b}key: unclosed tag "{{" at byte 0 (close it with }})"#),
        ]
        for (text, expected) in cases {
            #expect(try Self.refusal(text) == expected)
        }
        // Eight levels, data's object the first, are fine.
        #expect(try Self.refusal(#"{"defaultLanguage": "en", "variants": {"en": {"body": "x"}}, "data": {"a": [[[[[[[1]]]]]]]}}"#) == nil)
        // A lone }} is text; a literal without variables is one run.
        let plain = try Self.template(Self.variant(#"{"body": "a }} b {{x}}}"}"#))
        #expect(plain.variants["en"]?.body?.segments == [.literal("a }} b "), .variable(.init(name: "x")), .literal("}")])
        // A }} inside a filter's string does not close its tag.
        let braces = try Self.template(Self.variant(#"{"body": "{{x|default:\"}}\"}}!"}"#))
        #expect(braces.variants["en"]?.body?.segments == [.variable(.init(name: "x", fallback: "}}")), .literal("!")])
    }

    @Test("bounds: variants, variables and the stored size")
    func bounds() throws {
        let languages = (0..<65).map { "x\(Character(UnicodeScalar(UInt8(97 + $0 / 26))))\(Character(UnicodeScalar(UInt8(97 + $0 % 26))))" }
        let variants = languages.map { #""\#($0)": {"body": "x"}"# }.joined(separator: ", ")
        #expect(try Self.refusal(#"{"defaultLanguage": "xaa", "variants": {\#(variants)}}"#) == "variants: has 65 variants; at most 64")
        let names = (0..<65).map { "{{v\($0)}}" }.joined()
        #expect(try Self.refusal(Self.variant(#"{"body": "\#(names)"}"#)) == "the template uses 65 variables; at most 64")
        // 64 variants of 4 texts of 2,000 bytes each: every field within its bound, the whole not.
        let long = String(repeating: "y", count: 2000)
        let large = languages.prefix(64).map { #""\#($0)": {"title": "\#(long)", "body": "\#(long)", "subtitle": "\#(long)", "clickAction": "\#(long)"}"# }
        let refusal = try Self.refusal(#"{"defaultLanguage": "xaa", "variants": {\#(large.joined(separator: ", "))}}"#)
        #expect(refusal?.hasPrefix("the template is ") == true && refusal?.hasSuffix(" bytes as stored; at most 16384") == true)
        #expect(try Self.refusal(#"{"defaultLanguage": "xaa", "variants": {\#(large.prefix(2).joined(separator: ", "))}}"#) == nil)
    }

    @Test("a device's locale, shortened a subtag at a time, then the app's language, then the template's")
    func fallbacks() throws {
        let template = try Self.template(Self.shipping)
        let cases: [(String?, String?, String)] = [
            ("pt-BR", nil, "pt-BR"), ("pt_BR", nil, "pt-BR"), ("PT-br", nil, "pt-BR"), ("pt-PT", nil, "en"),
            ("zh-Hant-TW", nil, "zh-Hant"), ("zh_hant_TW", nil, "zh-Hant"), ("zh-TW", nil, "en"),
            ("de-DE-u-ca-gregory", nil, "de"), ("de_AT@currency=EUR", nil, "de"), ("de_CH.UTF-8", nil, "de"), ("de-x-private", nil, "de"),
            ("fr-FR", "de-AT", "de"), ("fr", "es", "en"), (nil, "pt_BR", "pt-BR"), (nil, nil, "en"), ("", "", "en"), ("not a locale", "de", "de"),
            ("de-CH-1901", nil, "de"),
        ]
        for (locale, app, expected) in cases {
            #expect(template.language(for: locale, appLanguage: app) == expected, "\(String(describing: locale)), \(String(describing: app))")
        }
        let german = try template.render(locale: "fr", appLanguage: "de_DE", variables: ["order": "A1", "name": "Eva"], payload: Array("{}".utf8), platformOptions: [:])
        #expect(german.language == "de")
        #expect(try Self.json(german.payload)["aps"]?["alert"] == ["title": "Bestellung A1 ist unterwegs", "body": "Hallo Eva"])
    }

    @Test("default fills an absent, null or empty value; a value without a default is required")
    func defaults() throws {
        let template = try Self.template(Self.shipping)
        for given: JSONValue? in [nil, .null, ""] {
            var variables: [String: JSONValue] = ["order": 7]
            variables["name"] = given
            let body = try Self.json(try Self.render(template, variables).payload)["aps"]?["alert"]?["body"]
            #expect(body == "Hi there", "\(String(describing: given))")
        }
        #expect(try Self.json(try Self.render(template, ["order": 7, "name": "Ann"]).payload)["aps"]?["alert"]?["body"] == "Hi Ann")
        #expect(throws: TemplateError(.missingVariable, #"variable "order" has no value and no default (variants.en.title)"#)) { try Self.render(template, ["name": "Ann"]) }
        #expect(throws: TemplateError(.missingVariable, #"variable "name" has no value and no default (variants.de.body)"#)) { try Self.render(template, locale: "de", ["order": 1]) }
        #expect(throws: TemplateError(.missingVariable, #"variable "order" has no value and no default (variants.en.title)"#)) {
            try Self.render(template, ["order": .null])
        }
        // An empty string without a default is empty.
        #expect(try Self.json(try Self.render(template, locale: "de", ["order": 1, "name": ""]).payload)["aps"]?["alert"]?["body"] == "Hallo ")
        #expect(throws: TemplateError(.missingVariable, #"variable "x" has no value and no default (data.k)"#)) {
            try Self.render(try Self.template(#"{"defaultLanguage": "en", "variants": {"en": {"body": "b"}}, "data": {"k": "{{x}}"}}"#))
        }
    }

    @Test("arrays are joined with the join separator or a comma; count and items are 1 and empty when not given")
    func join() throws {
        let template = try Self.template(Self.variant(#"{"title": "{{count}} new", "body": "{{items | join: \" · \"}}|{{tags}}|{{items | default: \"nothing\"}}"}"#))
        let alert = try Self.json(try Self.render(template, ["count": 3, "items": ["a", "b", 3], "tags": ["x", ["y", "z"], true]]).payload)["aps"]?["alert"]
        #expect(alert == ["title": "3 new", "body": "a · b · 3|x, y, z, true|a, b, 3"])
        let single = try Self.json(try Self.render(template, ["tags": []]).payload)["aps"]?["alert"]
        #expect(single == ["title": "1 new", "body": "||nothing"])
        #expect(throws: TemplateError(.invalidValue, #"variable "tags" holds an object in its array; a text takes strings, numbers, true or false (variants.en.body)"#)) {
            try Self.render(template, ["tags": [["a": 1]]])
        }
        #expect(throws: TemplateError(.invalidValue, #"variable "tags" holds null in its array; a text takes strings, numbers, true or false (variants.en.body)"#)) {
            try Self.render(template, ["tags": [.null]])
        }
    }

    @Test("numbers as their JSON, true and false; an object is refused")
    func scalars() throws {
        let template = try Self.template(Self.variant(#"{"body": "{{a}} {{b}} {{c}} {{d}} {{e}}"}"#))
        let body = try Self.json(try Self.render(template, ["a": 42, "b": -1.5, "c": true, "d": false, "e": 1e21]).payload)["aps"]?["alert"]?["body"]
        #expect(body == "42 -1.5 true false 1e+21")
        #expect(throws: TemplateError(.invalidValue, #"variable "a" is an object; a text takes a string, a number, true or false, or an array of them (variants.en.body)"#)) {
            try Self.render(template, ["a": ["x": 1], "b": 1, "c": 1, "d": 1, "e": 1])
        }
    }

    @Test("a hostile value is escaped by the engine: the payload is valid JSON holding exactly that text")
    func escaping() throws {
        let hostile = "\"quote\" \\ and newline\n and </script>\u{0} \u{2028} {{name}}"
        let template = try Self.template(#"{"defaultLanguage": "en", "variants": {"en": {"title": "{{v}}", "body": "<{{v}}>"}}, "data": {"raw": "{{v}}", "list": ["{{v}}"]}}"#)
        let rendered = try Self.render(template, ["v": .string(hostile)])
        let payload = try Self.json(rendered.payload)
        #expect(payload["aps"]?["alert"] == ["title": .string(hostile), "body": .string("<\(hostile)>")])
        #expect(payload["raw"] == .string(hostile) && payload["list"] == [.string(hostile)], "a value is not parsed as a template again")
        #expect(!rendered.payload.contains(0x0A) && !rendered.payload.contains(0), "controls are escaped")
    }

    @Test("data is rendered at any depth and set over the payload's keys; aps keeps its members, alert replaced")
    func payload() throws {
        let template = try Self.template(Self.shipping)
        let base = #"{"aps": {"alert": {"title": "old", "loc-key": "K"}, "sound": "default", "thread-id": "orders", "badge": 2}, "custom": {"a": 1}, "kind": "old"}"#
        let rendered = try Self.render(template, ["order": "A-9"], payload: base)
        #expect(try Self.json(rendered.payload) == [
            "aps": ["alert": ["title": "Your order A-9 shipped", "subtitle": "Thanks", "body": "Hi there"], "sound": "default", "thread-id": "orders", "badge": 2],
            "custom": ["a": 1], "kind": "shipping", "orderID": "A-9", "n": 3,
            "nested": ["list": ["A-9", true, nil, ["deep": "?"]]],
        ])
        #expect(rendered.language == "en" && rendered.platformOptions[.apns] == nil)
        // Only the fields the variant has.
        let brazil = try Self.render(template, locale: "pt_BR", ["order": 5], payload: #"{"aps": "junk"}"#)
        #expect(try Self.json(brazil.payload)["aps"] == ["alert": ["body": "Pedido 5"]])
        #expect(throws: TemplateError(.invalidPayload, "the notification's payload is not a JSON object")) { try Self.render(template, ["order": 5], payload: "[1]") }
    }

    @Test("navigate is the Web Push options' navigate, an https URL once rendered; other options are kept")
    func navigate() throws {
        let template = try Self.template(Self.shipping)
        let apns = Array(#"{"apns": true}"#.utf8)
        let given: [DevicePlatform: [UInt8]] = [.webpush: Array(#"{"navigate":"https://old.example/","payload":{"x":1}}"#.utf8), .apns: apns, .hms: apns]
        let rendered = try Self.render(template, ["order": "42"], options: given)
        #expect(String(decoding: rendered.platformOptions[.webpush]!, as: UTF8.self) == #"{"navigate":"https://shop.example/o/42","payload":{"x":1}}"#)
        #expect(BrowserMessages.Options(stored: rendered.platformOptions[.webpush])?.navigate == "https://shop.example/o/42")
        #expect(rendered.platformOptions[.apns] == apns && rendered.platformOptions[.hms] == apns)
        let fresh = try Self.render(template, ["order": "42"])
        #expect(String(decoding: fresh.platformOptions[.webpush]!, as: UTF8.self) == #"{"navigate":"https://shop.example/o/42"}"#)
        // The browser opens it.
        let browser = try Self.json(try BrowserMessages.payload(fresh.payload, badge: nil, defaultURL: "https://shop.example/", options: BrowserMessages.Options(stored: fresh.platformOptions[.webpush])))
        #expect(browser["notification"]?["navigate"] == "https://shop.example/o/42" && browser["notification"]?["title"] == "Your order 42 shipped")
        // A variant without navigate leaves the options as they are.
        #expect(try Self.render(template, locale: "de", ["order": 1, "name": "E"], options: given).platformOptions == given)

        let open = try Self.template(Self.variant(#"{"body": "x", "navigate": "{{url}}"}"#))
        for bad in ["http://shop.example/", "javascript:alert(1)", "https://shop.example/a b", "https://x/\u{1b}[2J"] {
            #expect(throws: TemplateError(.invalidURL, "\(TemplateText.quoted(bad)) is not an https:// URL of at most 2048 bytes (variants.en.navigate)")) {
                try Self.render(open, ["url": .string(bad)])
            }
        }
        #expect(throws: TemplateError.self) { try Self.render(open, ["url": .string("https://x.example/" + String(repeating: "a", count: 2048))]) }
        #expect((try? Self.render(open, ["url": "https://x.example/"])) != nil)
    }

    @Test("clickAction is merged into the FCM refinement, which the Android message reads as click_action")
    func clickAction() throws {
        let template = try Self.template(Self.shipping)
        let patch = Array(##"{"android":{"notification":{"color":"#ff0000","click_action":"OLD"},"priority":"high"},"fcm_options":{"analytics_label":"l"}}"##.utf8)
        let rendered = try Self.render(template, ["order": 8], options: [.fcm: patch])
        #expect(String(decoding: rendered.platformOptions[.fcm]!, as: UTF8.self)
            == ##"{"android":{"notification":{"click_action":"OPEN_ORDER","color":"#ff0000"},"priority":"high"},"fcm_options":{"analytics_label":"l"}}"##)
        let fresh = try Self.render(template, ["order": 8])
        #expect(String(decoding: fresh.platformOptions[.fcm]!, as: UTF8.self) == #"{"android":{"notification":{"click_action":"OPEN_ORDER"}}}"#)

        // Delivered: the message AndroidMessages builds for the queued notification carries it.
        var queued = QueuedNotification(
            id: "0190aaaa-bbbb-1", app: "shop", payload: rendered.payload, pushType: .alert, priority: nil, expiration: nil, collapseID: nil, badge: .none,
            deadline: Date(timeIntervalSince1970: 1_800_003_600))
        queued.platformOptions = rendered.platformOptions
        let message = try AndroidMessages.message(for: queued, now: Date(timeIntervalSince1970: 1_800_000_000))
        try message.validate()
        let object = message.jsonObject
        #expect(object["android"]?["notification"] == ["click_action": "OPEN_ORDER", "color": "#ff0000"])
        #expect(object["android"]?["priority"] == "high" && object["android"]?["ttl"] == "3600s")
        #expect(object["notification"] == ["title": "Your order 8 shipped", "body": "Hi there"])
        #expect(object["data"]?["orderID"] == "8" && object["data"]?["n"] == "3" && object["fcm_options"]?["analytics_label"] == "l")

        // A clickAction that renders empty sets nothing.
        let optional = try Self.template(Self.variant(#"{"body": "x", "clickAction": "{{action | default: \"\"}}"}"#))
        #expect(try Self.render(optional, options: [.fcm: patch]).platformOptions[.fcm] == patch)
        #expect(try Self.render(optional).platformOptions[.fcm] == nil)
    }
}
