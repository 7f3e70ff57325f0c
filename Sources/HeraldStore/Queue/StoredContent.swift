import HeraldCore

/// A notification's ``NotificationContent`` as two columns hold it: `content`, a small JSON
/// object (category, critical, the template's name and version, digest) read with the
/// notification wherever it is shown; and `template`, the template itself and its data as they
/// were given (up to the API's body size), read only by the workers that render it.
enum StoredContent {
    static func encode(_ content: NotificationContent?) -> (content: String?, template: String?) {
        guard let content, !content.isEmpty else { return (nil, nil) }
        var writer = JSONWriter(capacity: 256)
        writer.beginObject()
        if let category = content.category {
            writer.key("category")
            writer.string(category)
        }
        if content.critical {
            writer.key("critical")
            writer.bool(true)
        }
        var template: String?
        if let use = content.template {
            writer.key("template")
            writer.beginObject()
            writer.key("name")
            writer.string(use.name)
            writer.key("version")
            writer.int(use.version)
            writer.endObject()
            var parts = JSONWriter(capacity: 256 + use.body.count + (use.data?.count ?? 0) + (use.dataByUser?.count ?? 0))
            parts.beginObject()
            parts.key("body")
            parts.rawJSON(use.body)
            if let data = use.data {
                parts.key("data")
                parts.rawJSON(data)
            }
            if let data = use.dataByUser {
                parts.key("dataByUser")
                parts.rawJSON(data)
            }
            parts.endObject()
            template = String(decoding: parts.bytes, as: UTF8.self)
        }
        if let digest = content.digest {
            writer.key("digest")
            writer.beginObject()
            writer.key("key")
            writer.string(digest.key)
            writer.key("windowSeconds")
            writer.int(digest.windowSeconds)
            if let item = digest.item {
                writer.key("item")
                writer.string(item)
            }
            writer.endObject()
        }
        writer.endObject()
        return (String(decoding: writer.bytes, as: UTF8.self), template)
    }

    /// The content stored as `text` (and, where read, its template as `template`: without it,
    /// a template's ``TemplateUse/body`` is empty); `nil` for none, or for text this Herald never writes.
    static func decode(_ text: String?, template: String? = nil) -> NotificationContent? {
        guard let text, case .object(let members)? = try? JSONValue(parsing: text) else { return nil }
        var content = NotificationContent(category: members["category"]?.stringValue, critical: members["critical"] == .bool(true))
        if case .object(let use)? = members["template"], let name = use["name"]?.stringValue {
            var stored = TemplateUse(name: name, version: use["version"]?.intValue ?? 0, body: [])
            if let template, case .object(let parts)? = try? JSONValue(parsing: template) {
                stored.body = parts["body"].map(Self.bytes) ?? []
                stored.data = parts["data"].map(Self.bytes)
                stored.dataByUser = parts["dataByUser"].map(Self.bytes)
            }
            content.template = stored
        }
        if case .object(let digest)? = members["digest"], let key = digest["key"]?.stringValue, let window = digest["windowSeconds"]?.intValue {
            content.digest = DigestRequest(key: key, windowSeconds: window, item: digest["item"]?.stringValue)
        }
        return content
    }

    private static func bytes(_ value: JSONValue) -> [UInt8] {
        var writer = JSONWriter(capacity: 256)
        writer.value(value)
        return writer.bytes
    }
}

/// A device's own choices per category as its `preferences` column holds them:
/// `marketing:0,orders:1`, sorted; `""` clears them, NULL keeps them.
enum PreferenceList {
    static func encode(_ choices: [String: Bool]) -> String {
        choices.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value ? 1 : 0)" }.joined(separator: ",")
    }

    static func decode(_ text: String?) -> [String: Bool] {
        guard let text, !text.isEmpty else { return [:] }
        var choices: [String: Bool] = [:]
        for entry in text.split(separator: ",") {
            guard let colon = entry.lastIndex(of: ":") else { continue }
            choices[String(entry[..<colon])] = entry[entry.index(after: colon)...] == "1"
        }
        return choices
    }
}
