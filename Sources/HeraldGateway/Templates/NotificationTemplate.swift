import HeraldCore

/// A localized template of an app, as `PUT /v1/apps/{app}/templates/{name}` gives it: a variant
/// of the visible text per language, a default language, and custom `data` for the payload, each
/// text parsed once (``TemplateText``) so that a message is made per device group without parsing.
///
/// ```json
/// {"defaultLanguage": "en",
///  "variants": {"en": {"title": "Your order {{order}} shipped", "body": "Hi {{name | default: \"there\"}}",
///                      "navigate": "https://shop.example/o/{{order}}", "clickAction": "OPEN_ORDER"},
///               "de": {"title": "Bestellung {{order}} ist unterwegs"}},
///  "data": {"orderID": "{{order}}", "kind": "shipping"}}
/// ```
struct NotificationTemplate: Sendable, Hashable {
    /// One language's texts. `title`, `subtitle` and `body` are what every platform shows (APNs's
    /// `aps.alert`); `navigate` is where a click opens in a browser (Web Push), an https URL once
    /// rendered; `clickAction` is the Android intent action of a tap (FCM's `click_action`).
    struct Variant: Sendable, Hashable {
        var title: TemplateText?
        var subtitle: TemplateText?
        var body: TemplateText?
        var navigate: TemplateText?
        var clickAction: TemplateText?

        /// The fields, in name order as ``NotificationTemplate/encoded()`` writes them.
        static let fields = ["body", "clickAction", "navigate", "subtitle", "title"]

        /// A variant's object; a given field is not empty, and `title` or `body` is given.
        init(_ fields: JSONFields) throws(FieldError) {
            try fields.only(Self.fields)
            func text(_ name: String) throws(FieldError) -> TemplateText? {
                guard let source = try fields.string(name) else { return nil }
                guard !source.isEmpty else { throw FieldError(fields.at(name), "must not be empty (leave it out)") }
                try NotificationTemplate.checkLength(source, at: fields.at(name))
                return try TemplateText(source, at: fields.at(name))
            }
            title = try text("title")
            subtitle = try text("subtitle")
            body = try text("body")
            navigate = try text("navigate")
            clickAction = try text("clickAction")
            guard title != nil || body != nil else { throw FieldError(fields.path, "needs a title or a body (the text every platform shows)") }
            // Without variables it is what every message opens: refused now rather than at each send.
            if let navigate, navigate.variables.isEmpty, !JSONFields.isHTTPSURL(navigate.source) {
                throw FieldError(fields.at("navigate"), "must be an https:// URL of at most \(JSONFields.maximumURLLength) bytes")
            }
        }

        /// Each field given, by name.
        var texts: [(name: String, text: TemplateText)] {
            let all = [("body", body), ("clickAction", clickAction), ("navigate", navigate), ("subtitle", subtitle), ("title", title)]
            return all.compactMap { name, text in text.map { (name, $0) } }
        }
    }

    // MARK: Bounds

    /// The largest template, as ``encoded()`` writes it: 16 KiB.
    static let maximumEncodedSize = 16384
    /// The most variants (languages) a template has.
    static let maximumVariants = 64
    /// The longest text (a variant's field, a string in `data`), in bytes, as written.
    static let maximumTextLength = 2048
    /// The longest variable name, in bytes.
    static let maximumVariableNameLength = 64
    /// The most distinct variables a template uses.
    static let maximumVariables = 64
    /// The deepest nesting of arrays and objects in `data`, the `data` object itself being the first level.
    static let maximumDataDepth = 8

    /// The variables the gateway gives every message, and their values when a message is not a
    /// digest: `count` (how many notifications a digest gathers) and `items` (their texts).
    static let reservedVariables: [String: JSONValue] = ["count": 1, "items": []]

    /// The language whose variant a device gets when neither its locale nor the app's default
    /// language has one; a key of ``variants``.
    let defaultLanguage: String
    /// Each language's variant, keyed by its BCP 47 tag in canonical form (``LanguageTag``).
    let variants: [String: Variant]
    /// The custom data set at the top level of the APNs payload (and carried to the other
    /// platforms as a payload's custom keys are); never `aps`.
    let data: [String: TemplateData]

