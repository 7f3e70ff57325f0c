import HeraldCore
import HeraldStore

extension NotificationTemplate {
    /// The variant a device gets: its locale's (`zh-Hant-TW`, else `zh-Hant`, else `zh`), else
    /// the app's default language's (shortened the same way), else ``defaultLanguage``. Tags are
    /// compared in canonical form; a locale may be given as Android and Apple report it (`pt_BR`)
    /// and its extensions (`-u-…`, `@…`) are ignored (``LanguageTag/canonical(locale:)``).
    func language(for locale: String?, appLanguage: String?) -> String {
        if let locale, let found = variant(matching: locale) { return found }
        if let appLanguage, let found = variant(matching: appLanguage) { return found }
        return defaultLanguage
    }

    /// The key of the variant for `locale` or one of its prefixes, longest first.
    private func variant(matching locale: String) -> String? {
        guard var candidate = LanguageTag.canonical(locale: locale) else { return nil }
        while variants[candidate] == nil {
            guard let dash = candidate.lastIndex(of: "-") else { return nil }
            candidate = String(candidate[..<dash])
        }
        return candidate
    }

    /// The notification for a device group of `locale` (the app's default language
    /// `appLanguage`), with `variables` filled in (``reservedVariables`` when not given):
    ///
    /// - the payload is `base` (the notification's own APNs payload, a JSON object) with
    ///   `aps.alert` replaced by the variant's `title`, `subtitle` and `body`, and the template's
    ///   `data` members set at the top level over `base`'s of the same name;
    /// - the Web Push options' `navigate` (``BrowserMessages/Options``) is the variant's, when it
    ///   has one, and the FCM merge patch (``AndroidMessages/refinement(_:)``) sets
    ///   `android.notification.click_action` to its `clickAction`, when it has one (not when it
    ///   renders empty); other options are kept as they are.
    ///
    /// Values are escaped as JSON here: a variable may hold any text.
    func render(
        locale: String?, appLanguage: String?, variables: [String: JSONValue], payload base: [UInt8], platformOptions: [DevicePlatform: [UInt8]]
    ) throws(TemplateError) -> RenderedMessage {
        let language = language(for: locale, appLanguage: appLanguage)
        let variant = variants[language]!
        guard case .object(var root)? = try? JSONValue(parsing: base) else {
            throw TemplateError(.invalidPayload, "the notification's payload is not a JSON object")
        }

        var alert: [String: JSONValue] = [:]
        if let title = variant.title { alert["title"] = .string(try title.render(variables, at: "variants.\(language).title")) }
        if let subtitle = variant.subtitle { alert["subtitle"] = .string(try subtitle.render(variables, at: "variants.\(language).subtitle")) }
        if let body = variant.body { alert["body"] = .string(try body.render(variables, at: "variants.\(language).body")) }
        var aps = root["aps"]?.objectValue ?? [:]
        aps["alert"] = .object(alert)
        root["aps"] = .object(aps)
        for (key, value) in data { root[key] = try value.render(variables, at: { TemplateData.path("data", key) }) }

        var options = platformOptions
        if let navigate = variant.navigate {
            let url = try navigate.render(variables, at: "variants.\(language).navigate")
            guard JSONFields.isHTTPSURL(url) else {
                throw TemplateError(
                    .invalidURL,
                    "\(TemplateText.quoted(url)) is not an https:// URL of at most \(JSONFields.maximumURLLength) bytes (variants.\(language).navigate)")
            }
            // BrowserMessages.Options as stored: {"navigate", "payload"}.
            var stored = platformOptions[.webpush].flatMap { try? JSONValue(parsing: $0) }?.objectValue ?? [:]
            stored["navigate"] = .string(url)
            options[.webpush] = Self.bytes(.object(stored))
        }
        if let clickAction = variant.clickAction {
            let action = try clickAction.render(variables, at: "variants.\(language).clickAction")
            if !action.isEmpty {
                // The FCM options are a merge patch over the message derived from the payload; this one over it.
                let stored = platformOptions[.fcm].flatMap { try? JSONValue(parsing: $0) } ?? .object([:])
                let patch: JSONValue = ["android": ["notification": ["click_action": .string(action)]]]
                options[.fcm] = Self.bytes(AndroidMessages.mergePatch(stored, patch))
            }
        }
        return RenderedMessage(payload: Self.bytes(.object(root)), platformOptions: options, language: language)
    }

    private static func bytes(_ value: JSONValue) -> [UInt8] {
        var writer = JSONWriter(capacity: 512)
        writer.value(value)
        return writer.bytes
    }
}