    /// A template from the body of its `PUT`, checked: every error names its field
    /// (`variants.de.body: unclosed tag "{{name" at byte 4 (close it with }})`).
    static func parse(_ value: JSONValue) throws(FieldError) -> NotificationTemplate {
        let fields = try JSONFields(value, path: "")
        try fields.only(["data", "defaultLanguage", "variants"])
        let language = try fields.requiredString("defaultLanguage")

        guard let given = try fields.object("variants") else { throw FieldError("variants", "is required: an object of variants keyed by language (\"en\", \"pt-BR\")") }
        guard !given.members.isEmpty else { throw FieldError("variants", "must have at least one variant") }
        guard given.members.count <= maximumVariants else { throw FieldError("variants", "has \(given.members.count) variants; at most \(maximumVariants)") }
        var variants: [String: Variant] = [:]
        var keys: [String: String] = [:]  // each canonical tag's key as given
        // In name order: the same document always fails on the same field.
        for key in given.members.keys.sorted() {
            let path = given.at(PeerText(key, limit: 64).description)
            guard let tag = LanguageTag.canonical(key) else {
                throw FieldError(path, "\(TemplateText.quoted(key)) is not a BCP 47 language tag (en, pt-BR, zh-Hant-TW: subtags of 1 to 8 letters or digits joined by -, the first of 2 or 3 letters, at most \(LanguageTag.maximumLength) bytes)")
            }
            if let other = keys[tag] { throw FieldError(path, "is the same language as \(TemplateText.quoted(other)) (\(tag)); a language has one variant") }
            guard let object = try given.object(key) else { throw FieldError(path, "must be a JSON object") }
            keys[tag] = key
            variants[tag] = try Variant(object)
        }

        guard let defaultLanguage = LanguageTag.canonical(language) else {
            throw FieldError("defaultLanguage", "\(TemplateText.quoted(language)) is not a BCP 47 language tag (en, pt-BR, zh-Hant-TW)")
        }
        guard variants[defaultLanguage] != nil else {
            throw FieldError("defaultLanguage", "\(TemplateText.quoted(language)) has no variant (variants: \(variants.keys.sorted().joined(separator: ", ")))")
        }

        var data: [String: TemplateData] = [:]
        switch fields.members["data"] {
        case nil, .null?:
            break
        case .object(let members)?:
            for key in members.keys.sorted() {
                guard key != "aps" else {
                    throw FieldError("data.aps", "is APNs's: the template sets aps.alert, the notification's payload the rest of aps (sound, badge, thread-id)")
                }
                data[key] = try TemplateData(members[key]!, at: TemplateData.path("data", key), level: 2)
            }
        case .some:
            throw FieldError("data", "must be a JSON object")
        }

        let template = NotificationTemplate(defaultLanguage: defaultLanguage, variants: variants, data: data)
        let used = template.variables.count
        guard used <= maximumVariables else { throw FieldError("", "the template uses \(used) variables; at most \(maximumVariables)") }
        let size = template.encoded().count
        guard size <= maximumEncodedSize else { throw FieldError("", "the template is \(size) bytes as stored; at most \(maximumEncodedSize)") }
        return template
    }

    /// Refuses a text longer than ``maximumTextLength``.
    static func checkLength(_ source: String, at path: String) throws(FieldError) {
        let length = source.utf8.count
        guard length <= maximumTextLength else { throw FieldError(path, "is \(length) bytes; at most \(maximumTextLength)") }
    }

    /// As the store keeps it: canonical JSON (keys sorted, tags canonical), which ``parse(_:)``
    /// reads back to an equal template.
    func encoded() -> [UInt8] {
        var writer = JSONWriter(capacity: 1024)
        writer.beginObject()
        if !data.isEmpty {
            writer.key("data")
            writer.value(.object(data.mapValues(\.json)))
        }
        writer.key("defaultLanguage")
        writer.string(defaultLanguage)
        writer.key("variants")
        writer.beginObject()
        for language in variants.keys.sorted() {
            writer.key(language)
            writer.beginObject()
            for (name, text) in variants[language]!.texts {
                writer.key(name)
                writer.string(text.source)
            }
            writer.endObject()
        }
        writer.endObject()
        writer.endObject()
        return writer.bytes
    }

    /// Every variable used, in any variant or in `data`, by name.
    var variables: [String] {
        Set(allVariables.map(\.name)).sorted()
    }

    /// The variables used somewhere without a `default` filter, by name: what a notification
    /// must give. The ``reservedVariables`` are not among them: the gateway always gives them.
    var requiredVariables: [String] {
        Set(allVariables.filter { $0.fallback == nil && Self.reservedVariables[$0.name] == nil }.map(\.name)).sorted()
    }

    private var allVariables: [TemplateText.Variable] {
        let texts = variants.values.flatMap { $0.texts.map(\.text) } + data.values.flatMap(\.texts)
        return texts.flatMap(\.variables)
    }
}
